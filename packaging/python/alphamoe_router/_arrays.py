"""route(): arrays in, arrays of the same library out.

torch tensors are read through their own attributes (the fast path); any
other CUDA array (CuPy, JAX) through DLPack, else __cuda_array_interface__.
CPU arrays (numpy, torch on the CPU) go to the CPU reference and come back
shaped exactly as the GPU's outputs. No array library is imported until an
array of it arrives.
"""
import collections
import ctypes
import sys
import threading

from . import (_abi, _cuda, _ffi, Error, LogitsType, Status, FLAG_CORRECTION_BIAS, FLAG_EXPERT_MAP, _invalid,
               status_message)

class Routing(collections.namedtuple('Routing', [
        'topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'num_tokens_post_padded',
        'expert_counts', 'expert_offsets', 'pair_to_sorted'])):
    """The outputs of one route() call, arrays of the input's library:
    topk_ids int32 [M, k], topk_weights fp32 [M, k], sorted_token_ids int32
    [capacity], expert_ids int32 [capacity / block_m], num_tokens_post_padded
    int32 [1], expert_counts int32 [L], expert_offsets int32 [L + 1],
    pair_to_sorted int32 [M, k] (the last three None with extras=False).
    With M = 0 every array is zero-filled: the library writes only
    num_tokens_post_padded then, and the counts and offsets of an empty plan
    are zeros. route(..., out=routing) routes into the arrays of one it
    made."""
    # Where route() made the arrays: (router, M, extras, device ordinal,
    # address and fields of their one allocation, the allocation itself).
    _reuse = None

_EXTRAS = ('expert_counts', 'expert_offsets', 'pair_to_sorted')
_LOGITS_DTYPE = {LogitsType.F32: 'float32', LogitsType.BF16: 'bfloat16', LogitsType.F16: 'float16'}
# Element types by DLPack (code, bits, lanes) and by __cuda_array_interface__ typestr.
_DLPACK_DTYPES = {(2, 32, 1): 'float32', (2, 16, 1): 'float16', (4, 16, 1): 'bfloat16', (0, 32, 1): 'int32'}
_TYPESTR_DTYPES = {'f4': 'float32', 'f2': 'float16', 'i4': 'int32'}
_KDLCUDA = (2, 13)  # kDLCUDA, kDLCUDAManaged


# ---------------------------------------------------------------------------
# Per router, device and stream: what a call needs, computed once.

class _Workspace:
    __slots__ = ('address', 'bytes')

    def __init__(self, address, nbytes):
        self.address, self.bytes = address, nbytes


_workspaces = {}
_workspaces_lock = threading.Lock()


