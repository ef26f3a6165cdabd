"""Placement options with their own demand (Tetrisched's execution strategies with their own resources): the
loader, the builders, the checker and the exact methods on hand-derived optima (the simulator, the online
policies and the fair caps: tests/test_option_demand_sim.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fairpack.models.io import instance_from_dict, instance_to_dict, instance_to_yaml, load_instance
from fairpack.models.types import Instance, InstanceError

#: One GPU machine {cpu 2, gpu 1} and one plain machine {cpu 4}.
SERVERS = [
    {"name": "g", "capacity": {"cpu": 2, "gpu": 1}, "labels": {"gpu": "true"}},
    {"name": "p", "capacity": {"cpu": 4}},
]
#: 1 GPU + 1 CPU for 2 on a GPU machine, or 4 CPUs for 5 anywhere (only the plain machine holds 4 CPUs).
STRATEGIES = [{"on": {"gpu": "true"}, "duration": 2, "demand": {"cpu": 1, "gpu": 1}},
              {"duration": 5, "demand": {"cpu": 4}}]  # fmt: skip


def job(name: str, options: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    stage = {"name": "s", "demand": {"cpu": 1}, "options": options or STRATEGIES}
    return {"name": name, "stages": [stage], **fields}


def instance(jobs: list[dict[str, Any]], servers: list[dict[str, Any]] | None = None) -> Instance:
    return instance_from_dict({"resources": ["cpu", "gpu"], "servers": servers or SERVERS, "jobs": jobs},
                              name="gpus")  # fmt: skip


#: Two such jobs. The GPU holds one task at a time (each takes the whole GPU), so the tasks cannot share it:
#: both on the GPU one after the other end at 2 and 4 (makespan 4, avg JCT 3); one on the GPU and one on the
#: plain machine end at 2 and 5 (makespan 5, avg 3.5); both on the plain machine (4 CPUs each) at 5 and 10.
#: Optimum: makespan 4 and avg JCT 3, both on the GPU machine in turn. (Were the GPU option's demand the
#: stage's {cpu 1}, both would run on the GPU machine at once and end at 2.)
TWO = instance([job("a"), job("b")])


# ------------------------------------------------------------------------------------------ loader


def test_option_demand_replaces_the_resources_it_names_and_keeps_the_rest() -> None:
    stage = TWO.jobs[0].stages[0]
    np.testing.assert_array_equal(stage.options[0].demand, [1, 1])
    np.testing.assert_array_equal(stage.options[1].demand, [4, 0])
    np.testing.assert_array_equal(stage.demand_under(0), [1, 1])
    np.testing.assert_array_equal(stage.demand_under(None), [1, 0])
    assert TWO.has_option_demands
    kept = instance([job("a", options=[{"duration": 2, "demand": {"gpu": 1}}, {"duration": 3}])])
    first, second = kept.jobs[0].stages[0].options
    np.testing.assert_array_equal(first.demand, [1, 1])  # cpu kept from the stage
    assert second.demand is None
    np.testing.assert_array_equal(kept.jobs[0].stages[0].demand_under(1), [1, 0])


def test_option_demand_round_trips(tmp_path: Path) -> None:
    zeroed = instance([job("z", options=[{"duration": 1, "demand": {"cpu": 0, "gpu": 1}, "on": {"gpu": "true"}},
                                         {"duration": 2, "demand": {}}, {"duration": 3}])])  # fmt: skip
    for loaded in (TWO, zeroed):
        assert instance_from_dict(instance_to_dict(loaded), name="gpus") == loaded
        path = tmp_path / "again.yaml"
        path.write_text(instance_to_yaml(loaded))
        assert load_instance(path) == loaded
    np.testing.assert_array_equal(zeroed.jobs[0].stages[0].options[0].demand, [0, 1])


@pytest.mark.parametrize(("demand", "field", "message"), [
    ({"tpu": 1}, "jobs[0].stages[0].options[0].demand.tpu", "unknown resource 'tpu'"),
    ({"gpu": -1}, "jobs[0].stages[0].options[0].demand.gpu", "must be finite and non-negative"),
    ({"gpu": float("nan")}, "jobs[0].stages[0].options[0].demand.gpu", "must be finite"),
    ({"gpu": 1e16}, "jobs[0].stages[0].options[0].demand.gpu", "1e+15"),
    ({"gpu": 1e-13}, "jobs[0].stages[0].options[0].demand.gpu", "below the smallest amount"),
    ([1], "jobs[0].stages[0].options[0].demand", "must be a mapping"),
    ({"gpu": 2}, "jobs[0].stages[0].options[0].demand", "fits one task under the option's demand"),
])  # fmt: skip
def test_loader_checks_an_option_demand_like_a_stage_demand(demand: Any, field: str, message: str) -> None:
    options = [{"on": {"gpu": "true"}, "duration": 2, "demand": demand}, {"duration": 5}]
    with pytest.raises(InstanceError) as caught:
        instance([job("a", options=options)])
    assert caught.value.field == field and message in caught.value.reason


def test_the_option_cache_tells_demands_apart() -> None:
    # The same option entry but for its demand, repeated over stages: each keeps its own.
    one = {"duration": 2, "demand": {"cpu": 1}}
    two = {"duration": 2, "demand": {"cpu": 2}}
    loaded = instance([job("a", options=[one]), job("b", options=[two]), job("c", options=[dict(one)])])
    got = [float(j.stages[0].options[0].demand[0]) for j in loaded.jobs]
    assert got == [1.0, 2.0, 1.0]


def test_builders_take_an_option_demand() -> None:
    import fairpack

    stage = fairpack.Stage("s", demand={"cpu": 1}, options=[
        fairpack.Option(2, on={"gpu": "true"}, demand={"cpu": 1, "gpu": 1}), fairpack.Option(5, demand={"cpu": 4})])
    assert stage.to_dict()["options"][0]["demand"] == {"cpu": 1, "gpu": 1}
    with pytest.raises(InstanceError, match="must be finite and non-negative"):
        fairpack.Option(2, demand={"gpu": -1})
    from fairpack.models.build import build_instance

    built = build_instance(
        servers=[fairpack.Server("g", {"cpu": 2, "gpu": 1}, labels={"gpu": "true"}), fairpack.Server("p", {"cpu": 4})],
        jobs=[fairpack.Job("a", [stage]), fairpack.Job("b", [stage])], name="gpus")
    assert built.resources == ("cpu", "gpu") and built == TWO


# ------------------------------------------------------------------------------------------ exact methods


def solved(inst: Instance, method: str, backend: str | None = None, **options: Any) -> Any:
    from fairpack.solver.api import solve

    result = solve(inst, method, **({"backend": backend} if backend else {}), time_limit=60, **options)
    assert result.verified, result.violations
    return result


def gpu_overlap(result: Any) -> bool:
    """Whether two tasks on the GPU machine (server 0, where only the GPU option fits) overlap in time."""
    s = result.schedule
    gpu = [(float(b), float(e)) for b, e, m in zip(s.start, s.end, s.server, strict=True) if m == 0]
    return any(b1 < e2 and b2 < e1 for i, (b1, e1) in enumerate(gpu) for b2, e2 in gpu[i + 1:])


@pytest.mark.parametrize(("objective", "value"), [("makespan", 4.0), ("avg-jct", 3.0)])
def test_exact_methods_give_each_alternative_its_option_demand(lp_backend: str, objective: str,
                                                               value: float) -> None:  # fmt: skip
    for method, backend in (("spacetime-cp", None), ("spacetime", lp_backend)):
        result = solved(TWO, method, backend, objective=objective, fair_cap=False)
        assert result.status == "optimal" and result.objective == pytest.approx(value), method
        assert not gpu_overlap(result), method
        assert sorted(float(e) for e in result.schedule.end) == [2.0, 4.0], method


def test_a_plain_machine_only_strategy_is_chosen_when_the_gpu_is_taken(lp_backend: str) -> None:
    # A third job may only use 4 CPUs (for 3): it runs on the plain machine beside the two GPU runs.
    third = job("c", options=[{"duration": 3, "demand": {"cpu": 4}}])
    inst = instance([job("a"), job("b"), third])
    for method, backend in (("spacetime-cp", None), ("spacetime", lp_backend)):
        result = solved(inst, method, backend, objective="makespan", fair_cap=False)
        assert result.objective == pytest.approx(4.0), method
        assert not gpu_overlap(result), method


# ------------------------------------------------------------------------------------------ checker


def test_checker_uses_the_option_demand_per_machine_and_pooled() -> None:
    from fairpack.models.check import verify_schedule

    result = solved(TWO, "spacetime-cp", objective="makespan", fair_cap=False)
    schedule = replace(result.schedule, fair_completion=None)  # T_k reported, not enforced: not checked here
    assert verify_schedule(TWO, schedule).ok
    # Both at once on the one GPU (each needs the whole GPU): machine and pooled gpu overloads.
    both = replace(schedule, start=np.zeros(2), end=np.full(2, 2.0))
    found = verify_schedule(TWO, both).violations
    assert any("machine g: resource gpu: 2 in use" in v for v in found), found
    assert any("resource gpu: 2 in use at time 0 exceeds capacity 1" in v for v in found), found
    # A task claiming the 4-CPU strategy on the GPU machine (2 CPUs): does not fit.
    slow = replace(schedule, option=np.array([1, 0]), start=np.array([0.0, 5.0]), end=np.array([5.0, 7.0]))
    found = verify_schedule(TWO, slow).violations
    assert any("does not fit machine g" in v for v in found), found


def test_the_plot_counts_the_option_demand() -> None:
    from fairpack.solver.plot import usage_profile

    result = solved(TWO, "spacetime-cp", objective="makespan", fair_cap=False)
    _, usage = usage_profile(TWO, result.schedule)
    # Each job holds the whole GPU while it runs (its option's demand), and one CPU: never the stage's {cpu 1}.
    assert float(usage[..., 1].sum(axis=0).max()) == pytest.approx(1.0)
    assert float(usage[..., 1].max(axis=1).min()) == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------ fair times


def test_fair_times_are_reported_without_caps() -> None:
    # drf-strict (the fair-share schedule) now runs option demands: job a, first, lands by best fit on p
    # under the 4-CPU option (leaving nothing; on g it would leave 1 of 6 CPUs), 5; b then on g's GPU, 2.
    from fairpack.solver.api import solve

    result = solve(TWO, "spacetime-cp", objective="makespan", fair_cap=False, time_limit=60)
    assert result.verified, result.violations
    np.testing.assert_allclose(result.schedule.fair_completion, [5.0, 2.0])
    assert not any("T_k not reported" in note for note in [result.message, *map(str, result.extra.values())])


def random_instance(seed: int) -> Instance | None:
    """Two GPU machines (rack r1) and two plain ones (rack r2); a few one-stage jobs whose options (a GPU
    strategy, a rack gang, a plain one) mostly carry their own demands."""
    import random

    rng = random.Random(seed)
    servers = [{"name": "g", "capacity": {"cpu": 2, "gpu": 1}, "count": 2, "labels": {"gpu": "true", "rack": "r1"}},
               {"name": "p", "capacity": {"cpu": 4}, "count": 2, "labels": {"rack": "r2"}}]  # fmt: skip
    jobs = []
    for k in range(rng.randint(2, 4)):
        options: list[dict[str, Any]] = []
        if rng.random() < 0.7:
            options.append({"on": {"gpu": "true"}, "duration": rng.randint(1, 3),
                            "demand": {"gpu": 1, "cpu": rng.randint(0, 1)}})  # fmt: skip
        if rng.random() < 0.4:
            options.append({"same": "rack", "duration": rng.randint(1, 4), "demand": {"cpu": rng.randint(1, 2)}})
        plain = {"demand": {"cpu": rng.randint(1, 4)}} if rng.random() < 0.6 else {}
        options.append({"duration": rng.randint(2, 6), **plain})
        jobs.append({"name": f"j{k}", "release": rng.randint(0, 2),
                     "stages": [{"name": "s", "tasks": rng.randint(1, 2), "demand": {"cpu": 1}, "options": options}]})
    try:
        return instance([*jobs], servers)
    except InstanceError:
        return None


@pytest.mark.parametrize("seed", range(6))
def test_spacetime_cp_and_spacetime_agree_with_option_demands(seed: int) -> None:
    inst = random_instance(seed)
    if inst is None:
        pytest.skip("the random options fit no machine")
    for objective in ("makespan", "avg-jct"):
        cp = solved(inst, "spacetime-cp", objective=objective, fair_cap=False)
        milp = solved(inst, "spacetime", objective=objective, fair_cap=False)
        assert cp.status == milp.status == "optimal"
        assert cp.objective == pytest.approx(milp.objective), objective
