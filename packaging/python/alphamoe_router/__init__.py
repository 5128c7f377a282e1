"""Python bindings of libalphamoe_router.so.0 (ctypes, standard library only).

The routing of a Mixture-of-Experts layer (top-k expert ids, gate weights
and the block-aligned route plan) in one GPU kernel launch, and a CPU
reference of the same contract:

    router = Router(num_experts=64, top_k=4, block_m=16, max_tokens=2)
    plan = router.route_host(logits)          # 2 * 64 floats, row-major
    plan.topk_ids, plan.topk_weights, plan.sorted_token_ids, plan.expert_ids

Logits may be any sequence of numbers, an array.array('f'), or a numpy
array (numpy is optional). Every failure raises Error, whose status is a
Status and whose message is the library's.
"""
import array
import ctypes
import enum
from dataclasses import dataclass

from . import _ffi
from ._ffi import lib

__all__ = ['Status', 'Error', 'Router', 'Plan', 'DeviceBuffers', 'version', 'version_number',
           'kernel_names', 'kernel_images', 'device_count',
           'FLAG_SHARED_EXPERT', 'FLAG_TAIL_FILL', 'FLAG_PDL']

FLAG_SHARED_EXPERT = 0x1  # slot top_k-1 is always expert num_experts-1
FLAG_TAIL_FILL = 0x2      # sentinel and -1 from the live length up to capacity
FLAG_PDL = 0x4            # programmatic dependent launch (sm_90 and newer)

_INT32_MAX = 2**31 - 1


class Status(enum.IntEnum):
    OK = 0
    NULL_POINTER = 1
    STRUCT_SIZE = 2
    NUM_EXPERTS = 3
    TOP_K = 4
    BLOCK_M = 5
    MAX_TOKENS = 6
    NUM_TOKENS = 7
    SHARED_EXPERT = 8
    ROW_STRIDE = 9
    FLAGS = 10
    SPECIALIZATION = 11
    ALIGNMENT = 12
    CAPACITY = 13
    WORKSPACE = 14
    NO_DRIVER = 15
    NO_DEVICE = 16
    NO_IMAGE = 17
    UNSUPPORTED_DEVICE = 18
    CUDA = 19
    OUT_OF_MEMORY = 20
    INVALID_ARGUMENT = 21

    @property
    def message(self):
        """The library's fixed message, e.g. 'ALPHAMOE_ERROR_TOP_K: ...'."""
        return status_message(self)


def status_message(status):
    return lib.alphamoe_status_string(int(status)).decode()


class Error(Exception):
    """A failed call. `status` is a Status (a plain int for a status newer
    than this module), `message` says why."""

    def __init__(self, status, message=None):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.message = message or status_message(status)
        super().__init__(self.message)


def _check(status):
    if status != Status.OK:
        raise Error(status)


def _invalid(why):
    return Error(Status.INVALID_ARGUMENT, f'{status_message(Status.INVALID_ARGUMENT)}: {why}')


def _int32(n):
    """Counts beyond int32 saturate, so the library rejects them with its own status."""
    return max(-_INT32_MAX - 1, min(_INT32_MAX, int(n)))


def version():
    """The library's version, e.g. '0.1.0'."""
    return lib.alphamoe_version_string().decode()


def version_number():
    """major * 10000 + minor * 100 + patch."""
    return lib.alphamoe_version_number()


def kernel_names():
    """The kernels the library holds, e.g. 'tiny_routed'."""
    names = []
    while True:
        name = lib.alphamoe_kernel_name(len(names))
        if name is None:
            return names
        names.append(name.decode())


def kernel_images(index):
    """The architectures (90, 100, 103) embedded for kernel `index`."""
    count = ctypes.c_int32()
    _check(lib.alphamoe_kernel_images(index, None, 0, ctypes.byref(count)))
    archs = (ctypes.c_int32 * max(count.value, 1))()
    _check(lib.alphamoe_kernel_images(index, archs, count.value, ctypes.byref(count)))
    return list(archs[:count.value])


def device_count():
    """CUDA devices the driver sees; Error NO_DRIVER or NO_DEVICE without one."""
    count = ctypes.c_int32()
    _check(lib.alphamoe_device_count(ctypes.byref(count)))
    return count.value


def _float32_buffer(logits):
    """The logits as a ctypes float array (a copy), from a sequence, an
    array.array('f') or a numpy array."""
    if hasattr(logits, '__array_interface__'):  # numpy, without importing it
        import numpy
        logits = numpy.ascontiguousarray(logits, dtype=numpy.float32).reshape(-1)
        return (ctypes.c_float * logits.size).from_buffer_copy(logits)
    if isinstance(logits, array.array) and logits.typecode == 'f':
        return (ctypes.c_float * len(logits)).from_buffer_copy(logits)
    values = [float(x) for x in logits]
    return (ctypes.c_float * len(values))(*values)


