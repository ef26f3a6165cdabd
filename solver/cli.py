"""The ``fairpack`` command line: solve, check, validate, export, generate.

Exit codes: 0 success, 1 solver failure (or a result that does not verify), 2 bad input. Errors go to
stderr naming the file and field at fault; ``--json`` prints exactly one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from models.io import instance_to_dict, load_instance
from models.result import Result
from models.types import Instance, InstanceError
from models.view import result_json

EXIT_OK, EXIT_SOLVER, EXIT_INPUT = 0, 1, 2


def _fail(message: str, code: int) -> int:
    print(f"fairpack: {message}", file=sys.stderr)
    return code


def _aligned(header: list[str], rows: list[list[str]]) -> list[str]:
    """Rows padded into columns; the last column is left ragged (it can be long)."""
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header) - 1)]
    padded = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        for row in [header, *rows]
    ]
    return [f"  {cells}  {row[-1]}" for cells, row in zip(padded, [header, *rows], strict=True)]


def _footer(result: Result) -> list[str]:
    lines = [f"  VIOLATION: {violation}" for violation in result.violations[:10]]
    return lines + ([f"  note: {result.message}"] if result.message else [])


def _format_schedule(instance: Instance, result: Result) -> str:
    """Schedule results: makespan, avg JCT, bound, gap and a short per-job completion table."""
    data = result_json(instance, result)
    lines = [
        f"{instance.name}: method {result.method} (backend {result.backend}) -> {result.status}, "
        f"verified {'yes' if result.verified else 'NO'}",
    ]
    numbers = [
        (f"objective ({result.extra.get('objective_name', 'makespan')})", result.objective),
        ("makespan", data["makespan"]),
        ("avg JCT", data["avg_jct"]),
        ("bound", result.bound),
        ("gap", result.gap),
    ]
    lines.append("  " + "   ".join(f"{name} {value:.6g}" for name, value in numbers if value is not None))
    lines.append(f"  build {result.build_s:.3f} s, solve {result.solve_s:.3f} s, {len(data['tasks'])} tasks")
    header = ["job", "weight", "release", "completion", "JCT", "fair completion"]
    rows = []
    for job in instance.jobs[:20]:
        entry = data["jobs"][job.name]
        fair = entry["fair_completion"]
        rows.append([job.name, f"{job.weight:g}", _short(job.release), _short(entry["completion"]),
                     _short(entry["completion"] - job.release), "-" if fair is None else _short(fair)])  # fmt: skip
    lines += _aligned(header, rows)
    if len(instance.jobs) > 20:
        lines.append(f"  ... and {len(instance.jobs) - 20} more jobs (--json lists all)")
    return "\n".join(lines + _footer(result))


def _format_table(instance: Instance, result: Result) -> str:
    if result.schedule is not None:
        return _format_schedule(instance, result)
    lines = [
        f"{instance.name}: method {result.method} (backend {result.backend}) -> {result.status}, "
        f"verified {'yes' if result.verified else 'NO'}",
    ]
    hierarchical = instance.hierarchy is not None
    numbers = [
        ("min share/guarantee" if hierarchical else "min weighted share", result.objective),
        ("bound", result.bound),
        ("gap", result.gap),
    ]
    lines.append("  " + "   ".join(f"{name} {value:.6g}" for name, value in numbers if value is not None))
    lines.append(f"  build {result.build_s:.3f} s, solve {result.solve_s:.3f} s")
    if result.allocation is not None:
        data = result_json(instance, result)
        resources = list(instance.resources)
        header = ["tenant", "weight", "tasks", "dom.share", *resources, "servers"]
        rows = []
        for tenant in [] if hierarchical else instance.tenants:
            entry = data["tenants"][tenant.name]
            servers = ", ".join(f"{unit}:{_short(count)}" for unit, count in list(entry["per_server"].items())[:4])
            if len(entry["per_server"]) > 4:
                servers += f", ... ({len(entry['per_server'])} servers)"
            rows.append(
                [
                    tenant.name,
                    f"{tenant.weight:g}",
                    _short(entry["tasks"]),
                    f"{entry['dominant_share']:.4f}",
                    *(_short(entry["allocation"][r]) for r in resources),
                    servers,
                ]
            )
        if hierarchical:
            header, rows = _tree_rows(instance, data)
        lines += _aligned(header, rows)
        used = ", ".join(f"{r} {100 * u:.1f}%" for r, u in data["utilisation"].items())
        lines.append(f"  utilisation: {used}")
    if "time_averaged_shares" in result.extra:  # simulated schedulers: the table above is the end state
        averaged = ", ".join(f"{name} {v:.4f}" for name, v in result.extra["time_averaged_shares"].items())
        lines.append(f"  time-averaged shares after warm-up: {averaged}")
        if result.extra.get("distance_to_hdrf") is not None:
            lines.append(f"  time-averaged L1 distance to static H-DRF: {result.extra['distance_to_hdrf']:.4f}")
        for episode in result.extra.get("starvation", [])[:10]:
            lines.append(f"  STARVED: {episode['leaf']} from {episode['start']:.1f} to {episode['end']:.1f}")
    return "\n".join(lines + _footer(result))


def _tree_rows(instance: Instance, data: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The hierarchy drawn as a tree: weight, guarantee, achieved share and amounts of every node."""
    resources = list(instance.resources)
    header = ["node", "weight", "guarantee", "share", "share/guar.", "tasks", *resources, "servers"]
    nodes = data["nodes"]
    names = list(nodes)
    last_child = {}
    for name in names:
        last_child[nodes[name]["parent"]] = name
    rows = []
    for name in names:
        entry = nodes[name]
        # Draw the branch: for every ancestor, a bar if more siblings follow it, then this node's elbow.
        prefix, ancestor = "", entry["parent"]
        while ancestor is not None and nodes[ancestor]["parent"] is not None:
            prefix = ("   " if last_child[nodes[ancestor]["parent"]] == ancestor else "|  ") + prefix
            ancestor = nodes[ancestor]["parent"]
        if entry["parent"] is not None:
            prefix += "`- " if last_child[entry["parent"]] == name else "|- "
        tenant = data["tenants"].get(name) if entry["leaf"] else None
        ratio = entry["dominant_share"] / entry["guarantee"] if entry["guarantee"] > 0 else None
        servers = ""
        if tenant is not None and data["unit_kind"] != "pool":
            servers = ", ".join(f"{unit}:{_short(count)}" for unit, count in list(tenant["per_server"].items())[:4])
        rows.append(
            [
                prefix + name,
                f"{entry['weight']:g}",
                f"{entry['guarantee']:.4f}",
                f"{entry['dominant_share']:.4f}",
                "-" if ratio is None else f"{ratio:.3f}",
                _short(tenant["tasks"]) if tenant is not None else "",
                *(_short(entry["allocation"][r]) for r in resources),
                servers,
            ]
        )
    return header, rows


