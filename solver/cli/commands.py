"""The ``fairpack`` subcommands: solve, check, validate, export, generate, methods.

Every handler takes the parsed arguments and returns an exit code; heavy modules are imported inside
the handlers, so building the parser stays cheap.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairpack.solver import interrupt
from fairpack.solver.backends import BACKEND_NAMES
from fairpack.solver.cli.exits import EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_SOLVER, fail
from fairpack.solver.registry import SolveOptions, method_names

if TYPE_CHECKING:
    from fairpack.models.result import Result
    from fairpack.models.types import Instance

#: Defaults of the solve options the CLI leaves unset unless given (a method refuses options it cannot honour).
DEFAULTS = SolveOptions()
#: Simulated time of the hierarchical schedulers and backlogs when ``--horizon`` is not given.
HORIZON = 200.0
#: Rows a table shows by default (``--top`` changes it; ``--format csv`` lists everything).
DEFAULT_TOP = 20
#: Servers a table names per tenant (``render.format_table``), the rest counted.
SERVERS_SHOWN = 4
#: What ``--format csv`` lists, one row each.
CSV_ROWS = ("auto", "tenants", "nodes", "jobs", "tasks")
FORMATS = ("table", "json", "csv")


def positive_seconds(text: str) -> float:
    """argparse type of ``--time-limit``: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite number of seconds, got {text!r}")
    return value


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {'at least 1' if least == 1 else f'{least} or more'}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number, at least 1."""
    return _whole_number(text, 1)


def rows(text: str) -> int:
    """argparse type of ``--top``: a whole number of rows, 0 or more."""
    return _whole_number(text, 0)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return value


def load(path: str, args: argparse.Namespace | None = None) -> Instance:
    """The instance at ``path``; ``-`` reads it from standard input.

    With ``--hierarchy`` (a YARN fair-scheduler.xml or capacity-scheduler.xml) the file at ``path`` is the
    cluster, and the hierarchy is the YARN queue tree with the ``--leaf-demand`` given; what the YARN file
    holds that is not modelled is said on stderr.
    """
    from fairpack.models.io import load_instance

    hierarchy = getattr(args, "hierarchy", None)
    if hierarchy is None:
        for option in ("leaf_demand", "yarn_resource"):
            if getattr(args, option, None):
                raise _option_error("needs --hierarchy (a YARN scheduler file)", option.replace("_", "-"))
        return load_instance(path)
    from fairpack.models.types import InstanceError
    from fairpack.models.yarn import instance_from_yarn

    assert args is not None
    if not args.leaf_demand:
        raise _option_error("--hierarchy needs --leaf-demand: YARN files hold no task demands (a file mapping "
                            "queues to demands, or RESOURCE=AMOUNT,... for every leaf)", "leaf-demand")  # fmt: skip
    cluster = load_instance(path)
    notes: list[str] = []
    try:
        instance = instance_from_yarn(cluster, hierarchy, _leaf_demands(args.leaf_demand),
                                      resources=_yarn_resources(args.yarn_resource), notes=notes)  # fmt: skip
    except InstanceError as error:  # only a --leaf-demand given on the command line has no file to name
        raise error.located(error.source or "--leaf-demand") from None
    for note in notes:
        print(f"fairpack: note: {note}", file=sys.stderr)
    return instance


def _leaf_demands(items: list[str]) -> list[Any]:
    """``--leaf-demand`` values in order: a file's path, or ``[QUEUE:]RESOURCE=AMOUNT,...[,tasks=N]``
    (no queue: every leaf not named otherwise)."""
    from fairpack.models.types import InstanceError

    specs: list[Any] = []
    for item in items:
        head = item.partition("=")[0]
        if not head or "=" not in item or Path(item).is_file():
            specs.append(item)
            continue
        queue, _, rest = item.rpartition(":") if ":" in head else ("*", "", item)
        queue = queue.strip() or "*"
        demand: dict[str, float] = {}
        tasks: float | None = None
        for part in rest.split(","):
            key, sep, text = (piece.strip() for piece in part.partition("="))
            if not sep or not key:
                raise InstanceError(f"expected RESOURCE=AMOUNT, got {part!r}", f"demand[{queue}]", "--leaf-demand")
            try:
                value = float(text)
            except ValueError:
                raise InstanceError(f"must be a number, got {text!r}", f"demand[{queue}].{key}",
                                    "--leaf-demand") from None  # fmt: skip
            if key == "tasks":
                tasks = value
            else:
                demand[key] = value
        specs.append({queue: {"demand": demand, "tasks": tasks} if tasks is not None else demand})
    return specs


def _yarn_resources(items: list[str] | None) -> dict[str, str]:
    """``--yarn-resource YARN=NAME`` pairs."""
    mapping: dict[str, str] = {}
    for item in items or []:
        yarn, sep, name = (piece.strip() for piece in item.partition("="))
        if not sep or not yarn or not name:
            raise _option_error(f"expected YARN=NAME (e.g. memory-mb=mem), got {item!r}", "yarn-resource")
        mapping[yarn] = name
    return mapping


def _add_yarn_options(parser: argparse.ArgumentParser) -> None:
    """``--hierarchy``, ``--leaf-demand`` and ``--yarn-resource``: a YARN queue tree on the instance's cluster."""
    parser.add_argument("--hierarchy", metavar="XML", help="a YARN fair-scheduler.xml or capacity-scheduler.xml: "
                        "its queue tree (weights, or capacities as weights) replaces the instance's tenants or "
                        "hierarchy, and the instance file gives the cluster (resources and servers)")  # fmt: skip
    parser.add_argument("--leaf-demand", action="append", metavar="SPEC",
                        help="with --hierarchy, what one task of each leaf queue needs: a YAML/JSON file mapping "
                        "queues (path, or name) to {demand: {...}, tasks: N}, '*' for the rest; or "
                        "[QUEUE:]RESOURCE=AMOUNT,...[,tasks=N] (no QUEUE: every leaf); repeatable, later ones "
                        "override earlier ones")  # fmt: skip
    parser.add_argument("--yarn-resource", action="append", metavar="YARN=NAME",
                        help="map a YARN resource name to the instance's (by default a name maps to itself if the "
                        "instance has it, else memory-mb to mem, vcores to cpu, yarn.io/gpu to gpu)")  # fmt: skip


