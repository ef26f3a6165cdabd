"""Weighted DRF between jobs over their aggregate resource-time vectors (Carbyne's inter-job scheduler).

A job's demand vector for DRF is its *aggregate resource-time*: ``v_k = sum over stages of tasks *
duration * demand``, normalised by the cluster capacity. Weighted DRF by progressive filling gives job
``k`` the amount ``x_k v_k / max(v_k)`` with ``x_k = w_k * level``: the common level rises until a
resource is exhausted, jobs using that resource freeze, and the others keep rising. There are no caps (a
job's share is the cluster fraction it is entitled to, whether or not its DAG can use it all at once).
Jobs whose aggregate vector is zero get no share (they need none).
"""

from __future__ import annotations

import numpy as np

from fairpack.models.types import FloatArray


def drf_shares(work: FloatArray, weights: FloatArray, present: np.ndarray | None = None) -> FloatArray:
    """Weighted DRF (progressive filling, no caps) over aggregate vectors.

    Parameters
    ----------
    work : array (jobs, resources)
        Each job's aggregate resource-time as a fraction of the cluster per resource.
    weights : array (jobs,)
    present : bool array (jobs,), optional
        Jobs taking part (default all).

    Returns
    -------
    array (jobs, resources): every job's share of every resource (fractions; 0 for absent jobs).
    """
    n_jobs, n_res = work.shape
    present = np.ones(n_jobs, dtype=bool) if present is None else np.asarray(present, dtype=bool)
    peak = work.max(axis=1) if n_res else np.zeros(n_jobs)
    direction = np.divide(work, peak[:, None], out=np.zeros_like(work), where=peak[:, None] > 0)
    growing = present & (peak > 0)
    level = np.zeros(n_jobs)  # weighted dominant share of every job
    used = np.zeros(n_res)
    while np.any(growing):
        rate = (weights[growing, None] * direction[growing]).sum(axis=0)  # use per unit of common level
        room = np.divide(1.0 - used, rate, out=np.full(n_res, np.inf), where=rate > 1e-15)
        step = float(max(room.min(), 0.0))
        level[growing] += step
        used += step * rate
        saturated = room <= step * (1 + 1e-12) + 1e-15
        frozen = growing & np.any(direction[:, saturated] > 0, axis=1)
        if not np.any(frozen):  # numerical safety: cannot happen when some resource saturated
            break
        growing &= ~frozen
    return (weights * level)[:, None] * direction