def _short(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) and not float(value).is_integer() else f"{value:g}"


@contextlib.contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """Send everything written to file descriptor 1 to stderr while solving.

    Native solver code sometimes prints to the C-level stdout even with logging off (HiGHS 1.12 does on
    warm-started MILPs); with ``--json`` stdout must hold exactly one JSON object.
    """
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _command_solve(args: argparse.Namespace) -> int:
    from solver.api import solve
    from solver.backends import BackendUnavailable
    from solver.registry import OptionError

    instance = load_instance(args.path)
    options: dict[str, Any] = {}
    if args.algorithm:
        options["algorithm"] = args.algorithm
    if args.strategy:
        options["strategy"] = args.strategy
    if args.slots:
        options["slots"] = args.slots
    if args.gap:
        options["gap"] = args.gap
    if args.placement:
        options["placement"] = args.placement
    if args.objective:
        options["objective"] = args.objective
    if args.seed is not None:
        options["seed"] = args.seed
    if args.horizon is not None:  # simulated hierarchical schedulers (naive-hdrf, dynamic-hdrf, hslots)
        options["extra"] = {"horizon": args.horizon}
    if args.alpha is not None:  # space-time methods, objective 'mix'
        options["alpha"] = args.alpha
    if args.no_fair_cap:  # exact DAG methods: drop the C_k <= T_k fair completion caps
        options["fair_cap"] = False
    try:
        with _stdout_to_stderr(args.json):
            result = solve(instance, args.method, backend=args.backend, time_limit=args.time_limit, **options)
    except OptionError as error:
        return _fail(str(error), EXIT_INPUT)
    except BackendUnavailable as error:
        return _fail(str(error), EXIT_SOLVER)
    if args.json:
        print(json.dumps(result_json(instance, result)))
    else:
        print(_format_table(instance, result))
    if args.output:
        Path(args.output).write_text(json.dumps(result_json(instance, result), indent=1))
    if args.plot:
        from solver.plot import PlotUnavailable, plot_schedule

        if result.schedule is None:
            return _fail("--plot needs a schedule result (a DAG-job method)", EXIT_INPUT)
        try:
            plot_schedule(instance, result, args.plot)
        except PlotUnavailable as error:
            return _fail(str(error), EXIT_INPUT)
    unverified = (result.allocation is not None or result.schedule is not None) and not result.verified
    if result.status in ("error", "infeasible", "unbounded") or unverified:
        return EXIT_SOLVER
    return EXIT_OK


