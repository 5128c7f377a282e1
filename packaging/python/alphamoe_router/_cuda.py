"""Just enough of the CUDA driver API, opened at run time as the library
opens it, to hold device memory that no framework's allocator owns: the
workspaces of route(), allocated and zeroed once and kept for the process,
and the buffers of the tests; to wait for a stream; and to list the nodes
of a captured graph (what the tests check a capture holds).
"""
import ctypes
import os
import threading

CU_STREAM_NON_BLOCKING = 0x1
CU_STREAM_CAPTURE_MODE_RELAXED = 2
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


class DriverError(RuntimeError):
    def __init__(self, what, result, name=''):
        super().__init__(f'{what} failed with CUresult {result}{" (" + name + ")" if name else ""}')
        self.result = result


class Driver:
    """The driver's functions this module needs, each raising DriverError."""

    _PROTOTYPES = {
        'cuInit': [ctypes.c_uint],
        'cuDeviceGetCount': [ctypes.POINTER(ctypes.c_int)],
        'cuDeviceGet': [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
        'cuDevicePrimaryCtxRetain': [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        'cuCtxPushCurrent_v2': [ctypes.c_void_p],
        'cuCtxPopCurrent_v2': [ctypes.POINTER(ctypes.c_void_p)],
        'cuCtxSynchronize': [],
        'cuThreadExchangeStreamCaptureMode': [ctypes.POINTER(ctypes.c_int)],
        'cuStreamCreate': [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint],
        'cuStreamSynchronize': [ctypes.c_void_p],
        'cuMemAlloc_v2': [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
        'cuMemFree_v2': [ctypes.c_uint64],
        'cuMemsetD8Async': [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p],
        'cuMemcpyHtoD_v2': [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t],
        'cuMemcpyDtoH_v2': [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t],
        'cuPointerGetAttribute': [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64],
        'cuGetErrorName': [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
        'cuGraphGetNodes': [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)],
        'cuGraphNodeGetType': [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)],
    }

    def __init__(self, path=None):
        path = path or os.environ.get('ALPHAMOE_CUDA_DRIVER') or 'libcuda.so.1'
        self.lib = ctypes.CDLL(path)  # OSError without a driver
        for name, argtypes in self._PROTOTYPES.items():
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self._contexts = {}
        self._streams = {}
        self._lock = threading.Lock()
        self.check('cuInit', self.lib.cuInit(0))

    def check(self, what, result):
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise DriverError(what, result, (name.value or b'').decode())

    def device_count(self):
        count = ctypes.c_int()
        self.check('cuDeviceGetCount', self.lib.cuDeviceGetCount(ctypes.byref(count)))
        return count.value

    def context(self, ordinal):
        """The primary context of a device, retained for the process."""
        with self._lock:
            if ordinal not in self._contexts:
                device, ctx = ctypes.c_int(), ctypes.c_void_p()
                self.check('cuDeviceGet', self.lib.cuDeviceGet(ctypes.byref(device), ordinal))
                self.check('cuDevicePrimaryCtxRetain', self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), device))
                self._contexts[ordinal] = ctx.value
            return self._contexts[ordinal]

    def pointer_device(self, address):
        """The ordinal of the device that holds a device address."""
        ordinal = ctypes.c_int()
        self.check('cuPointerGetAttribute', self.lib.cuPointerGetAttribute(
            ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address))
        return ordinal.value

    def run_in(self, ordinal, fn):
        """fn() with the device's primary context current, in relaxed stream
        capture mode: another stream of the thread may be capturing a graph
        (a first call inside torch.cuda.graph), and allocating is not part
        of what the graph should hold."""
        mode = ctypes.c_int(CU_STREAM_CAPTURE_MODE_RELAXED)
        self.check('cuThreadExchangeStreamCaptureMode', self.lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode)))
        try:
            self.check('cuCtxPushCurrent', self.lib.cuCtxPushCurrent_v2(self.context(ordinal)))
            try:
                return fn()
            finally:
                self.lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        finally:
            self.lib.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode))

    def alloc(self, ordinal, nbytes, fill=0):
        """Device memory of a device with every byte set to fill, the fill
        done on a stream of its own (no capture sees it) and waited for."""
        def work():
            address = ctypes.c_uint64()
            self.check('cuMemAlloc', self.lib.cuMemAlloc_v2(ctypes.byref(address), max(nbytes, 1)))
            try:
                stream = self._streams.get(ordinal)
                if stream is None:
                    handle = ctypes.c_void_p()
                    self.check('cuStreamCreate', self.lib.cuStreamCreate(ctypes.byref(handle), CU_STREAM_NON_BLOCKING))
                    stream = self._streams[ordinal] = handle.value
                self.check('cuMemsetD8Async', self.lib.cuMemsetD8Async(address.value, fill, max(nbytes, 1), stream))
                self.check('cuStreamSynchronize', self.lib.cuStreamSynchronize(stream))
            except DriverError:
                self.lib.cuMemFree_v2(address.value)
                raise
            return address.value
        return self.run_in(ordinal, work)

    def free(self, ordinal, address):
        self.run_in(ordinal, lambda: self.lib.cuMemFree_v2(address))

    def upload(self, ordinal, host_array):
        address = self.alloc(ordinal, ctypes.sizeof(host_array))
        self.run_in(ordinal, lambda: self.check('cuMemcpyHtoD', self.lib.cuMemcpyHtoD_v2(
            address, ctypes.addressof(host_array), ctypes.sizeof(host_array))))
        return address

    def download(self, ordinal, address, ctype, count):
        values = (ctype * max(count, 1))()
        self.run_in(ordinal, lambda: self.check('cuMemcpyDtoH', self.lib.cuMemcpyDtoH_v2(
            ctypes.addressof(values), address, ctypes.sizeof(ctype) * count)))
        return list(values[:count])

    def stream_synchronize(self, ordinal, stream):
        """Waits for the work queued on a stream of a device (0 or 1: its
        legacy default stream, 2: the thread's default stream)."""
        self.run_in(ordinal, lambda: self.check('cuStreamSynchronize', self.lib.cuStreamSynchronize(stream or None)))

    def graph_node_types(self, graph):
        """The CUgraphNodeType of every node of a CUgraph (a cudaGraph_t)."""
        count = ctypes.c_size_t()
        self.check('cuGraphGetNodes', self.lib.cuGraphGetNodes(graph, None, ctypes.byref(count)))
        nodes = (ctypes.c_void_p * max(count.value, 1))()
        self.check('cuGraphGetNodes', self.lib.cuGraphGetNodes(graph, nodes, ctypes.byref(count)))
        types = []
        for node in nodes[:count.value]:
            kind = ctypes.c_int()
            self.check('cuGraphNodeGetType', self.lib.cuGraphNodeGetType(node, ctypes.byref(kind)))
            types.append(kind.value)
        return types

    def synchronize(self, ordinal):
        self.run_in(ordinal, lambda: self.check('cuCtxSynchronize', self.lib.cuCtxSynchronize()))


_driver = None
_driver_lock = threading.Lock()


def driver():
    """The process's Driver (OSError without libcuda.so.1, DriverError when
    cuInit fails)."""
    global _driver
    with _driver_lock:
        if _driver is None:
            _driver = Driver()
        return _driver
