"""``python -m fairpack``: the ``fairpack`` command."""

from fairpack.solver.cli import run

run()
