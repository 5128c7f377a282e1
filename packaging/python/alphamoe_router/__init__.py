"""Python bindings of the AlphaMoE router (ctypes, standard library only).

The routing of a Mixture-of-Experts layer (top-k expert ids, gate weights
and the block-aligned route plan) in one GPU kernel launch, and a CPU
reference of the same contract.

On the GPU, with any CUDA array (torch, CuPy, JAX; torch in, torch out):

    router = Router(num_experts=64, top_k=4, block_m=16, max_tokens=4096)
    r = route(logits, router)        # logits [M, 64] on the GPU, M <= 4096
    r.topk_ids, r.topk_weights       # [M, 4]
    r.sorted_token_ids, r.expert_ids, r.num_tokens_post_padded

On the CPU (the contract's reference; lists, array.array or numpy):

    plan = router.route_host(logits)  # logits [M, 64]
    plan.topk_ids                     # M lists of 4 ids, best first

Every parameter, status, flag and field of alphamoe/router.h and
alphamoe/router_diagnostics.h is here: the structures are generated from
the headers (_abi.py). Every failure raises Error, whose status is a Status
and whose message is the library's or names what was wrong.
"""
import array
import ctypes
import dataclasses
import struct
import sys
import threading
import weakref

from . import _abi, _ffi
from ._abi import (FLAG_ALL, FLAG_CORRECTION_BIAS, FLAG_EXPERT_MAP, FLAG_HASH_ROUTING, FLAG_NO_RENORMALIZE,
                   FLAG_PDL, FLAG_REDUNDANT_EXPERTS, FLAG_SHARED_EXPERT, FLAG_TAIL_FILL, MAX_BLOCK_M, MAX_EXPERTS, MAX_TOP_K,
                   LogitsType, Scoring, Specialization, Status)
from ._ffi import lib

__all__ = ['Status', 'Scoring', 'LogitsType', 'Specialization', 'Error', 'Router', 'Plan', 'DeviceBuffers',
           'Routing', 'route', 'release_workspaces', 'version', 'version_number', 'kernel_names', 'entry_point_names', 'kernel_images', 'device_count',
           'device_describe', 'device_attributes', 'specialization_name', 'library_path',
           'FLAG_SHARED_EXPERT', 'FLAG_TAIL_FILL', 'FLAG_PDL', 'FLAG_NO_RENORMALIZE', 'FLAG_CORRECTION_BIAS',
           'FLAG_EXPERT_MAP', 'FLAG_HASH_ROUTING', 'FLAG_REDUNDANT_EXPERTS', 'FLAG_ALL', 'MAX_EXPERTS', 'MAX_TOP_K', 'MAX_BLOCK_M']

# Fields of alphamoe_params that hold a value of an enumeration.
_ENUM_FIELDS = {'scoring': Scoring, 'logits_type': LogitsType, 'force_specialization': Specialization}
_PARAM_FIELDS = [name for name, _ in _abi.Params._fields_ if name != 'struct_size']
_BUFFER_FIELDS = [name for name, _ in _abi.Buffers._fields_ if name != 'struct_size']
_routers_by_params = weakref.WeakValueDictionary()


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
    if status:
        raise Error(status)


def _invalid(why):
    """Error INVALID_ARGUMENT saying what was wrong, e.g. an array's shape."""
    return Error(Status.INVALID_ARGUMENT, f'{status_message(Status.INVALID_ARGUMENT).split(":")[0]}: {why}')


def _clamp(value, ctype):
    """An integer clamped to a C field's range, so that the library rejects
    an out-of-range value with its own status instead of it wrapping."""
    bits = ctypes.sizeof(ctype) * 8
    if ctype in (ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t):
        return max(0, min(2**bits - 1, value))
    return max(-2**(bits - 1), min(2**(bits - 1) - 1, value))


def version():
    """The library's version, e.g. '0.3.0'."""
    return lib.alphamoe_version_string().decode()


def version_number():
    """major * 10000 + minor * 100 + patch."""
    return lib.alphamoe_version_number()


