"""Reading and writing .npy files with the standard library alone, for the
command-line checks: NumPy is not a dependency of the test suite."""
import struct

# struct codes of the dtypes the checks read; bytes of each element.
CODES = {'<i4': ('i', 4), '<f4': ('f', 4), '<f2': ('e', 2), '<u2': ('H', 2), '<i2': ('h', 2), '<i8': ('q', 8),
         '<f8': ('d', 8), '<V2': ('H', 2)}


def write_npy(path, descr, shape, values):
    """values: flat, in C order; for '<V2' (ml_dtypes' bfloat16) the 16-bit patterns."""
    dims = ', '.join(str(d) for d in shape) + (',' if len(shape) == 1 else '')
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    code, _ = CODES[descr]
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode('latin1'))
        f.write(struct.pack('<%d%s' % (len(values), code), *values))


def write_npy_f32(path, rows):
    write_npy(path, '<f4', (len(rows), len(rows[0])), [v for row in rows for v in row])


def read_npy_header(path):
    with open(path, 'rb') as f:
        data = f.read()
    major = data[6]
    start = 10 if major == 1 else 12
    (hlen,) = struct.unpack('<H' if major == 1 else '<I', data[8:start])
    header = data[start:start + hlen].decode('latin1')
    return header, data[start + hlen:]


def read_npy(path):
    """The values of an int32, float32 or other listed array, flat."""
    header, body = read_npy_header(path)
    descr = header.split("'descr': '")[1].split("'")[0]
    code, size = CODES[descr]
    return list(struct.unpack('<%d%s' % (len(body) // size, code), body))


def f32(v):
    """v rounded to the nearest float32."""
    return struct.unpack('<f', struct.pack('<f', v))[0]
