#!/usr/bin/env python3
"""Generates alphamoe_router/_abi.py, the ctypes mirror of the public
headers (alphamoe/router.h and alphamoe/router_diagnostics.h): every status
and enumeration, every constant, every structure field by field, and the
prototype of every function. The Python module is never edited by hand, so
it cannot drift from the headers.

  gen_abi.py                 rewrite alphamoe_router/_abi.py from include/
  gen_abi.py --check         exit 1 when _abi.py is not what the headers give
  gen_abi.py --check --cc CC also compile the headers' offsetof() of every
                             field and compare with ctypes' layout
  gen_abi.py --include DIR   headers from DIR/alphamoe (e.g. an installed copy)

The parser reads the subset of C the headers are written in and stops with
an error on anything else, so a new kind of declaration needs this script
updated rather than being skipped.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
HEADERS = ('router.h', 'router_diagnostics.h')
MODULE = os.path.join(HERE, 'alphamoe_router', '_abi.py')
DEFAULT_INCLUDE = os.path.join(HERE, '..', '..', 'include')

# C scalar types and their ctypes names.
SCALARS = {
    'size_t': 'ctypes.c_size_t', 'int32_t': 'ctypes.c_int32', 'uint32_t': 'ctypes.c_uint32',
    'int64_t': 'ctypes.c_int64', 'uint64_t': 'ctypes.c_uint64', 'float': 'ctypes.c_float',
    'double': 'ctypes.c_double', 'int': 'ctypes.c_int', 'char': 'ctypes.c_char',
}
# Macros that are no constant: the export attribute and include guards.
NOT_CONSTANTS = re.compile(r'^ALPHAMOE_(API|ROUTER_H|ROUTER_DIAGNOSTICS_H)$')


class HeaderError(Exception):
    pass


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'//[^\n]*', ' ', text)


def class_name(c_name):
    """alphamoe_device_attributes -> DeviceAttributes."""
    return ''.join(part.capitalize() for part in c_name[len('alphamoe_'):].split('_'))


def parse(texts):
    """{'defines': [(name, value)], 'enums': [(c_name, [(member, value)])],
    'structs': [(c_name, [(c_type, field)])], 'opaque': [c_name],
    'functions': [(name, c_return, [c_param_types])]} in header order."""
    out = {'defines': [], 'enums': [], 'structs': [], 'opaque': [], 'functions': []}
    known = {}
    for text in texts:
        text = strip_comments(text).replace('\\\n', ' ')
        body = []
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped.startswith('#'):
                body.append(line)
                continue
            m = re.match(r'#\s*define\s+(\w+)(.*)$', stripped)
            if not m or not m.group(1).startswith('ALPHAMOE_') or NOT_CONSTANTS.match(m.group(1)):
                continue
            name, value = m.group(1), m.group(2).strip()
            known[name] = constant_value(name, value, known)
            out['defines'].append((name, known[name]))
        code = ' '.join(body)
        code = re.sub(r'extern\s+"C"\s*\{', ' ', code)
        for stmt in split_statements(code):
            parse_statement(stmt, out)
    return out


def constant_value(name, value, known):
    """An integer literal (with a u suffix), or an OR of earlier constants."""
    value = value.strip()
    while value.startswith('(') and value.endswith(')'):
        value = value[1:-1].strip()
    m = re.fullmatch(r'(0[xX][0-9a-fA-F]+|\d+)[uU]?', value)
    if m:
        return int(m.group(1), 0)
    parts = [p.strip() for p in value.split('|')]
    if len(parts) > 1 and all(p in known for p in parts):
        result = 0
        for p in parts:
            result |= known[p]
        return result
    raise HeaderError(f'#define {name} {value}: not an integer constant this generator understands')


def split_statements(code):
    """Top-level statements ending in ';' (a brace block stays whole)."""
    stmts, depth, start = [], 0, 0
    for i, ch in enumerate(code):
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth < 0:  # the closing brace of extern "C"
                depth = 0
                start = i + 1
        elif ch == ';' and depth == 0:
            stmts.append(code[start:i].strip())
            start = i + 1
    rest = code[start:].strip()
    if rest:
        raise HeaderError(f'unterminated declaration: {rest[:80]}')
    return [s for s in stmts if s]


def items(body, separator):
    """The non-empty parts of a brace block's body."""
    return [part.strip() for part in body.split(separator) if part.strip()]


