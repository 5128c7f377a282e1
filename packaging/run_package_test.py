#!/usr/bin/env python3
"""Runs one test of the Debian packages (libalphamoe-router0,
libalphamoe-router-dev, alphamoe-router-tools) as packaging/build-deb left
them unpacked in a staging root (build-deb/root), never through the build
tree and never installed into the system.

  run_package_test.py KIND --source DIR --work DIR --version VERSION [--root DIR]

KIND: c (dlopen test), rust (cargo test), go (go test), go-module (the Go
module fetched by its path from a module proxy, no replace), python
(unittest), tools (alphamoe-route), readme-c, readme-cuda, readme-rust,
readme-go, readme-python (the examples of docs/bindings.md and README's
Python and C ones, run as written), lintian (the packages in build-deb/, as
an unprivileged user).

The staging root stands in for the system: a pkg-config wrapper first on
PATH (and $PKG_CONFIG) redefines the packages' prefix as ROOT/usr; the
loader, the linker and the C compiler get ROOT's lib and include folders
(LD_LIBRARY_PATH, LIBRARY_PATH, CPATH), PATH its usr/bin.

Exits 77 (skipped) with the reason when the packages are not unpacked, are
another version than this tree, or the test's toolchain is missing.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

SKIP = 77
# Variables that could point a compiler or the loader elsewhere.
SCRUBBED = ('LD_LIBRARY_PATH', 'PKG_CONFIG_PATH', 'PKG_CONFIG_LIBDIR', 'PKG_CONFIG_SYSROOT_DIR', 'PKG_CONFIG',
            'LIBRARY_PATH', 'CPATH', 'C_INCLUDE_PATH', 'ALPHAMOE_ROUTER_LIBRARY', 'MALLOC_PERTURB_')


def skip(why):
    print(f'SKIP: {why}')
    sys.exit(SKIP)


def fail(why):
    print(f'FAIL: {why}')
    sys.exit(1)


def run(cmd, cwd, env, **kwargs):
    print('+', ' '.join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    return subprocess.run(cmd, cwd=cwd, env=env, **kwargs).returncode


def output(cmd, env, **kwargs):
    return subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True, **kwargs).stdout.strip()


def find_tool(name, *fallbacks):
    found = shutil.which(name)
    for path in fallbacks:
        if not found and os.access(path, os.X_OK):
            found = path
    return found


def staged_packages(env, root, work, version):
    """Points env at the packages unpacked in root; skips unless they are
    this tree's version."""
    pkg_config = shutil.which('pkg-config')
    if not pkg_config:
        skip('pkg-config is not installed')
    pcs = glob.glob(os.path.join(root, 'usr', 'lib', '*', 'pkgconfig', 'alphamoe-router.pc'))
    if not pcs:
        skip(f'no packages unpacked in {root}: run packaging/build-deb first')
    pc_dir = os.path.dirname(pcs[0])
    libdir = os.path.dirname(pc_dir)
    env.update(PKG_CONFIG_PATH=pc_dir, PKG_CONFIG_LIBDIR=pc_dir)
    prefix = output([pkg_config, '--variable=prefix', 'alphamoe-router'], env)
    bin_dir = os.path.join(work, 'bin')
    os.makedirs(bin_dir, exist_ok=True)
    wrapper = os.path.join(bin_dir, 'pkg-config')
    with open(wrapper, 'w') as f:
        f.write(f'#!/bin/sh\nexec {pkg_config} --define-variable=prefix={root}{prefix} "$@"\n')
    os.chmod(wrapper, 0o755)
    env.update(PKG_CONFIG=wrapper, LD_LIBRARY_PATH=libdir, LIBRARY_PATH=libdir,
               CPATH=os.path.join(root, 'usr', 'include'),
               PATH=os.pathsep.join([bin_dir, os.path.join(root, 'usr', 'bin'), env.get('PATH', '')]))
    staged = output([wrapper, '--modversion', 'alphamoe-router'], env)
    if staged != version:
        skip(f'the packages in {root} are {staged}, this tree is {version}: rerun packaging/build-deb')
    found = output([wrapper, '--variable=libdir', 'alphamoe-router'], env)
    if os.path.realpath(found) != os.path.realpath(libdir):
        fail(f'pkg-config finds alphamoe-router in {found}, not in the staging root {libdir}')
    print(f'staged alphamoe-router {staged}, library in {libdir}')


def readme_block(readme, predicate, what):
    """(marker line, code) of the fenced block after the first line that
    satisfies predicate."""
    lines = open(readme).read().splitlines()
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
    fail(f'{readme} has no {what} block')


