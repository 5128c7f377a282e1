#!/usr/bin/env python3
"""Builds the wheel as a user does (pip install . from the checkout, in a
fresh virtual environment, meson-python from PyPI), then runs the Python
tests against what was installed, from outside the source tree: the
package and its bundled library must be the ones used.

Where pip cannot fetch the build dependencies (no network), the build uses
installed ones (pip install --no-build-isolation, as an offline user
would); with neither it skips (exit 77), saying why.

  test_wheel.py --source DIR --work DIR [--archs 90a,100a]

--archs limits the kernel images built (all the toolkit supports when
omitted). The wheel build keeps its build folder under --work, so a second
run is incremental.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# Variables that could point the tests at another library or package.
SCRUBBED = ('ALPHAMOE_ROUTER_LIBRARY', 'PYTHONPATH', 'PYTHONHOME', 'LD_LIBRARY_PATH', 'VIRTUAL_ENV')


def run(cmd, **kwargs):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, **kwargs).returncode


def build_requirements(source):
    """pyproject.toml's [build-system] requires, e.g. ['meson>=1.1']."""
    with open(os.path.join(source, 'pyproject.toml')) as f:
        text = f.read()
    block = re.search(r'^\[build-system\][^\[]*?^requires\s*=\s*\[(.*?)\]', text, re.M | re.S)
    return re.findall(r"""['"]([^'"]+)['"]""", block.group(1))


def version_key(text):
    return [int(x) for x in re.findall(r'\d+', text)[:3]]


def missing_requirements(python, requirements, env):
    """The requirements that the environment of `python` does not meet: a
    distribution of that name and version, or (meson, ninja) a command on
    PATH, which is what meson-python runs."""
    missing = []
    for requirement in requirements:
        name, _, minimum = (part.strip() for part in requirement.partition('>='))
        found = subprocess.run([python, '-c', 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))',
                                name], env=env, capture_output=True, text=True)
        version = found.stdout.strip() if found.returncode == 0 else None
        tool = shutil.which(name, path=env.get('PATH'))
        if version is None and tool:
            found = subprocess.run([tool, '--version'], env=env, capture_output=True, text=True)
            version = found.stdout.strip() if found.returncode == 0 else None
        if version is None or (minimum and version_key(version) < version_key(minimum)):
            missing.append(f'{requirement} ({"version " + version if version else "not installed"})')
    return missing


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--archs', default='')
    args = ap.parse_args()
    source, work = os.path.abspath(args.source), os.path.abspath(args.work)
    venv = os.path.join(work, 'venv')
    shutil.rmtree(venv, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    nvcc_dirs = [d for d in ('/usr/local/cuda/bin',) if os.path.isdir(d)]
    env['PATH'] = os.pathsep.join([env.get('PATH', '')] + nvcc_dirs)

    if run([sys.executable, '-m', 'venv', venv], env=env):
        print('FAIL: cannot create a virtual environment (Debian: apt-get install python3-venv)')
        return 1
    python = os.path.join(venv, 'bin', 'python')
    pip = [python, '-m', 'pip', '--disable-pip-version-check']
    install = pip + ['install', '--quiet', source, '-Cbuild-dir=' + os.path.join(work, 'build')]
    requirements = build_requirements(source)
    with tempfile.TemporaryDirectory() as scratch:
        fetched = subprocess.run(pip + ['download', '--quiet', '--no-deps', '--retries', '0', '--timeout', '20',
                                        '--dest', scratch] + requirements, env=env, cwd=work,
                                 capture_output=True, text=True)
    if fetched.returncode:
        print(f'pip cannot fetch the build dependencies {requirements}:')
        print('\n'.join(fetched.stderr.strip().splitlines()[-2:]))
        # Offline: the build dependencies this interpreter has, if it has them all.
        with open(os.path.join(venv, 'pyvenv.cfg')) as f:
            config = f.read()
        with open(os.path.join(venv, 'pyvenv.cfg'), 'w') as f:
            f.write(config.replace('include-system-site-packages = false', 'include-system-site-packages = true'))
        missing = missing_requirements(python, requirements, env)
        if missing:
            print(f'SKIP: the wheel cannot be built here: pip cannot fetch its build dependencies, and this '
                  f'Python lacks {", ".join(missing)} (pip install {" ".join(repr(r) for r in requirements)} '
                  'where PyPI is reachable, or run there)')
            return SKIP
        print('building with the installed build dependencies (--no-build-isolation)')
        install += ['--no-build-isolation', '--no-index']
    if args.archs:
        install.append('-Csetup-args=-Dgpu_archs=' + args.archs)
    if run(install, env=env, cwd=work):
        print('FAIL: pip install . did not build and install the wheel')
        return 1
    # numpy widens what the tests check; without it they check the rest.
    if fetched.returncode == 0 and run(pip + ['install', '--quiet', 'numpy'], env=env, cwd=work):
        print('numpy could not be installed: the tests run without it')

    check = ('import alphamoe_router as amr, os, sys\n'
             'from alphamoe_router import _ffi\n'
             'print("package", os.path.dirname(amr.__file__)); print("library", amr.library_path())\n'
             'sys.exit(0 if amr.library_path() == _ffi.BUNDLED and amr.__file__.startswith(sys.prefix) else 1)\n')
    if run([python, '-c', check], env=env, cwd=work):
        print('FAIL: the installed package did not load its own library')
        return 1
    env['ALPHAMOE_EXPECT_BUNDLED'] = '1'
    # From the work folder, so that the checkout's package cannot be imported.
    return run([python, '-m', 'unittest', 'discover', '-v', '-s', os.path.join(source, 'packaging', 'python', 'tests')],
               env=env, cwd=work)


if __name__ == '__main__':
    sys.exit(main())