def _workspace(router, device, stream):
    """The workspace of (device, stream, size): allocated and zeroed once
    (as the library requires), then reused by every call on that stream,
    whose calls never overlap."""
    nbytes = router.sizes['workspace_bytes']
    key = (device, stream, nbytes)
    ws = _workspaces.get(key)
    if ws is None:
        with _workspaces_lock:
            ws = _workspaces.get(key)
            if ws is None:
                align = max(router.sizes['workspace_alignment'], 1)
                try:
                    address = _cuda.driver().alloc(device, nbytes + align)
                except OSError as e:
                    raise Error(Status.NO_DRIVER, f'the CUDA driver cannot be loaded ({e})') from None
                except _cuda.DriverError as e:
                    raise Error(Status.CUDA, f'allocating the workspace: {e}') from None
                ws = _workspaces[key] = _Workspace((address + align - 1) // align * align, nbytes)
    return ws


def release_workspaces():
    """Frees every cached workspace (after synchronizing each device); the
    next call allocates again. Not while a call or a captured graph that
    uses one may still run."""
    with _workspaces_lock:
        drv = _cuda.driver() if _workspaces else None
        for (device, _, _), ws in list(_workspaces.items()):
            drv.synchronize(device)
        _workspaces.clear()


class _Layout:
    """Where each output of an M-token call lies in one int32 allocation.
    sizes: the pieces a split makes (the outputs, and with `aligned` gaps
    that start each output 64 bytes aligned, as JAX expects); pieces: which
    of them are the outputs, in Routing order; fields: (alphamoe_buffers
    field, byte offset) of each output."""
    __slots__ = ('total', 'sizes', 'pieces', 'fields', 'names', 'counts')

    def __init__(self, router, m, extras, aligned):
        z, k = router.sizes, router.params['top_k']
        counts = {'topk_ids': m * k, 'topk_weights': m * k, 'sorted_token_ids': z['sorted_token_ids'],
                  'expert_ids': z['expert_ids'], 'num_tokens_post_padded': 1,
                  'expert_counts': z['expert_counts'], 'expert_offsets': z['expert_offsets'],
                  'pair_to_sorted': m * k}
        self.names = [name for name in Routing._fields if extras or name not in _EXTRAS]
        self.counts = [counts[name] for name in self.names]
        self.sizes, self.pieces, self.fields, at = [], [], [], 0
        for name, n in zip(self.names, self.counts):
            self.fields.append((name, at * 4))
            self.pieces.append(len(self.sizes))
            self.sizes.append(n)
            gap = -n % 16 if aligned else 0
            if gap:
                self.sizes.append(gap)
            at += n + gap
        self.total = at


def _layout(router, m, extras, aligned=False):
    key = (m, extras, aligned)
    layout = router._layouts.get(key)
    if layout is None:
        if len(router._layouts) > 4096:
            router._layouts.clear()
        layout = router._layouts[key] = _Layout(router, m, extras, aligned)
    return layout


def _call_buffers(router, extras):
    """This thread's alphamoe_buffers of the router for calls with or without
    the extras (capacities set once; the pointers of outputs not asked for
    stay NULL)."""
    name = 'all' if extras else 'fewer'
    b = getattr(router._local, name, None)
    if b is None:
        b = _ffi.sized(_abi.Buffers)
        b.sorted_token_ids_capacity = router.sizes['sorted_token_ids']
        b.expert_ids_capacity = router.sizes['expert_ids']
        setattr(router._local, name, b)
    return b


_route_c = _ffi.lib.alphamoe_route


def _launch(router, extras, m, logits, base, fields, ws, bias, emap, stream):
    """alphamoe_route with output `field` at base + offset for each of fields."""
    b = _call_buffers(router, extras)
    for field, offset in fields:
        setattr(b, field, base + offset)
    b.workspace, b.workspace_bytes = ws.address, ws.bytes
    b.correction_bias, b.expert_map = bias, emap
    status = _route_c(router._address, m, logits, b, stream)
    if status:
        raise Error(status)


def _check_flavour_inputs(router, bias, emap):
    flags = router.params['flags']
    for name, value, flag in (('correction_bias', bias, FLAG_CORRECTION_BIAS), ('expert_map', emap, FLAG_EXPERT_MAP)):
        if value is None and flags & flag:
            raise _invalid(f'the router has ALPHAMOE_FLAG_{name.upper()}: pass {name}')
        if value is not None and not flags & flag:
            raise _invalid(f'{name} given to a router without ALPHAMOE_FLAG_{name.upper()}')


def _check_logits_shape(router, shape, strides=None):
    """Raises unless logits of this shape and element strides are [M, E]
    (or [M, row stride]) rows at the router's row stride; returns M.
    strides None: the logits are copied, only the shape matters."""
    e, stride = router.params['num_experts'], router.params['logits_row_stride']
    if len(shape) != 2 or shape[1] not in (e, stride):
        want = f'(M, {e})' + (f' or (M, {stride})' if stride != e else '')
        raise _invalid(f'logits of shape {tuple(shape)} do not fit a router of {e} experts: expected {want}')
    m = shape[0]
    if m > router.params['max_tokens']:
        raise Error(Status.NUM_TOKENS, f'{status_message(Status.NUM_TOKENS).split(":")[0]}: logits of shape '
                                       f'{tuple(shape)}, the router\'s max_tokens is {router.params["max_tokens"]}')
    if strides is not None and ((m > 1 and strides[0] != stride) or (shape[1] > 1 and strides[1] != 1)):
        raise _invalid(f'logits of shape {tuple(shape)} with element strides {tuple(strides)}: rows must be '
                       f'contiguous, {stride} elements apart (.contiguous() makes them so)')
    return m


# ---------------------------------------------------------------------------
# torch

class _NoClass:
    pass


_TorchTensor = _NoClass  # torch.Tensor once torch is imported
_torch = None
_is_compiling = None
_op_route = None


def _torch_setup():
    """Binds torch once it has been imported (by the caller: never here)."""
    global _TorchTensor, _torch, _is_compiling, _op_route, _raw_stream, _current_device
    torch = sys.modules.get('torch')
    if torch is not None and _TorchTensor is _NoClass:
        _torch = torch
        _TorchTensor = torch.Tensor
        _is_compiling = torch.compiler.is_compiling
        _raw_stream = _raw_stream_function(torch)
        _current_device = getattr(torch._C, '_cuda_getDevice', torch.cuda.current_device)
        from . import torch_ops  # registers the op
        _op_route = torch_ops.route


def _torch_info(router):
    """What a torch call checks, cached on the router: (logits dtype, k, E,
    row stride, max_tokens, flags)."""
    info = router._torch
    if info is None:
        t, p = _torch, router.params
        dtype = {LogitsType.F32: t.float32, LogitsType.BF16: t.bfloat16, LogitsType.F16: t.float16}[
            LogitsType(p['logits_type'])]
        info = router._torch = (dtype, p['top_k'], p['num_experts'], p['logits_row_stride'], p['max_tokens'],
                                p['flags'] & (FLAG_CORRECTION_BIAS | FLAG_EXPERT_MAP))
    return info


def _raw_stream_function(torch):
    fn = getattr(torch._C, '_cuda_getCurrentRawStream', None)
    return fn if fn is not None else (lambda device: torch.cuda.current_stream(device).cuda_stream)


_raw_stream = None
_current_device = None


def _torch_vector(t, name, dtype, e, device):
    if not isinstance(t, _TorchTensor) or t.dtype != dtype or tuple(t.shape) != (e,) or t.device != device \
            or (e > 1 and t.stride(0) != 1):
        what = (f'{type(t).__name__}' if not isinstance(t, _TorchTensor) else
                f'{t.dtype} of shape {tuple(t.shape)} on {t.device}')
        raise _invalid(f'{name} is {what}: expected a contiguous {dtype} tensor of shape ({e},) on {device}')
    return t.data_ptr()


def _reused(out, router, m, extras, device):
    """(base, fields) of out's allocation (Routing._reuse), where route()
    made out for a call like this one."""
    r = getattr(out, '_reuse', None)
    if r is None or r[0] is not router or r[1] != m or r[2] != extras or r[3] != device:
        raise _invalid('out= takes a Routing that route() returned for this router, as many tokens, the same '
                       f'extras and device (here M={m}, extras={extras}, device {device})')
    return r[4], r[5]


def _route_torch(logits, router, bias, emap, extras, separate=False, out=None):
    if not separate and _is_compiling():
        # Inside torch.compile the op stands for the call (its fake
        # implementation gives the shapes); nothing above this line may read
        # a module, which torch.compile cannot guard.
        if out is not None:
            raise _invalid('out= is not for torch.compile, whose graphs own their outputs')
        return _op_route(logits, router, bias, emap, extras)
    torch = _torch
    dtype, k, e, stride, max_tokens, flavour_inputs = router._torch or _torch_info(router)
    if logits.dtype is not dtype:
        raise _invalid(f'logits are {logits.dtype}, the router\'s logits_type is '
                       f'{LogitsType(router.params["logits_type"]).name} ({dtype})')
    if not logits.is_cuda:
        if out is not None:
            raise _invalid('out= takes the arrays of a GPU call: these logits are on the CPU')
        return _route_host_arrays(logits, router, bias, emap, extras, _TorchOut)
    shape, strides = logits.shape, logits.stride()
    if (len(shape) != 2 or (shape[1] != e and shape[1] != stride) or shape[0] > max_tokens
            or (shape[0] > 1 and strides[0] != stride) or (shape[1] > 1 and strides[1] != 1)):
        _check_logits_shape(router, shape, strides)  # raises, saying what is wrong
    m = shape[0]
    index = logits.get_device()
    bias_ptr = emap_ptr = None
    if flavour_inputs or bias is not None or emap is not None:
        _check_flavour_inputs(router, bias, emap)
        device = logits.device
        bias_ptr = None if bias is None else _torch_vector(bias, 'correction_bias', torch.float32, e, device)
        emap_ptr = None if emap is None else _torch_vector(emap, 'expert_map', torch.int32, e, device)
    stream = _raw_stream(index)
    ws = _workspaces.get((index, stream, router.sizes['workspace_bytes'])) or _workspace(router, index, stream)
    if out is not None:
        base, fields = _reused(out, router, m, extras, index)
        result = out
    else:
        layout = _layout(router, m, extras)
        new = torch.empty if m else torch.zeros  # M = 0 writes num_tokens_post_padded only
        if separate:  # outputs that alias nothing else (a custom op's results)
            p = [new(n, dtype=torch.int32, device=index) for n in layout.counts]
            base, fields = 0, [(name, piece.data_ptr()) for name, piece in zip(layout.names, p)]
        else:
            buf = new(layout.total, dtype=torch.int32, device=index)
            base, fields = buf.data_ptr(), layout.fields
            p = buf.split_with_sizes(layout.sizes)
        result = Routing(p[0].view(m, k), p[1].view(torch.float32).view(m, k), p[2], p[3], p[4],
                         *((p[5], p[6], p[7].view(m, k)) if extras else (None, None, None)))
        if not separate:
            result._reuse = (router, m, extras, index, base, fields, buf)
    if stream == 0 and index != _current_device():
        # The default stream is the current context's: make it the logits'.
        with torch.cuda.device(index):
            _launch(router, extras, m, logits.data_ptr(), base, fields, ws, bias_ptr, emap_ptr, stream)
    else:
        _launch(router, extras, m, logits.data_ptr(), base, fields, ws, bias_ptr, emap_ptr, stream)
    return result


class _TorchOut:
    @staticmethod
    def from_numpy(array):
        return _torch.from_numpy(array)

    @staticmethod
    def to_numpy(t, what):
        if t.dtype == _torch.bfloat16:
            return t.detach().contiguous().view(_torch.int16).numpy().view('uint16')
        return t.detach().numpy()


class _NumpyOut:
    @staticmethod
    def from_numpy(array):
        return array

    @staticmethod
    def to_numpy(a, what):
        return a


def _route_host_arrays(logits, router, bias, emap, extras, lib):
    """The CPU reference for CPU arrays, with the GPU's output shapes (the
    plan buffers at full capacity: past the live length their content is
    not part of the result, as on the GPU)."""
    import numpy
    _check_flavour_inputs(router, bias, emap)
    values = lib.to_numpy(logits, 'logits')
    _check_logits_shape(router, values.shape)
    vectors = []
    for name, value, dtype in (('correction_bias', bias, 'float32'), ('expert_map', emap, 'int32')):
        value = None if value is None else lib.to_numpy(value, name)
        if value is not None and value.dtype.name != dtype:
            raise _invalid(f'{name} is {value.dtype.name} of shape {value.shape}: expected {dtype}')
        vectors.append(value)
    plan = router.route_host(values, None, *vectors)
    m, k, z = plan.num_tokens, router.params['top_k'], router.sizes

    def array(buf, count, dtype, shape):
        return lib.from_numpy(numpy.frombuffer(buf, dtype=dtype, count=count).copy().reshape(shape))

    out = {'topk_ids': array(plan._ids, m * k, numpy.int32, (m, k)),
           'topk_weights': array(plan._weights, m * k, numpy.float32, (m, k)),
           'sorted_token_ids': array(plan._sorted, z['sorted_token_ids'], numpy.int32, -1),
           'expert_ids': array(plan._blocks, z['expert_ids'], numpy.int32, -1),
           'num_tokens_post_padded': lib.from_numpy(numpy.array([plan._live.value], dtype=numpy.int32))}
    if extras:
        out.update(expert_counts=array(plan._counts, z['expert_counts'], numpy.int32, -1),
                   expert_offsets=array(plan._offsets, z['expert_offsets'], numpy.int32, -1),
                   pair_to_sorted=array(plan._pairs, m * k, numpy.int32, (m, k)))
    return Routing(**{name: out.get(name) for name in Routing._fields})


# ---------------------------------------------------------------------------
# Other CUDA arrays: CuPy natively; anything else through DLPack or
# __cuda_array_interface__, with outputs made by torch or CuPy and handed to
# the input's library through its from_dlpack.

class _DLDevice(ctypes.Structure):
    _fields_ = [('device_type', ctypes.c_int32), ('device_id', ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [('code', ctypes.c_uint8), ('bits', ctypes.c_uint8), ('lanes', ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [('data', ctypes.c_void_p), ('device', _DLDevice), ('ndim', ctypes.c_int32),
                ('dtype', _DLDataType), ('shape', ctypes.POINTER(ctypes.c_int64)),
                ('strides', ctypes.POINTER(ctypes.c_int64)), ('byte_offset', ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


class _Described:
    """A CUDA array as route() needs it: address, shape, element strides,
    element type, device ordinal; `keep` holds what keeps it valid."""
    __slots__ = ('address', 'shape', 'strides', 'dtype', 'device', 'keep')


def _describe_dlpack(x, stream_of):
    device_type, device_id = x.__dlpack_device__()
    device_type = int(getattr(device_type, 'value', device_type))  # an enumeration in some libraries
    if device_type not in _KDLCUDA:
        raise _invalid(f'a {type(x).__name__} on DLPack device type {device_type}: expected a CUDA array')
    # The producer orders its pending writes before the stream route() will
    # launch on (DLPack names the legacy default stream 1, never 0).
    try:
        capsule = x.__dlpack__(stream=stream_of(device_id) or 1)
    except (TypeError, ValueError, BufferError, NotImplementedError):
        capsule = x.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b'dltensor'))
    d = _Described()
    d.keep = capsule  # its destructor calls the producer's deleter
    d.address = (t.data or 0) + t.byte_offset
    d.shape = tuple(t.shape[i] for i in range(t.ndim))
    d.strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides else
                 tuple(_contiguous_strides(d.shape)))
    d.dtype = _DLPACK_DTYPES.get((t.dtype.code, t.dtype.bits, t.dtype.lanes),
                                 f'DLPack type ({t.dtype.code}, {t.dtype.bits}, {t.dtype.lanes})')
    d.device = t.device.device_id
    return d


def _contiguous_strides(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return reversed(strides)


def _describe_cai(x, stream_of):
    cai = x.__cuda_array_interface__
    d = _Described()
    d.keep = x
    d.address = cai['data'][0] or 0
    d.shape = tuple(cai['shape'])
    itemsize = int(cai['typestr'][2:])
    d.strides = (tuple(s // itemsize for s in cai['strides']) if cai.get('strides') else
                 tuple(_contiguous_strides(d.shape)))
    d.dtype = _TYPESTR_DTYPES.get(cai['typestr'][1:], cai['typestr'])
    d.device = _cuda.driver().pointer_device(d.address) if d.address else 0
    producer = cai.get('stream')  # version 3: the values are final once this stream's work is done
    if producer is not None and producer != (stream_of(d.device) or 1):
        _cuda.driver().stream_synchronize(d.device, producer)
    return d


def _describe(x, stream_of):
    """x described, its pending writes ordered before the stream
    stream_of(its device)."""
    if hasattr(x, 'block_until_ready'):  # JAX: its stream is not one route() can wait for
        x.block_until_ready()
    if hasattr(x, '__dlpack__') and hasattr(x, '__dlpack_device__'):
        return _describe_dlpack(x, stream_of)
    if hasattr(x, '__cuda_array_interface__'):
        return _describe_cai(x, stream_of)
    raise TypeError(f'route() takes a CUDA array with DLPack or __cuda_array_interface__ (torch, CuPy, JAX) '
                    f'or a numpy array, not {type(x).__name__}')


def _allocator(preferred):
    """(empty(n, device, zeroed) -> (array, address), stream_of(device) -> its
    current stream, module name) of torch or CuPy: the outputs are made, and
    the kernel launched, on that library's current stream, which orders the
    reuse of their memory."""
    for name in (preferred, 'torch', 'cupy'):
        if name == 'torch':
            try:
                import torch
            except ImportError:
                continue

            def empty(n, dev, zeroed):
                t = (torch.zeros if zeroed else torch.empty)(n, dtype=torch.int32, device=f'cuda:{dev}')
                return t, t.data_ptr()
            return empty, lambda dev: torch.cuda.current_stream(dev).cuda_stream, 'torch'
        if name == 'cupy':
            try:
                import cupy
            except ImportError:
                continue

            def empty(n, dev, zeroed):
                with cupy.cuda.Device(dev):
                    a = (cupy.zeros if zeroed else cupy.empty)(n, dtype=cupy.int32)
                return a, a.data.ptr

            def stream_of(dev):
                with cupy.cuda.Device(dev):
                    return cupy.cuda.get_current_stream().ptr
            return empty, stream_of, 'cupy'
    raise Error(Status.INVALID_ARGUMENT, 'route() of a CUDA array that is neither torch nor CuPy allocates its '
                                         'outputs with torch or CuPy: install one of them')


def _route_other(logits, router, bias, emap, extras, out):
    root = type(logits).__module__.split('.')[0]
    if root == 'numpy' or out is not None and root not in ('torch', 'cupy'):
        if out is not None:  # numpy: the CPU reference's own arrays; JAX's arrays are immutable
            raise _invalid(f'out= takes arrays route() can write in place: torch or CuPy, not {root}')
        return _route_host_arrays(logits, router, bias, emap, extras, _NumpyOut)
    empty, stream_of, out_lib = _allocator('cupy' if root == 'cupy' else 'torch')
    d = _describe(logits, stream_of)
    logits_type = LogitsType(router.params['logits_type'])
    if d.dtype != _LOGITS_DTYPE[logits_type]:
        raise _invalid(f'logits are {d.dtype}, the router\'s logits_type is {logits_type.name}')
    m = _check_logits_shape(router, d.shape, d.strides)
    _check_flavour_inputs(router, bias, emap)
    e = router.params['num_experts']
    keep, vectors = [d], []
    for name, value, want in (('correction_bias', bias, 'float32'), ('expert_map', emap, 'int32')):
        if value is None:
            vectors.append(None)
            continue
        v = _describe(value, stream_of)
        keep.append(v)
        if v.dtype != want or v.shape != (e,) or v.device != d.device or (e > 1 and v.strides[0] != 1):
            raise _invalid(f'{name} of shape {v.shape}, {v.dtype}, on device {v.device}: expected a '
                           f'contiguous {want} array of shape ({e},) on device {d.device}')
        vectors.append(v.address)
    stream = stream_of(d.device)
    ws = _workspace(router, d.device, stream)
    layout = _layout(router, m, extras, aligned=True)
    if out is not None:
        base, fields = _reused(out, router, m, extras, d.device)
    else:
        buf, base = empty(layout.total, d.device, m == 0)  # M = 0 writes num_tokens_post_padded only
        fields = layout.fields
    drv = _cuda.driver()
    drv.run_in(d.device, lambda: _launch(router, extras, m, d.address, base, fields, ws,
                                         vectors[0], vectors[1], stream))
    if root != out_lib:
        # The producer may reuse the inputs' memory once route() returns, on
        # streams this launch is not ordered before: it must be done by then.
        try:
            drv.stream_synchronize(d.device, stream)
        except _cuda.DriverError as e:
            raise Error(Status.CUDA, f'waiting for the launch: {e}') from None
    if out is not None:
        return out
    split = buf.split_with_sizes(layout.sizes) if out_lib == 'torch' else _split_cupy(buf, layout.sizes)
    pieces = [split[i] for i in layout.pieces]
    k = router.params['top_k']
    weights = pieces[1].view(_float32(out_lib))
    out = [pieces[0].reshape(m, k), weights.reshape(m, k)] + list(pieces[2:5])
    out += [pieces[5], pieces[6], pieces[7].reshape(m, k)] if extras else [None] * 3
    if root != out_lib:
        return Routing(*[_hand_over(a, root) for a in out])
    result = Routing(*out)
    result._reuse = (router, m, extras, d.device, base, layout.fields, buf)
    return result


def _float32(out_lib):
    if out_lib == 'torch':
        import torch
        return torch.float32
    import cupy
    return cupy.float32


def _split_cupy(buf, sizes):
    pieces, at = [], 0
    for n in sizes:
        pieces.append(buf[at:at + n])
        at += n
    return pieces


def _hand_over(array, root):
    """An output array as an array of the input's library (JAX, or any
    library with from_dlpack), without a copy where it allows."""
    if array is None:
        return None
    if root in ('jax', 'jaxlib'):
        import jax.numpy as jnp
        return jnp.from_dlpack(array)
    from_dlpack = getattr(sys.modules.get(root), 'from_dlpack', None)
    return from_dlpack(array) if from_dlpack else array


def route(logits, router, *, correction_bias=None, expert_map=None, extras=True, out=None):
    """Routes logits [M, E] with one kernel launch, on the current stream
    of the library that makes the outputs: CuPy's for CuPy arrays, torch's
    for any other (JAX's arrays are made by torch, or CuPy without it, and
    handed over; route() then waits for its launch, as JAX may reuse the
    logits' memory on a stream of its own once the call returns).
    logits: a CUDA array of the router's logits_type (torch, CuPy, JAX, or
    any array with DLPack or __cuda_array_interface__); CPU arrays (numpy,
    torch) take the CPU reference. Returns a Routing of arrays of the
    input's library on its device: topk_ids, topk_weights and
    pair_to_sorted [M, k], sorted_token_ids [capacity], expert_ids
    [capacity / block_m], num_tokens_post_padded [1], expert_counts [L],
    expert_offsets [L + 1]; with extras=False the last three are None and
    not computed. The workspace is allocated and zeroed once per device,
    stream and size and kept (release_workspaces() frees them).
    correction_bias (fp32 [E]) and expert_map (int32 [E]) are arrays of the
    same library and device, given exactly when the router has their flag.
    out: a Routing that route() returned for this router, as many tokens,
    the same extras and device (torch or CuPy arrays): the call writes its
    arrays in place, on the current stream, and returns it, allocating
    nothing (a serving loop's buffers; the call's host time is then mostly
    the launch's). Not inside torch.compile.
    Inside torch.compile the call is the op alphamoe::route (torch_ops)."""
    if isinstance(logits, _TorchTensor):
        return _route_torch(logits, router, correction_bias, expert_map, extras, out=out)
    if _TorchTensor is _NoClass and type(logits).__module__.split('.')[0] == 'torch':  # the first tensor
        if sys.modules['torch'].compiler.is_compiling():
            raise RuntimeError('alphamoe_router.route() met its first tensor inside torch.compile, which cannot '
                               'register the op: import alphamoe_router.torch_ops first (or torch before '
                               'alphamoe_router), or route once before compiling')
        _torch_setup()
        return _route_torch(logits, router, correction_bias, expert_map, extras, out=out)
    return _route_other(logits, router, correction_bias, expert_map, extras, out)
