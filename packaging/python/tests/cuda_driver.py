"""Just enough of the CUDA driver API, opened at run time as the library
opens it, for the tests to hold device buffers of a route call."""
import ctypes
import os

READY, NO_DRIVER, NO_DEVICE = 'ready', 'no driver', 'no device'


class Cuda:
    def __init__(self, lib):
        self.lib = lib
        for name, argtypes in (('cuMemAlloc_v2', [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]),
                               ('cuMemFree_v2', [ctypes.c_uint64]),
                               ('cuMemcpyHtoD_v2', [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]),
                               ('cuMemcpyDtoH_v2', [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]),
                               ('cuMemsetD8_v2', [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t]),
                               ('cuCtxSynchronize', [])):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int

    def _check(self, what, result):
        if result != 0:
            raise RuntimeError(f'{what} failed with CUresult {result}')

    def alloc(self, nbytes, fill):
        """Device memory with every byte set to fill; returns its address."""
        address = ctypes.c_uint64()
        self._check('cuMemAlloc', self.lib.cuMemAlloc_v2(ctypes.byref(address), max(nbytes, 4)))
        self._check('cuMemsetD8', self.lib.cuMemsetD8_v2(address.value, fill, max(nbytes, 4)))
        return address.value

    def free(self, address):
        self.lib.cuMemFree_v2(address)

    def upload(self, host_array):
        address = self.alloc(ctypes.sizeof(host_array), 0)
        self._check('cuMemcpyHtoD', self.lib.cuMemcpyHtoD_v2(address, ctypes.addressof(host_array),
                                                               ctypes.sizeof(host_array)))
        return address

    def download(self, address, ctype, count):
        values = (ctype * count)()
        self._check('cuMemcpyDtoH', self.lib.cuMemcpyDtoH_v2(ctypes.addressof(values), address,
                                                               ctypes.sizeof(values)))
        return list(values)

    def synchronize(self):
        self._check('cuCtxSynchronize', self.lib.cuCtxSynchronize())


def open_driver():
    """(READY, Cuda, why) with device 0's primary context current, or
    (NO_DRIVER | NO_DEVICE, None, why). A driver with devices that cannot be
    set up raises: that is a broken machine, not one without a GPU."""
    path = os.environ.get('ALPHAMOE_CUDA_DRIVER') or 'libcuda.so.1'
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return NO_DRIVER, None, f'{path} cannot be opened ({e})'
    if not hasattr(lib, 'cuInit'):
        return NO_DRIVER, None, f'{path} lacks cuInit'
    result = lib.cuInit(0)
    if result != 0:
        return NO_DEVICE, None, f'cuInit failed with CUresult {result}'
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return NO_DEVICE, None, 'the driver sees no device'
    device, ctx = ctypes.c_int(), ctypes.c_void_p()
    for what, result in (('cuDeviceGet', lambda: lib.cuDeviceGet(ctypes.byref(device), 0)),
                         ('cuDevicePrimaryCtxRetain', lambda: lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device)),
                         ('cuCtxSetCurrent', lambda: lib.cuCtxSetCurrent(ctx))):
        r = result()
        if r != 0:
            raise RuntimeError(f'{count.value} CUDA devices visible but {what} failed with CUresult {r}')
    return READY, Cuda(lib), f'{count.value} CUDA devices'
