"""The ``fairpack`` command line: solve, check, validate, export, generate, methods, bench.

Exit codes: 0 success; 1 a solver failure, a result that does not verify, or an internal error; 2 bad
input (the file and field at fault are named) or an option the method cannot honour (refused before
solving); 130 interrupted (Ctrl-C: ``solve`` and ``simulate`` first write the best answer found by then,
status ``interrupted``; a second Ctrl-C quits at once). Errors go to stderr; ``--json`` prints exactly one
JSON object on stdout. No traceback is printed unless ``--verbose`` asks for one.

Only argparse and the method registry load to build the parser, so ``fairpack --help`` and
``fairpack methods`` return in a fraction of a second; numpy, the solvers, pandas and matplotlib load
when a command needs them.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import NoReturn

from fairpack.solver import __version__
from fairpack.solver.cli.exits import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_SOLVER, fail
from fairpack.solver.cli.help import HelpFormatter


def _input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean bad input (exit 2): instance and result files, options, sweep files, a feature
    whose extra is not installed."""
    from fairpack.models.types import InstanceError
    from fairpack.solver.bench.sweep import SweepError
    from fairpack.solver.extras import ExtraMissing
    from fairpack.solver.registry import OptionError

    return InstanceError, OptionError, SweepError, ExtraMissing


def _located(error: Exception, args: argparse.Namespace) -> Exception:
    """An instance error raised after loading (a method's requirement on the instance, checked by the
    solver, which does not know the file), and a method's or policy's refusal, name the instance file the
    command was given."""
    from fairpack.models.io import STDIN
    from fairpack.models.types import InstanceError
    from fairpack.solver.registry import OptionError

    path = getattr(args, "path", None)
    if not isinstance(path, str):
        return error
    where = "<stdin>" if path == STDIN else path
    if isinstance(error, InstanceError) and not error.source:
        return error.located(where)
    if isinstance(error, OptionError) and getattr(args, "command", None) in ("solve", "simulate"):
        # A method or policy refusing this instance (or an option on it): the file is named as well.
        return InstanceError(error.reason, error.option, where)
    return error


def build_parser() -> argparse.ArgumentParser:
    from fairpack.solver.bench.cli import add_bench_parser
    from fairpack.solver.cli import commands

    parser = argparse.ArgumentParser(prog="fairpack", description="Exact, verified multi-resource fair allocation "
                                     "and packing, and how far the heuristics real schedulers use are from it.",
                                     formatter_class=HelpFormatter)  # fmt: skip
    parser.add_argument("--version", action="version", version=f"fairpack {__version__}")
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_commands(subcommands)
    add_bench_parser(subcommands)
    for each in parsers(parser):  # one help style everywhere, whoever added the subcommand
        each.formatter_class = HelpFormatter
    return parser


def parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand parser below it, depth first."""
    found = [parser]
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += parsers(child)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``fairpack`` command; returns its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    verbose = bool(getattr(args, "verbose", False))
    try:
        code: int = args.handler(args)
        sys.stdout.flush()  # here, not at exit, so that a reader that went away is caught below
    except BrokenPipeError:
        # The reader went away (``fairpack ... | head``): stop quietly, as Unix tools do. Python flushes
        # stdout again at exit, so point it at /dev/null first or that flush fails with a second error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:  # before solve or simulate started (commands.stopping_at_ctrl_c), or another command
        return fail("interrupted", EXIT_INTERRUPTED)
    except Exception as error:
        if isinstance(error, _input_errors()):
            return fail(str(_located(error, args)), EXIT_INPUT)
        if verbose:
            traceback.print_exc()
        return fail(f"internal error: {type(error).__name__}: {error}" + ("" if verbose else
                    " (run with --verbose for the traceback)"), EXIT_SOLVER)  # fmt: skip
    return code


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``fairpack`` program: run one command with ``main``, then end the process at once.

    Once the answer is written, nothing is left to do but free memory, and Python's own exit frees every
    object and module one by one: 0.1-0.2 s with numpy, scipy and HiGHS loaded, more after a large
    instance, on every command. So what that exit does first is done here (threads that are not daemons
    are waited for, the exit handlers run: files and child processes are closed there), the standard
    streams are flushed, and the operating system reclaims the rest when the process ends.
    """
    code = main(argv)
    for thread in threading.enumerate():  # as Python's exit does: wait for the threads that are not daemons
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the reader went away or the stream was closed
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
