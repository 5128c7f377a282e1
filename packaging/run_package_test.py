#!/usr/bin/env python3
"""Runs one test of the INSTALLED packages (libalphamoe-router0 and
libalphamoe-router-dev), found through pkg-config and the dynamic loader's
default path, never through the build tree.

  run_package_test.py KIND --source DIR --work DIR --version VERSION

KIND: c (dlopen test), rust (cargo test), go (go test), python (unittest),
readme-c, readme-rust, readme-go, readme-python (the examples of
docs/bindings.md and README's Python one, run as written), lintian (the
packages packaging/build-deb left in build-deb/).

Exits 77 (skipped) with the reason when the packages are not installed, are
another version than this tree, or the test's toolchain is missing.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
# Variables that could point a compiler or the loader at the build tree.
SCRUBBED = ('LD_LIBRARY_PATH', 'PKG_CONFIG_PATH', 'LIBRARY_PATH', 'CPATH', 'C_INCLUDE_PATH',
            'ALPHAMOE_ROUTER_LIBRARY', 'MALLOC_PERTURB_')


def skip(why):
    print(f'SKIP: {why}')
    sys.exit(SKIP)


def run(cmd, cwd, env):
    print('+', ' '.join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    return subprocess.run(cmd, cwd=cwd, env=env).returncode


def find_tool(name, *fallbacks):
    found = shutil.which(name)
    for path in fallbacks:
        if not found and os.access(path, os.X_OK):
            found = path
    return found


def installed_package(env, version, roots):
    """Skips unless the installed pkg-config module is this tree's version
    and lives outside the source and build trees."""
    if not shutil.which('pkg-config'):
        skip('pkg-config is not installed')
    query = subprocess.run(['pkg-config', '--modversion', 'alphamoe-router'], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if query.returncode != 0:
        skip('libalphamoe-router-dev is not installed: build and install the packages first '
             '(README, "Install": packaging/build-deb, then apt-get install ./build-deb/*.deb)')
    installed = query.stdout.strip()
    if installed != version:
        skip(f'the installed libalphamoe-router-dev is {installed}, this tree is {version}: '
             'rebuild and reinstall the packages to test them')
    libdir = subprocess.run(['pkg-config', '--variable=libdir', 'alphamoe-router'], env=env, check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    for root in roots:
        if os.path.realpath(libdir).startswith(os.path.realpath(root) + os.sep):
            print(f'FAIL: pkg-config finds alphamoe-router in {libdir}, inside {root}, not an installed package')
            sys.exit(1)
    print(f'installed alphamoe-router {installed}, library in {libdir}')


def readme_example(readme, lang):
    """(file name, code, run commands) of README's `<!-- example: LANG FILE -->`
    block and the `<!-- example-run: LANG -->` block."""
    lines = open(readme).read().splitlines()

    def block_after(predicate):
        for i, line in enumerate(lines):
            if predicate(line.strip()):
                body, inside = [], False
                for text in lines[i + 1:]:
                    if text.startswith('```'):
                        if inside:
                            return line.strip(), '\n'.join(body) + '\n'
                        inside = True
                        continue
                    if inside:
                        body.append(text)
        print(f'FAIL: {readme} has no {lang} example block')
        sys.exit(1)

    marker, code = block_after(lambda s: s.startswith(f'<!-- example: {lang} '))
    filename = marker[len(f'<!-- example: {lang} '):-len(' -->')].strip()
    _, commands = block_after(lambda s: s == f'<!-- example-run: {lang} -->')
    return filename, code, commands


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('kind')
    ap.add_argument('--source', required=True)
    ap.add_argument('--work', required=True, help='a folder of the build tree for outputs')
    ap.add_argument('--version', required=True)
    args = ap.parse_args()
    source, work = os.path.abspath(args.source), os.path.abspath(args.work)
    packaging = os.path.join(source, 'packaging')
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    os.makedirs(work, exist_ok=True)

    if args.kind == 'lintian':
        lintian = find_tool('lintian')
        changes = sorted(f for f in os.listdir(os.path.join(source, 'build-deb'))
                         if f.endswith('.changes')) if os.path.isdir(os.path.join(source, 'build-deb')) else []
        changes = [c for c in changes if f'_{args.version}_' in c]
        if not lintian:
            skip('lintian is not installed')
        if not changes:
            skip(f'no packages of version {args.version} in build-deb/: run packaging/build-deb')
        return run([lintian, '--fail-on', 'error', '--info', os.path.join(source, 'build-deb', changes[-1])],
                   source, env)

    installed_package(env, args.version, [source, os.path.dirname(work)])
    cargo = find_tool('cargo', os.path.expanduser('~/.cargo/bin/cargo'))
    go = find_tool('go', '/usr/lib/go/bin/go')
    if cargo:
        env['PATH'] = os.path.dirname(cargo) + os.pathsep + env.get('PATH', '')
    if go:
        env['PATH'] = env['PATH'] + os.pathsep + os.path.dirname(go)
        # Nothing is downloaded: the module has no dependencies.
        env.update(GOFLAGS='-mod=mod', GOPROXY='off', GOTOOLCHAIN='local',
                   GOCACHE=os.path.join(work, 'go-cache'))
    needs = {'rust': cargo, 'readme-rust': cargo, 'go': go, 'readme-go': go}
    if args.kind in needs and not needs[args.kind]:
        skip(f'no {"cargo" if "rust" in args.kind else "go"} on PATH (Debian: apt-get install '
             f'{"cargo" if "rust" in args.kind else "golang-go"})')
    cc = find_tool('cc')
    if args.kind in ('c', 'readme-c') and not cc:
        skip('no C compiler')

    if args.kind == 'c':
        cflags = subprocess.run(['pkg-config', '--cflags', 'alphamoe-router'], env=env, check=True,
                                stdout=subprocess.PIPE, text=True).stdout.split()
        exe = os.path.join(work, 'dlopen_test')
        if run([cc, '-std=gnu11', '-O2', '-Wall', '-Wextra', '-Wno-missing-field-initializers', '-Werror',
                *cflags, os.path.join(packaging, 'c', 'dlopen_test.c'), '-o', exe, '-ldl', '-lm'], work, env):
            return 1
        return run([exe, os.path.join(source, 'capi', 'exported_symbols.txt')], work, env)
    if args.kind == 'rust':
        # A copy, so that cargo's lock file and outputs stay out of the tree.
        copy = os.path.join(work, 'crate')
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(os.path.join(packaging, 'rust'), os.path.join(copy, 'rust'),
                        ignore=shutil.ignore_patterns('target', 'Cargo.lock'))
        shutil.copytree(os.path.join(packaging, 'c'), os.path.join(copy, 'c'))
        env['CARGO_TARGET_DIR'] = os.path.join(work, 'cargo-target')
        return run([cargo, 'test', '--offline'], os.path.join(copy, 'rust'), env)
    if args.kind == 'go':
        return run([go, 'test', '-count=1', '-v', './...'], os.path.join(packaging, 'go'), env)
    if args.kind == 'python':
        return run([sys.executable, '-m', 'unittest', 'discover', '-v', '-s', 'tests'],
                   os.path.join(packaging, 'python'), env)
    if args.kind.startswith('readme-'):
        lang = args.kind[len('readme-'):]
        doc = 'README.md' if lang == 'python' else os.path.join('docs', 'bindings.md')
        filename, code, commands = readme_example(os.path.join(source, doc), lang)
        # README's commands run from the repository's root: a scratch copy
        # of that root (packaging/ linked in) holds what they create.
        root = tempfile.mkdtemp(prefix=f'readme-{lang}-', dir=work)
        os.symlink(packaging, os.path.join(root, 'packaging'))
        with open(os.path.join(root, filename), 'w') as f:
            f.write(code)
        print(f'README {lang} example saved as {filename}; running:\n{commands}', flush=True)
        env.pop('GOFLAGS', None)  # as a new user would have it
        status = run(['bash', '-euo', 'pipefail', '-c', commands], root, env)
        if status == 0:
            shutil.rmtree(root, ignore_errors=True)
        return status
    print(f'unknown kind {args.kind}')
    return 2


if __name__ == '__main__':
    sys.exit(main())
