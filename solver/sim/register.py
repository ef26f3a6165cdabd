"""The online policies of ``fairpack simulate``, every one on the one simulator."""

from __future__ import annotations

from fairpack.solver.registry import Method, register_policy

_DRIVER = "fairpack.solver.sim.run:run_simulation"
_PLANNER_FACTORY = "fairpack.solver.spacetime.online:make_planner"
_COMMON = frozenset({"placement", "seed"})
_BACKLOG = frozenset({"horizon", "duration", "mean", "warmup", "starvation_after", "samples", "reference"})
_DAG = frozenset({"horizon"})
_CARBYNE = _DAG | {"altruism", "reverse_order"}  # the other DAG policies have no such settings
_SAMPLING = frozenset({"rtt", "horizon"})
_SHARED_STATE = frozenset({"t_job", "t_task", "t_job_service", "t_task_service", "detection", "horizon"})
_LOCALITY = frozenset({"slots", "horizon"})
_SOFT = frozenset({"estimate_error", "horizon"})
_PLANNER = _SOFT | {"cycle", "cycle_limit", "units", "deterministic"}


def _policy(name: str, family: str, summary: str, options: frozenset[str] = frozenset(),
            extra: frozenset[str] = frozenset(), factory: str | None = None) -> Method:  # fmt: skip
    return Method(name, family, False, summary, _DRIVER, options=_COMMON | options, extra_keys=extra,
                  kind="schedule", factory=factory)  # fmt: skip


register_policy(
    _policy("first-fit", "online", "online DRFH: lowest weighted dominant share next, first machine it fits",
            extra=_BACKLOG),
    _policy("best-fit", "online", "online DRFH: lowest weighted dominant share next, machine of best fitness",
            extra=_BACKLOG),
    _policy("slots", "online", "slot scheduler: k equal slots per largest machine, fewest tasks per weight next",
            frozenset({"slots"}), _BACKLOG),
    _policy("per-server-drf", "online", "DRF inside every machine separately", extra=_BACKLOG),
    _policy("fifo", "online", "arrival order, passing over what does not fit now, first machine it fits",
            extra=_BACKLOG),
    _policy("naive-hdrf", "online", "naive H-DRF over tenants' backlogs (raw subtree sums)", extra=_BACKLOG),
    _policy("dynamic-hdrf", "online", "dynamic H-DRF over tenants' backlogs (blocked children ignored)",
            extra=_BACKLOG),
    _policy("hslots", "online", "hierarchical slots over tenants' backlogs", frozenset({"slots"}), _BACKLOG),
    _policy("carbyne", "online", "Carbyne: DRF shares, reverse packing, leftovers given away", extra=_CARBYNE),
    _policy("drf-dag", "online", "DRF between jobs, breadth-first inside each job", extra=_DAG),
    _policy("drf-strict", "online", "every job held to its DRF share (the fair-share schedule, T_k)", extra=_DAG),
    _policy("tetris", "online", "Tetris: packing by alignment score", extra=_DAG),
    _policy("sjf", "online", "shortest remaining critical path first", extra=_DAG),
    _policy("random", "online", "Sparrow's baseline: every task queued at a uniformly random machine",
            extra=_SAMPLING),
    _policy("sparrow", "online", "Sparrow: per-task or batch sampling of machine queues (probes=d), late binding "
            "by default", extra=_SAMPLING | {"probes", "batch", "late_binding"}),
    _policy("omega", "online", "Omega: k schedulers on shared state, optimistic commits retried on conflict "
            "(schedulers=k, decision times t_job + t_task per task)", extra=_SHARED_STATE | {"schedulers"}),
    _policy("monolithic", "online", "one scheduler, decisions serialised (t_job + t_task per task; zero times: "
            "the ideal centralised list scheduler)", extra=_SHARED_STATE),
    _policy("fair", "locality", "Hadoop fair sharing, naive: furthest below share takes a free slot, local task "
            "if it has one", extra=_LOCALITY),
    _policy("tetrisched", "soft", "Tetrisched: all pending jobs planned exactly (utility, soft constraints, gangs) "
            "with plan-ahead window plan_ahead=W, re-planned at every event (or every cycle=C); only what starts "
            "now is committed", extra=_PLANNER | {"plan_ahead"}, factory=_PLANNER_FACTORY),
    _policy("alsched", "soft", "alsched: the Tetrisched model without plan-ahead (W = 0): utility-maximising "
            "placements on what is free now", extra=_PLANNER, factory=_PLANNER_FACTORY),
    _policy("hard-only", "soft", "preferences as hard constraints: every stage waits for its first option; "
            "jobs by deadline", extra=_SOFT),
    _policy("oblivious", "soft", "preferences ignored: tasks anywhere, at the duration of where they land; jobs "
            "by deadline", extra=_SOFT),
    _policy("jockey", "soft", "Jockey: deadline jobs at the smallest allocation predicted (job simulated alone) "
            "to meet the deadline, re-sized at events; the rest to best-effort jobs", extra=_SOFT),
    _policy("delay", "locality", "delay scheduling: a job without a local task is skipped d1 times (node), "
            "then d2 more (rack)", extra=_LOCALITY | frozenset({"d1", "d2"})),
)