@contextlib.contextmanager
def native_stdout_to_stderr() -> Iterator[None]:
    """Send everything written to file descriptor 1 to stderr while solving.

    Native solver code prints to the C-level stdout even with logging off (HiGHS 1.12 does on
    warm-started MILPs), and ``--verbose`` asks for the solvers' logs: both belong on stderr, so that
    stdout holds only the result (exactly one JSON object with ``--json``).
    """
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# --- solve ----------------------------------------------------------------------------------------------


def _solve_options(args: argparse.Namespace) -> dict[str, Any]:
    """``SolveOptions`` fields from the arguments actually given (the method refuses those it cannot use)."""
    names = ("algorithm", "strategy", "slots", "gap", "placement", "objective", "alpha", "workers", "seed")
    options: dict[str, Any] = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    extra = _parse_options(args.option)  # the method refuses settings it does not use, naming them
    if args.horizon is not None:  # simulated hierarchical schedulers (naive-hdrf, dynamic-hdrf, hslots)
        extra["horizon"] = args.horizon
    if extra:
        options["extra"] = extra
    if args.no_fair_cap:  # exact DAG methods: drop the C_k <= T_k fair completion caps
        options["fair_cap"] = False
    if args.verbose:
        options["verbose"] = True
    return options


@contextlib.contextmanager
def stopping_at_ctrl_c() -> Iterator[interrupt.Call]:
    """Ctrl-C while a command solves or simulates (and writes its result): the first one stops the search and
    the result so far is written as usual, with status ``interrupted`` (exit 130); a second one quits at once
    (exit 130, one line on stderr). Before it (reading the instance), Ctrl-C stops the command: there is no
    answer to write yet."""
    with interrupt.handling(EXIT_INTERRUPTED, first_notice=interrupt.FIRST_NOTICE,
                            second_notice=interrupt.SECOND_NOTICE) as call:  # fmt: skip
        yield call


def write_output(path: str, data: dict[str, Any] | Iterable[str]) -> None:
    """``-o FILE``: the JSON result (a view, or its text in pieces), written to a temporary file then renamed, so
    that a second Ctrl-C (which quits at once) never leaves half a file."""
    pieces = [json.dumps(data, indent=1)] if isinstance(data, dict) else data
    target = Path(path)
    if target.exists() and not target.is_file():  # /dev/stdout, a named pipe: written as it is
        _write_pieces(target, pieces)
        return
    partial = target.with_name(f".{target.name}.partial")
    _write_pieces(partial, pieces)
    os.replace(partial, target)


def _write_pieces(path: Path, pieces: Iterable[str]) -> None:
    with path.open("w") as out:
        for piece in pieces:
            out.write(piece)


