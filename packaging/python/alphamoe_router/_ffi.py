"""ctypes declarations of alphamoe/router.h and the library they bind.

The library is opened by its SONAME (libalphamoe_router.so.0, found by the
dynamic loader where the libalphamoe-router0 package puts it), or from the
path in $ALPHAMOE_ROUTER_LIBRARY. The structures mirror the header field by
field; later library versions only append fields, and struct_size tells the
library how much of each structure this module knows.
"""
import ctypes
import os

SONAME = 'libalphamoe_router.so.0'

c_int32_p = ctypes.POINTER(ctypes.c_int32)
c_float_p = ctypes.POINTER(ctypes.c_float)


class Params(ctypes.Structure):
    _fields_ = [
        ('struct_size', ctypes.c_size_t),
        ('num_experts', ctypes.c_int32),
        ('top_k', ctypes.c_int32),
        ('block_m', ctypes.c_int32),
        ('max_tokens', ctypes.c_int32),
        ('logits_row_stride', ctypes.c_int64),
        ('flags', ctypes.c_uint32),
        ('force_specialization', ctypes.c_int32),
    ]


class Extent(ctypes.Structure):
    _fields_ = [('elements', ctypes.c_int64), ('bytes', ctypes.c_int64)]


class Sizes(ctypes.Structure):
    _fields_ = [('struct_size', ctypes.c_size_t)] + [
        (name, Extent) for name in (
            'topk_ids', 'topk_weights', 'sorted_token_ids', 'expert_ids', 'num_tokens_post_padded',
            'expert_counts', 'expert_offsets', 'pair_to_sorted', 'workspace')
    ] + [('workspace_alignment', ctypes.c_int64)]


class Buffers(ctypes.Structure):
    _fields_ = [
        ('struct_size', ctypes.c_size_t),
        ('topk_ids', ctypes.c_void_p),
        ('topk_weights', ctypes.c_void_p),
        ('sorted_token_ids', ctypes.c_void_p),
        ('expert_ids', ctypes.c_void_p),
        ('num_tokens_post_padded', ctypes.c_void_p),
        ('expert_counts', ctypes.c_void_p),
        ('expert_offsets', ctypes.c_void_p),
        ('pair_to_sorted', ctypes.c_void_p),
        ('sorted_token_ids_capacity', ctypes.c_int64),
        ('expert_ids_capacity', ctypes.c_int64),
        ('workspace', ctypes.c_void_p),
        ('workspace_bytes', ctypes.c_size_t),
    ]


class DeviceAttributes(ctypes.Structure):
    _fields_ = [
        ('struct_size', ctypes.c_size_t),
        ('compute_capability', ctypes.c_int32),
        ('multiprocessor_count', ctypes.c_int32),
        ('cooperative_ctas_per_sm', ctypes.c_int32),
        ('cooperative_launch', ctypes.c_int32),
    ]


class Selection(ctypes.Structure):
    _fields_ = [
        ('struct_size', ctypes.c_size_t),
        ('specialization', ctypes.c_int),
        ('grid_ctas', ctypes.c_int32),
        ('block_threads', ctypes.c_int32),
        ('cooperative', ctypes.c_int32),
        ('image_arch', ctypes.c_int32),
        ('tokens_per_cta', ctypes.c_int32),
    ]


def sized(structure):
    """A zeroed instance with struct_size set to this module's size of it."""
    value = structure()
    value.struct_size = ctypes.sizeof(structure)
    return value


# name: (restype, argtypes) of every function of router.h.
_PROTOTYPES = {
    'alphamoe_status_string': (ctypes.c_char_p, [ctypes.c_int]),
    'alphamoe_version_number': (ctypes.c_uint32, []),
    'alphamoe_version_string': (ctypes.c_char_p, []),
    'alphamoe_router_create': (ctypes.c_int, [ctypes.POINTER(Params), ctypes.POINTER(ctypes.c_void_p)]),
    'alphamoe_router_destroy': (None, [ctypes.c_void_p]),
    'alphamoe_router_get_params': (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(Params)]),
    'alphamoe_router_sizes': (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(Sizes)]),
    'alphamoe_route': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                      ctypes.POINTER(Buffers), ctypes.c_void_p]),
    'alphamoe_route_host': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                                           ctypes.POINTER(Buffers)]),
    'alphamoe_device_attributes_query': (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(DeviceAttributes)]),
    'alphamoe_specialization_name': (ctypes.c_char_p, [ctypes.c_int]),
    'alphamoe_router_select': (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int32,
                                              ctypes.POINTER(DeviceAttributes), ctypes.POINTER(Selection)]),
    'alphamoe_kernel_name': (ctypes.c_char_p, [ctypes.c_int32]),
    'alphamoe_kernel_images': (ctypes.c_int, [ctypes.c_int32, c_int32_p, ctypes.c_int32, c_int32_p]),
    'alphamoe_device_count': (ctypes.c_int, [c_int32_p]),
    'alphamoe_device_describe': (ctypes.c_int, [ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t,
                                                c_int32_p, c_int32_p]),
}


def load():
    """The library with every prototype declared."""
    path = os.environ.get('ALPHAMOE_ROUTER_LIBRARY') or SONAME
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f'cannot load {path} ({e}): install the libalphamoe-router0 package '
                          '(README, "Install"), or set ALPHAMOE_ROUTER_LIBRARY to the library\'s path') from e
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


lib = load()