def readme_example(readme, lang):
    """(file name, code, run commands) of README's `<!-- example: LANG FILE -->`
    block and the `<!-- example-run: LANG -->` block."""
    marker, code = readme_block(readme, lambda s: s.startswith(f'<!-- example: {lang} '), f'{lang} example')
    filename = marker[len(f'<!-- example: {lang} '):-len(' -->')].strip()
    _, commands = readme_block(readme, lambda s: s == f'<!-- example-run: {lang} -->', f'{lang} example-run')
    return filename, code, commands


def go_module_proxy(source, proxy, version):
    """A file-system module proxy serving packaging/go at vVERSION as the
    go command would fetch it from the repository tagged
    packaging/go/vVERSION: the module's files, and the root LICENSE, which
    the go command adds to a subdirectory module that has none."""
    module_dir = os.path.join(source, 'packaging', 'go')
    module = next(line.split()[1] for line in open(os.path.join(module_dir, 'go.mod'))
                  if line.startswith('module '))
    tag = f'v{version}'
    listed = subprocess.run(['git', '-C', module_dir, 'ls-files', '-z', '.'], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    if listed.returncode == 0 and listed.stdout:
        files = [f for f in listed.stdout.decode().split('\0') if f]
    else:
        files = [os.path.relpath(os.path.join(d, f), module_dir)
                 for d, _, names in os.walk(module_dir) for f in names]
    escaped = ''.join('!' + c.lower() if c.isupper() else c for c in module)
    versions = os.path.join(proxy, escaped, '@v')
    os.makedirs(versions, exist_ok=True)
    with open(os.path.join(versions, 'list'), 'w') as f:
        f.write(tag + '\n')
    with open(os.path.join(versions, f'{tag}.info'), 'w') as f:
        json.dump({'Version': tag}, f)
    shutil.copy(os.path.join(module_dir, 'go.mod'), os.path.join(versions, f'{tag}.mod'))
    with zipfile.ZipFile(os.path.join(versions, f'{tag}.zip'), 'w') as z:
        for name in sorted(files):
            z.write(os.path.join(module_dir, name), f'{module}@{tag}/{name}')
        if 'LICENSE' not in files and os.path.isfile(os.path.join(source, 'LICENSE')):
            z.write(os.path.join(source, 'LICENSE'), f'{module}@{tag}/LICENSE')
    return module, tag


def lintian(source, version, env):
    """lintian over this version's .changes, as nobody when run as root
    (lintian is not meant to run as root), from a copy in a folder of its
    own that nobody can read wherever the tree is."""
    tool = find_tool('lintian')
    if not tool:
        skip('lintian is not installed')
    out = os.path.join(source, 'build-deb')
    changes = sorted(glob.glob(os.path.join(out, f'alphamoe-router_{version}_*.changes')))
    if not changes:
        skip(f'no packages of version {version} in build-deb/: run packaging/build-deb')
    scratch = tempfile.mkdtemp(prefix='alphamoe-lintian-')
    try:
        for path in glob.glob(os.path.join(out, f'*_{version}_*')):
            shutil.copy(path, scratch)
        cmd = [tool, '--fail-on', 'error', '--info', os.path.join(scratch, os.path.basename(changes[-1]))]
        if os.geteuid() == 0:
            for path in [scratch] + [os.path.join(scratch, f) for f in os.listdir(scratch)]:
                shutil.chown(path, 'nobody', 'nogroup')
            env.update(HOME=scratch, TMPDIR=scratch)
            cmd = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--'] + cmd
        return run(cmd, scratch, env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('kind')
    ap.add_argument('--source', required=True)
    ap.add_argument('--work', required=True, help='a folder of the build tree for outputs')
    ap.add_argument('--version', required=True)
    ap.add_argument('--root', help='the staging root (default: SOURCE/build-deb/root)')
    args = ap.parse_args()
    source, work = os.path.abspath(args.source), os.path.abspath(args.work)
    root = os.path.abspath(args.root or os.path.join(source, 'build-deb', 'root'))
    packaging = os.path.join(source, 'packaging')
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    os.makedirs(work, exist_ok=True)

    if args.kind == 'lintian':
        return lintian(source, args.version, env)

    staged_packages(env, root, work, args.version)
    cargo = find_tool('cargo', os.path.expanduser('~/.cargo/bin/cargo'))
    go = find_tool('go', '/usr/lib/go/bin/go')
    if cargo:
        env['PATH'] = env['PATH'] + os.pathsep + os.path.dirname(cargo)
    if go:
        env['PATH'] = env['PATH'] + os.pathsep + os.path.dirname(go)
        # Nothing is downloaded: the module has no dependencies.
        env.update(GOFLAGS='-mod=mod', GOPROXY='off', GOTOOLCHAIN='local',
                   GOCACHE=os.path.join(work, 'go-cache'), GOPATH=os.path.join(work, 'go-path'))
    needs = {'rust': cargo, 'readme-rust': cargo, 'go': go, 'go-module': go, 'readme-go': go}
    if args.kind in needs and not needs[args.kind]:
        skip(f'no {"cargo" if "rust" in args.kind else "go"} on PATH (Debian: apt-get install '
             f'{"cargo" if "rust" in args.kind else "golang-go"})')
    cc = find_tool('cc')
    if args.kind in ('c', 'readme-c', 'readme-cuda') and not cc:
        skip('no C compiler')

    if args.kind == 'c':
        cflags = output(['pkg-config', '--cflags', 'alphamoe-router'], env).split()
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
    if args.kind == 'go-module':
        # The documentation's Go program in a module of its own that requires
        # the binding by its module path, fetched from a proxy (no replace).
        proxy = os.path.join(work, 'proxy')
        shutil.rmtree(proxy, ignore_errors=True)
        module, tag = go_module_proxy(source, proxy, args.version)
        run([go, 'clean', '-modcache'], work, env)
        demo = tempfile.mkdtemp(prefix='go-module-', dir=work)
        filename, code, _ = readme_example(os.path.join(source, 'docs', 'bindings.md'), 'go')
        with open(os.path.join(demo, filename), 'w') as f:
            f.write(code)
        env.update(GOPROXY=f'file://{proxy}', GONOSUMDB=module, GOFLAGS='-mod=mod')
        for cmd in (['mod', 'init', 'route-demo'], ['get', f'{module}@{tag}'], ['run', '.']):
            if run([go, *cmd], demo, env):
                return 1
        mod = open(os.path.join(demo, 'go.mod')).read()
        if 'replace' in mod or f'{module} {tag}' not in mod:
            fail(f'go.mod does not require {module} {tag} alone:\n{mod}')
        shutil.rmtree(demo, ignore_errors=True)
        return 0
    if args.kind == 'python':
        return run([sys.executable, '-m', 'unittest', 'discover', '-v', '-s', 'tests'],
                   os.path.join(packaging, 'python'), env)
    if args.kind == 'tools':
        route = os.path.join(root, 'usr', 'bin', 'alphamoe-route')
        if not os.access(route, os.X_OK):
            fail(f'alphamoe-router-tools holds no {route}')
        linked = output(['ldd', route], env)
        print(linked)
        if os.path.join(root, 'usr', 'lib') not in linked:
            fail('the packaged alphamoe-route does not load the packaged libalphamoe_router')
        # The default run: a preset routed on the GPU, else the CPU reference,
        # each checked (the tool exits nonzero on a mismatch).
        return run([route, '--tokens', '256'], work, env)
    if args.kind == 'readme-cuda':
        # README's CUDA example, compiled with the flags alphamoe-router-cuda
        # gives, routing a batch (packaging/c/readme_cuda_main.c).
        cuda_home = output(['pkg-config', '--variable=cuda_home', 'alphamoe-router-cuda'], env)
        if not os.path.isdir(os.path.join(cuda_home, 'include')):
            skip(f'no CUDA toolkit at {cuda_home} (pkg-config --define-variable=cuda_home=DIR names another)')
        if run([sys.executable, os.path.join(source, 'test', 'extract_readme_block.py'), 'c-example',
                os.path.join(source, 'README.md'), os.path.join(work, 'readme_example.h')], work, env):
            return 1
        flags = output(['pkg-config', '--cflags', '--libs', 'alphamoe-router-cuda'], env).split()
        exe = os.path.join(work, 'readme_cuda')
        if run([cc, '-std=gnu11', '-Wall', '-Wno-missing-field-initializers', '-I', work,
                os.path.join(packaging, 'c', 'readme_cuda_main.c'), *flags, '-o', exe], work, env):
            return 1
        return run([exe], work, env)
    if args.kind.startswith('readme-'):
        lang = args.kind[len('readme-'):]
        doc = 'README.md' if lang == 'python' else os.path.join('docs', 'bindings.md')
        filename, code, commands = readme_example(os.path.join(source, doc), lang)
        # README's commands run from the repository's root: a scratch copy
        # of that root (packaging/ linked in) holds what they create.
        scratch = tempfile.mkdtemp(prefix=f'readme-{lang}-', dir=work)
        os.symlink(packaging, os.path.join(scratch, 'packaging'))
        with open(os.path.join(scratch, filename), 'w') as f:
            f.write(code)
        print(f'README {lang} example saved as {filename}; running:\n{commands}', flush=True)
        env.pop('GOFLAGS', None)  # as a new user would have it
        status = run(['bash', '-euo', 'pipefail', '-c', commands], scratch, env)
        if status == 0:
            shutil.rmtree(scratch, ignore_errors=True)
        return status
    print(f'unknown kind {args.kind}')
    return 2


if __name__ == '__main__':
    sys.exit(main())