def library_path():
    """The path the library was opened by (the bundled copy, or the SONAME)."""
    return _ffi.path


def entry_point_names():
    """The entry points the library holds, e.g. 'alphamoe_large_routed_staged_w16'."""
    return [lib.alphamoe_entry_point_name(i).decode() for i in range(lib.alphamoe_entry_point_count())]


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


def specialization_name(specialization):
    """'auto', 'tiny', 'small' or 'large'; None for other values."""
    name = lib.alphamoe_specialization_name(int(specialization))
    return None if name is None else name.decode()


def device_count():
    """CUDA devices the driver sees; Error NO_DRIVER or NO_DEVICE without one."""
    count = ctypes.c_int32()
    _check(lib.alphamoe_device_count(ctypes.byref(count)))
    return count.value


def device_describe(ordinal):
    """(name, compute capability, the image arch it would run or 0)."""
    name = ctypes.create_string_buffer(256)
    cc, arch = ctypes.c_int32(), ctypes.c_int32()
    _check(lib.alphamoe_device_describe(ordinal, name, len(name), ctypes.byref(cc), ctypes.byref(arch)))
    return name.value.decode(errors='replace'), cc.value, arch.value


def device_attributes(ordinal):
    """Every field of alphamoe_device_attributes of a device, as a dict (what
    Router.select reads)."""
    out = _ffi.sized(_abi.DeviceAttributes)
    _check(lib.alphamoe_device_attributes_query(ordinal, ctypes.byref(out)))
    return _fields(out)


def _fields(structure):
    return {name: getattr(structure, name) for name, _ in structure._fields_ if name != 'struct_size'}


def _structure(cls, values):
    """A sized structure from a dict of its fields; unknown names raise TypeError."""
    out = _ffi.sized(cls)
    known = dict(cls._fields_)
    for name, value in values.items():
        if name not in known or name == 'struct_size':
            raise TypeError(f'{cls.__doc__} has no field {name!r}')
        setattr(out, name, value if known[name] is ctypes.c_void_p else _clamp(int(value), known[name]))
    return out


DeviceBuffers = dataclasses.make_dataclass(
    'DeviceBuffers', [(name, int, dataclasses.field(default=0)) for name in _BUFFER_FIELDS])
DeviceBuffers.__doc__ = """Device addresses (CUdeviceptr values, e.g. a torch tensor's
data_ptr()) of one call's outputs and its workspace, one field per field of
alphamoe_buffers; 0 leaves a pointer NULL. Capacities are elements, the
workspace's size bytes."""


# ---------------------------------------------------------------------------
# Host arrays: shapes are checked, never flattened behind the caller's back.

def _shape_of(values):
    """(the values as a flat sequence or buffer, shape) of a numpy array, a
    nested sequence, an array.array or a flat sequence."""
    if hasattr(values, '__array_interface__') or hasattr(values, '__array__'):
        import numpy
        values = numpy.asarray(values)
        return values, values.shape
    if isinstance(values, array.array):
        return values, (len(values),)
    values = list(values)
    if values and not isinstance(values[0], (int, float)) and hasattr(values[0], '__len__'):
        rows = [list(row) for row in values]
        widths = {len(row) for row in rows}
        if len(widths) != 1:
            raise _invalid(f'logits are rows of {sorted(widths)} values: every row must have the same length')
        return rows, (len(rows), widths.pop())
    return values, (len(values),)


# logits_type: (struct format, numpy dtype name taken bitwise, element bytes).
_HOST_TYPES = {LogitsType.F32: ('f', 'float32', 4), LogitsType.F16: ('e', 'float16', 2),
               LogitsType.BF16: (None, 'bfloat16', 2)}


def _bf16_bits(bits):
    """fp32 bits -> bf16 bits, rounded to nearest even (a NaN stays a NaN);
    an int, or a numpy array of them."""
    nan = ((bits & 0x7F800000) == 0x7F800000) & ((bits & 0x7FFFFF) != 0)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    quiet = ((bits >> 16) | 0x40) & 0xFFFF
    return quiet * nan + rounded * (1 - nan)