def _command_check(args: argparse.Namespace) -> int:
    from models.check import verify_allocation
    from models.view import allocation_from_json

    instance = load_instance(args.path)
    try:
        data = json.loads(Path(args.result).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise InstanceError(f"cannot read result: {error}", source=args.result) from None
    if not isinstance(data, dict):
        raise InstanceError(f"a result must be a JSON object, got {type(data).__name__}", source=args.result)
    if "tasks" in data:  # a schedule result (DAG jobs)
        return _check_schedule(args, instance, data)
    try:
        allocation = allocation_from_json(instance, data)
    except InstanceError as error:
        raise error.located(args.result) from None
    amounts = {name: entry.get("allocation", {}) for name, entry in (data.get("tenants") or {}).items()}
    report = verify_allocation(instance, allocation, amounts=amounts)
    problems = list(report.violations)
    # The saved per-tenant numbers must match what the allocation implies.
    for position, tenant in enumerate(instance.tenants):
        entry = (data.get("tenants") or {}).get(tenant.name)
        if entry is None:
            continue
        for key, value in (("tasks", report.tasks[position]), ("dominant_share", report.dominant_shares[position])):
            saved = entry.get(key)
            if saved is not None and abs(float(saved) - float(value)) > 1e-6 * max(1.0, abs(float(value))):
                problems.append(f"tenant {tenant.name}: saved {key} {saved} but the allocation gives {value:.9g}")
    saved_objective = data.get("objective")
    if saved_objective is not None and abs(saved_objective - report.min_weighted_share) > 1e-6 * max(
        1.0, abs(report.min_weighted_share)
    ):
        problems.append(f"saved objective {saved_objective} but recomputed {report.min_weighted_share:.9g}")
    summary = {
        "verified": not problems,
        "violations": problems,
        "objective": report.min_weighted_share,
        "utilisation": dict(zip(instance.resources, report.utilisation.tolist(), strict=True)),
    }
    return _report_check(args, summary, f"min weighted share {report.min_weighted_share:.6g}")


def _report_check(args: argparse.Namespace, summary: dict[str, Any], headline: str) -> int:
    problems = summary["violations"]
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{args.result}: {'verified' if not problems else 'NOT verified'}")
        print(f"  {headline}")
        for problem in problems:
            print(f"  VIOLATION: {problem}")
    return EXIT_OK if not problems else EXIT_SOLVER


def _check_schedule(args: argparse.Namespace, instance: Instance, data: dict[str, Any]) -> int:
    """Re-verify a saved schedule and compare its saved makespan, avg JCT and completions."""
    from models.check import verify_schedule
    from models.view import schedule_from_json

    try:
        schedule = schedule_from_json(instance, data)
    except InstanceError as error:
        raise error.located(args.result) from None
    report = verify_schedule(instance, schedule, require_placement=data.get("placement") == "servers")
    problems = list(report.violations)

    def differs(saved: Any, value: float) -> bool:
        return saved is not None and abs(float(saved) - value) > 1e-6 * max(1.0, abs(value))

    for key, value in (("makespan", report.makespan), ("avg_jct", report.avg_jct)):
        if differs(data.get(key), value):
            problems.append(f"saved {key} {data.get(key)} but the schedule gives {value:.9g}")
    for k, job in enumerate(instance.jobs):
        entry = (data.get("jobs") or {}).get(job.name) or {}
        if differs(entry.get("completion"), float(report.completion[k])):
            problems.append(f"job {job.name}: saved completion {entry.get('completion')} but the schedule gives "
                            f"{report.completion[k]:.9g}")  # fmt: skip
    name = data.get("objective_name", "makespan")
    alpha = float(data.get("alpha", 0.5))
    objective = report.objective(name, alpha) if name in ("makespan", "avg-jct", "mix") else None
    if objective is not None and differs(data.get("objective"), objective):
        problems.append(f"saved objective {data.get('objective')} but recomputed {objective:.9g}")
    summary = {"verified": not problems, "violations": problems, "objective": objective,
               "makespan": report.makespan, "avg_jct": report.avg_jct}  # fmt: skip
    return _report_check(args, summary, f"makespan {report.makespan:.6g}   avg JCT {report.avg_jct:.6g}")


def _command_validate(args: argparse.Namespace) -> int:
    instance = load_instance(args.path)
    machines = int(instance.counts.sum())
    print(
        f"{args.path}: valid: {len(instance.resources)} resources, {len(instance.servers)} server classes "
        f"({machines} machines), {len(instance.tenants)} tenants, {len(instance.jobs)} jobs"
        + (f", hierarchy of {len(instance.hierarchy.nodes)} nodes" if instance.hierarchy else "")
    )
    return EXIT_OK


def _command_export(args: argparse.Namespace) -> int:
    import numpy as np

    from solver.drfh.filling import level_upper_bound
    from solver.drfh.int_model import DrfhIntModel
    from solver.drfh.model import DrfhModel, UnitGrouping

    instance = load_instance(args.path)
    if args.method in ("drfh", "drf"):
        target = instance.pooled() if args.method == "drf" else instance
        model = DrfhModel(target, UnitGrouping.merge_identical(target))
        tenants, units = model.all_pairs()
        lp = model.build(tenants, units, level_upper_bound(model))
    elif args.method == "drfh-int":
        lp = DrfhIntModel.build_pairs(instance).build(1, np.zeros(0))
    else:
        return _fail(f"export supports drf, drfh and drfh-int (the first max-min step), not {args.method!r}", 2)
    text = lp.to_mps() if args.format == "mps" else lp.to_lp()
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _command_generate(args: argparse.Namespace) -> int:
    from models import generators

    if args.family == "google":
        instance = generators.google_instance(args.data_dir, args.tenants, args.seed, args.machines, args.distinct)
    elif args.family == "alibaba":
        if args.data_dir is None:
            return _fail("the alibaba family needs --data-dir", EXIT_INPUT)
        instance = generators.alibaba_instance(args.data_dir, args.tenants, args.seed)
    elif args.family == "random":
        instance = generators.random_small(args.seed, args.machines or 3, args.tenants, 2)
    elif args.family == "tree":
        instance = generators.random_tree_instance(
            args.seed, args.tenants, args.depth, args.resources, servers=args.machines
        )
    else:
        return _fail(f"unknown family {args.family!r}", EXIT_INPUT)
    sys.stdout.write(yaml.safe_dump(instance_to_dict(instance), sort_keys=False, default_flow_style=None))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from solver.backends import BACKEND_NAMES
    from solver.registry import method_names

    parser = argparse.ArgumentParser(prog="fairpack", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    solve = commands.add_parser("solve", help="solve an instance file and verify the result")
    solve.add_argument("path")
    solve.add_argument("--method", default="drfh", choices=method_names())
    solve.add_argument("--backend", default=None, choices=list(BACKEND_NAMES),
                       help="solver backend (default: the method's own; `fairpack methods` lists them)")
    solve.add_argument("--time-limit", type=float, default=None, help="seconds")
    solve.add_argument("--algorithm", help="backend variant: highs simplex|ipm|pdlp, ortools glop|pdlp|scip")
    solve.add_argument("--strategy", choices=["auto", "plain", "colgen", "aggregate"], help="drfh LP strategy")
    solve.add_argument("--slots", type=int, help="slots per largest server (slots method)")
    solve.add_argument("--gap", type=float, help="drfh-int: stop when f is within this fraction of its proven bound")
    solve.add_argument(
        "--placement",
        choices=["auto", "pooled", "servers"],
        help="hdrf, collapsed: one pool or placeable on servers; DAG jobs: pooled (default) or every task on one "
        "machine (servers)",
    )
    solve.add_argument("--horizon", type=float, help="simulated time (naive-hdrf, dynamic-hdrf, hslots)")
    solve.add_argument("--seed", type=int, help="seed of the simulated task durations")
    solve.add_argument(
        "--objective",
        choices=["makespan", "avg-jct", "mix"],
        help="objective for space-time methods (default makespan for one job, avg-jct for several)",
    )
    solve.add_argument("--alpha", type=float, help="mix objective: alpha * avg JCT + (1 - alpha) * makespan")
    solve.add_argument(
        "--no-fair-cap", action="store_true", help="spacetime: do not cap job completions at their fair-share times"
    )
    solve.add_argument("--json", action="store_true", help="print one JSON object")
    solve.add_argument("--output", "-o", help="also save the JSON result to this file")
    solve.add_argument("--plot", help="DAG jobs: save a resource-time profile (PNG) to this file")
    solve.set_defaults(handler=_command_solve)

    check = commands.add_parser("check", help="re-verify a saved JSON result against its instance")
    check.add_argument("path")
    check.add_argument("result")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=_command_check)

    validate = commands.add_parser("validate", help="schema and semantic validation only")
    validate.add_argument("path")
    validate.set_defaults(handler=_command_validate)

    export = commands.add_parser("export", help="write the model for an external solver")
    export.add_argument("path")
    export.add_argument("--method", default="drfh")
    export.add_argument("--format", choices=["mps", "lp"], default="mps")
    export.add_argument("--output", "-o")
    export.set_defaults(handler=_command_export)

    generate = commands.add_parser("generate", help="print a generated instance as YAML")
    generate.add_argument("family", choices=["google", "alibaba", "random", "tree"])
    generate.add_argument("--seed", type=int, default=0)
    generate.add_argument("--tenants", type=int, default=20)
    generate.add_argument("--machines", type=int, default=None)
    generate.add_argument("--depth", type=int, default=3, help="tree: depth of the deepest leaf")
    generate.add_argument("--resources", type=int, default=3, help="tree: number of resources")
    generate.add_argument("--distinct", action="store_true", help="jitter every machine into its own class")
    generate.add_argument("--data-dir", default=None, help="the shared data folder (google/, alibaba/)")
    generate.set_defaults(handler=_command_generate)

    from solver.bench.cli import add_bench_parser  # argparse only: pandas and dask load when a bench command runs

    add_bench_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except InstanceError as error:
        return _fail(str(error), EXIT_INPUT)
    except ValueError as error:
        return _fail(str(error), EXIT_INPUT)
    return code


if __name__ == "__main__":
    sys.exit(main())
