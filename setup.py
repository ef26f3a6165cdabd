"""The compiled extensions: the FIFO simulator's event loop (``solver/sim/_fifo_loop.pyx``) and Best-Fit's
two-resource search (``solver/drfh/_ratio_search.pyx``) in C.

Everything else is declared in pyproject.toml. Both extensions are optional: without Cython or a C compiler the
install goes on and the same code compiled by numba runs instead (``solver/sim/fifo_numba.py``,
``solver/drfh/ratio_numba.py``), which gives the same schedules and allocations and costs a slower start.
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
    compiled = [Extension(name, [source], extra_compile_args=flags, optional=True) for name, source in (
        ("fairpack.solver.sim._fifo_loop", "fairpack/solver/sim/_fifo_loop.pyx"),
        ("fairpack.solver.drfh._ratio_search", "fairpack/solver/drfh/_ratio_search.pyx"),
    )]  # fmt: skip
    try:
        return list(cythonize(compiled, language_level=3, quiet=True))
    except Exception as error:  # an old or broken Cython: numba's kernels serve
        print(f"fairpack: the C extensions are not built ({error}); numba's kernels will run the same code")
        return []


setup(ext_modules=extensions())
