// The kernel images embedded in the library: one fatbin per kernel
// (kernel_table.h), one ELF image per configured architecture inside each.
#ifndef ALPHAMOE_CAPI_IMAGES_H
#define ALPHAMOE_CAPI_IMAGES_H

#include <stddef.h>
#include <stdint.h>

#include "alphamoe/router_diagnostics.h"

namespace alphamoe {

// Architectures (90, 100, 103, ...) of the ELF images in a fatbin. Returns
// the number found (writing at most capacity), or -1 if it is malformed.
int fatbin_elf_archs(const unsigned char *fatbin, size_t size, int32_t *archs, int capacity);

// The image a device of this compute capability runs (arch-specific images
// run only on their exact architecture), or 0 when the library has none.
int32_t image_arch_for(int32_t compute_capability);

}  // namespace alphamoe

#endif
