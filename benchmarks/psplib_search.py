"""PSPLIB: what limits ``spacetime-cp`` at 10 s and one CP-SAT worker, measured one instance at a time.

Two experiments, each on named instances (the hard subsets: J30 groups 13, 29, 45; J60/J120 instances that
miss the best known at 10 s):

* ``proof``: the proof phase alone. The model is built as ``spacetime-cp`` builds it (warm-start horizon),
  restricted to makespans below the best known (an optimum), and handed to CP-SAT with each variant of its
  parameters (``VARIANTS``: cumulative propagators, precedences, LP level, search branching, core/LB-tree,
  objective shaving). Reported per instance and variant: status (``INFEASIBLE`` = proven), wall seconds,
  conflicts and CP-SAT's deterministic time, which does not depend on the load (the wall clock here varies
  1.5-3x with it), so variants are compared on it.
* ``pipeline``: the whole call (``solver.spacetime.cp.solve_spacetime_cp``) under search settings given as
  JSON (``stall``: ``lns.STALL_STEPS``; ``share``: ``cp.LNS_SHARE``; ``sub``: ``lns.SUB_SOLVE_S``; ``free``:
  ``lns.INITIAL_FREE_SHARE``; ``ga``: ``cp.GA_SHARE``, 0 turns the genetic algorithm off; ``ga_stall``:
  ``rcpsp_ga.STALL_GENERATIONS``; ``time_limit``), set for the run only; reported: makespan, status, LNS steps and
  improvements, which phase found the schedule, warm-start and search seconds. With ``time_limit`` 60 or 300
  on instances that miss the best known at 10 s it shows what a longer budget reaches.

Every configuration of one instance runs back to back in the same process, so ratios share the load; the load
average is saved at the start and the end.

Run: ``python -m benchmarks.psplib_search --data-dir ../shared/data proof j3013_2 j3045_2 --variants base ovl``
or ``... pipeline j1201_1 --configs '{}' '{"stall": 8}'``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from benchmarks._common import parser, save
from benchmarks.psplib_sets import load_note, psplib_folder, read_bounds

#: CP-SAT parameter variants of the proof phase ("base" is what spacetime-cp sets for makespan).
VARIANTS: dict[str, dict[str, Any]] = {
    "base": {"linearization_level": 0},
    "lin1": {},
    "lin2": {"linearization_level": 2},
    "ttef": {"linearization_level": 0, "use_timetable_edge_finding_in_cumulative": True},
    "ovl": {"linearization_level": 0, "use_overload_checker_in_cumulative": True},
    "hardprec": {"linearization_level": 0, "use_hard_precedences_in_cumulative": True},
    "allprec": {"linearization_level": 0, "exploit_all_precedences": True},
    "dynprec": {"linearization_level": 0, "use_dynamic_precedence_in_cumulative": True},
    "nodisj": {"linearization_level": 0, "use_disjunctive_constraint_in_cumulative": False},
    "all3": {"linearization_level": 0, "use_timetable_edge_finding_in_cumulative": True,
             "use_overload_checker_in_cumulative": True, "use_hard_precedences_in_cumulative": True},
    "presolve10": {"linearization_level": 0, "max_presolve_iterations": 10},
    "fixed": {"linearization_level": 0, "search_branching": "FIXED_SEARCH"},
    "setlow": {"linearization_level": 0, "search_branching": "FIXED_SEARCH", "strategy": "CHOOSE_LOWEST_MIN"},
    "setlowauto": {"linearization_level": 0, "strategy": "CHOOSE_LOWEST_MIN"},
    "pseudo": {"linearization_level": 0, "search_branching": "PSEUDO_COST_SEARCH"},
    "quick": {"linearization_level": 0, "search_branching": "PORTFOLIO_WITH_QUICK_RESTART_SEARCH"},
    "core": {"linearization_level": 0, "optimize_with_core": True},
    "lbtree": {"linearization_level": 2, "optimize_with_lb_tree_search": True},
    "shave": {"linearization_level": 0, "use_objective_shaving_search": True},
    "push": {"linearization_level": 0, "push_all_tasks_toward_start": True},
    # Redundant constraints of benchmarks/psplib_strengthen.py on the shipped parameters.
    "cliques": {"linearization_level": 0, "strengthen": "cliques"},
    "order": {"linearization_level": 0, "strengthen": "order"},
    "energy": {"linearization_level": 0, "strengthen": "energy"},
    "energy+order": {"linearization_level": 0, "strengthen": "energy+order"},
    "delays": {"linearization_level": 0, "strengthen": "delays"},
}
#: Seconds the ``delays`` preprocessing may take in all, and per sub-project.
DELAYS_BUDGET_S, DELAYS_PER_SOLVE_S = 5.0, 0.5


def _path(data_dir: Path, stem: str, bounds: dict[str, dict[str, str]]) -> Path:
    return data_dir / "psplib" / bounds[stem]["set"] / f"{stem}.sm"


def proof_rows(path: Path, optimum: int, variants: list[str], cap: float) -> list[dict[str, Any]]:
    """The proof phase of one instance under each variant: CP-SAT on makespans ``< optimum``."""
    from ortools.sat.python import cp_model

    from fairpack.models.psplib import load_psplib
    from fairpack.solver.spacetime import cp

    problem = cp._Problem.of(load_psplib(path), "makespan", 0.5, None, "pooled")
    hint = cp._warm_start(problem, cp.Deadline.after(None))
    horizon = cp._horizon(problem, hint)
    built = cp.SpacetimeCp(problem, horizon, cp._windows(problem, horizon)).build()
    rows = []
    for name in variants:
        before = time.perf_counter()
        model, added = _strengthened(built, str(VARIANTS[name].get("strengthen", "")))
        preprocess = time.perf_counter() - before
        model.proto.objective.domain.extend([-(2**62), optimum - 1])
        solver = cp_model.CpSolver()
        solver.parameters.max_time_in_seconds = cap
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 0
        for key, value in VARIANTS[name].items():
            if key == "strengthen":
                continue
            if key == "strategy":  # SetTimes-like: the task with the lowest earliest start, at that start
                model.add_decision_strategy(built.start, getattr(cp_model, value), cp_model.SELECT_MIN_VALUE)
            elif key == "search_branching":
                solver.parameters.search_branching = getattr(cp_model, value)
            else:
                setattr(solver.parameters, key, value)
        started = time.perf_counter()
        status = solver.status_name(solver.solve(model))
        rows.append({"variant": name, "status": status, "proven": status == "INFEASIBLE",
                     "wall_s": round(time.perf_counter() - started, 2), "conflicts": int(solver.num_conflicts),
                     "dtime": round(solver.response_proto.deterministic_time, 3), "added": added,
                     "preprocess_s": round(preprocess, 2)})  # fmt: skip
    return rows


def _strengthened(built: Any, kinds: str) -> tuple[Any, int]:
    """A copy of ``built.model`` with the redundant constraints named in ``kinds`` ("a+b"), and their count."""
    from benchmarks.psplib_strengthen import Strengthened

    copy = Strengthened(built)
    added = 0
    for kind in filter(None, kinds.split("+")):
        added += copy.delays(DELAYS_BUDGET_S, DELAYS_PER_SOLVE_S) if kind == "delays" else getattr(copy, kind)()
    return copy.model, added


def pipeline_row(path: Path, config: dict[str, Any]) -> dict[str, Any]:
    """The whole ``spacetime-cp`` call under ``config`` (module settings restored afterwards)."""
    from fairpack.models.psplib import load_psplib
    from fairpack.solver.spacetime import cp, lns, rcpsp_ga

    settings = [(cp, "LNS_SHARE", "share"), (lns, "STALL_STEPS", "stall"), (lns, "SUB_SOLVE_S", "sub"),
                (lns, "INITIAL_FREE_SHARE", "free"), (cp, "GA_SHARE", "ga"),
                (rcpsp_ga, "STALL_GENERATIONS", "ga_stall")]  # fmt: skip
    saved = [getattr(module, name) for module, name, _ in settings]
    try:
        for module, name, key in settings:
            if key in config:
                setattr(module, name, config[key])
        started = time.perf_counter()
        result = cp.solve_spacetime_cp(load_psplib(path), "makespan", time_limit=config.get("time_limit", 10.0),
                                       workers=1, seed=0)  # fmt: skip
        wall = time.perf_counter() - started
    finally:
        for (module, name, _), value in zip(settings, saved, strict=True):
            setattr(module, name, value)
    extra = result.extra
    return {"config": config, "status": result.status, "makespan": result.solver_objective, "bound": result.bound,
            "warm_start": extra["heuristic_objective"], "warm_rule": extra["heuristic"],
            "lns_steps": extra["lns_steps"], "lns_improvements": extra["lns_improvements"],
            "found_by": extra["found_by"],
            "build_s": round(result.build_s, 2), "wall_s": round(wall, 2)}  # fmt: skip


def main() -> None:
    parse = parser(__doc__.splitlines()[0])
    parse.add_argument("experiment", choices=["proof", "pipeline"])
    parse.add_argument("instances", nargs="+")
    parse.add_argument("--variants", nargs="+", default=["base"], choices=sorted(VARIANTS))
    parse.add_argument("--cap", type=float, default=10.0, help="seconds per proof attempt")
    parse.add_argument("--configs", nargs="+", default=["{}"], help="JSON search settings (pipeline)")
    parse.add_argument("--name", default=None, help="results file name (default psplib_search_<experiment>)")
    args = parse.parse_args()
    data_dir = psplib_folder(args.data_dir)
    if data_dir is None:
        return
    bounds = read_bounds(data_dir)
    if args.experiment == "pipeline":  # the genetic algorithm's numba kernel: compiled or loaded outside the limit
        from fairpack.solver.spacetime.rcpsp_ga import warm_up

        warm_up()
    load_start = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for stem in args.instances:
        best = int(float(bounds[stem]["best_ub"]))
        path = _path(data_dir, stem, bounds)
        found = (proof_rows(path, best, args.variants, args.cap) if args.experiment == "proof"
                 else [pipeline_row(path, json.loads(config)) for config in args.configs])  # fmt: skip
        for row in found:
            row = {"instance": stem, "best_known": best, **row}
            rows.append(row)
            print(json.dumps(row), flush=True)
    load = {"start": list(load_start), "end": list(os.getloadavg())}
    summary = _summary(rows) if args.experiment == "pipeline" else ""
    markdown = summary + _table(args.experiment, rows) + "\n\n" + load_note(load) + "."
    save(args.name or f"psplib_search_{args.experiment}", {"experiment": args.experiment, "cap_s": args.cap,
                                                          "load_average": load, "rows": rows}, markdown, args.out)


def _summary(rows: list[dict[str, Any]]) -> str:
    """Per set and search setting: instances, those equal to the best known, those proven, the mean gap."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        name = str(row["instance"])
        group = name[:4] if name.startswith("j12") else name[:3]  # j30, j60, j90, j120
        groups.setdefault((group, json.dumps(row["config"])), []).append(row)
    lines = ["Per set and setting: instances, equal to the best known, proven optimal, mean gap to the best known.",
             "", "| set | settings | instances | = best known | proven | mean gap |", "|---|---|---|---|---|---|"]
    for (group, config), found in sorted(groups.items()):
        best = sum(r["makespan"] is not None and r["makespan"] <= r["best_known"] for r in found)
        proven = sum(r["status"] == "optimal" for r in found)
        gap = sum((r["makespan"] or float("inf")) / r["best_known"] - 1 for r in found) / len(found)
        lines.append(f"| {group} | `{config}` | {len(found)} | {best} | {proven} | {100 * gap:.2f}% |")
    return "\n".join(lines) + "\n\n"


