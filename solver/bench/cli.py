"""``fairpack bench run``, ``fairpack bench report`` and ``fairpack bench figures``.

Only argparse is imported here: ``solver.cli`` builds this parser for every command, and pandas, dask,
tqdm and matplotlib load only when a bench command runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

from fairpack.solver import interrupt
from fairpack.solver.registry import OptionError

EXIT_OK, EXIT_INTERRUPTED = 0, interrupt.EXIT_INTERRUPTED
#: A second Ctrl-C quits at once, without waiting for the table to be saved again.
SECOND_NOTICE = "fairpack: interrupted again: quitting at once; the table holds the rows saved before"


def add_bench_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``bench run``, ``bench report`` and ``bench figures`` to the ``fairpack`` subcommands."""
    bench = commands.add_parser("bench", help="benchmark sweeps: run a sweep file, report on its results")
    actions = bench.add_subparsers(dest="bench_command", required=True, metavar="ACTION")

    run = actions.add_parser("run", help="run a sweep (TOML or YAML); resumes: rows already in --out are kept")
    run.add_argument("sweep", help="the sweep file, e.g. benchmarks/sweeps/smoke.toml, or the name of a bundled "
                     "one (smoke, readme, online, delay, sparrow_omega, tpch_triangle)")
    # Required: a default file would land wherever the command runs (the repository root, untracked).
    run.add_argument("--out", required=True, metavar="TABLE.parquet",
                     help="results table, .parquet (a .csv copy goes next to it); an existing table is resumed")
    run.add_argument("--workers", type=int, help="task processes at a time (default: the CPU count)")
    run.add_argument("--scheduler", help="run on a Dask cluster instead, e.g. tcp://host:8786")
    run.add_argument("--connect-timeout", type=float, default=10.0, metavar="S",
                     help="seconds to wait for the Dask scheduler before giving up (exit 2)")
    run.add_argument("--data-dir", help="the shared data folder (default: $FAIRPACK_DATA_DIR); grids needing "
                     "absent data are skipped")  # fmt: skip
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(handler=_command_run)

    report = actions.add_parser("report", help="write a Markdown summary and PNG plots of a results table")
    report.add_argument("results", help="the .parquet table written by 'bench run'")
    report.add_argument("--out", help="output folder (default: <results stem>_report next to the table)")
    report.set_defaults(handler=_command_report)

    figures = actions.add_parser("figures", help="the benchmark figures (Markdown + PNG) from one or more tables")
    figures.add_argument("results", nargs="+", help=".parquet tables written by 'bench run'")
    figures.add_argument("--out", default="benchmarks/results/figures", help="folder for figures.md and the PNGs")
    figures.add_argument("--readme", help="also fill the <!-- figures:begin/end --> block of this Markdown file "
                         "(benchmarks/README.md)")
    figures.set_defaults(handler=_command_figures)


def _command_run(args: argparse.Namespace) -> int:
    from fairpack.solver.extras import require

    require("bench", "fairpack bench run")  # before importing pandas' Parquet engine, or any task
    if args.scheduler:
        require("bench-dask", "--scheduler")
    from fairpack.solver.bench.runner import kill_children, run_sweep
    from fairpack.solver.bench.sweep import load_sweep

    sweep = load_sweep(args.sweep)
    if args.workers is not None and args.workers < 1:
        raise OptionError(f"must be at least 1, got {args.workers}", "--workers")
    data_dir = args.data_dir or os.environ.get("FAIRPACK_DATA_DIR") or None
    if data_dir is not None and not Path(data_dir).is_dir():
        raise OptionError(f"{data_dir}: no such folder", "--data-dir")
    out = Path(args.out)
    for message in sweep.tasks(data_dir)[1]:  # say it before the run, not after it
        print(f"fairpack: {message}", file=sys.stderr)
    # Ctrl-C stops the sweep: no task starts after it, running tasks are killed (their rows are not recorded:
    # they run again when the sweep resumes), the table is saved, exit 130. A second Ctrl-C quits at once (the
    # task processes killed first). A terminated run stops like an interrupted one.
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with interrupt.handling(EXIT_INTERRUPTED, raise_first=True, second_notice=SECOND_NOTICE,
                                before_exit=kill_children):  # fmt: skip
            summary = run_sweep(sweep, out, args.workers, args.scheduler, data_dir, progress=not args.no_progress,
                                connect_timeout=args.connect_timeout)
    except KeyboardInterrupt:
        print(f"fairpack: interrupted; the finished rows are in {out}, run again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"{summary.out}: {summary.executed} tasks run, {summary.skipped} already there, "
          f"{summary.failed} failed or hit a limit (see status and message); CSV copy next to it")  # fmt: skip
    return EXIT_OK


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _command_report(args: argparse.Namespace) -> int:
    from fairpack.solver.extras import require

    require("bench", "fairpack bench report")
    from fairpack.solver.bench.report import write_report

    if not Path(args.results).is_file():
        raise OptionError(f"{args.results}: no such results table", "results")
    path = write_report(args.results, args.out)
    print(f"{path} (plots next to it)")
    return EXIT_OK


def _command_figures(args: argparse.Namespace) -> int:
    from fairpack.solver.extras import require

    require("bench", "fairpack bench figures")
    from fairpack.solver.bench.figures import write_figures

    for table in args.results:
        if not Path(table).is_file():
            raise OptionError(f"{table}: no such results table", "results")
    path = write_figures(args.results, args.out, args.readme)
    print(f"{path} (PNGs next to it)" + (f"; {args.readme} updated" if args.readme else ""))
    return EXIT_OK
