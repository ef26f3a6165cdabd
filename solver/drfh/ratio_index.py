"""Best-Fit with two resources, compiled: the machines kept sorted by their free ratio.

For a task with ratio ``q_i = d_b / d_a`` (resources as fractions of the cluster totals), a machine
with free ratio ``q >= q_i`` fits it when its free ``a`` covers the demand, and one with ``q < q_i``
when its free ``b`` does; on each side the DRFH paper's fitness ``H`` grows with the distance in
``q``. So the best machine is the first fitting one on either side of ``q_i``: walk outwards, skip
blocks whose largest free room (an upper bound, made exact again when a block is scanned without a
fit) is too small, and go on while a further machine could tie. Every machine within the tie
tolerance of the best is collected and the lowest machine index wins, so the order among equal ``q``
does not matter.

The sorted order is a list of blocks (``items[block, :length[block]]``, blocks in the order
``sequence``), so that an entry moves from anywhere to anywhere at the cost of two blocks: a task
can move its machine's ``q`` past thousands of others. Untouched machines of a server class are
identical: a class is one entry (its first untouched machine) until a task lands there; then that
machine gets an entry of its own and the class entry moves on to the next machine. Per machine,
``machine[0]`` is ``q``, ``machine[1]`` and ``machine[2]`` the free room of resources ``a`` and ``b``.
An entry that fits no tenant still alive (tested against the staircase of Pareto-minimal needs,
``frontier``) is dropped when a walk meets it.

Two kernels run the search (``serve_chunk``: a chunk of the grant order, its chains of near-tie keys settled
live as ``greedy.resolve_fuzzy`` does), with the same arguments and the same allocation to the last
bit: the C extension :mod:`fairpack.solver.drfh._ratio_search` (``_ratio_search.pyx``, built when fairpack is
installed) and the numba code of :mod:`fairpack.solver.drfh.ratio_numba` where the extension was not built.
The float operations are those of the definition (no fastmath, no fused multiply-add), so the allocations are
the same to the last bit as the machine-by-machine reference. This module holds the state as numpy arrays and
imports neither kernel until :func:`kernel` is called: with the extension built, a process running Best-Fit never
imports numba (about 0.45 s of CPU).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable

import numpy as np

from fairpack.models.result import Allocation
from fairpack.models.types import BoolArray, FloatArray, IntArray
from fairpack.solver.kernels import KERNELS, built, pick

__all__ = ["KERNELS", "RatioState", "binder", "c_built", "kernel"]


CAP = 128  # entries a block holds before it splits in two

# Rows of the per-tenant float table ``tenant``.
NEED0, NEED1, DEMAND0, DEMAND1, DELTA, TARGET = range(6)
# Slots of the integer box ``box``: blocks in the sequence, free block ids on the stack, tasks placed.
BLOCKS, FREE, PLACED = range(3)


class RatioState:
    """Everything the compiled search reads and updates, as numpy arrays (numba takes no Python objects).

    Parameters
    ----------
    room : FloatArray
        ``(classes, 2)``: an empty machine's room of resources a and b.
    counts, class_start : IntArray
        Machines per class and the first machine of every class.
    total : tuple of float
        The cluster's totals of resources a and b.
    tenant : FloatArray
        ``(6, tenants)``: need a, need b (``-inf`` where the demand is 0), demand a, demand b, the
        task's ratio ``delta`` and the ``q`` the search starts from.
    first : BoolArray
        Whether each tenant's dominant resource is a.
    """

    def __init__(
        self,
        room: FloatArray,
        counts: IntArray,
        class_start: IntArray,
        total: tuple[float, float],
        tenant: FloatArray,
        first: BoolArray,
    ) -> None:
        machines = int(counts.sum())
        self.totals = np.array(total, dtype=np.float64)
        self.tenant = np.ascontiguousarray(tenant, dtype=np.float64)
        self.first = np.ascontiguousarray(first, dtype=np.bool_)
        machine_class = np.repeat(np.arange(len(counts)), counts)
        self.machine = np.empty((3, machines), dtype=np.float64)
        self.machine[1] = room[machine_class, 0]
        self.machine[2] = room[machine_class, 1]
        f0 = self.machine[1] / self.totals[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.machine[0] = np.where(f0 > 0, self.machine[2] / self.totals[1] / f0, np.inf)
        self.machine_class = machine_class.astype(np.int64)
        self.next_untouched = class_start.astype(np.int64).copy()
        self.class_end = (class_start + counts).astype(np.int64)
        blocks = machines + 2  # at most one block per entry, and one spare for a split
        self.items = np.empty((blocks, CAP), dtype=np.int64)
        self.length = np.zeros(blocks, dtype=np.int64)
        self.sequence = np.empty(blocks, dtype=np.int64)
        self.free = np.arange(blocks - 1, -1, -1, dtype=np.int64)  # a stack: block 0 on top
        self.where = np.full(max(machines, 1), -1, dtype=np.int64)
        self.block_max = np.full((2, blocks), -np.inf)
        self.stale = np.zeros(blocks, dtype=np.bool_)
        self.box = np.array([0, blocks, 0], dtype=np.int64)
        # Every task placed, as (tenant, machine) in placement order: the allocation's cells are made once at the
        # end (adding 1 to a cell of a 100 MB tenants x machines table at each placement missed the cache every
        # time, about a third of the search on the Google table with 1,000 tenants).
        self.placed = np.empty((2, 4 * max(machines, 1024)), dtype=np.int64)
        self.shape = (int(tenant.shape[1]), machines)
        self.found_h = np.empty(max(machines, 1), dtype=np.float64)
        self.found_m = np.empty(max(machines, 1), dtype=np.int64)
        self.dead = np.empty(max(machines, 1) + 1, dtype=np.int64)
        self.frontier = np.empty((2, 0), dtype=np.float64)
        # Scratch of the chains of near-ties: the competitors' entries, and a per-tenant mark kept at -1.
        self.competing = np.empty(max(int(tenant.shape[1]), 1), dtype=np.int64)
        self.slot = np.full(max(int(tenant.shape[1]), 1), -1, dtype=np.int64)
        starts = class_start[counts > 0]
        self._build(starts[np.argsort(self.machine[0, starts], kind="stable")].astype(np.int64))

    def _build(self, ranked: IntArray) -> None:
        """Fill the structure with the machines ``ranked`` (sorted by ``q``): half-full blocks 0, 1, ... in order,
        taken from the top of the free stack, with exact maxima."""
        half = CAP // 2
        used = -(-ranked.size // half)
        position = np.arange(ranked.size)
        block, slot = position // half, position % half
        self.items[block, slot] = ranked
        self.where[ranked] = block
        self.length[:used] = np.bincount(block, minlength=used)
        self.sequence[:used] = np.arange(used)
        for row in range(2):
            np.maximum.at(self.block_max[row], block, self.machine[1 + row, ranked])
        self.box[BLOCKS] = used
        self.box[FREE] -= used

    def _structure(self) -> tuple[object, ...]:
        return (self.machine, self.items, self.length, self.sequence, self.free, self.where, self.block_max,
                self.stale, self.box)  # fmt: skip

    def set_frontier(self, alive: BoolArray) -> IntArray:
        """Keep the Pareto-minimal (need a, need b) of the tenants alive, sorted by need a (need b then falls).

        Returns the tenants they belong to (one per distinct need).
        """
        ids = np.flatnonzero(alive)
        if not ids.size:
            self.frontier = np.empty((2, 0), dtype=np.float64)
            return ids
        # Sorted by need a, then need b (a stable sort: the first of equal needs is the lowest index); a need is on
        # the staircase when its need b is below every need b before it, which also drops repeated needs (rows
        # sorted with ``np.unique(axis=0)`` cost ten times more).
        need0, need1 = self.tenant[NEED0, ids], self.tenant[NEED1, ids]
        order = np.lexsort((need1, need0))
        need0, need1 = need0[order], need1[order]
        before = np.minimum.accumulate(np.concatenate(([np.inf], need1[:-1])))
        keep = need1 < before
        self.frontier = np.ascontiguousarray(np.stack([need0[keep], need1[keep]]))
        return np.asarray(ids[order[keep]], dtype=np.int64)

    def reserve(self, tasks: int) -> bool:
        """Make room in ``placed`` for ``tasks`` more; True when that took a new array (new ``arguments()``)."""
        needed = int(self.box[PLACED]) + tasks
        if needed <= self.placed.shape[1]:
            return False
        grown = np.empty((2, max(needed, 2 * self.placed.shape[1])), dtype=np.int64)
        grown[:, : self.box[PLACED]] = self.placed[:, : self.box[PLACED]]
        self.placed = grown
        return True

    def allocation(self) -> Allocation:
        """The tasks placed so far, as the cells of a whole-task allocation per machine."""
        done = int(self.box[PLACED])
        return Allocation.from_cells(self.shape, self.placed[0, :done], self.placed[1, :done], kind="machine",
                                     integral=True)  # fmt: skip

    def arguments(self) -> tuple[object, ...]:
        """The arguments of ``serve_chunk`` after the tenants, keys, chains, counts, caps and alive mask."""
        return (self.totals, self.tenant, self.first, self.machine_class, self.next_untouched, self.class_end,
                self.placed, self.found_h, self.found_m, self.dead, self.frontier, self.competing, self.slot,
                *self._structure())  # fmt: skip


def kernel(name: str = "auto") -> Callable[..., None]:
    """``serve_chunk`` of kernel ``name`` ('c', 'numba', or 'auto': the C extension if it was built).

    Raises
    ------
    ValueError
        An unknown name.
    ImportError
        'c' asked for and the extension was not built.
    """
    serve: Callable[..., None] = pick(name, "fairpack.solver.drfh._ratio_search", "fairpack.solver.drfh.ratio_numba",
                                      "serve_chunk")  # fmt: skip
    return serve


#: ``serve(tenants, keys, chains, counts, caps, alive)``: ``serve_chunk`` with the state's arguments bound.
Serve = Callable[[IntArray, FloatArray, IntArray, IntArray, FloatArray, BoolArray], None]


def binder(name: str = "auto") -> Callable[[tuple[object, ...]], Serve]:
    """``bind(arguments)`` of kernel ``name``: ``serve_chunk`` with ``RatioState.arguments()`` bound (bind again
    when they change). The C kernel binds them once in a ``Search`` (a call then takes six arrays, not two dozen:
    about 7 us less a call); numba's kernel takes them at every call."""
    serve = kernel(name)
    search = getattr(importlib.import_module(serve.__module__), "Search", None)
    if search is not None:
        return lambda arguments: search(*arguments).serve
    return lambda arguments: lambda *head: serve(*head, *arguments)


@functools.cache
def c_built() -> bool:
    """Whether the C extension was built (found without loading it)."""
    return built("fairpack.solver.drfh._ratio_search")