def parse_statement(stmt, out):
    stmt = ' '.join(stmt.split())
    m = re.fullmatch(r'typedef enum (\w+) \{(.*)\} (\w+)', stmt)
    if m:
        if m.group(1) != m.group(3):
            raise HeaderError(f'enum {m.group(1)} typedef\'d as {m.group(3)}')
        members = []
        for item in items(m.group(2), ','):
            em = re.fullmatch(r'(\w+) = (-?(?:0[xX][0-9a-fA-F]+|\d+))', item)
            if not em:
                raise HeaderError(f'enum {m.group(1)}: "{item}" has no explicit value')
            members.append((em.group(1), int(em.group(2), 0)))
        out['enums'].append((m.group(1), members))
        return
    m = re.fullmatch(r'typedef struct (\w+) \{(.*)\} (\w+)', stmt)
    if m:
        fields = []
        for decl in items(m.group(2), ';'):
            fm = re.fullmatch(r'((?:const )?(?:struct )?\w+(?: ?\*)*) ?(\w+)', decl)
            if not fm or ',' in decl or '[' in decl:
                raise HeaderError(f'struct {m.group(1)}: field "{decl}" is not one plain declaration')
            fields.append((' '.join(fm.group(1).replace('*', ' * ').split()), fm.group(2)))
        out['structs'].append((m.group(1), fields))
        return
    m = re.fullmatch(r'typedef struct (\w+) (\w+)', stmt)
    if m and m.group(1) == m.group(2):
        out['opaque'].append(m.group(1))
        return
    if re.fullmatch(r'struct \w+', stmt):  # a forward declaration (CUstream_st)
        return
    m = re.fullmatch(r'ALPHAMOE_API (.+?)\b(alphamoe_\w+) ?\((.*)\)', stmt)
    if m:
        params = [] if m.group(3).strip() in ('', 'void') else [
            param_type(p, m.group(2)) for p in m.group(3).split(',')]
        out['functions'].append((m.group(2), ' '.join(m.group(1).replace('*', ' * ').split()), params))
        return
    raise HeaderError(f'declaration not understood: {stmt[:120]}')


def param_type(param, function):
    """The type of one parameter, without its name."""
    p = ' '.join(param.replace('*', ' * ').split())
    m = re.fullmatch(r'(.*?) ?(\w+)', p)
    if not m or not m.group(1):
        raise HeaderError(f'{function}: parameter "{param}" has no name')
    return m.group(1)


def ctype_of(c_type, model, field):
    """The ctypes expression of a C type. Structure fields hold pointers as
    c_void_p, so that a device address (an int) can be stored in them."""
    words = c_type.replace('const ', '').replace('struct ', '').split()
    base, stars = words[0], words.count('*')
    if len(words) != 1 + stars:
        raise HeaderError(f'type "{c_type}" not understood')
    enums = {name for name, _ in model['enums']}
    structs = {name for name, _ in model['structs']}
    if stars == 0:
        if base in SCALARS:
            return SCALARS[base]
        if base in enums:
            return 'ctypes.c_int'
        if base in structs and field:
            return class_name(base)
        if base == 'void':
            return 'None'
        raise HeaderError(f'type "{c_type}" not understood')
    if field:
        return 'ctypes.c_void_p'
    if stars == 1 and base == 'char':
        return 'ctypes.c_char_p'
    if stars == 1 and (base in ('void', 'CUstream_st') or base in model['opaque']):
        return 'ctypes.c_void_p'
    if stars == 2 and base in model['opaque']:
        return 'ctypes.POINTER(ctypes.c_void_p)'
    if stars == 1 and base in structs:
        return f'ctypes.POINTER({class_name(base)})'
    if stars == 1 and base in SCALARS:
        return f'ctypes.POINTER({SCALARS[base]})'
    raise HeaderError(f'type "{c_type}" not understood')


def member_names(c_name, members):
    """Members without their common prefix (ALPHAMOE_SCORING_SIGMOID -> SIGMOID),
    statuses also without ERROR_ (ALPHAMOE_ERROR_TOP_K -> TOP_K)."""
    names = [name for name, _ in members]
    prefix = os.path.commonprefix(names) if len(names) > 1 else 'ALPHAMOE_'
    prefix = prefix[:prefix.rfind('_') + 1]
    short = [name[len(prefix):] for name in names]
    if c_name == 'alphamoe_status':
        short = [s[len('ERROR_'):] if s.startswith('ERROR_') else s for s in short]
    return short