def _host_logits(router, logits, num_tokens):
    """(ctypes buffer of the logits in the router's type and row stride,
    rows it holds, rows to route)."""
    e, stride = router.params['num_experts'], router.params['logits_row_stride']
    logits_type = LogitsType(router.params['logits_type'])
    fmt, exact_dtype, size = _HOST_TYPES[logits_type]
    values, shape = _shape_of(logits)
    if len(shape) == 2:
        if shape[1] not in (e, stride):
            want = f'(M, {e})' + (f' or (M, {stride})' if stride != e else '')
            raise _invalid(f'logits of shape {tuple(shape)} do not fit a router of {e} experts: '
                           f'expected {want}')
        rows, width = shape
    elif len(shape) == 1:
        n = shape[0]
        if n % stride == 0:
            rows = n // stride
        elif n >= e and (n - e) % stride == 0:
            rows = (n - e) // stride + 1
        else:
            raise _invalid(f'logits of shape ({n},) are not whole rows of {e} experts '
                           f'(row stride {stride}): pass an array of shape (M, {e})')
        width = None
    else:
        raise _invalid(f'logits of shape {tuple(shape)}: expected (M, {e})')
    num_tokens = rows if num_tokens is None else int(num_tokens)
    if num_tokens < 0 or num_tokens > router.params['max_tokens']:
        raise Error(Status.NUM_TOKENS)
    if num_tokens > rows:
        raise _invalid(f'logits of shape {tuple(shape)} hold {rows} tokens, {num_tokens} asked for')
    count = num_tokens * stride
    out = (ctypes.c_uint8 * max(count * size, 1))()
    if hasattr(values, 'dtype'):  # numpy
        import numpy
        if values.dtype.name == exact_dtype or (logits_type == LogitsType.BF16 and values.dtype.name == 'uint16'):
            source = values.view(numpy.uint16 if size == 2 else numpy.float32)
        elif logits_type == LogitsType.BF16:
            bits = numpy.asarray(values, dtype=numpy.float32).view(numpy.uint32).astype(numpy.int64)
            source = _bf16_bits(bits).astype(numpy.uint16)
        else:
            source = numpy.asarray(values, dtype=exact_dtype)
        dest = numpy.frombuffer(out, dtype=source.dtype, count=count)
        if width is None:
            n = min(count, source.size)
            dest[:n] = source.reshape(-1)[:n]
        else:
            dest.reshape(num_tokens, stride)[:, :width] = source[:num_tokens]
            dest.reshape(num_tokens, stride)[:, width:] = 0
        return out, num_tokens
    flat = ([x for row in values[:num_tokens] for x in list(row) + [0.0] * (stride - width)]
            if width is not None else list(values[:count]))
    if fmt is None:
        packed = struct.pack(f'<{len(flat)}H', *(_bf16_bits(struct.unpack('<I', struct.pack('<f', float(x)))[0])
                                                  for x in flat))
    else:
        packed = struct.pack(f'<{len(flat)}{fmt}', *(float(x) for x in flat))
    ctypes.memmove(out, packed, len(packed))
    return out, num_tokens


def _host_vector(values, ctype, length, what):
    """A ctypes array of exactly `length` values of a [E] input."""
    flat, shape = _shape_of(values)
    if tuple(shape) != (length,):
        raise _invalid(f'{what} of shape {tuple(shape)}: expected ({length},)')
    convert = float if ctype is ctypes.c_float else int
    return (ctype * max(length, 1))(*(convert(x) for x in (flat.tolist() if hasattr(flat, 'tolist') else flat)))


