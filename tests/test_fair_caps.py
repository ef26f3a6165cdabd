"""Fair caps C_k <= T_k of the exact DAG methods (``spacetime``, ``spacetime-cp``), by hand.

T_k is each job's completion in the drf-strict schedule on the same placement; both exact methods enforce it
unless ``--no-fair-cap``, which still reports it. Every job of every schedule result carries a number.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from work import TickClock

from fairpack.models.check import verify_schedule
from fairpack.models.generators import random_dag_jobs
from fairpack.models.io import instance_from_dict, load_instance
from fairpack.models.types import Instance
from fairpack.models.view import result_json
from fairpack.solver.api import solve
from fairpack.solver.cli import main
from fairpack.solver.registry import methods
from fairpack.solver.spacetime.fair import fair_share

TWO_JOBS = Path(__file__).resolve().parents[1] / "instances" / "dag_two_jobs.yaml"
EXACT = ("spacetime", "spacetime-cp")

# One job of three tasks (1 time unit, 1.2 CPU each) on two machines of 2 CPUs. Pooled (4 CPUs) all three
# run at once: makespan 1. Per machine only one fits on each (2.4 > 2): two waves, makespan 2. The drf-strict
# schedule of a job alone is that of the whole cluster, so T = 1 pooled and T = 2 per machine; a pooled T
# (1) would make the per-machine problem infeasible.
ONE_JOB_TWO_MACHINES = instance_from_dict({
    "resources": ["cpu"],
    "servers": [{"name": "m", "capacity": {"cpu": 2}, "count": 2}],
    "jobs": [{"name": "j", "stages": [{"name": "s", "tasks": 3, "duration": 1, "demand": {"cpu": 1.2}}]}],
})  # fmt: skip


def jobs_view(instance: Instance, result: Any) -> dict[str, tuple[float, float | None]]:
    data = result_json(instance, result)
    return {name: (entry["completion"], entry["fair_completion"]) for name, entry in data["jobs"].items()}


@pytest.mark.parametrize("method", EXACT)
def test_staggered_releases_capped_by_default(method: str) -> None:
    """instances/dag_two_jobs.yaml: ``short`` (weight 2) arrives at 0.5 while ``long`` runs its 1-CPU load.

    drf-strict by hand: shares 1/3 : 2/3 of 2 CPUs once both are present; ``short`` runs one 1-CPU scan at a
    time (two would need 2 > 4/3 CPUs): [0.5, 1.5], [1.5, 2.5]; ``long``'s join needs both CPUs, so it
    waits for the second scan: [2.5, 4.5]. T = (4.5, 2.5). The avg-JCT optimum without caps (2.5) finishes
    ``long`` at 5.5 > 4.5; with them ``long`` must end by 4.5, which leaves (4.5 + 2 * 2) / 3 = 17/6.
    """
    instance = load_instance(TWO_JOBS)
    result = solve(instance, method, time_limit=30)
    assert result.status == "optimal" and result.verified, result.violations
    assert result.extra["fair_cap"] is True
    assert result.objective == pytest.approx(17 / 6)
    assert jobs_view(instance, result) == {"long": (4.5, 4.5), "short": (2.5, 2.5)}


@pytest.mark.parametrize("method", EXACT)
@pytest.mark.parametrize(("placement", "makespan"), [("pooled", 1.0), ("servers", 2.0)])
def test_one_job_on_two_machines(method: str, placement: str, makespan: float) -> None:
    result = solve(ONE_JOB_TWO_MACHINES, method, placement=placement, time_limit=30)
    assert result.status == "optimal" and result.verified, (result.message, result.violations)
    assert result.objective == pytest.approx(makespan)
    assert jobs_view(ONE_JOB_TWO_MACHINES, result) == {"j": (makespan, makespan)}
    if placement == "servers":
        assert result.schedule is not None and result.schedule.machine is not None


def test_cli_caps_spacetime_cp_and_places_per_machine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    from fairpack.models.io import instance_to_dict

    path.write_text(json.dumps(instance_to_dict(ONE_JOB_TWO_MACHINES)))
    assert main(["solve", str(path), "--method", "spacetime-cp", "--placement", "servers", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = {"completion": 2.0, "fair_completion": 2.0, "deadline": None, "utility": -2.0}
    assert data["fair_cap"] is True and {key: data["jobs"]["j"][key] for key in expected} == expected
    assert main(["solve", str(TWO_JOBS), "--method", "spacetime-cp", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["objective"] == pytest.approx(17 / 6) and data["jobs"]["long"]["fair_completion"] == 4.5


def _schedule_methods() -> list[str]:
    return [name for name, method in methods().items() if method.kind == "schedule"]


@pytest.mark.parametrize("instance", [load_instance(TWO_JOBS), ONE_JOB_TWO_MACHINES], ids=["two-jobs", "one-job"])
@pytest.mark.parametrize("placement", ["pooled", "servers"])
def test_every_job_of_every_schedule_result_has_a_fair_completion(instance: Instance, placement: str) -> None:
    for name in _schedule_methods():
        caps = [True, False] if "fair_cap" in methods()[name].options else [True]
        # A method without the option (locality-cp: always per machine) is asked as it is.
        where = {"placement": placement} if "placement" in methods()[name].options else {}
        for cap in caps:
            options = {} if cap else {"fair_cap": False}
            result = solve(instance, name, time_limit=30, **where, **options)
            assert result.verified, (name, cap, result.violations)
            for job, (completion, fair) in jobs_view(instance, result).items():
                assert isinstance(fair, float) and np.isfinite(fair), (name, cap, job)
                if methods()[name].exact and "fair_cap" in methods()[name].options and cap:  # locality-cp: no caps
                    assert completion <= fair + 1e-9


def test_fair_share_stops_at_its_deadline() -> None:
    instance = random_dag_jobs(5, jobs=20, stages_range=(4, 6))
    assert fair_share(instance, "pooled", deadline=time.perf_counter() - 1.0) is None
    share = fair_share(instance, "pooled")
    assert share is not None and np.all(np.isfinite(share.completion))
    assert verify_schedule(instance, share.schedule, fair_completion=share.completion).ok  # a witness


@pytest.mark.parametrize("method", EXACT)
def test_caps_that_cannot_be_computed_in_time_are_an_honest_failure(
    method: str, monkeypatch: pytest.MonkeyPatch, tick_clock: Callable[..., TickClock]
) -> None:
    """With the caps on, a time limit that ends before the fair-share schedule does returns no schedule
    (never a verified one), names the way out, and stops at the limit. The fair-share simulation "takes" its
    time on a clock that moves only when read or told: the same outcome on every machine, under any load."""
    import fairpack.solver.spacetime.fair as fair

    original = fair.fair_completion_times
    pause = {"s": 0.5}

    def slow(*args: Any, **kwargs: Any) -> Any:
        clock.jump(pause["s"])  # a fair-share simulation that outlasts its time; the watch stops it at an event
        return original(*args, **kwargs)

    monkeypatch.setattr(fair, "fair_completion_times", slow)
    instance = load_instance(TWO_JOBS)
    clock = tick_clock(1e-3)
    result = solve(instance, method, time_limit=0.3)
    assert result.status in ("time_limit", "error") and not result.verified and result.schedule is None
    assert "--no-fair-cap" in result.message
    assert clock.reads_past(0.3) <= 10  # no model built or solved after the limit: a few reads and out
    # Without the caps T_k is only reported, with a quarter of the time: the schedule comes back without it.
    pause["s"] = 0.6
    clock = tick_clock(1e-3)
    uncapped = solve(instance, method, time_limit=2.0, fair_cap=False)
    assert uncapped.verified and uncapped.schedule is not None
    assert "T_k not reported" in uncapped.message


def _dag_methods() -> list[str]:
    return [name for name in _schedule_methods() if "fair_completion" in methods()[name].extra_keys]


@pytest.mark.parametrize("method", _dag_methods())
def test_fair_completion_is_one_setting_for_every_dag_method(method: str) -> None:
    """``fair_completion``: computed by default, ``false`` (as ``--option`` gives it) leaves every ``T_k`` out
    -- no caps on the exact methods, no lateness on the heuristics -- and a mapping gives them. On
    dag_two_jobs.yaml ``T = (4.5, 2.5)`` (see above); given ``long: 4`` and nothing for ``short``, the exact
    methods must finish ``long`` by 4 and every method reports exactly the given times."""
    instance = load_instance(TWO_JOBS)
    off = solve(instance, method, time_limit=30, extra={"fair_completion": "false"})
    assert off.verified, off.violations
    assert all(fair is None for _, fair in jobs_view(instance, off).values())
    assert "late_jobs" not in off.extra
    given = solve(instance, method, time_limit=30, extra={"fair_completion": {"long": 4.0}})
    assert given.verified, given.violations
    view = jobs_view(instance, given)
    assert {name: fair for name, (_, fair) in view.items()} == {"long": 4.0, "short": None}
    if methods()[method].exact:
        assert view["long"][0] <= 4.0 + 1e-9
        # Capping long at 4 instead of 4.5 costs short: the optimum without caps (2.5) ends long at 5.5.
        assert given.objective is not None and given.objective > 17 / 6 - 1e-9
    else:
        assert given.extra["late_jobs"] == (["long"] if view["long"][0] > 4.0 + 1e-9 else [])
        assert given.extra["fair_method"] == {"long": "given", "short": "given"}
    with pytest.raises(Exception, match="unknown job 'nobody'"):
        solve(instance, method, time_limit=30, extra={"fair_completion": {"nobody": 1.0}})
