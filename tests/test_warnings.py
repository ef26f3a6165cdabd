"""Parts of an instance that cannot run are named in warnings, and the result says how f treats them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fairpack.models.types import Instance, ServerClass, Tenant
from fairpack.solver.api import solve
from fairpack.solver.cli import main


def _cluster() -> tuple[ServerClass, ...]:
    return (ServerClass("small", np.array([4.0, 8.0, 0.0]), 2),)


def test_a_tenant_whose_task_fits_no_machine_is_named_and_left_out_of_f() -> None:
    # "big" needs 6 cpu: the pool has 8 but no machine more than 4, so whole-task methods run none of it.
    instance = Instance(("cpu", "mem", "gpu"), _cluster(),
                        (Tenant("a", np.array([1.0, 1.0, 0.0])), Tenant("big", np.array([6.0, 1.0, 0.0]))),
                        name="unplaceable")  # fmt: skip
    result = solve(instance, "drfh-int")
    assert result.verified
    assert any("'big'" in w and "fits on no single machine" in w and "leave it out of f" in w
               for w in result.warnings)  # fmt: skip
    assert result.allocation is not None and result.allocation.tenant_tasks[1] == 0
    # f is a's share alone: 8 tasks of 1 cpu on 8 cpu -> dominant share 1.0 (cpu), not 0 because of big.
    assert result.objective == pytest.approx(1.0)


def test_a_tenant_needing_a_resource_no_server_has_is_named() -> None:
    instance = Instance(("cpu", "mem", "gpu"), _cluster(),
                        (Tenant("a", np.array([1.0, 1.0, 0.0])), Tenant("gpu-user", np.array([1.0, 1.0, 1.0]))),
                        name="no-gpu")  # fmt: skip
    result = solve(instance, "drfh")
    assert result.verified
    assert any("'gpu-user' needs gpu, which no server has" in w for w in result.warnings)


def test_validate_lists_the_warnings_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("resources: [cpu, gpu]\nservers:\n- {name: m, capacity: {cpu: 4}, count: 1}\n"
                    "tenants:\n- {name: g, demand: {cpu: 1, gpu: 1}}\n- {name: c, demand: {cpu: 1}}\n")  # fmt: skip
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    assert code == 0
    assert "'g' needs gpu" in captured.out + captured.err