def command_solve(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    _require_plot(args)
    _check_output(args)
    instance = load(args.path, args)
    _check_rows(args, instance)
    with stopping_at_ctrl_c() as call:
        code = _solve_and_write(instance, args, started)
    return EXIT_INTERRUPTED if call.interrupted else code


def _solve_and_write(instance: Instance, args: argparse.Namespace, started: float) -> int:
    from fairpack.models.view import result_json
    from fairpack.solver.api import solve
    from fairpack.solver.backends.base import BackendUnavailable
    from fairpack.solver.progress import reporting

    output = "json" if args.json else args.format
    try:
        # Long solves print their incumbent and bound to stderr every few seconds; --verbose adds the
        # solvers' own logs (fd 1, sent to stderr here) and each step of fairpack's own searches.
        with native_stdout_to_stderr(), reporting(sys.stderr, verbose=args.verbose):
            result = solve(instance, args.method, backend=args.backend, time_limit=_left(args.time_limit, started),
                           **_solve_options(args))  # fmt: skip
    except BackendUnavailable as error:
        return fail(str(error), EXIT_SOLVER)
    # ``--json`` alone: the text is written from columns (result_json_text), the same as json.dumps of the view.
    data: dict[str, Any] | None = None
    if output == "table" and not args.output:  # a table names a few servers per tenant, never all of them
        data = result_json(instance, result, units_shown=SERVERS_SHOWN)
    elif output != "json" or args.output:
        data = result_json(instance, result)
    _print_result(instance, result, data, output, args)
    if data is not None and args.output:
        write_output(args.output, data)
    if args.plot:
        code = _plot(instance, result, args.plot)
        if code != EXIT_OK:
            return code
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    if result.status in ("error", "infeasible", "unbounded") or (result.has_answer and not result.verified):
        return EXIT_SOLVER
    return EXIT_OK


#: Seconds of ``--time-limit`` kept back for verifying and printing the result, at most this share of it.
OUTPUT_RESERVE_S, OUTPUT_RESERVE_SHARE = 1.0, 0.1


def _left(limit: float | None, started: float) -> float | None:
    """What is left of ``--time-limit`` for ``solve()``: the limit bounds the whole call, so reading the
    instance (seconds for a large YAML file) counts, and a little is kept back for the output."""
    if limit is None:
        return None
    reserve = min(OUTPUT_RESERVE_S, OUTPUT_RESERVE_SHARE * limit)
    return max(limit - reserve - (time.perf_counter() - started), 1e-3)


def _print_result(instance: Instance, result: Result, data: dict[str, Any] | None, output: str,
                  args: argparse.Namespace) -> None:  # fmt: skip
    """The result on stdout as ``output``; ``data`` is its JSON view (None: JSON text written in bulk)."""
    from fairpack.models.view_text import result_json_chunks
    from fairpack.solver.cli.render import format_csv, format_table

    for warning in result.warnings:
        print(f"fairpack: warning: {warning}", file=sys.stderr)
    if data is None:
        for piece in result_json_chunks(instance, result):
            sys.stdout.write(piece)
        print()
        return
    if output == "json":
        print(json.dumps(data))
    elif output == "csv":
        sys.stdout.write(format_csv(instance, result, data, getattr(args, "rows", "auto")))
    elif args.quiet:
        print(format_table(instance, result, top=0, data=data).split("\n", 1)[0])
    else:
        print(format_table(instance, result, top=args.top, data=data))


def _check_rows(args: argparse.Namespace, instance: Instance) -> None:
    """``--rows`` is for ``--format csv`` and must name a table the answer will hold (refused before solving)."""
    rows = getattr(args, "rows", "auto")
    if rows == "auto":
        return
    from fairpack.solver.registry import OptionError

    if args.json or args.format != "csv":
        raise OptionError("lists the rows of --format csv; add --format csv", "--rows")
    held = {"jobs": bool(instance.jobs), "tasks": bool(instance.jobs), "nodes": instance.hierarchy is not None,
            "tenants": bool(instance.tenants) and not instance.jobs}  # fmt: skip
    if not held[rows]:
        raise OptionError(f"this instance's answer has no {rows} (choose from "
                          f"{', '.join(name for name, has in held.items() if has)})", "--rows")  # fmt: skip


def _check_output(args: argparse.Namespace) -> None:
    """``-o FILE`` into a folder that does not exist is refused before reading or solving anything (exit 2)."""
    path = getattr(args, "output", None)
    if not path:
        return
    folder = Path(path).expanduser().parent
    if not folder.is_dir():
        from fairpack.solver.registry import OptionError

        raise OptionError(f"cannot write {path}: the folder {folder} does not exist", "--output")


def _require_plot(args: argparse.Namespace) -> None:
    """``--plot`` that cannot be written (matplotlib missing, no such folder, a suffix matplotlib cannot
    write) is refused before reading or solving anything (exit 2)."""
    path = getattr(args, "plot", None)
    if not path:
        return
    from fairpack.solver.extras import require
    from fairpack.solver.registry import OptionError

    require("plot", "--plot")
    folder = Path(path).expanduser().parent
    if not folder.is_dir():
        raise OptionError(f"cannot write {path}: the folder {folder} does not exist", "--plot")
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:  # found but broken: the same word as a missing one
        from fairpack.solver.plot import NO_MATPLOTLIB, PlotUnavailable

        raise PlotUnavailable(NO_MATPLOTLIB) from None
    formats = FigureCanvasBase.get_supported_filetypes()
    if Path(path).suffix.lower().lstrip(".") not in formats:
        raise OptionError(f"cannot write {path}: give a picture file ending in one of "
                          f"{', '.join('.' + f for f in sorted(formats))}", "--plot")  # fmt: skip


def _plot(instance: Instance, result: Result, path: str) -> int:
    from fairpack.solver.plot import PlotUnavailable, plot_result

    try:
        plot_result(instance, result, path)
    except PlotUnavailable as error:
        return fail(str(error), EXIT_INPUT)
    return EXIT_OK


# --- simulate -------------------------------------------------------------------------------------------


def _parse_options(items: list[str] | None) -> dict[str, Any]:
    """``--option k=v`` pairs (numbers and true/false parsed) as the policy's settings."""
    options: dict[str, Any] = {}
    for item in items or []:
        for part in item.split(","):
            key, sep, text = part.partition("=")
            if not sep or not key.strip():
                raise _option_error(f"expected key=value, got {part!r}", "option")
            options[key.strip()] = _parse_value(text.strip())
    return options


def command_simulate(args: argparse.Namespace) -> int:
    from fairpack.models.traces import read_trace

    started = time.perf_counter()
    _require_plot(args)
    _check_output(args)
    instance = load(args.path, args)
    trace = read_trace(args.trace, instance.resources) if args.trace else None
    _check_rows(args, instance if trace is None else trace.on(instance))
    options: dict[str, Any] = {"extra": _parse_options(args.option)}
    for name in ("placement", "seed", "slots"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.horizon is not None:
        options["extra"]["horizon"] = args.horizon
    with stopping_at_ctrl_c() as call:
        code = _simulate_and_write(instance, trace, options, args, started)
    return EXIT_INTERRUPTED if call.interrupted else code


def _simulate_and_write(instance: Instance, trace: Any, options: dict[str, Any], args: argparse.Namespace,
                        started: float) -> int:  # fmt: skip
    from fairpack.models.view import result_json
    from fairpack.models.view_text import result_json_chunks
    from fairpack.solver.api import simulate

    with native_stdout_to_stderr():
        result = simulate(instance, args.policy, trace, time_limit=_left(args.time_limit, started), **options)
    workload = instance if trace is None else trace.on(instance)
    output = "json" if args.json else args.format
    # A table shows --top jobs: its view is built for them alone (no row per task). The JSON, printed or saved, is
    # written as text from the schedule's columns (models.view_text), the same text json.dumps gives of the view.
    light = output == "table" and result.schedule is not None
    data = None if output == "json" else result_json(workload, result, jobs_shown=args.top if light else None)
    _print_result(workload, result, data, output, args)
    if args.output:
        write_output(args.output, result_json_chunks(workload, result, indent=1))
    if args.plot:
        from fairpack.solver.plot import PlotUnavailable, plot_simulation

        try:
            plot_simulation(workload, result, args.plot)
        except PlotUnavailable as error:
            return fail(str(error), EXIT_INPUT)
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    return EXIT_OK if result.verified else EXIT_SOLVER


# --- check ----------------------------------------------------------------------------------------------


def _stated_options(args: argparse.Namespace) -> dict[str, Any]:
    """The run's options as ``check``'s caller states them (solve's and simulate's own flags), as flat keys."""
    stated: dict[str, Any] = {name: getattr(args, name) for name in ("placement", "objective", "alpha", "slots")
                              if getattr(args, name) is not None}  # fmt: skip
    if args.no_fair_cap:
        stated["fair_cap"] = False
    if args.horizon is not None:
        stated["extra.horizon"] = args.horizon
    stated.update({f"extra.{key}": value for key, value in _parse_options(args.option).items()})
    return stated


def _checked_method(name: str, data: dict[str, Any], stated: str | None) -> Any:
    """The registry record a saved result is checked as: the ``--method`` given, else the method or policy the
    file names (a name of both: the file's ``command``)."""
    from fairpack.solver.registry import OptionError, get_method, get_policy, methods, policies

    if stated is not None:
        return get_method(stated)
    is_method, is_policy = name in methods(), name in policies()
    if is_method and is_policy:
        command = data.get("command")
        # Results saved before ``command`` was recorded: a DAG simulation names its policy; a backlog one is an
        # allocation on machines, checked alike as either.
        simulated = command == "simulate" if command is not None else "policy" in data
        return get_policy(name) if simulated else get_method(name)
    if is_policy:
        return get_policy(name)
    if is_method:
        return get_method(name)
    raise OptionError(f"the result names {name!r}, which is neither a method nor a policy of this fairpack", "method")


def command_check(args: argparse.Namespace) -> int:
    from fairpack.models.check.saved import check_saved
    from fairpack.models.types import InstanceError

    instance = load(args.path, args)
    if args.trace:
        from fairpack.models.traces import read_trace

        instance = read_trace(args.trace, instance.resources).on(instance)
    from fairpack.models.saved_tables import read_result

    try:
        # A file as -o writes it has its jobs and tasks read as columns, never as a dict per row.
        data = read_result(args.result, instance)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InstanceError(f"cannot read result: {error}", source=args.result) from None
    if not isinstance(data, dict):
        raise InstanceError(f"a result must be a JSON object, got {type(data).__name__}", source=args.result)
    if not isinstance(data.get("method"), str):
        raise InstanceError("not a fairpack result: it names no method", "method", args.result)
    traced = data.get("trace")
    if isinstance(traced, dict) and not args.trace:
        source = traced.get("source")
        named = f" ({source})" if isinstance(source, str) else ""
        raise InstanceError(f"this result was simulated on a trace{named}: give the same trace with --trace to "
                            "check it", "trace", args.result)  # fmt: skip
    method = _checked_method(data["method"], data, args.method)
    rules = method.saved_rules(_stated_options(args), jobs=bool(instance.jobs))
    try:
        checked = check_saved(instance, data, rules)
    except InstanceError as error:
        raise error.located(args.result) from None
    violations, notes = list(checked.violations), list(checked.notes)
    if checked.verified and not args.no_rerun:
        from fairpack.solver.rerun import rerun_and_compare

        again = rerun_and_compare(instance, data, method, answer=checked.answer)
        violations += [again.violation] if again.violation else []
        notes += [again.note] if again.note else []
    verified = checked.verified and not violations
    summary = {"verified": verified, "violations": violations, "rules": checked.rules, "notes": notes,
               **checked.numbers}  # fmt: skip
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.result}: {'verified' if verified else 'NOT verified'}")
        print("  rules: " + "; ".join(checked.rules))
        numbers = {k: v for k, v in checked.numbers.items() if isinstance(v, int | float)}
        if numbers:
            print("  " + "   ".join(f"{k} {v:.6g}" for k, v in numbers.items()))
        for note in notes:
            print(f"  {note}")
        for problem in violations:
            print(f"  VIOLATION: {problem}")
    return EXIT_OK if verified else EXIT_SOLVER


# --- validate, export, generate, methods -----------------------------------------------------------------


def command_validate(args: argparse.Namespace) -> int:
    from fairpack.models.io import STDIN
    from fairpack.solver.api import preflight

    instance = load(args.path, args)
    machines = int(instance.counts.sum())
    where = "<stdin>" if args.path == STDIN else args.path
    print(
        f"{where}: valid: {len(instance.resources)} resources, {len(instance.servers)} server classes "
        f"({machines} machines), {len(instance.tenants)} tenants, {len(instance.jobs)} jobs"
        + (f", hierarchy of {len(instance.hierarchy.nodes)} nodes" if instance.hierarchy else "")
    )
    for warning in preflight(instance):
        print(f"  warning: {warning}")
    return EXIT_OK


#: Model file suffixes ``fairpack export -o`` recognises.
EXPORT_SUFFIXES = {".mps": "mps", ".lp": "lp"}


def export_format(given: str | None, output: str | None) -> str:
    """The format of ``fairpack export``: ``--format``, else the ``-o`` file's suffix, else MPS.

    A ``--format`` that contradicts a known suffix (``-o model.lp --format mps``) is refused: the file
    would be named for one format and hold the other.
    """
    suffix = EXPORT_SUFFIXES.get(Path(output).suffix.lower()) if output else None
    if given is not None and suffix is not None and given != suffix:
        raise _option_error(f"-o {output} names an {suffix.upper()} file but --format is {given}", "format")
    return given or suffix or "mps"


def command_export(args: argparse.Namespace) -> int:
    from fairpack.solver.api import export_model

    _check_output(args)
    file_format = export_format(args.format, args.output)
    instance = load(args.path)
    lp = export_model(instance, args.method)
    text = lp.to_mps() if file_format == "mps" else lp.to_lp()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


#: ``fairpack generate`` names -> (generator family, the size parameter ``--tenants`` sets).
GENERATE = {
    "google": ("google", "tenants"),
    "google-like": ("google-like", "tenants"),
    "alibaba": ("alibaba", "tenants"),
    "random": ("random-flat", "tenants"),
    "tree": ("random-tree", "leaves"),
    "hdrf-fig10": ("hdrf-fig10", None),
    "dag": ("dag-random", None),
    "tpch": ("tpch", None),
    "psplib": ("psplib", None),
    "arrivals": ("arrivals", "tenants"),
    "tpch-arrivals": ("tpch-arrivals", None),
    "hdfs": ("hdfs", "users"),
    "google-day": ("google-day", None),
    "sparrow": ("sparrow", None),
    "omega": ("omega", None),
    "tetrisched": ("soft", None),
}


def _generate_params(args: argparse.Namespace) -> dict[str, Any]:
    """The family's size parameters from the shorthand flags and ``--param key=value``."""
    from fairpack.models.generators.families import FAMILIES

    name, tenants_key = GENERATE[args.family]
    family = FAMILIES[name]
    shorthand = {tenants_key: args.tenants, "machines": args.machines, "servers": args.machines,
                 "depth": args.depth, "resources": args.resources, "distinct": args.distinct or None,
                 "jobs": args.jobs, "queries": args.queries, "set": args.set}  # fmt: skip
    params: dict[str, Any] = {key: value for key, value in shorthand.items()
                              if key is not None and key in family.params and value is not None}  # fmt: skip
    for item in args.param or []:
        key, sep, text = item.partition("=")
        if not sep:
            raise _option_error(f"expected key=value, got {item!r}", "param")
        params[key] = _parse_value(text)
    return params


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        with contextlib.suppress(ValueError):
            return cast(text)
    return text


def _option_error(reason: str, option: str) -> Exception:
    from fairpack.solver.registry import OptionError

    return OptionError(reason, option)


def command_generate(args: argparse.Namespace) -> int:
    from fairpack.models.generators.families import FAMILIES, DataMissing, ParamError
    from fairpack.models.io import instance_to_yaml
    from fairpack.models.types import InstanceError

    data_dir = args.data_dir or os.environ.get("FAIRPACK_DATA_DIR")
    name = GENERATE[args.family][0]
    if name == "google" and not data_dir:
        print("fairpack: no --data-dir: a synthetic Google-like cluster (the real table needs the data)",
              file=sys.stderr)  # fmt: skip
        name = "google-like"
    family = FAMILIES[name]
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise InstanceError(f"no such folder: {args.data_dir}", "--data-dir")
    try:
        folder = Path(data_dir) if data_dir else None
        if args.nodes_only:
            instance = _nodes_only(args.family, folder)
        else:
            instance = family.instance(_generate_params(args), args.seed, folder)
    except DataMissing as error:
        message = str(error)
        return fail(message if "--data-dir" in message else f"{message} (pass --data-dir)", EXIT_INPUT)
    except ParamError as error:
        raise _option_error(str(error), "param") from None
    sys.stdout.write(instance_to_yaml(instance))  # quotes what YAML 1.2 would read back as a number
    return EXIT_OK


def _nodes_only(family: str, data_dir: Path | None) -> Instance:
    from fairpack.models.generators import alibaba_servers
    from fairpack.models.generators.families import DataMissing
    from fairpack.models.types import Instance as Cluster

    if family != "alibaba":
        raise _option_error("--nodes-only is for the alibaba family", "nodes-only")
    if data_dir is None or not (data_dir / "alibaba").is_dir():
        raise DataMissing("the alibaba nodes need the shared data folder")
    return Cluster(("cpu", "mem", "gpu"), alibaba_servers(data_dir), name="alibaba-nodes")


def command_methods(args: argparse.Namespace) -> int:
    from fairpack.solver.registry import describe_all

    entries = describe_all()
    if args.json:
        print(json.dumps(entries))
        return EXIT_OK
    width = max(len(entry["name"]) for entry in entries)
    for command in ("solve", "simulate"):
        print(f"fairpack {command} --{'method' if command == 'solve' else 'policy'}:")
        for entry in (e for e in entries if e["command"] == command):
            backends = ", ".join(f"{b} ({'/'.join(a)})" for b, a in entry["backends"].items()) or "none"
            kind = "exact" if entry["exact"] else "heuristic" if command == "solve" else "online"
            print(f"  {entry['name']:<{width}}  {entry['family']:<9}  {kind:<9}  {entry['summary']}")
            settings = ""
            if entry["extra"]:
                settings = f"; settings (--option key=value): {', '.join(entry['extra'])}"
            print(f"  {'':<{width}}  backends: {backends}; flags: {', '.join(entry['flags'])}{settings}")
            if command == "simulate":
                print(f"  {'':<{width}}  {_policy_facts(entry)}")
    return EXIT_OK


def _policy_facts(entry: dict[str, Any]) -> str:
    """What a policy's record declares it runs on, in words (``fairpack methods``)."""
    from fairpack.solver.registry import WORKLOADS

    runs_on = " or ".join(WORKLOADS[w] for w in entry["workloads"])
    options = {"none": "refused", "task": "task by task, no gangs", "all": "chosen among, gangs too"}
    reads = "; reads the instance itself" if entry["needs_instance"] else ""
    return f"runs on: {runs_on}; placement options: {options[entry['placement_options']]}{reads}"


# --- the parser ----------------------------------------------------------------------------------------


def _add_solve(subcommands: Any, formatter: type[argparse.HelpFormatter]) -> None:
    solve = subcommands.add_parser("solve", help="solve an instance file and verify the result",
                                   formatter_class=formatter)  # fmt: skip
    solve.add_argument("path", help="instance file (YAML, JSON or PSPLIB .sm); - reads standard input; with "
                       "--hierarchy, the cluster")
    solve.add_argument("--method", default="drfh", choices=method_names(), metavar="METHOD",
                       help="one of: " + ", ".join(method_names()) + " (fairpack methods describes them)")
    solve.add_argument("--backend", default=None, choices=list(BACKEND_NAMES),
                       help="solver backend (default: the method's own)")
    solve.add_argument("--time-limit", type=positive_seconds, metavar="S",
                       help="seconds for the whole call (default: no limit)")  # fmt: skip
    solve.add_argument("--algorithm", help="backend variant: highs simplex|ipm|pdlp, ortools glop|pdlp|scip "
                       "(default: the backend's own)")  # fmt: skip
    solve.add_argument("--strategy", choices=["auto", "plain", "decompose", "colgen", "aggregate"],
                       help=f"drf/drfh LP strategy (default: {DEFAULTS.strategy})")  # fmt: skip
    solve.add_argument("--slots", type=positive_int, metavar="K",
                       help=f"slots per largest server (slots, hslots; default: {DEFAULTS.slots})")  # fmt: skip
    solve.add_argument("--gap", type=fraction, metavar="G", help="drfh-int: stop when f is within this fraction of "
                       f"its proven bound (default: {DEFAULTS.gap:g}, prove the optimum)")  # fmt: skip
    solve.add_argument("--placement", choices=["auto", "pooled", "servers"],
                       help="hdrf, collapsed: one pool or placeable on servers (default: auto, servers when the "
                       "machines differ); DAG jobs: pooled (the default) or every task on one machine "
                       "(servers)")  # fmt: skip
    solve.add_argument("--option", action="append", metavar="KEY=VALUE",
                       help="a method's own setting, e.g. decompose=false for spacetime-cp (fairpack methods "
                       "lists them)")  # fmt: skip
    solve.add_argument("--horizon", type=positive_seconds, metavar="T",
                       help=f"simulated time (naive-hdrf, dynamic-hdrf, hslots; default: {HORIZON:g})")  # fmt: skip
    solve.add_argument("--seed", type=int, help="seed of a solver or a simulation")
    solve.add_argument("--workers", type=positive_int, help="solver threads (CP-SAT workers, HiGHS threads)")
    solve.add_argument("--objective", choices=["makespan", "avg-jct", "mix", "utility"],
                       help="DAG jobs (default makespan for one job, avg-jct for several)")
    solve.add_argument("--alpha", type=fraction, help="mix objective: alpha * avg JCT + (1 - alpha) * makespan "
                       f"(default: {DEFAULTS.alpha:g})")  # fmt: skip
    solve.add_argument("--no-fair-cap", action="store_true",
                       help="exact DAG methods: do not cap job completions at their fair-share times")
    solve.add_argument("--json", action="store_true", help="print one JSON object (same as --format json)")
    solve.add_argument("--format", choices=FORMATS, default="table", help="output on stdout")
    solve.add_argument("--rows", choices=CSV_ROWS, default="auto",
                       help="what --format csv lists, one row each (auto: tenants, hierarchy nodes or tasks)")
    solve.add_argument("--top", type=rows, default=DEFAULT_TOP, metavar="N",
                       help="rows per table (--format csv lists every row)")
    solve.add_argument("--quiet", action="store_true", help="table format: the headline only")
    solve.add_argument("--verbose", action="store_true", help="stream the solver's own log (HiGHS, CP-SAT, "
                       "drfh-int's level search) to stderr, and tracebacks of internal errors")  # fmt: skip
    solve.add_argument("--output", "-o", metavar="FILE", help="also save the JSON result to this file")
    solve.add_argument("--plot", metavar="FILE", help="save a picture of the answer (PNG; a PDF or SVG suffix "
                       "works too): per-server stacked bars, the tree, or a resource profile and per-machine Gantt "
                       "chart")  # fmt: skip
    _add_yarn_options(solve)
    solve.set_defaults(handler=command_solve)


def _add_simulate(subcommands: Any, formatter: type[argparse.HelpFormatter]) -> None:
    from fairpack.solver.registry import policies

    names = list(policies())
    simulate = subcommands.add_parser("simulate", help="run an online policy over time on arrivals or backlogs",
                                      formatter_class=formatter)  # fmt: skip
    simulate.add_argument("path", help="instance file: the cluster, and its jobs or tenants (with --hierarchy: the "
                          "cluster alone); - reads standard input")
    simulate.add_argument("--trace", help="arrivals (CSV or Parquet table, or the Alibaba pod list) run on the cluster")
    simulate.add_argument("--policy", required=True, choices=names, metavar="POLICY",
                          help="one of: " + ", ".join(names))  # fmt: skip
    simulate.add_argument("--option", action="append", metavar="KEY=VALUE",
                          help="a policy setting, e.g. altruism=0.5 (fairpack methods lists them)")
    simulate.add_argument("--placement", choices=["pooled", "servers"],
                          help="every machine (servers, the default) or the cluster as one pool")  # fmt: skip
    simulate.add_argument("--seed", type=int, help="seed of the policy or the task durations")
    simulate.add_argument("--slots", type=positive_int, metavar="K",
                          help=f"slots per largest machine (slots, hslots; default: {DEFAULTS.slots})")  # fmt: skip
    simulate.add_argument("--time-limit", type=positive_seconds, metavar="S",
                          help="seconds for the whole call (reading the files included): the run stops and "
                          "returns what it simulated so far, status time_limit (default: no limit)")  # fmt: skip
    simulate.add_argument("--horizon", type=positive_seconds, metavar="T",
                          help=f"simulated time (backlogs, default: {HORIZON:g}; jobs: stop early)")  # fmt: skip
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.add_argument("--format", choices=FORMATS, default="table", help="output on stdout")
    simulate.add_argument("--rows", choices=CSV_ROWS, default="auto",
                          help="what --format csv lists, one row each (auto: tenants, hierarchy nodes or tasks)")
    simulate.add_argument("--top", type=rows, default=DEFAULT_TOP, metavar="N",
                          help="rows per table (--format csv lists every row)")
    simulate.add_argument("--quiet", action="store_true", help="table format: the headline only")
    simulate.add_argument("--verbose", action="store_true", help="tracebacks of internal errors")
    simulate.add_argument("--output", "-o", metavar="FILE", help="also save the JSON result to this file")
    simulate.add_argument("--plot", metavar="FILE",
                          help="save utilisation and shares over time (and a Gantt chart of small runs)")  # fmt: skip
    _add_yarn_options(simulate)
    simulate.set_defaults(handler=command_simulate)


def add_commands(subcommands: Any) -> None:
    """Add every subcommand but ``bench`` to the ``fairpack`` parser."""
    from fairpack.solver.cli.help import HelpFormatter

    formatter = HelpFormatter  # main.build_parser sets it on every parser; here for the callers of this function
    _add_solve(subcommands, formatter)
    _add_simulate(subcommands, formatter)

    check = subcommands.add_parser("check", help="re-verify a saved JSON result against its instance",
                                   formatter_class=formatter)  # fmt: skip
    check.add_argument("path", help="the instance the result was solved from; - reads standard input")
    check.add_argument("result", help="a JSON result saved by fairpack solve -o or fairpack simulate -o")
    check.add_argument("--trace", help="the trace the result was simulated on (fairpack simulate --trace)")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--no-rerun", action="store_true",
                       help="do not run a heuristic or policy again to compare its answer with the file's")
    rules = check.add_argument_group(
        "the run's options", "How the result was made, as you gave it to solve or simulate: the file must agree, "
        "and an option that loosens the rules (--no-fair-cap, --placement pooled where the method places on "
        "machines, --horizon, more --slots, --option fair_completion=...) is applied only when given here too; "
        "the others default to what the result records.")  # fmt: skip
    rules.add_argument("--method", metavar="METHOD", help="the method (online:NAME for a policy) the result must be of")
    rules.add_argument("--placement", choices=["auto", "pooled", "servers"], help="as given to solve or simulate")
    rules.add_argument("--objective", choices=["makespan", "avg-jct", "mix", "utility"], help="as given to solve")
    rules.add_argument("--alpha", type=fraction, help="as given to solve (mix objective)")
    rules.add_argument("--no-fair-cap", action="store_true", help="the exact DAG method ran without fair caps")
    rules.add_argument("--horizon", type=positive_seconds, metavar="T", help="the simulation stopped at T")
    rules.add_argument("--slots", type=positive_int, metavar="K", help="slots per largest machine, as given")
    rules.add_argument("--option", action="append", metavar="KEY=VALUE", help="a method's own setting, as given")
    _add_yarn_options(check)
    check.set_defaults(handler=command_check)

    validate = subcommands.add_parser("validate", help="check an instance file (schema, semantics, solvability)",
                                      formatter_class=formatter)  # fmt: skip
    validate.add_argument("path", help="instance file; - reads standard input")
    _add_yarn_options(validate)
    validate.set_defaults(handler=command_validate)

    export = subcommands.add_parser("export", help="write a method's model for an external solver",
                                    formatter_class=formatter)  # fmt: skip
    export.add_argument("path", help="instance file; - reads standard input")
    export.add_argument("--method", default="drfh", help="drf, drfh (the first filling round) or drfh-int (max-min)")
    export.add_argument("--format", choices=["mps", "lp"], help="default: from the -o suffix (.mps, .lp), else mps")
    export.add_argument("--output", "-o", help="file to write (default: standard output)")
    export.set_defaults(handler=command_export)

    generate = subcommands.add_parser("generate", help="print a generated instance as YAML", formatter_class=formatter,
                                      description="Print a generated instance as YAML. Size options not given take "
                                      "the family's own defaults; alibaba, google (the real table), tpch and "
                                      "psplib read the shared data folder.")  # fmt: skip
    generate.add_argument("family", choices=list(GENERATE),
                          help="flat: google, google-like, alibaba, random; hierarchy: tree, hdrf-fig10; DAG jobs: "
                          "dag, tpch, psplib; arrivals over time (fairpack simulate): arrivals, tpch-arrivals, "
                          "google-day, sparrow (short parallel jobs), omega (batch and service jobs), hdfs (data "
                          "locality), tetrisched (soft constraints, gangs, deadlines)")  # fmt: skip
    generate.add_argument("--seed", type=int, default=0, help="seed of the generator (psplib: the file number)")
    generate.add_argument("--tenants", type=int, help="tenants (tree: leaves)")
    generate.add_argument("--machines", type=int, help="machines (tree: servers)")
    generate.add_argument("--depth", type=int, help="tree: depth of the deepest leaf")
    generate.add_argument("--resources", type=int, help="tree, random, dag: number of resources")
    generate.add_argument("--distinct", action="store_true", help="google: jitter every machine into its own class")
    generate.add_argument("--jobs", type=int, help="dag, sparrow, tetrisched: number of jobs")
    generate.add_argument("--queries", type=int, help="tpch: number of queries")
    generate.add_argument("--set", help="psplib: j30, j60, j90 or j120 (--seed picks the file)")
    generate.add_argument("--param", action="append", metavar="KEY=VALUE", help="any size parameter of the family")
    generate.add_argument("--nodes-only", action="store_true",
                          help="alibaba: the real cluster alone, for traces (fairpack simulate --trace)")
    generate.add_argument("--data-dir", default=None, help="the shared data folder (default: $FAIRPACK_DATA_DIR)")
    generate.set_defaults(handler=command_generate)

    methods = subcommands.add_parser("methods", help="every method and policy: family, exact, backends, options",
                                     formatter_class=formatter)  # fmt: skip
    methods.add_argument("--json", action="store_true", help="print one JSON list")
    methods.set_defaults(handler=command_methods)
