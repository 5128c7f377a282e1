/* Runs the fuzz target over files, without libFuzzer: every build replays
 * the committed corpus this way, so the fuzz checks hold in the plain build
 * too. Arguments are files or directories (their regular files, sorted). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    if (!data || (n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n)) {
        fclose(f);
        free(data);
        fprintf(stderr, "cannot read %s\n", path);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, (size_t)n);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    int files = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "no such file or directory: %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i])) return 1;
            ++files;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        if (!dir) return 1;
        char **names = NULL;
        size_t count = 0;
        for (struct dirent *e; (e = readdir(dir)) != NULL;) {
            if (e->d_name[0] == '.') continue;
            names = realloc(names, (count + 1) * sizeof *names);
            const size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[count] = malloc(len);
            snprintf(names[count++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(dir);
        qsort(names, count, sizeof *names, by_name);
        for (size_t j = 0; j < count; ++j) {
            if (replay_file(names[j])) return 1;
            ++files;
            free(names[j]);
        }
        free(names);
    }
    printf("%d inputs replayed, every check held\n", files);
    return files > 0 ? 0 : 1;
}
