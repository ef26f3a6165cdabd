"""Shared machinery of the flat heuristics: per-tenant and per-class arrays, the size limit, the tenant
order of progressive filling (with ties broken by index under a tolerance), and the result as its cells.

Conventions shared by every flat heuristic:

- A tenant's weighted global dominant share after ``n`` tasks is the key ``n * step[i]`` with
  ``step = dominant_demand / weight``. The next task goes to the lowest-indexed tenant among those whose
  key is within ``TIE`` (relative) of the smallest key: keys that are equal in real numbers but differ
  in their last bits (``0.1 / 1`` against ``0.3 / 3``) are a tie, broken by index.
- Task caps are whole numbers: a cap of 2.5 allows 2 tasks.
- A machine's free room starts at ``capacity * (1 + TOL)`` and every task placed on it subtracts its
  demand, one task at a time (so every implementation sees the same floats). A task fits where
  ``demand <= room`` for every resource it needs; resources it does not need are never checked.
- Machines of a server class are interchangeable until a task lands on one: a class is stored as its
  capacity and count, and a heuristic touches its machines in index order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from fairpack.models.result import Allocation
from fairpack.models.tolerance import FIT_RTOL
from fairpack.models.types import BoolArray, FloatArray, Instance, InstanceError, IntArray

TOL = FIT_RTOL  # fit slack relative to a machine's capacity (``models.tolerance``), far inside the checker's
TIE = 1e-9  # relative tolerance under which two keys or two fitness values tie (then the lower index wins)
#: Whole-task heuristics return an allocation per machine (``Allocation(kind="machine")``, given as its cells); its
#: tenants x machines table is built when read: refuse instances whose table would exceed this many cells (2**27
#: cells are 1 GiB of float64) before building anything per machine.
MAX_CELLS = 2**27


def key_ties(value: float, best: float) -> bool:
    """Whether tenant key ``value`` ties with the smallest key ``best`` (relative tolerance ``TIE``)."""
    return value <= best + TIE * best


def fitness_ties(value: float, best: float) -> bool:
    """Whether fitness ``value`` ties with the smallest ``best``: ``TIE`` relative, and absolute near 0."""
    return value <= best + TIE * (1.0 + best)


def check_size(instance: Instance, method: str) -> None:
    """Refuse, with the limit named, an instance whose tenants x machines table is too large to build.

    Raises
    ------
    InstanceError
        With field ``servers`` (the CLI exits 2), before anything per machine is allocated.
    """
    machines = int(sum(int(server.count) for server in instance.servers))
    cells = max(len(instance.tenants), 1) * machines
    if cells > MAX_CELLS:
        raise InstanceError(
            f"{method} places whole tasks on individual machines and returns a tenants x machines table: "
            f"{len(instance.tenants):,} tenants x {machines:,} machines = {cells:,} cells exceeds the limit of "
            f"{MAX_CELLS:,} cells; use fewer machines (counts) or a divisible method (drfh)",
            "servers",
        )


@dataclass(frozen=True)
class FlatSetup:
    """Per-tenant and per-class arrays every flat heuristic starts from (nothing per machine)."""

    demand: FloatArray  # (tenants, resources)
    need: FloatArray  # demand, with -inf where the demand is zero (never blocks a fit test)
    weights: FloatArray
    step: FloatArray  # weighted global dominant share of one task
    caps: FloatArray  # whole-task caps, inf when unbounded
    eligible: BoolArray  # may get a task at all: cap >= 1 and one task fits on some empty machine
    fits_class: BoolArray  # (tenants, classes): one task fits on an empty machine of the class
    room: FloatArray  # (classes, resources): an empty machine's room, capacity * (1 + TOL)
    counts: IntArray  # machines per class
    class_start: IntArray  # first machine of every class (classes are contiguous in machine order)

    @property
    def tenants(self) -> int:
        return int(self.demand.shape[0])

    @property
    def machines(self) -> int:
        return int(self.counts.sum())


def prepare(instance: Instance, method: str) -> FlatSetup:
    """Build the shared arrays of ``instance`` after checking its size (see ``check_size``)."""
    check_size(instance, method)
    demand = np.asarray(instance.demand, dtype=np.float64).reshape(len(instance.tenants), len(instance.resources))
    room = instance.capacity * (1 + TOL)
    need = np.where(demand > 0, demand, -np.inf)
    fits_class = np.all(need[:, None, :] <= room[None, :, :], axis=2)
    caps = np.floor(instance.task_caps) if len(instance.tenants) else np.zeros(0)
    eligible = fits_class.any(axis=1) & instance.runnable & (caps >= 1)
    step = instance.dominant_demand / instance.weights if len(instance.tenants) else np.zeros(0)
    counts = np.asarray(instance.counts, dtype=np.int64)
    return FlatSetup(
        demand=demand,
        need=need,
        weights=np.asarray(instance.weights, dtype=np.float64),
        step=np.asarray(step, dtype=np.float64),
        caps=caps,
        eligible=eligible,
        fits_class=fits_class,
        room=room,
        counts=counts,
        class_start=np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64),
    )


# ---- the tenant order --------------------------------------------------------------------------------


def _keys_below(step: FloatArray, caps: FloatArray, level: float) -> FloatArray:
    """How many keys ``n * step`` (n = 0, 1, ...) lie strictly below ``level``, capped; exact in floats."""
    count = np.ceil(level / step)
    for _ in range(4):  # the float product may sit one off the real-number estimate either way
        count = np.where((count > 0) & ((count - 1) * step >= level), count - 1, count)
        count = np.where(count * step < level, count + 1, count)
    return np.minimum(count, caps)


def _by_key_then_index(tenants: IntArray, keys: FloatArray) -> tuple[IntArray, FloatArray]:
    """The entries sorted by key, equal keys by tenant index (``np.lexsort((tenants, keys))``).

    An unstable sort of the keys alone, then the runs of equal keys put in index order: four times faster than
    a stable or two-key sort on the Google table's chunks, where equal keys are few (but the first chunk starts
    with every tenant at key 0).
    """
    order = np.argsort(keys)
    tenants, keys = tenants[order], keys[order]
    same = keys[1:] == keys[:-1]
    if same.any():
        starts = np.concatenate(([True], ~same))
        tied = np.flatnonzero(~starts | np.append(~starts[1:], False))
        run = np.cumsum(starts)[tied]
        tenants[tied] = tenants[tied][np.lexsort((tenants[tied], run))]
    return tenants, keys


@dataclass(frozen=True)
class Segment:
    """A stretch of the grant sequence: ``tenants`` in grant order.

    A *plain* segment is final as it stands: its keys are distinct beyond the tie tolerance or exactly
    equal (then sorted by index), and removing a blocked tenant's entries leaves the others' order as
    it is. A *fuzzy* segment is a chain of keys that tie under the tolerance without being equal; its
    order depends on which tenants are still present, so ``resolve_fuzzy`` settles it live.
    """

    tenants: IntArray
    keys: FloatArray
    fuzzy: bool


@dataclass(frozen=True)
class Chunk:
    """A stretch of the grant sequence as arrays: ``tenants`` and their ``keys`` in grant order (by key, then
    index), and the fuzzy chains among them, ``chains[c] = (lo, hi)`` for entries ``lo`` to ``hi - 1`` (sorted,
    disjoint). Every entry outside a chain is plain (see ``Segment``)."""

    tenants: IntArray
    keys: FloatArray
    chains: IntArray  # (fuzzy chains, 2), C-contiguous int64

    def __post_init__(self) -> None:
        if self.tenants.shape != self.keys.shape or self.chains.ndim != 2 or self.chains.shape[1] != 2:
            raise ValueError("a chunk needs one key per entry and chains as (lo, hi) rows")

    def segments(self) -> Iterator[Segment]:
        """The chunk as plain and fuzzy segments, in grant order."""
        plain_from = 0
        for lo, hi in self.chains.tolist():
            if lo > plain_from:
                yield Segment(self.tenants[plain_from:lo], self.keys[plain_from:lo], False)
            yield Segment(self.tenants[lo:hi], self.keys[lo:hi], True)
            plain_from = hi
        if self.tenants.size > plain_from:
            yield Segment(self.tenants[plain_from:], self.keys[plain_from:], False)


def grant_chunks(
    step: FloatArray,
    caps: FloatArray,
    state: Callable[[], tuple[IntArray, BoolArray]],
    chunk: int = 8192,
    waiting: Callable[[], IntArray] | None = None,
) -> Iterator[Chunk]:
    """The grant sequence of progressive filling, in chunks.

    ``state()`` returns the tasks granted so far and which tenants may still receive one; it is called
    before every new chunk, so the caller's grants and blocked tenants count from there on (within a
    chunk the caller skips a blocked tenant's later entries). A chunk holds about ``chunk`` entries:
    every entry with a key below a level ``L``, less a trailing chain of ties that may continue past
    ``L``. ``waiting()``, when given, is called after ``state()`` and returns tenants blocked before their
    turn (``Alive.block_where``): each gets its next entry only, its turn, where the caller lets it leave;
    until then its key bounds the window of a chain of ties as in the definition. The sequence ends when no
    tenant may receive a task.
    """
    caps = np.floor(caps)
    while True:
        counts, alive = state()
        ids = np.flatnonzero(alive & (counts < caps))
        if not ids.size:
            return
        s, start, cap = step[ids], counts[ids].astype(np.float64), caps[ids]
        rate = float(np.sum(1.0 / s))  # of the tenants that receive tasks: a waiting one has a single entry
        turns = waiting() if waiting is not None else None
        if turns is not None and turns.size:
            ids = np.concatenate((ids, turns))
            after = counts[turns].astype(np.float64)
            s, start, cap = step[ids], np.concatenate((start, after)), np.concatenate((cap, after + 1))
        base = float((start * s).min())
        size = chunk
        while True:
            level = base + size / rate
            level = max(level, np.nextafter(base, np.inf))
            upto = _keys_below(s, cap, level)
            number = (upto - start).astype(np.int64)
            number = np.maximum(number, 0)
            total = int(number.sum())
            tenants = np.repeat(ids, number)
            first = np.repeat(np.cumsum(number) - number, number)
            n = np.repeat(start, number) + (np.arange(total) - first)
            tenants, keys = _by_key_then_index(tenants, n * step[tenants])
            # Chains of ties: consecutive keys within the tolerance belong to one chain.
            gap = keys[1:] > keys[:-1] + TIE * keys[:-1]
            cuts = np.flatnonzero(gap) + 1
            bounds = np.concatenate(([0], cuts, [total]))
            everything_fits = bool((upto >= cap).all())
            last_start = int(bounds[-2])
            # Unless nothing beyond the level can join the last chain, leave that chain for the next chunk.
            end = total if everything_fits or keys[-1] + TIE * keys[-1] < level else last_start
            if end > 0:
                break
            size *= 4
        bounds = bounds[bounds <= end]
        if bounds[-1] != end:
            bounds = np.append(bounds, end)
        lo, hi = bounds[:-1], bounds[1:]
        fuzzy = keys[hi - 1] != keys[lo]
        chains = np.ascontiguousarray(np.stack([lo[fuzzy], hi[fuzzy]], axis=1), dtype=np.int64)
        yield Chunk(tenants[:end], keys[:end], chains)


def grant_segments(
    step: FloatArray,
    caps: FloatArray,
    state: Callable[[], tuple[IntArray, BoolArray]],
    chunk: int = 8192,
    waiting: Callable[[], IntArray] | None = None,
) -> Iterator[Segment]:
    """The grant sequence of ``grant_chunks`` as segments (``state()`` is called before every chunk)."""
    for part in grant_chunks(step, caps, state, chunk, waiting):
        yield from part.segments()


def resolve_fuzzy(segment: Segment, take: Callable[[int], bool], left: Sequence[bool] = ()) -> None:
    """Grant a fuzzy segment live: lowest index among the tenants within ``TIE`` of the smallest key.

    ``take(i)`` grants one task to tenant ``i`` and returns False when it could not (the tenant is then
    blocked and its remaining entries dropped). Each tenant competes with its first remaining entry.
    A tenant that ``left`` already says has left (its task fitted nowhere, or it reached its cap, earlier in the
    chunk) does not compete: as in the definition, where the tenants served are chosen among those still in, its
    key would narrow the window of ties and could hand the turn to a higher index. A tenant blocked before its
    turn (``Alive.block_where``) competes until its turn, where ``take`` fails.
    """
    pending: dict[int, list[float]] = {}
    for tenant, key in zip(segment.tenants.tolist(), segment.keys.tolist(), strict=True):
        if not (left and left[tenant]):
            pending.setdefault(tenant, []).append(key)
    position = dict.fromkeys(pending, 0)
    while position:
        smallest = min(pending[i][position[i]] for i in position)
        chosen = min(i for i in position if key_ties(pending[i][position[i]], smallest))
        if take(chosen) and position[chosen] + 1 < len(pending[chosen]):
            position[chosen] += 1
        else:
            del position[chosen]


class Alive:
    """Which tenants may still receive a task: a list for fast reads and a mask for numpy, kept in step.

    ``left`` marks the tenants that have left the grant order: served and blocked (``kill``: the task fitted
    nowhere, or the cap was reached), or blocked earlier and then reached in the order (their turn, where the
    caller marks them). A tenant that left no longer competes in a chain of ties. ``kill_where`` blocks
    tenants at their turn (a compiled kernel's verdict); ``block_where`` blocks tenants known never to fit
    again before their turn comes: as in the definition they stay in the order until it does (their keys
    still bound the window of a chain of ties), and ``waiting`` names them for the next chunk's cut
    (``grant_chunks``).
    """

    def __init__(self, mask: BoolArray) -> None:
        self.mask = np.array(mask, dtype=bool)
        self.dead = (~self.mask).tolist()
        self.left = [False] * len(self.dead)
        self._blocked: list[int] = []  # blocked by ``block_where``, some of whose turns may have come since
        self.chains = 0  # chains of near-ties settled by ``progressive_fill`` with ``place`` (per-server DRF asks)

    def kill(self, i: int) -> None:
        self.dead[i] = True
        self.left[i] = True
        self.mask[i] = False

    def kill_where(self, hopeless: BoolArray) -> None:
        """Kill every tenant where ``hopeless`` is True: blocked at its turn, it leaves the order."""
        dead, left = self.dead, self.left
        for i in np.flatnonzero(hopeless & self.mask).tolist():
            dead[i] = left[i] = True
        self.mask &= ~hopeless

    def block_where(self, hopeless: BoolArray) -> None:
        """Block every tenant where ``hopeless`` is True; each stays in the order until its turn."""
        dead = self.dead
        blocked = np.flatnonzero(hopeless & self.mask).tolist()
        for i in blocked:
            dead[i] = True
        self._blocked += blocked
        self.mask &= ~hopeless

    def waiting(self) -> IntArray:
        """The tenants blocked before their turn whose turn has not come yet."""
        if self._blocked:
            left = self.left
            self._blocked = [i for i in self._blocked if not left[i]]
        return np.asarray(self._blocked, dtype=np.int64)


#: ``serve(chunk, counts, alive)`` grants a whole chunk of the grant order, fuzzy chains included, in one call.
Serve = Callable[[Chunk, IntArray, Alive], None]


def progressive_fill(
    setup: FlatSetup, place: Callable[[int, int], int] | None, alive: Alive, chunk: int = 8192,
    serve: Serve | None = None, stop: Callable[[], bool] | None = None,
) -> list[int]:
    """Serve the tenant with the lowest weighted global dominant share, a task at a time.

    ``place(i, k)`` puts the next ``k`` tasks of tenant ``i`` (consecutive in the grant order, so no
    other tenant comes between them) where the heuristic's rule says, one after the other, and
    returns how many it placed; fewer than ``k`` means the next one fits nowhere, and the tenant is
    blocked for good (free room only shrinks). ``alive`` starts as the tenants that may get a task;
    tenants blocked or at their cap are killed in it (``place`` may read it, and ``block_where`` tenants it
    knows can never fit again: they stay in the order until their turn). ``serve``, when given instead of
    ``place``, grants a whole chunk in one call (a compiled heuristic): it gets the chunk, the task counts as
    an array and ``alive``, settles the fuzzy chains as ``resolve_fuzzy`` does (a tenant blocked before a
    chain does not compete in it), serves the plain entries as ``_serve_segment`` does, and updates counts
    and ``alive``. ``stop``, when given, is asked before every segment (every chunk with ``serve``); once it
    says so the filling ends there (a time limit: the tasks placed so far are a feasible allocation). Returns
    the task counts.
    """
    if (place is None) == (serve is None):
        raise ValueError("progressive_fill takes either place or serve")
    if serve is not None:
        served = np.zeros(setup.tenants, dtype=np.int64)
        for part in grant_chunks(setup.step, setup.caps, lambda: (served, alive.mask), chunk):
            if stop is not None and stop():  # out of time (or Ctrl-C): the tasks placed so far are the answer
                break
            serve(part, served, alive)
        return served.tolist()
    assert place is not None
    counts = [0] * setup.tenants
    caps = setup.caps.tolist()
    dead, left = alive.dead, alive.left

    def state() -> tuple[IntArray, BoolArray]:
        return np.asarray(counts, dtype=np.int64), alive.mask

    def take(i: int) -> bool:
        if dead[i]:  # blocked before its turn: this is its turn, and it leaves
            left[i] = True
            return False
        placed = place(i, 1)
        counts[i] += placed
        if placed < 1 or counts[i] >= caps[i]:
            alive.kill(i)
        return placed == 1

    for segment in grant_segments(setup.step, setup.caps, state, chunk, alive.waiting):
        if stop is not None and stop():  # out of time (or Ctrl-C): the tasks placed so far are the answer
            break
        if segment.fuzzy:
            alive.chains += 1
            resolve_fuzzy(segment, take, alive.left)
        else:
            _serve_segment(segment.tenants, place, alive, counts, caps)
    return counts


def _serve_segment(tenants: IntArray, place: Callable[[int, int], int], alive: Alive, counts: list[int],
                   caps: list[float]) -> None:  # fmt: skip
    """Grant one segment of the order (no near-ties in it), runs of one tenant as one batch. The first entry of
    a tenant blocked before its turn is its turn: it leaves the order there."""
    dead, left = alive.dead, alive.left
    repeats = tenants[1:] == tenants[:-1]
    if not repeats.any():  # one task per entry, nearly always: the lean loop
        for i in tenants.tolist():
            if dead[i]:
                left[i] = True
                continue
            if place(i, 1):
                counts[i] += 1
                if counts[i] >= caps[i]:
                    alive.kill(i)
            else:
                alive.kill(i)
        return
    starts = np.concatenate(([0], np.flatnonzero(~repeats) + 1))
    lengths = np.diff(np.append(starts, tenants.size)).tolist()
    for i, length in zip(tenants[starts].tolist(), lengths, strict=True):
        if dead[i]:
            left[i] = True
            continue
        placed = place(i, length)
        counts[i] += placed
        if placed < length or counts[i] >= caps[i]:
            alive.kill(i)


# ---- the result --------------------------------------------------------------------------------------


class Placements:
    """Tasks placed so far: single tasks as (tenant, machine) and batches as (tenant, first machine,
    tasks on each, machines) records."""

    def __init__(self) -> None:
        self.tenant: list[int] = []
        self.machine: list[int] = []
        self.span: list[int] = []
        self.each: list[int] = []
        self.single_tenant: list[int] = []
        self.single_machine: list[int] = []

    def add(self, tenant: int, machine: int, tasks: int = 1, span: int = 1) -> None:
        self.tenant.append(tenant)
        self.machine.append(machine)
        self.each.append(tasks)
        self.span.append(span)

    def allocation(self, tenants: int, machines: int) -> Allocation:
        """The tasks placed, as the cells of a whole-task allocation per machine (no tenants x machines table)."""
        span = np.asarray(self.span + [1] * len(self.single_tenant), dtype=np.int64)
        tenant = np.asarray(self.tenant + self.single_tenant, dtype=np.int64)
        machine = np.asarray(self.machine + self.single_machine, dtype=np.int64)
        each = np.asarray(self.each + [1] * len(self.single_tenant), dtype=np.float64)
        first = np.repeat(np.cumsum(span) - span, span)
        columns = np.repeat(machine, span) + (np.arange(int(span.sum())) - first)
        return Allocation.from_cells((tenants, machines), np.repeat(tenant, span), columns, np.repeat(each, span),
                                     kind="machine", integral=True)  # fmt: skip
