#include "images.h"

#include <string.h>

#include "build_config.h"
#include "kernel_table.h"

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

extern "C" {

int32_t alphamoe_kernel_count(void) { return alphamoe::kKernelCount; }

int32_t alphamoe_entry_point_count(void) { return alphamoe::kEntryCount; }

const char *alphamoe_kernel_name(int32_t index) {
    if (index < 0 || index >= alphamoe::kKernelCount) return nullptr;
    return alphamoe::kernel_info(index).name;
}

const char *alphamoe_entry_point_name(int32_t index) {
    if (index < 0 || index >= alphamoe::kEntryCount) return nullptr;
    return alphamoe::entry_info(index).name;
}

alphamoe_status alphamoe_kernel_images(int32_t index, int32_t *archs, int32_t capacity, int32_t *count) {
    if (count == nullptr || (archs == nullptr && capacity > 0)) return ALPHAMOE_ERROR_NULL_POINTER;
    if (reinterpret_cast<uintptr_t>(archs) % alignof(int32_t) != 0) return ALPHAMOE_ERROR_ALIGNMENT;
    if (index < 0 || index >= alphamoe::kKernelCount || capacity < 0) return ALPHAMOE_ERROR_INVALID_ARGUMENT;
    const alphamoe::KernelInfo &k = alphamoe::kernel_info(index);
    const int n = alphamoe::fatbin_elf_archs(k.fatbin, k.fatbin_size, archs, capacity);
    if (n < 0) return ALPHAMOE_ERROR_NO_IMAGE;
    *count = n;
    return ALPHAMOE_OK;
}

}  // extern "C"
