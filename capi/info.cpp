// Device queries of the C ABI.
#include <string.h>

#include "device.h"
#include "driver.h"
#include "images.h"
#include "params.h"
#include "struct_io.h"

using namespace alphamoe;

extern "C" {

alphamoe_status alphamoe_device_count(int32_t *count) {
    if (count == nullptr) return ALPHAMOE_ERROR_NULL_POINTER;
    const Driver *d = nullptr;
    const alphamoe_status s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    *count = d->device_count;
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_device_attributes_query(int32_t device_ordinal,
                                                 alphamoe_device_attributes *out) {
    alphamoe_status s = check_output_struct(out, kDeviceAttributesVersions);
    if (s != ALPHAMOE_OK) return s;
    const Driver *d = nullptr;
    s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    const DeviceState *st = nullptr;
    s = device_state_for_ordinal(*d, device_ordinal, &st);
    if (s != ALPHAMOE_OK) return s;
    write_struct(st->attributes, out);
    return ALPHAMOE_OK;
}

alphamoe_status alphamoe_device_describe(int32_t device_ordinal, char *name, size_t name_capacity,
                                         int32_t *compute_capability, int32_t *image_arch) {
    if ((name == nullptr && name_capacity > 0) || compute_capability == nullptr || image_arch == nullptr)
        return ALPHAMOE_ERROR_NULL_POINTER;
    const Driver *d = nullptr;
    alphamoe_status s = load_driver(&d);
    if (s != ALPHAMOE_OK) return s;
    if (device_ordinal < 0 || device_ordinal >= d->device_count) return ALPHAMOE_ERROR_NO_DEVICE;
    CUdevice dev = -1;
    int major = 0, minor = 0;
    char buffer[256] = {0};
    CUresult r = d->DeviceGet(&dev, device_ordinal);
    if (r == CUDA_SUCCESS) r = d->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == CUDA_SUCCESS) r = d->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (r == CUDA_SUCCESS) r = d->DeviceGetName(buffer, sizeof(buffer) - 1, dev);
    if (r != CUDA_SUCCESS) return status_from_cuda(r);
    if (name_capacity > 0) {
        strncpy(name, buffer, name_capacity - 1);
        name[name_capacity - 1] = '\0';
    }
    *compute_capability = major * 10 + minor;
    *image_arch = image_arch_for(major * 10 + minor);
    return ALPHAMOE_OK;
}

}  // extern "C"
