"""What a request asks of the solver itself beyond the model: threads, a random seed, its own log.

Kept apart from the adapters (like :mod:`fairpack.solver.backends.capabilities`) so that building settings from a
request imports no solver library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SolverSettings:
    """``--workers``, ``--seed`` and ``--verbose`` as every backend receives them.

    Attributes
    ----------
    threads
        Solver threads (HiGHS ``threads``, CP-SAT ``num_workers``); None: the solver's default.
    seed
        The solver's random seed (HiGHS ``random_seed``, CP-SAT ``random_seed``); None: its default.
    verbose
        Stream the solver's own log (HiGHS output, CP-SAT search progress) to the process's stdout, which
        the CLI sends to stderr while solving.
    """

    threads: int | None = None
    seed: int | None = None
    verbose: bool = False

    def __post_init__(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
