"""The ``fairpack`` command line: solve, check, validate, export, generate, methods, bench.

Exit codes: 0 success; 1 a solver failure, a result that does not verify, or an internal error; 2 bad
input (the file and field at fault are named) or an option the method cannot honour (refused before
solving). Errors go to stderr; ``--json`` prints exactly one JSON object on stdout. No traceback is
printed unless ``--verbose`` asks for one.

Only argparse and the method registry load to build the parser, so ``fairpack --help`` and
``fairpack methods`` return in a fraction of a second; numpy, the solvers, pandas and matplotlib load
when a command needs them.
"""

from fairpack.solver.cli.main import main, run

__all__ = ["main", "run"]
