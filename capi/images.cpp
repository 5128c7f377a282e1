#include "images.h"

#include <string.h>

#include "build_config.h"

namespace alphamoe {
namespace {

const int32_t kImageArchs[] = {ALPHAMOE_IMAGE_ARCH_LIST};

// Fatbin container layout (little endian), as fatbinary writes it.
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;
constexpr size_t kFatbinHeaderBytes = 16;  // magic, version, header size, payload size
constexpr size_t kEntryMinHeaderBytes = 32;
constexpr uint16_t kEntryKindElf = 2;
constexpr size_t kEntryArchOffset = 28;

template <typename T>
T read_le(const unsigned char *p) {
    T v;
    memcpy(&v, p, sizeof(T));
    return v;
}

}  // namespace

int fatbin_elf_archs(const unsigned char *fatbin, size_t size, int32_t *archs, int capacity) {
    if (size < kFatbinHeaderBytes || read_le<uint32_t>(fatbin) != kFatbinMagic) return -1;
    const size_t header = read_le<uint16_t>(fatbin + 6);
    const uint64_t payload = read_le<uint64_t>(fatbin + 8);
    if (header < kFatbinHeaderBytes || header > size || payload > size - header) return -1;
    const size_t end = header + payload;
    int found = 0;
    for (size_t at = header; at < end;) {
        if (end - at < kEntryMinHeaderBytes) return -1;
        const uint16_t kind = read_le<uint16_t>(fatbin + at);
        const uint32_t entry_header = read_le<uint32_t>(fatbin + at + 4);
        const uint64_t entry_payload = read_le<uint64_t>(fatbin + at + 8);
        if (entry_header < kEntryMinHeaderBytes || entry_header > end - at ||
            entry_payload > end - at - entry_header)
            return -1;
        if (kind == kEntryKindElf) {
            if (found < capacity) archs[found] = static_cast<int32_t>(read_le<uint32_t>(fatbin + at + kEntryArchOffset));
            ++found;
        }
        at += entry_header + entry_payload;
    }
    return found;
}

int32_t image_arch_for(int32_t compute_capability) {
    for (int32_t arch : kImageArchs)
        if (arch == compute_capability) return arch;
    return 0;
}

}  // namespace alphamoe