def generate(model, sources):
    lines = [
        f'"""ctypes mirror of {" and ".join("alphamoe/" + s for s in sources)}.',
        '',
        'Generated by packaging/python/gen_abi.py from the headers: do not edit;',
        'run the script after changing a header (a test fails until it is run).',
        '"""',
        'import ctypes',
        'import enum',
        '',
    ]
    for name, value in model['defines']:
        lines.append(f'{name[len("ALPHAMOE_"):]} = {value:#x}' if 'FLAG' in name else
                     f'{name[len("ALPHAMOE_"):]} = {value}')
    for c_name, members in model['enums']:
        lines += ['', '', f'class {class_name(c_name)}(enum.IntEnum):', f'    """{c_name}"""']
        for short, (_, value) in zip(member_names(c_name, members), members):
            lines.append(f'    {short} = {value}')
    for c_name, fields in model['structs']:
        lines += ['', '', f'class {class_name(c_name)}(ctypes.Structure):', f'    """{c_name}"""',
                  '    _fields_ = [']
        for c_type, field in fields:
            lines.append(f'        ({field!r}, {ctype_of(c_type, model, True)}),')
        lines.append('    ]')
    lines += ['', '', '# C name: (ctypes class, C type of each field) of every structure.', 'STRUCTS = {']
    for c_name, fields in model['structs']:
        lines.append(f'    {c_name!r}: ({class_name(c_name)}, {{')
        lines += [f'        {field!r}: {c_type!r},' for c_type, field in fields]
        lines.append('    }),')
    lines += ['}', '', '# name: (restype, argtypes) of every function.', 'PROTOTYPES = {']
    for name, c_return, params in model['functions']:
        args = ', '.join(ctype_of(p, model, False) for p in params)
        lines.append(f'    {name!r}: ({ctype_of(c_return, model, False)}, [{args}]),')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def read_headers(include):
    texts = []
    for name in HEADERS:
        with open(os.path.join(include, 'alphamoe', name)) as f:
            texts.append(f.read())
    return texts


def offsets_program(model):
    """C source printing sizeof and offsetof of every field, one
    'struct[.field] value' a line."""
    lines = ['#include <alphamoe/router_diagnostics.h>', '#include <stddef.h>', '#include <stdio.h>',
             'int main(void) {']
    for c_name, fields in model['structs']:
        lines.append(f'    printf("{c_name} %zu\\n", sizeof({c_name}));')
        for _, field in fields:
            lines.append(f'    printf("{c_name}.{field} %zu\\n", offsetof({c_name}, {field}));')
    lines += ['    return 0;', '}']
    return '\n'.join(lines) + '\n'


def compiled_layout(model, cc, cflags):
    """{'struct': size, 'struct.field': offset} as the C compiler lays them out."""
    with tempfile.TemporaryDirectory() as tmp:
        source, exe = os.path.join(tmp, 'layout.c'), os.path.join(tmp, 'layout')
        with open(source, 'w') as f:
            f.write(offsets_program(model))
        subprocess.run([cc, *cflags, source, '-o', exe], check=True)
        text = subprocess.run([exe], check=True, stdout=subprocess.PIPE, text=True).stdout
    return {name: int(value) for name, value in (line.split() for line in text.splitlines())}


def layout_mismatches(structs, layout):
    """Differences between ctypes classes ({c_name: (class, ...)}) and a compiled layout."""
    import ctypes
    problems = []
    for c_name, (cls, _) in structs.items():
        if ctypes.sizeof(cls) != layout.get(c_name):
            problems.append(f'sizeof({c_name}): ctypes {ctypes.sizeof(cls)}, C {layout.get(c_name)}')
        for field, _ in cls._fields_:
            if getattr(cls, field).offset != layout.get(f'{c_name}.{field}'):
                problems.append(f'{c_name}.{field}: ctypes offset {getattr(cls, field).offset}, '
                                f'C {layout.get(c_name + "." + field)}')
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--include', default=DEFAULT_INCLUDE, help='folder holding alphamoe/router.h')
    ap.add_argument('--check', action='store_true', help='compare instead of writing')
    ap.add_argument('--cc', help='with --check: also compare the layout a C compiler gives')
    ap.add_argument('--module', default=MODULE, help='the module to write or check')
    args = ap.parse_args()
    try:
        model = parse(read_headers(args.include))
    except HeaderError as e:
        print(f'gen_abi.py: {e}')
        return 1
    text = generate(model, HEADERS)
    if not args.check:
        with open(args.module, 'w') as f:
            f.write(text)
        return 0
    with open(args.module) as f:
        current = f.read()
    if current != text:
        import difflib
        sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                                   args.module, 'from the headers'))
        print(f'FAIL: {args.module} differs from what {", ".join(HEADERS)} give: run packaging/python/gen_abi.py')
        return 1
    print(f'{args.module} matches {", ".join(HEADERS)}: {len(model["enums"])} enumerations, '
          f'{len(model["structs"])} structures, {len(model["functions"])} functions, '
          f'{len(model["defines"])} constants')
    if args.cc:
        namespace = {}
        exec(compile(text, args.module, 'exec'), namespace)
        # version.h is generated by the build; any version does for the layout.
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, 'alphamoe'))
            if not os.path.exists(os.path.join(args.include, 'alphamoe', 'version.h')):
                with open(os.path.join(tmp, 'alphamoe', 'version.h'), 'w') as f:
                    f.write('#define ALPHAMOE_VERSION_NUMBER 0\n')
            layout = compiled_layout(model, args.cc, ['-I' + args.include, '-I' + tmp])
        problems = layout_mismatches(namespace['STRUCTS'], layout)
        for p in problems:
            print('FAIL:', p)
        if problems:
            return 1
        print(f'every field\'s offset and every size agree with {args.cc}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
