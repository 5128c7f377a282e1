#!/usr/bin/env python3
"""Every constant, struct and function of the public headers, as a C compiler
sees them, for the bindings' tests to compare their mirrors with.

  header_facts.py [PKG_CONFIG_MODULE]      (default: alphamoe-router)

Reads the headers of the module's include directory (pkg-config
--variable=includedir), alphamoe/*.h but version.h, for the names: the
enumerators of every typedef'd enum, the numeric #defines and the fields of
every typedef'd struct and the ALPHAMOE_API functions. A C program generated
from those names and compiled against the same headers prints their values,
sizes and offsets, one a line:

  enum TYPE NAME VALUE
  define NAME VALUE
  struct TYPE SIZE
  field TYPE.FIELD OFFSET SIZE
  function NAME

So a status, flag, field or function added to a header shows up here without
any list to update, and a binding's test that compares the whole output fails
until the binding mirrors it."""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile


def strip_comments(text):
    return re.sub(r'/\*.*?\*/|//[^\n]*', ' ', text, flags=re.S)


def parse(text):
    """(enums {type: [names]}, defines [names], structs {type: [fields]}, functions [names])."""
    text = strip_comments(text.replace('\\\n', ' '))
    enums = {}
    for body, name in re.findall(r'typedef\s+enum\s+\w*\s*\{([^}]*)\}\s*(\w+)\s*;', text):
        enums[name] = [item.split('=')[0].strip() for item in body.split(',') if item.strip()]
    structs = {}
    for body, name in re.findall(r'typedef\s+struct\s+\w*\s*\{([^}]*)\}\s*(\w+)\s*;', text):
        structs[name] = [re.findall(r'\w+', decl)[-1] for decl in body.split(';') if decl.strip()]
    # Object-like macros with a value; ALPHAMOE_API and include guards have none.
    defines = [name for name, value in re.findall(r'^[ \t]*#[ \t]*define[ \t]+(ALPHAMOE_\w+)[ \t]+(\S[^\n]*)$',
                                                  text, flags=re.M)
               if name != 'ALPHAMOE_API']
    # Declarations only: the #define of ALPHAMOE_API itself is no function.
    declarations = re.sub(r'^[ \t]*#[^\n]*', ' ', text, flags=re.M)
    functions = re.findall(r'\bALPHAMOE_API\b[^;(]*?\b(\w+)\s*\(', declarations)
    return enums, defines, structs, functions


def main():
    module = sys.argv[1] if len(sys.argv) > 1 else 'alphamoe-router'
    pkg_config = shlex.split(os.environ.get('PKG_CONFIG', 'pkg-config'))
    includedir = subprocess.run(pkg_config + ['--variable=includedir', module], check=True,
                                stdout=subprocess.PIPE, text=True).stdout.strip()
    cflags = subprocess.run(pkg_config + ['--cflags', module], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.split()
    headers = sorted(h for h in glob.glob(os.path.join(includedir, 'alphamoe', '*.h'))
                     if os.path.basename(h) != 'version.h')
    if not headers:
        sys.exit(f'header_facts: no alphamoe/*.h under {includedir}')
    program = ['#include <stddef.h>', '#include <stdio.h>']
    program += [f'#include <alphamoe/{os.path.basename(h)}>' for h in headers]
    program.append('int main(void) {')
    for header in headers:
        enums, defines, structs, functions = parse(open(header).read())
        for enum, names in enums.items():
            program += [f'    printf("enum {enum} {n} %lld\\n", (long long)({n}));' for n in names]
        program += [f'    printf("define {n} %lld\\n", (long long)({n}));' for n in defines]
        for struct, fields in structs.items():
            program.append(f'    printf("struct {struct} %zu\\n", sizeof({struct}));')
            program += [f'    printf("field {struct}.{f} %zu %zu\\n", offsetof({struct}, {f}), '
                        f'sizeof(((const {struct} *)0)->{f}));' for f in fields]
        # sizeof: the compiler checks the declaration, nothing needs linking.
        program += [f'    printf("function {n}\\n"); (void)sizeof(&{n});' for n in functions]
    program += ['    return 0;', '}']
    cc = shlex.split(os.environ.get('CC', 'cc'))
    with tempfile.TemporaryDirectory() as tmp:
        source, exe = os.path.join(tmp, 'header_facts.c'), os.path.join(tmp, 'header_facts')
        with open(source, 'w') as f:
            f.write('\n'.join(program) + '\n')
        subprocess.run(cc + ['-std=c99', '-Wall', '-Werror', *cflags, source, '-o', exe], check=True)
        sys.stdout.write(subprocess.run([exe], check=True, stdout=subprocess.PIPE, text=True).stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
