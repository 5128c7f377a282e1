"""The library these bindings call, and its functions declared from the
generated mirror of the headers (_abi.py).

The library is, in this order: the file $ALPHAMOE_ROUTER_LIBRARY names; the
copy bundled in this package (a wheel built from the checkout holds one);
libalphamoe_router.so.0 where the dynamic loader finds it (the
libalphamoe-router0 package). Later library versions only append fields,
and struct_size tells the library how much of each structure this module
knows.
"""
import ctypes
import os

from . import _abi

SONAME = 'libalphamoe_router.so.0'
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)


def sized(structure):
    """A zeroed instance with struct_size set to this module's size of it."""
    value = structure()
    value.struct_size = ctypes.sizeof(structure)
    return value


def candidates():
    """The paths load() tries, first to last."""
    override = os.environ.get('ALPHAMOE_ROUTER_LIBRARY')
    if override:
        return [override]
    return ([BUNDLED] if os.path.exists(BUNDLED) else []) + [SONAME]


def load():
    """(the library with every prototype declared, the path it was opened by)."""
    errors = []
    for path in candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f'{path}: {e}')
    else:
        raise ImportError('cannot load the AlphaMoE router library (' + '; '.join(errors) + '): install '
                          'the wheel (pip install . in the checkout) or the libalphamoe-router0 package '
                          '(README, "Install"), or set ALPHAMOE_ROUTER_LIBRARY to the library\'s path')
    for name, (restype, argtypes) in _abi.PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib, path


lib, path = load()