class Plan:
    """Every output of a call in host memory, in buffers sized for a
    router's max_tokens (reused by Router.route_host_into). topk_ids,
    topk_weights and pair_to_sorted are [M][k] (pair p = t*k + j is
    [t][j]); the plan arrays are flat lists of what the last call wrote."""

    def __init__(self, router):
        p, z = router.params, router.sizes
        self.top_k, self.block_m, self.num_experts = p['top_k'], p['block_m'], p['num_experts']
        self.local_experts = p['local_expert_count']
        self._params = dict(p)
        self.num_tokens = 0
        self._ids = (ctypes.c_int32 * max(z['topk_ids'], 1))()
        self._weights = (ctypes.c_float * max(z['topk_weights'], 1))()
        self._sorted = (ctypes.c_int32 * max(z['sorted_token_ids'], 1))()
        self._blocks = (ctypes.c_int32 * max(z['expert_ids'], 1))()
        self._live = ctypes.c_int32(0)
        self._counts = (ctypes.c_int32 * z['expert_counts'])()
        self._offsets = (ctypes.c_int32 * z['expert_offsets'])()
        self._pairs = (ctypes.c_int32 * max(z['pair_to_sorted'], 1))()
        self._capacity = (z['sorted_token_ids'], z['expert_ids'])

    def _rows(self, buf):
        k = self.top_k
        return [list(buf[t * k:(t + 1) * k]) for t in range(self.num_tokens)]

    @property
    def num_tokens_post_padded(self):
        """The live length of the plan."""
        return self._live.value if 0 <= self._live.value <= self._capacity[0] else 0

    @property
    def topk_ids(self):
        """[M][k] global expert ids, best first."""
        return self._rows(self._ids)

    @property
    def topk_weights(self):
        """[M][k] gate weights."""
        return self._rows(self._weights)

    @property
    def pair_to_sorted(self):
        """[M][k]: where each pair went in sorted_token_ids, -1 for pairs of other ranks."""
        return self._rows(self._pairs)

    @property
    def sorted_token_ids(self):
        """The live plan: pairs grouped by local expert, padded with M * k."""
        return list(self._sorted[:self.num_tokens_post_padded])

    @property
    def expert_ids(self):
        """The local expert of each live block."""
        return list(self._blocks[:self.num_tokens_post_padded // self.block_m])

    @property
    def expert_counts(self):
        """[L] pairs per local expert."""
        return list(self._counts)

    @property
    def expert_offsets(self):
        """[L + 1] group starts; the last is the live length."""
        return list(self._offsets)

    @property
    def sorted_token_ids_buffer(self):
        """The whole sorted_token_ids buffer, capacity included."""
        return list(self._sorted[:self._capacity[0]])

    @property
    def expert_ids_buffer(self):
        """The whole expert_ids buffer, capacity included."""
        return list(self._blocks[:self._capacity[1]])

    def fill(self, id_value, weight):
        """Sets every element of every buffer, e.g. to see what a call leaves untouched."""
        for buf in (self._ids, self._sorted, self._blocks, self._counts, self._offsets, self._pairs):
            ctypes.memmove(buf, (ctypes.c_int32 * len(buf))(*([id_value] * len(buf))), ctypes.sizeof(buf))
        for i in range(len(self._weights)):
            self._weights[i] = weight
        self._live.value = id_value

    def as_numpy(self):
        """The live outputs as numpy arrays (needs numpy): topk_ids,
        topk_weights and pair_to_sorted shaped [M, k], the rest 1-D."""
        import numpy
        m, k = self.num_tokens, self.top_k
        out = {}
        for name, buf, dtype in (('topk_ids', self._ids, numpy.int32), ('topk_weights', self._weights, numpy.float32),
                                 ('pair_to_sorted', self._pairs, numpy.int32)):
            out[name] = numpy.array(buf[:m * k], dtype=dtype).reshape(m, k)
        for name in ('sorted_token_ids', 'expert_ids', 'expert_counts', 'expert_offsets'):
            out[name] = numpy.array(getattr(self, name), dtype=numpy.int32)
        out['num_tokens_post_padded'] = numpy.array([self.num_tokens_post_padded], dtype=numpy.int32)
        return out

    def _fits(self, router):
        z = router.sizes
        return (self._params == router.params and len(self._ids) >= z['topk_ids']
                and self._capacity == (z['sorted_token_ids'], z['expert_ids'])
                and len(self._counts) == z['expert_counts'] and len(self._pairs) >= z['pair_to_sorted'])

    def _buffers(self):
        b = _ffi.sized(_abi.Buffers)
        for field, buf in (('topk_ids', self._ids), ('topk_weights', self._weights),
                           ('sorted_token_ids', self._sorted), ('expert_ids', self._blocks),
                           ('num_tokens_post_padded', self._live), ('expert_counts', self._counts),
                           ('expert_offsets', self._offsets), ('pair_to_sorted', self._pairs)):
            setattr(b, field, ctypes.addressof(buf))
        b.sorted_token_ids_capacity, b.expert_ids_capacity = self._capacity
        return b


class Router:
    """A validated, immutable parameter set (alphamoe_router).

    Router(num_experts, top_k, block_m, max_tokens, flags=0, logits_row_stride=0,
           **fields) takes every field of alphamoe_params by its name:
    scoring (Scoring or 'softmax'/'sigmoid'/'sqrt_softplus'), logits_type (LogitsType or
    'f32'/'bf16'/'f16'), num_groups, topk_groups, routed_scaling_factor,
    local_expert_begin, local_expert_count, force_specialization. `params`
    holds them normalized (alphamoe_router_get_params), `sizes` the elements
    of every output and the workspace's bytes (alphamoe_router_sizes)."""

    def __init__(self, num_experts, top_k, block_m, max_tokens, flags=0, logits_row_stride=0, **fields):
        values = dict(num_experts=num_experts, top_k=top_k, block_m=block_m, max_tokens=max_tokens,
                      flags=flags, logits_row_stride=logits_row_stride, **fields)
        p = _ffi.sized(_abi.Params)
        types = dict(_abi.Params._fields_)
        for name, value in values.items():
            if name not in types or name == 'struct_size':
                raise TypeError(f'Router() got an unknown field {name!r}; alphamoe_params has '
                                + ', '.join(_PARAM_FIELDS))
            if name in _ENUM_FIELDS and isinstance(value, str):
                try:
                    value = _ENUM_FIELDS[name][value.upper()]
                except KeyError:
                    raise Error(Status.SCORING if name == 'scoring' else
                                Status.LOGITS_TYPE if name == 'logits_type' else Status.SPECIALIZATION,
                                f'{name}={value!r}: one of ' +
                                ', '.join(m.name.lower() for m in _ENUM_FIELDS[name])) from None
            if types[name] is ctypes.c_float:
                setattr(p, name, float(value))
                continue
            value = int(value)
            if name == 'flags' and not 0 <= value < 2**32:
                raise Error(Status.FLAGS)
            setattr(p, name, _clamp(value, types[name]))
        handle = ctypes.c_void_p()
        _check(lib.alphamoe_router_create(ctypes.byref(p), ctypes.byref(handle)))
        self._handle = handle
        normalized = _ffi.sized(_abi.Params)
        sizes = _ffi.sized(_abi.Sizes)
        _check(lib.alphamoe_router_get_params(handle, ctypes.byref(normalized)))
        _check(lib.alphamoe_router_sizes(handle, ctypes.byref(sizes)))
        self.params = _fields(normalized)
        for name, enum_type in _ENUM_FIELDS.items():
            if name in self.params:
                try:
                    self.params[name] = enum_type(self.params[name])
                except ValueError:
                    pass
        self.sizes = {name: value.elements if isinstance(value, _abi.Extent) else value
                      for name, value in _fields(sizes).items()}
        self.sizes['workspace_bytes'] = sizes.workspace.bytes
        # Everything route() needs per call, computed once.
        self._key = tuple(struct.unpack('<I', struct.pack('<f', v))[0] if isinstance(v, float) else int(v)
                          for v in (self.params[name] for name in _PARAM_FIELDS))
        self._address = handle.value
        self._layouts = {}
        self._local = threading.local()
        self._torch = None
        # The router as the torch op names it (torch_ops.router_of finds it).
        self._op_params = ','.join(str(v) for v in self._key)
        _routers_by_params.setdefault(self._op_params, self)

    def __del__(self):
        handle = getattr(self, '_handle', None)
        if handle is not None and handle.value:
            lib.alphamoe_router_destroy(handle)
            self._handle = None

    def __repr__(self):
        return 'Router(' + ', '.join(f'{k}={v!r}' for k, v in self.params.items()) + ')'

    def __call__(self, logits, **kwargs):
        """route(logits, self, **kwargs)."""
        return route(logits, self, **kwargs)

    def plan(self):
        """Host buffers for every output of this router."""
        return Plan(self)

    def select(self, num_tokens, device=0):
        """Which specialization, grid, block and image a call of num_tokens
        would use (alphamoe_router_select), as a dict; device is an ordinal
        or a dict of device attributes (device_attributes() gives one)."""
        attrs = device if isinstance(device, dict) else device_attributes(device)
        out = _ffi.sized(_abi.Selection)
        _check(lib.alphamoe_router_select(self._handle, _clamp(int(num_tokens), ctypes.c_int32),
                                          ctypes.byref(_structure(_abi.DeviceAttributes, attrs)),
                                          ctypes.byref(out)))
        result = _fields(out)
        result['specialization'] = Specialization(result['specialization'])
        return result

    def route_host(self, logits, num_tokens=None, correction_bias=None, expert_map=None, token_ids=None,
                   hash_table=None, logical_to_physical=None, replica_count=None, physical_load=None):
        """Routes rows of logits [M, E] on the CPU (the contract's reference)
        into a new Plan; num_tokens defaults to the rows logits holds."""
        plan = Plan(self)
        self.route_host_into(logits, plan, num_tokens, correction_bias, expert_map, token_ids, hash_table,
                             logical_to_physical, replica_count, physical_load)
        return plan

    def route_host_into(self, logits, plan, num_tokens=None, correction_bias=None, expert_map=None, token_ids=None,
                        hash_table=None, logical_to_physical=None, replica_count=None, physical_load=None):
        """route_host reusing plan's buffers; on error nothing in plan changed.
        logits: [M, E] (or [M, row stride]), or flat whole rows; fp32 values
        for an f32 router, float16 for f16, bfloat16 or raw uint16 bits for
        bf16 (other values are rounded to nearest even). correction_bias
        fp32 [E] and expert_map int32 [E] go with their flags, and with
        FLAG_HASH_ROUTING token_ids int32 [M] and hash_table int32
        [vocab_size, k] (or flat). With FLAG_REDUNDANT_EXPERTS,
        logical_to_physical int32 [E * replica_slots] (flat) and
        replica_count int32 [E]; physical_load, a mutable sequence of
        num_physical_experts ints, gets the pairs per physical expert added
        in place. With FLAG_EXPERT_MAP and redundant experts expert_map has
        num_physical_experts entries."""
        if not plan._fits(self):
            raise _invalid('the plan was made for another router')
        values, num_tokens = _host_logits(self, logits, num_tokens)
        buffers = plan._buffers()
        keep = self._flavour_inputs(buffers, correction_bias, expert_map, _host_vector)
        keep += self._hash_inputs(buffers, num_tokens, token_ids, hash_table)
        keep += self._replica_inputs(buffers, logical_to_physical, replica_count, physical_load)
        _check(lib.alphamoe_route_host(self._handle, num_tokens, ctypes.addressof(values), ctypes.byref(buffers)))
        if physical_load is not None:  # the load's copy is the last input kept
            physical_load[:] = list(keep[-1])
        del keep
        plan.num_tokens = num_tokens

    def _flavour_inputs(self, buffers, correction_bias, expert_map, convert):
        """Sets buffers.correction_bias and .expert_map from inputs of [E]
        values, which must come with their flags; returns what keeps them alive."""
        e, flags = self.params['num_experts'], self.params['flags']
        keep = []
        for field, value, flag, ctype in (('correction_bias', correction_bias, FLAG_CORRECTION_BIAS, ctypes.c_float),
                                          ('expert_map', expert_map, FLAG_EXPERT_MAP, ctypes.c_int32)):
            if value is None:
                continue
            if not flags & flag:
                raise _invalid(f'{field} given to a router without ALPHAMOE_FLAG_{field.upper()}')
            # The map is over the experts topk_ids name: the physical ones with redundant experts.
            routed = self.params['num_physical_experts'] if flags & FLAG_REDUNDANT_EXPERTS else e
            converted = convert(value, ctype, routed if field == 'expert_map' else e, field)
            keep.append(converted)
            setattr(buffers, field, ctypes.addressof(converted) if isinstance(converted, ctypes.Array)
                    else converted)
        return keep

    def _replica_inputs(self, buffers, logical_to_physical, replica_count, physical_load):
        """Sets the replica tables and physical_load of buffers from host
        inputs, which must come with FLAG_REDUNDANT_EXPERTS; returns what
        keeps them alive, the load's copy last."""
        if logical_to_physical is None and replica_count is None and physical_load is None:
            return []
        p = self.params
        if not p['flags'] & FLAG_REDUNDANT_EXPERTS:
            raise _invalid('replica tables given to a router without ALPHAMOE_FLAG_REDUNDANT_EXPERTS')
        e, r, n = p['num_experts'], p['replica_slots'], p['num_physical_experts']
        kept = []
        for field, value, length in (('logical_to_physical', logical_to_physical, e * r),
                                     ('replica_count', replica_count, e), ('physical_load', physical_load, n)):
            if value is not None:
                kept.append(_host_vector(value, ctypes.c_int32, length, field))
                setattr(buffers, field, ctypes.addressof(kept[-1]))
        return kept

    def _hash_inputs(self, buffers, num_tokens, token_ids, hash_table):
        """Sets buffers.token_ids and .hash_table from host inputs, which must
        come with FLAG_HASH_ROUTING; returns what keeps them alive."""
        if token_ids is None and hash_table is None:
            return []
        if not self.params['flags'] & FLAG_HASH_ROUTING:
            raise _invalid('token_ids or hash_table given to a router without ALPHAMOE_FLAG_HASH_ROUTING')
        keep = []
        if token_ids is not None:
            keep.append(_host_vector(token_ids, ctypes.c_int32, num_tokens, 'token_ids'))
            buffers.token_ids = ctypes.addressof(keep[-1])
        if hash_table is not None:
            entries = self.params['vocab_size'] * self.params['top_k']
            flat, shape = _shape_of(hash_table)
            if tuple(shape) not in ((self.params['vocab_size'], self.params['top_k']), (entries,)):
                raise _invalid(f'hash_table of shape {tuple(shape)}: expected '
                               f'({self.params["vocab_size"]}, {self.params["top_k"]})')
            values = (flat.reshape(-1).tolist() if hasattr(flat, 'reshape') else
                      [x for row in flat for x in row] if len(shape) == 2 else list(flat))
            keep.append(_host_vector(values, ctypes.c_int32, entries, 'hash_table'))
            buffers.hash_table = ctypes.addressof(keep[-1])
        return keep

    def route(self, num_tokens, logits, buffers, stream=0):
        """One kernel launch on `stream` (0: the current context's default
        stream), asynchronous, with raw device addresses. `logits` is a
        device address of num_tokens rows; `buffers` a DeviceBuffers of
        device memory of the stream's context, alive until the launch
        completes (the workspace zeroed once). route(tensor, router) does
        all of this for CUDA arrays. Raises Error NO_DRIVER or NO_DEVICE on
        a machine without a GPU."""
        b = _ffi.sized(_abi.Buffers)
        for name in _BUFFER_FIELDS:
            setattr(b, name, getattr(buffers, name) or (None if dict(_abi.Buffers._fields_)[name] is ctypes.c_void_p
                                                       else 0))
        _check(lib.alphamoe_route(self._handle, _clamp(int(num_tokens), ctypes.c_int32), logits or None,
                                  ctypes.byref(b), stream or None))


from . import _arrays  # noqa: E402 (it uses the names above)
from ._arrays import Routing, release_workspaces, route  # noqa: E402

if 'torch' in sys.modules:  # else the first tensor route() sees binds torch
    _arrays._torch_setup()
