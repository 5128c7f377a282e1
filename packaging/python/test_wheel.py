#!/usr/bin/env python3
"""Builds the wheel as a user does (pip install . from the checkout, in a
fresh virtual environment, meson-python from PyPI), then runs the Python
tests against what was installed, from outside the source tree: the
package and its bundled library must be the ones used.

  test_wheel.py --source DIR --work DIR [--archs 90a,100a]

--archs limits the kernel images built (all the toolkit supports when
omitted). The wheel build keeps its build folder under --work, so a second
run is incremental.
"""
import argparse
import os
import shutil
import subprocess
import sys

# Variables that could point the tests at another library or package.
SCRUBBED = ('ALPHAMOE_ROUTER_LIBRARY', 'PYTHONPATH', 'PYTHONHOME', 'LD_LIBRARY_PATH', 'VIRTUAL_ENV')


def run(cmd, **kwargs):
    print('+', ' '.join(cmd), flush=True)
    return subprocess.run(cmd, **kwargs).returncode


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
    install = [python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', source,
               '-Cbuild-dir=' + os.path.join(work, 'build')]
    if args.archs:
        install.append('-Csetup-args=-Dgpu_archs=' + args.archs)
    if run(install, env=env, cwd=work):
        print('FAIL: pip install . did not build and install the wheel')
        return 1
    # numpy widens what the tests check; without it they check the rest.
    if run([python, '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', 'numpy'], env=env, cwd=work):
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
