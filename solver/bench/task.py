"""One task of a sweep in the current process: generate its instance, solve, verify and measure one row.

``solver.bench.child`` runs this in a child process; ``solver.bench.runner`` supervises the children.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any

from fairpack.models.generators.families import FAMILIES, OBJECTIVE_NAMES, SENSE
from fairpack.solver.api import simulate, solve
from fairpack.solver.bench.metrics import row_metrics
from fairpack.solver.bench.sweep import Task, method_record, options_json, params_text

STATUS_TIMEOUT, STATUS_MEMORY, STATUS_CRASHED = "task_timeout", "task_memory", "task_crashed"
#: Statuses the harness writes itself (the solver's are optimal, feasible, infeasible, time_limit, error).
HARNESS_STATUSES = (STATUS_TIMEOUT, STATUS_MEMORY, STATUS_CRASHED)
MESSAGE_CHARS = 500


def task_row(task: Task) -> dict[str, Any]:
    """The columns a row has whatever happens to its task: what was run, on what, under which limits."""
    import json

    kind = FAMILIES[task.family].kind
    return {
        "key": task.key, "instance_key": task.instance_key, "reference_key": task.reference,
        "sweep": task.sweep, "grid": task.grid, "family": task.family, "kind": kind,
        "params": json.dumps(dict(task.params)), "size_params": params_text(task.params), "seed": task.seed,
        "method": task.label, "solver_method": task.method, "backend": task.backend,
        "exact": method_record(task.method).exact, "sense": SENSE[kind], "options": options_json(task.options),
        "objective_name": OBJECTIVE_NAMES.get(kind),
        "time_limit": task.limits.time_limit, "task_timeout": task.limits.task_timeout,
        "memory_mb": task.limits.memory_mb, "status": "error", "verified": False, "objective": None,
        "bound": None, "solver_gap": None, "instance": None, "size": None, "message": "",
    }  # fmt: skip


def run_task(task: Task) -> dict[str, Any]:
    """Generate the instance, solve it, verify and measure: one row (failures are rows too)."""
    started = time.perf_counter()
    row = task_row(task)
    # Times mean little without the machine's load beside them (other jobs share the cores).
    row["load_1m"] = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    family = FAMILIES[task.family]
    try:
        data_dir = Path(task.data_dir) if task.data_dir else None
        instance = family.instance(dict(task.params), task.seed, data_dir)
        row.update(instance=instance.name, size=family.size(instance), size_label=family.size_label,
                   generate_s=time.perf_counter() - started)  # fmt: skip
        if family.best_known is not None:
            row["best_known"] = family.best_known(instance, data_dir)
        record = method_record(task.method)
        if record.is_policy:  # online:<policy> replays the instance's arrivals
            kwargs = task.solve_kwargs()
            kwargs.pop("backend", None)
            kwargs.pop("algorithm", None)
            result = simulate(instance, record.name, **kwargs)
        else:
            result = solve(instance, task.method, **task.solve_kwargs())
        row.update(status=result.status, verified=bool(result.verified), objective=result.objective,
                   bound=result.bound, solver_gap=result.gap, build_s=result.build_s, solve_s=result.solve_s,
                   violations=len(result.violations), message=result.message[:MESSAGE_CHARS])  # fmt: skip
        if result.schedule is not None:
            row["objective_name"] = str(result.extra.get("objective_name", "makespan"))
        row.update(row_metrics(instance, result, task.limits.time_limit))
    except MemoryError:
        row.update(status=STATUS_MEMORY, message="MemoryError: the task's address-space limit was reached")
    except Exception as error:  # a failing task is a row of the table, not the end of the sweep
        row.update(status="error", message=f"{type(error).__name__}: {error}"[:MESSAGE_CHARS])
    row["wall_s"] = time.perf_counter() - started
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row
