"""DRFH's divisible answers under fairpack's one tolerance policy (``models.tolerance``).

The checker (``models.check.verify_allocation``) accepts a unit's use of a resource up to
``C (1 + CHECK_RTOL)`` and a tenant's tasks up to ``cap + CHECK_RTOL max(1, cap)``: tolerances
relative to the capacity (or cap) they compare with. An LP solver's tolerances are absolute and apply
to its own variables; DRFH's are global dominant shares, whose capacity coefficients (resource per unit
of share) are cluster totals in the thousands on the Google cluster. A share that HiGHS returns at
-1.7e-9 (inside its 1e-7 feasibility tolerance) is clipped to 0 and frees nothing, and the machine
it was offsetting is then over capacity by 2e-5 of its size: twenty times the checker's tolerance.

So the solver aims inside the checker by a stated margin, ``SOLVER_RTOL`` (``CHECK_RTOL / 100``): after
the LP, :func:`repair_pairs` clips negative shares, scales a tenant whose tasks exceed its cap by more
than ``SOLVER_RTOL`` back to the cap, and scales every share on a unit that uses more than
``C (1 + SOLVER_RTOL)`` of a resource down by the excess, so the unit uses at most C. Scaling down keeps
every other constraint. What it costs is reported (:class:`ShareRepair`): the answer stays ``optimal``
only when no tenant lost more than ``CHECK_RTOL`` of its share, the precision the checker itself
grants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fairpack.models.tolerance import CHECK_ATOL, CHECK_RTOL, SOLVER_RTOL
from fairpack.models.types import FloatArray, IntArray
from fairpack.solver.drfh.model import DrfhModel

__all__ = ["SOLVER_RTOL", "ShareRepair", "repair_pairs"]


@dataclass(frozen=True)
class ShareRepair:
    """What :func:`repair_pairs` changed in an LP answer, and what it cost."""

    units: int  # units whose shares were scaled down to fit their capacity
    tenants_capped: int  # tenants scaled back to their task cap
    worst_excess: float  # largest excess over a capacity found, relative to that capacity
    share_lost: float  # global dominant share removed, summed over tenants
    worst_loss: float  # largest loss of one tenant's share, relative to that share

    def __post_init__(self) -> None:
        if min(self.units, self.tenants_capped) < 0 or min(self.worst_excess, self.share_lost, self.worst_loss) < 0:
            raise ValueError(f"a share repair counts and loses non-negative amounts: {self}")

    @property
    def changed(self) -> bool:
        return self.units > 0 or self.tenants_capped > 0

    @property
    def within_tolerance(self) -> bool:
        """No tenant lost more than the checker's own precision: the answer is still the LP's optimum."""
        return self.worst_loss <= CHECK_RTOL

    def as_dict(self) -> dict[str, float | int]:
        return {"units": self.units, "tenants_capped": self.tenants_capped, "worst_excess": self.worst_excess,
                "share_lost": self.share_lost, "worst_loss": self.worst_loss}  # fmt: skip

    def describe(self) -> str:
        return (f"repaired the LP's round-off: {self.units} units over capacity by up to {self.worst_excess:.2g} "
                f"of it and {self.tenants_capped} tenants over their cap scaled down; largest loss "
                f"{self.worst_loss:.2g} of a tenant's share")  # fmt: skip


def repair_pairs(model: DrfhModel, tenants: IntArray, units: IntArray, shares: FloatArray
                 ) -> tuple[FloatArray, ShareRepair]:  # fmt: skip
    """Pair shares ``g`` (of pairs ``(tenants, units)``) brought inside the policy, and what that cost.

    Negative shares become 0, a tenant over its cap by more than ``SOLVER_RTOL`` is scaled back to it,
    and every share on a unit over a capacity by more than ``SOLVER_RTOL`` is scaled by the unit's
    tightest ratio of capacity to use. ``solver.drfh.filling.repair_shares`` applies it to a result.
    """
    g = np.maximum(shares, 0.0)
    n = model.num_tenants
    share_per_task = model.share_per_task
    held = np.bincount(tenants, weights=g, minlength=n)
    caps = model.instance.task_caps
    tasks = np.divide(held, share_per_task, out=np.zeros(n), where=share_per_task > 0)
    over_cap = np.isfinite(caps) & (tasks > caps + SOLVER_RTOL * np.maximum(1.0, caps))
    tenant_scale = np.where(over_cap, caps / np.where(over_cap, tasks, 1.0), 1.0)
    g = g * tenant_scale[tenants]

    capacity = model.units.capacity
    use = np.zeros_like(capacity)
    np.add.at(use, units, g[:, None] * model.consumption()[tenants])
    limit = capacity * (1 + SOLVER_RTOL) + CHECK_ATOL * SOLVER_RTOL
    over = use > limit
    # Scale each offending unit by its tightest resource; a zero capacity in use takes everything off.
    ratio = np.where(over, np.divide(capacity, use, out=np.zeros_like(use), where=over), 1.0)
    unit_scale = ratio.min(axis=1)
    excess = np.where(over, (use - capacity) / np.where(capacity > 0, capacity, 1.0), 0.0)
    g = g * unit_scale[units]

    reference = np.bincount(tenants, weights=shares, minlength=n)
    lost = np.maximum(reference - np.bincount(tenants, weights=g, minlength=n), 0.0)
    loss = np.divide(lost, reference, out=np.zeros(n), where=reference > 0)
    repair = ShareRepair(int(np.count_nonzero(unit_scale < 1)), int(np.count_nonzero(over_cap)),
                         float(excess.max(initial=0.0)), float(lost.sum()), float(loss.max(initial=0.0)))  # fmt: skip
    return np.asarray(g, dtype=np.float64), repair
