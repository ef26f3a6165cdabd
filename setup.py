"""The one compiled extension: the FIFO simulator's event loop in C (``solver/sim/_fifo_loop.pyx``).

Everything else is declared in pyproject.toml. The extension is optional: without Cython or a C compiler the
install goes on and the simulator runs the same loop compiled by numba (``solver/sim/fifo_numba.py``), which gives
the same schedules and costs a slower start.
"""

import sys

from setuptools import Extension, setup


def extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    # No fused multiply-add: a * b + c must round twice, as numba's kernel and the engine do.
    flags = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off"]
    loop = Extension("fairpack.solver.sim._fifo_loop", ["fairpack/solver/sim/_fifo_loop.pyx"],
                     extra_compile_args=flags, optional=True)
    try:
        return list(cythonize([loop], language_level=3, quiet=True))
    except Exception as error:  # an old or broken Cython: numba's kernel serves
        print(f"fairpack: the FIFO loop's C extension is not built ({error}); numba's kernel will run it")
        return []


setup(ext_modules=extensions())