class Plan:
    """Every output of a call in host memory, in buffers sized for a
    router's max_tokens (reused by Router.route_host_into). The properties
    are lists of what the last call wrote; pairs are p = t * top_k + j."""

    def __init__(self, router):
        p, z = router.params, router.sizes
        self.top_k, self.block_m, self.num_experts = p['top_k'], p['block_m'], p['num_experts']
        self.num_tokens = 0
        self._ids = (ctypes.c_int32 * z['topk_ids'])()
        self._weights = (ctypes.c_float * z['topk_weights'])()
        self._sorted = (ctypes.c_int32 * z['sorted_token_ids'])()
        self._blocks = (ctypes.c_int32 * z['expert_ids'])()
        self._live = ctypes.c_int32(0)
        self._counts = (ctypes.c_int32 * z['expert_counts'])()
        self._offsets = (ctypes.c_int32 * z['expert_offsets'])()
        self._pairs = (ctypes.c_int32 * z['pair_to_sorted'])()

    @property
    def num_tokens_post_padded(self):
        """The live length of the plan."""
        return self._live.value if 0 <= self._live.value <= len(self._sorted) else 0

    @property
    def topk_ids(self):
        """[num_tokens * top_k], best expert first."""
        return list(self._ids[:self.num_tokens * self.top_k])

    @property
    def topk_weights(self):
        """[num_tokens * top_k], softmax over the chosen logits."""
        return list(self._weights[:self.num_tokens * self.top_k])

    @property
    def sorted_token_ids(self):
        """The live plan: pairs grouped by expert, padded with num_tokens * top_k."""
        return list(self._sorted[:self.num_tokens_post_padded])

    @property
    def expert_ids(self):
        """The expert of each live block."""
        return list(self._blocks[:self.num_tokens_post_padded // self.block_m])

    @property
    def expert_counts(self):
        return list(self._counts)

    @property
    def expert_offsets(self):
        return list(self._offsets)

    @property
    def pair_to_sorted(self):
        return list(self._pairs[:self.num_tokens * self.top_k])

    @property
    def sorted_token_ids_buffer(self):
        """The whole sorted_token_ids buffer, capacity included."""
        return list(self._sorted)

    @property
    def expert_ids_buffer(self):
        """The whole expert_ids buffer, capacity included."""
        return list(self._blocks)

    def fill(self, id_value, weight):
        """Sets every element of every buffer, e.g. to see what a call leaves untouched."""
        for buf in (self._ids, self._sorted, self._blocks, self._counts, self._offsets, self._pairs):
            ctypes.memmove(buf, (ctypes.c_int32 * len(buf))(*([id_value] * len(buf))), ctypes.sizeof(buf))
        for i in range(len(self._weights)):
            self._weights[i] = weight
        self._live.value = id_value

    def as_numpy(self):
        """The live outputs as numpy arrays (needs numpy)."""
        import numpy
        return {name: numpy.array(getattr(self, name), dtype=numpy.float32 if name == 'topk_weights' else numpy.int32)
                for name in ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids',
                             'expert_counts', 'expert_offsets', 'pair_to_sorted')}

    def _fits(self, router):
        p, z = router.params, router.sizes
        return ((self.top_k, self.block_m, self.num_experts) == (p['top_k'], p['block_m'], p['num_experts'])
                and len(self._ids) >= z['topk_ids'] and len(self._sorted) >= z['sorted_token_ids']
                and len(self._blocks) >= z['expert_ids'] and len(self._pairs) >= z['pair_to_sorted']
                and len(self._counts) >= z['expert_counts'] and len(self._offsets) >= z['expert_offsets'])

    def _buffers(self):
        b = _ffi.sized(_ffi.Buffers)
        b.topk_ids = ctypes.addressof(self._ids)
        b.topk_weights = ctypes.addressof(self._weights)
        b.sorted_token_ids = ctypes.addressof(self._sorted)
        b.expert_ids = ctypes.addressof(self._blocks)
        b.num_tokens_post_padded = ctypes.addressof(self._live)
        b.expert_counts = ctypes.addressof(self._counts)
        b.expert_offsets = ctypes.addressof(self._offsets)
        b.pair_to_sorted = ctypes.addressof(self._pairs)
        b.sorted_token_ids_capacity = len(self._sorted)
        b.expert_ids_capacity = len(self._blocks)
        return b


@dataclass
class DeviceBuffers:
    """Device addresses (CUdeviceptr values, e.g. a torch tensor's
    data_ptr()) of one call's outputs and its workspace; 0 skips an
    optional output. Capacities are elements, the workspace's size bytes."""
    topk_ids: int
    topk_weights: int
    sorted_token_ids: int
    sorted_token_ids_capacity: int
    expert_ids: int
    expert_ids_capacity: int
    num_tokens_post_padded: int
    workspace: int
    workspace_bytes: int
    expert_counts: int = 0
    expert_offsets: int = 0
    pair_to_sorted: int = 0


class Router:
    """A validated, immutable parameter set (alphamoe_router)."""

    def __init__(self, num_experts, top_k, block_m, max_tokens, flags=0, logits_row_stride=0):
        p = _ffi.sized(_ffi.Params)
        p.num_experts, p.top_k = _int32(num_experts), _int32(top_k)
        p.block_m, p.max_tokens = _int32(block_m), _int32(max_tokens)
        p.logits_row_stride = max(-2**63, min(2**63 - 1, int(logits_row_stride)))
        p.flags = int(flags) & 0xFFFFFFFF
        if p.flags != flags:
            raise Error(Status.FLAGS)
        handle = ctypes.c_void_p()
        _check(lib.alphamoe_router_create(ctypes.byref(p), ctypes.byref(handle)))
        self._handle = handle
        normalized = _ffi.sized(_ffi.Params)
        sizes = _ffi.sized(_ffi.Sizes)
        _check(lib.alphamoe_router_get_params(self._handle, ctypes.byref(normalized)))
        _check(lib.alphamoe_router_sizes(self._handle, ctypes.byref(sizes)))
        self.params = {name: getattr(normalized, name) for name in
                       ('num_experts', 'top_k', 'block_m', 'max_tokens', 'logits_row_stride', 'flags')}
        self.sizes = {name: getattr(sizes, name).elements for name in
                      ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'expert_counts',
                       'expert_offsets', 'pair_to_sorted')}
        self.sizes['workspace_bytes'] = sizes.workspace.bytes
        self.sizes['workspace_alignment'] = sizes.workspace_alignment

    def __del__(self):
        handle = getattr(self, '_handle', None)
        if handle is not None and handle.value:
            lib.alphamoe_router_destroy(handle)
            self._handle = None

    def plan(self):
        """Host buffers for every output of this router."""
        return Plan(self)

    def route_host(self, logits, num_tokens=None):
        """Routes num_tokens rows of logits on the CPU (the contract's
        reference) into a new Plan. num_tokens defaults to the rows logits holds."""
        plan = Plan(self)
        self.route_host_into(logits, plan, num_tokens)
        return plan

    def route_host_into(self, logits, plan, num_tokens=None):
        """route_host reusing plan's buffers; on error nothing in plan changed."""
        values = _float32_buffer(logits)
        stride, experts = self.params['logits_row_stride'], self.params['num_experts']
        if num_tokens is None:
            num_tokens = 0 if len(values) < experts else (len(values) - experts) // stride + 1
        num_tokens = int(num_tokens)
        if num_tokens < 0 or num_tokens > self.params['max_tokens']:
            raise Error(Status.NUM_TOKENS)
        needed = (num_tokens - 1) * stride + experts if num_tokens else 0
        if len(values) < needed:
            raise _invalid(f'logits holds {len(values)} values, {num_tokens} tokens need {needed}')
        if not plan._fits(self):
            raise _invalid('the plan was made for another router')
        buffers = plan._buffers()
        _check(lib.alphamoe_route_host(self._handle, num_tokens, ctypes.addressof(values), ctypes.byref(buffers)))
        plan.num_tokens = num_tokens

    def route(self, num_tokens, logits, buffers, stream=0):
        """One kernel launch on `stream` (0: the current context's default
        stream), asynchronous. `logits` is a device address of num_tokens
        rows; `buffers` a DeviceBuffers of device memory of the stream's
        context, alive until the launch completes. Raises Error NO_DRIVER or
        NO_DEVICE on a machine without a GPU."""
        b = _ffi.sized(_ffi.Buffers)
        for name in ('topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'num_tokens_post_padded',
                     'expert_counts', 'expert_offsets', 'pair_to_sorted', 'workspace',
                     'sorted_token_ids_capacity', 'expert_ids_capacity', 'workspace_bytes'):
            setattr(b, name, getattr(buffers, name) or (0 if 'capacity' in name or 'bytes' in name else None))
        _check(lib.alphamoe_route(self._handle, _int32(num_tokens), logits or None, ctypes.byref(b), stream or None))
