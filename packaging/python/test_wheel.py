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
import site
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


# Build requirements that meson-python runs as commands ($MESON, $NINJA or on PATH).
COMMANDS = ('meson', 'ninja')


def missing_requirements(python, requirements, env):
    """The requirements that `python` and PATH do not meet, each saying why."""
    missing = []
    for requirement in requirements:
        name, _, minimum = (part.strip() for part in requirement.partition('>='))
        if name in COMMANDS:
            command = env.get(name.upper()) or shutil.which(name, path=env.get('PATH'))
            found = subprocess.run([command, '--version'], env=env, capture_output=True, text=True) if command \
                else None
        else:
            found = subprocess.run([python, '-c', 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))',
                                    name], env=env, capture_output=True, text=True)
        version = found.stdout.strip() if found and found.returncode == 0 else None
        if version is None or (minimum and version_key(version) < version_key(minimum)):
            missing.append(f'{requirement} ({"found " + version if version else "not installed"})')
    return missing


def see_this_python(python, env):
    """The virtual environment of `python` also imports the packages, and
    PATH finds the commands, of the Python running this script."""
    purelib = subprocess.run([python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(purelib, 'build_dependencies.pth'), 'w') as f:
        f.write('\n'.join(site.getsitepackages()) + '\n')
    env['PATH'] = os.pathsep.join([os.path.dirname(sys.executable), env['PATH']])


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
        # Offline: the build dependencies this Python has, if it has them all.
        see_this_python(python, env)
        missing = missing_requirements(python, requirements, env)
        if missing:
            print(f'SKIP: the wheel cannot be built here: pip cannot fetch its build dependencies, and not all '
                  f'are installed: {", ".join(missing)}. pip install {" ".join(repr(r) for r in requirements)} '
                  'where PyPI is reachable, or run the test there.')
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
