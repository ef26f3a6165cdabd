"""The PSPLIB single-mode reader (models.psplib) and its dispatch from fairpack.models.io.load_instance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairpack.models.io import load_instance
from fairpack.models.psplib import load_psplib
from fairpack.models.types import InstanceError

# Four activities (1 and 4 are the dummies), two renewable resources and one unused nonrenewable one:
# 1 -> {2, 3} -> 4.
TINY = """\
************************************************************************
file with basedata            : tiny.bas
************************************************************************
projects                      :  1
jobs (incl. supersource/sink ):  4
horizon                       :  9
RESOURCES
  - renewable                 :  2   R
  - nonrenewable              :  1   N
  - doubly constrained        :  0   D
************************************************************************
PROJECT INFORMATION:
pronr.  #jobs rel.date duedate tardcost  MPM-Time
    1      2      0        9        1        5
************************************************************************
PRECEDENCE RELATIONS:
jobnr.    #modes  #successors   successors
   1        1          2           2   3
   2        1          1           4
   3        1          1           4
   4        1          0
************************************************************************
REQUESTS/DURATIONS:
jobnr. mode duration  R 1  R 2  N 1
------------------------------------------------------------------------
  1      1     0       0    0    0
  2      1     3       2    1    0
  3      1     5       1    3    0
  4      1     0       0    0    0
************************************************************************
RESOURCEAVAILABILITIES:
  R 1  R 2  N 1
    2    3   10
************************************************************************
"""


def write(tmp_path: Path, text: str, name: str = "tiny.sm") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_tiny_file(tmp_path: Path) -> None:
    instance = load_instance(write(tmp_path, TINY))
    assert instance.name == "tiny"
    assert instance.resources == ("R1", "R2")
    np.testing.assert_array_equal(instance.total_capacity, [2, 3])
    (job,) = instance.jobs
    assert job.name == "tiny" and job.release == 0 and job.weight == 1
    assert [s.name for s in job.stages] == ["1", "2", "3", "4"]  # dummies kept, named by activity number
    assert [s.tasks for s in job.stages] == [1, 1, 1, 1]
    assert [s.duration for s in job.stages] == [0, 3, 5, 0]
    assert [s.after for s in job.stages] == [(), (0,), (0,), (1, 2)]  # predecessors, inverted from successors
    np.testing.assert_array_equal(job.stages[2].demand, [1, 3])


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  2      1     3       2    1    0", "  2      1     3       2    1    4", "REQUESTS/DURATIONS line 27.*N 1"),
        (
            "   2        1          1           4",
            "   2        1          2           4",
            "PRECEDENCE RELATIONS line 19",
        ),
        ("   3        1          1           4", "   3        1          1           7", "unknown successor 7"),
        ("  3      1     5       1    3    0", "  3      1     x       1    3    0", "REQUESTS/DURATIONS line 28"),
        ("    2    3   10", "    2    3", "RESOURCEAVAILABILITIES line 33"),
        ("   2        1          1           4", "   2        2          1           4", "single-mode"),
        ("PRECEDENCE RELATIONS:", "PRECEDENCES:", "PRECEDENCE RELATIONS.*not found"),
        ("   3        1          1           4", "   3        1          1           1", "cycle"),
    ],
)
def test_bad_files_name_file_section_and_line(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert TINY.count(old) == 1
    path = write(tmp_path, TINY.replace(old, new))
    with pytest.raises(InstanceError, match=expected) as caught:
        load_psplib(path)
    assert str(path) in str(caught.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match="cannot read"):
        load_instance(tmp_path / "absent.sm")


@pytest.mark.data
def test_j301_1(data_dir: Path) -> None:
    path = data_dir / "psplib" / "j30" / "j301_1.sm"
    if not path.exists():
        pytest.skip(f"{path} not found")
    instance = load_instance(path)
    (job,) = instance.jobs
    assert len(job.stages) == 32
    np.testing.assert_array_equal(instance.total_capacity, [12, 13, 4, 12])
    assert job.stages[1].duration == 8 and job.stages[1].after == (0,)
    assert job.stages[31].after == (28, 29, 30)  # the sink follows activities 29, 30, 31
    np.testing.assert_array_equal(job.stages[5].demand, [0, 0, 0, 8])


@pytest.mark.data
def test_justification_keeps_a_list_schedule_feasible_and_no_longer(data_dir: Path) -> None:
    from fairpack.models.check import verify_schedule
    from fairpack.models.result import Schedule
    from fairpack.solver.spacetime.cp import FlatTasks
    from fairpack.solver.spacetime.warmstart import justify, more_priority_rules, serial_sgs

    path = data_dir / "psplib" / "j60" / "j609_2.sm"
    if not path.exists():
        pytest.skip(f"{path} not found")
    instance = load_instance(path)
    flat = FlatTasks.of(instance)
    duration = flat.duration.astype(np.int64)
    _, tail = flat.heads_tails(duration)
    capacity = instance.total_capacity[None, :]
    release = np.zeros(1, dtype=np.int64)
    args = (flat.stage_job, flat.stage_tasks, duration, flat.demand, release, flat.edges)
    improved = 0
    for priority in more_priority_rules(flat.num_stages, flat.edges, duration, tail.astype(np.int64)).values():
        found = serial_sgs(*args, priority, capacity)
        assert found is not None
        better = justify(*args, capacity, None, found[0])
        for start in (found[0], None if better is None else better[0]):
            if start is None:
                continue
            schedule = Schedule(flat.stage_job, flat.stage_local, flat.task_index, start.astype(float),
                                (start + duration).astype(float))  # fmt: skip
            assert verify_schedule(instance, schedule).ok
        if better is not None:
            assert (better[0] + duration).max() < (found[0] + duration).max()
            improved += 1
    assert improved >= 2  # measured: it shortens rank-weight 116 -> 94 and most-successors 95 -> 93


@pytest.mark.data
@pytest.mark.parametrize("kind", ["cliques", "order", "energy", "delays"])
def test_redundant_proof_constraints_keep_the_optimum(data_dir: Path, kind: str) -> None:
    """The redundant constraints tried on the J30 proofs (benchmarks/psplib_strengthen.py) are implied: with
    them the model still reaches j301_1's optimum, 43 (a wrong head, tail, delay or clique cuts it off)."""
    from ortools.sat.python import cp_model

    from benchmarks.psplib_strengthen import Strengthened
    from fairpack.solver.spacetime import cp

    path = data_dir / "psplib" / "j30" / "j301_1.sm"
    if not path.exists():
        pytest.skip(f"{path} not found")
    problem = cp._Problem.of(load_psplib(path), "makespan", 0.5, None, "pooled")
    horizon = 60  # above the optimum
    built = cp.SpacetimeCp(problem, horizon, cp._windows(problem, horizon)).build()
    model = Strengthened(built)
    added = model.delays(5.0, 0.5) if kind == "delays" else getattr(model, kind)()
    assert added > 0
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 60
    solver.parameters.linearization_level = 0
    assert solver.solve(model.model) == cp_model.OPTIMAL
    assert round(solver.objective_value) == 43
