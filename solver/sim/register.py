"""The online policies of ``fairpack simulate``, every one on the one simulator.

Each record names the factory that builds the policy (``module:function``, imported on first use; one
signature, see ``Method.factory``) and declares what the policy runs on (DAG jobs, tenants' backlogs or
both), how it treats placement options and whether it reads the instance itself: ``solver.sim.build``
builds every policy from its record and derives every refusal from these facts.
"""

from __future__ import annotations

from fairpack.solver.registry import Method, register

_DRIVER = "fairpack.solver.sim.run:run_simulation"
_POLICIES = "fairpack.solver.sim.policies"
_FLAT = f"{_POLICIES}.flat:make_flat_policy"
_HIERARCHY = f"{_POLICIES}.hierarchy:make_hierarchy_policy"
_DAG_FACTORY = f"{_POLICIES}.dag:make_dag_policy"
_SPARROW = f"{_POLICIES}.sparrow:make_sparrow_policy"
_OMEGA = f"{_POLICIES}.omega:make_omega_policy"
_LOCALITY_FACTORY = f"{_POLICIES}.locality:make_locality_policy"
_SOFT_FACTORY = f"{_POLICIES}.soft:make_soft_policy"
_PLANNER_FACTORY = "fairpack.solver.spacetime.online:make_planner"

_JOBS = frozenset({"jobs"})
_BACKLOGS = frozenset({"backlogs"})
_BOTH = _JOBS | _BACKLOGS
_DEADLINES = "the jobs' deadlines and utilities"

_COMMON = frozenset({"placement", "seed"})
_BACKLOG = frozenset({"horizon", "duration", "mean", "warmup", "starvation_after", "samples", "reference"})
_DAG = frozenset({"horizon"})
_CARBYNE = _DAG | {"altruism", "reverse_order"}  # the other DAG policies have no such settings
_SAMPLING = frozenset({"rtt", "horizon"})
_SHARED_STATE = frozenset({"t_job", "t_task", "t_job_service", "t_task_service", "detection", "horizon"})
_LOCALITY = frozenset({"slots", "horizon"})
_SOFT = frozenset({"estimate_error", "horizon"})
_PLANNER = _SOFT | {"cycle", "cycle_limit", "units", "deterministic"}


def _policy(name: str, family: str, summary: str, factory: str, workloads: frozenset[str],
            options: frozenset[str] = frozenset(), extra: frozenset[str] = frozenset(),
            placement_options: str = "none", needs_instance: str = "") -> Method:  # fmt: skip
    return Method(name, family, False, summary, _DRIVER, options=_COMMON | options, extra_keys=extra,
                  kind="schedule", command="simulate", factory=factory, workloads=workloads,
                  placement_options=placement_options, needs_instance=needs_instance)  # fmt: skip


def _flat(name: str, summary: str, options: frozenset[str] = frozenset()) -> Method:
    """A flat policy: DAG jobs (their tenants' queues) or tenants' backlogs, machines chosen without options."""
    return _policy(name, "online", summary, _FLAT, _BOTH, options, _BACKLOG)


def _backlogs(name: str, summary: str, options: frozenset[str] = frozenset()) -> Method:
    """A hierarchical policy: tenants' backlogs only, descending the instance's tree."""
    return _policy(name, "online", summary, _HIERARCHY, _BACKLOGS, options, _BACKLOG,
                   needs_instance="the tenants' hierarchy")  # fmt: skip


def _dag(name: str, summary: str, extra: frozenset[str] = _DAG) -> Method:
    """A DAG heuristic: jobs only, placing where a task-by-task option allows."""
    return _policy(name, "online", summary, _DAG_FACTORY, _JOBS, extra=extra, placement_options="task")


def _soft(name: str, summary: str, factory: str, extra: frozenset[str]) -> Method:
    """A soft-constraint policy: jobs only, choosing among placement options (gangs too), reading deadlines."""
    return _policy(name, "soft", summary, factory, _JOBS, extra=extra, placement_options="all",
                   needs_instance=_DEADLINES)  # fmt: skip


register(
    _flat("first-fit", "online DRFH: lowest weighted dominant share next, first machine it fits"),
    _flat("best-fit", "online DRFH: lowest weighted dominant share next, machine of best fitness"),
    _flat("slots", "slot scheduler: k equal slots per largest machine, fewest tasks per weight next",
          frozenset({"slots"})),
    _flat("per-server-drf", "DRF inside every machine separately"),
    _flat("fifo", "arrival order, passing over what does not fit now, first machine it fits"),
    _backlogs("naive-hdrf", "naive H-DRF over tenants' backlogs (raw subtree sums)"),
    _backlogs("dynamic-hdrf", "dynamic H-DRF over tenants' backlogs (blocked children ignored)"),
    _backlogs("hslots", "hierarchical slots over tenants' backlogs", frozenset({"slots"})),
    _dag("carbyne", "Carbyne: DRF shares, reverse packing, leftovers given away", _CARBYNE),
    _dag("drf-dag", "DRF between jobs, breadth-first inside each job"),
    _dag("drf-strict", "every job held to its DRF share (the fair-share schedule, T_k)"),
    _dag("tetris", "Tetris: packing by alignment score"),
    _dag("sjf", "shortest remaining critical path first"),
    _policy("random", "online", "Sparrow's baseline: every task queued at a uniformly random machine", _SPARROW,
            _JOBS, extra=_SAMPLING),
    _policy("sparrow", "online", "Sparrow: per-task or batch sampling of machine queues (probes=d), late binding "
            "by default", _SPARROW, _JOBS, extra=_SAMPLING | {"probes", "batch", "late_binding"}),
    _policy("omega", "online", "Omega: k schedulers on shared state, optimistic commits retried on conflict "
            "(schedulers=k, decision times t_job + t_task per task)", _OMEGA, _JOBS,
            extra=_SHARED_STATE | {"schedulers"}),
    _policy("monolithic", "online", "one scheduler, decisions serialised (t_job + t_task per task; zero times: "
            "the ideal centralised list scheduler)", _OMEGA, _JOBS, extra=_SHARED_STATE),
    _policy("fair", "locality", "Hadoop fair sharing, naive: furthest below share takes a free slot, local task "
            "if it has one", _LOCALITY_FACTORY, _JOBS, extra=_LOCALITY),
    _soft("tetrisched", "Tetrisched: all pending jobs planned exactly (utility, soft constraints, gangs) "
          "with plan-ahead window plan_ahead=W, re-planned at every event (or every cycle=C); only what starts "
          "now is committed", _PLANNER_FACTORY, _PLANNER | {"plan_ahead"}),
    _soft("alsched", "alsched: the Tetrisched model without plan-ahead (W = 0): utility-maximising "
          "placements on what is free now", _PLANNER_FACTORY, _PLANNER),
    _soft("hard-only", "preferences as hard constraints: every stage waits for its first option; jobs by deadline",
          _SOFT_FACTORY, _SOFT),
    _soft("oblivious", "preferences ignored: tasks anywhere, at the duration of where they land; jobs by deadline",
          _SOFT_FACTORY, _SOFT),
    _soft("jockey", "Jockey: deadline jobs at the smallest allocation predicted (job simulated alone) to meet the "
          "deadline, re-sized at events; the rest to best-effort jobs", _SOFT_FACTORY, _SOFT),
    _policy("delay", "locality", "delay scheduling: a job without a local task is skipped d1 times (node), "
            "then d2 more (rack)", _LOCALITY_FACTORY, _JOBS, extra=_LOCALITY | frozenset({"d1", "d2"})),
)