def _table(experiment: str, rows: list[dict[str, Any]]) -> str:
    if experiment == "proof":
        head = ["| instance | optimum | variant | constraints added (preprocessing s) | proven | wall (s) | conflicts "
                "| deterministic time |", "|---|---|---|---|---|---|---|---|"]
        body = [f"| {r['instance']} | {r['best_known']} | {r['variant']} | {r.get('added', 0)} "
                f"({r.get('preprocess_s', 0)}) | {'yes' if r['proven'] else 'no'} | {r['wall_s']} | {r['conflicts']} "
                f"| {r['dtime']} |" for r in rows]  # fmt: skip
        title = "Proof phase alone (makespan < optimum), one CP-SAT worker, per parameter variant."
    else:
        head = ["| instance | best known | settings | status | makespan | LNS steps / improving | found by "
                "| warm start + build (s) | wall (s) |", "|---|---|---|---|---|---|---|---|---|"]
        body = [f"| {r['instance']} | {r['best_known']} | `{json.dumps(r['config'])}` | {r['status']} | "
                f"{r['makespan']} | {r['lns_steps']} / {r['lns_improvements']} | {r['found_by']} | "
                f"{r['build_s']} | {r['wall_s']} |" for r in rows]  # fmt: skip
        title = "Whole spacetime-cp call, one CP-SAT worker, per search setting."
    return "\n".join([title, "", *head, *body])


if __name__ == "__main__":
    main()
