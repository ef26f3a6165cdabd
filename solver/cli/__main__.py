"""``python -m solver.cli``: the fairpack command line."""

from solver.cli.main import run

run()
