"""``python -m solver.cli``: the fairpack command line."""

from fairpack.solver.cli.main import run

run()
