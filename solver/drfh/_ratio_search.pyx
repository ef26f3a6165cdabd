# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Best-Fit's two-resource search as a C extension: :mod:`fairpack.solver.drfh.ratio_numba`, line for line, in C.

Built when fairpack is installed (``setup.py``; optional: without a C compiler the install goes on and the numba
kernel serves). It exists because a process that runs numba's kernel first pays for importing numba and loading
its cached machine code (about 0.45 s of CPU, more than the search itself on the Google table with 1,000
tenants), where this module loads in a millisecond. The two kernels take the same arguments and give the same
allocation to the last bit: ``tests/test_heuristics_flat.py`` runs both against the machine-by-machine
reference, and the extension is compiled with ``-ffp-contract=off`` so that no ``a * b + c`` becomes a fused
multiply-add. The structure and the rules are described in :mod:`fairpack.solver.drfh.ratio_index`.
"""

from libc.math cimport INFINITY, fabs
from libc.stdint cimport int64_t

# Must equal fairpack.solver.drfh.greedy.TIE and ratio_index.CAP (tests/test_heuristics_flat.py compares them).
cdef double TIE = 1e-9
cdef int64_t CAP = 128

CONSTANTS = (TIE, CAP)

# Rows of the per-tenant float table and slots of the integer box (as in ratio_index).
cdef enum:
    NEED0 = 0
    NEED1 = 1
    DEMAND0 = 2
    DEMAND1 = 3
    DELTA = 4
    TARGET = 5

cdef enum:
    BLOCKS = 0
    FREE = 1
    PLACED = 2


cdef struct Order:
    # The blocked sorted list; 2-D arrays are row-major with ``machines`` (machine), ``CAP`` (items) and
    # ``nblocks`` (block_max) columns.
    double* machine
    int64_t machines
    int64_t* items
    int64_t* length
    int64_t* sequence
    int64_t* free
    int64_t* where
    double* block_max
    int64_t nblocks
    unsigned char* stale
    int64_t* box


cdef inline double _max(double a, double b) noexcept nogil:
    # numba's max(a, b): a unless b is larger.
    return b if b > a else a


cdef void _tighten(Order* o, int64_t blk) noexcept nogil:
    """Make a block's maxima exact."""
    cdef double top0 = -INFINITY, top1 = -INFINITY
    cdef int64_t k, m
    for k in range(o.length[blk]):
        m = o.items[blk * CAP + k]
        top0 = _max(top0, o.machine[o.machines + m])
        top1 = _max(top1, o.machine[2 * o.machines + m])
    o.block_max[blk] = top0
    o.block_max[o.nblocks + blk] = top1
    o.stale[blk] = 0


cdef int64_t _new_block(Order* o, int64_t s) noexcept nogil:
    """Take a free block id and put it at place ``s`` of the sequence."""
    cdef int64_t blk, t
    o.box[FREE] -= 1
    blk = o.free[o.box[FREE]]
    t = o.box[BLOCKS]
    while t > s:
        o.sequence[t] = o.sequence[t - 1]
        t -= 1
    o.sequence[s] = blk
    o.box[BLOCKS] += 1
    return blk


cdef inline bint _below(double q, double key, bint strict) noexcept nogil:
    return q < key or (strict and q == key)


cdef void _locate(Order* o, double key, bint strict, int64_t* s_out, int64_t* k_out) noexcept nogil:
    """Where ``key`` falls in the order: (place ``s`` in the sequence, entry ``k`` of that block), as numba's."""
    cdef int64_t lo = 0, hi = o.box[BLOCKS], mid, s, blk
    while lo < hi:
        mid = (lo + hi) // 2
        if _below(o.machine[o.items[o.sequence[mid] * CAP]], key, strict):
            lo = mid + 1
        else:
            hi = mid
    s = lo - 1 if lo - 1 > 0 else 0
    blk = o.sequence[s]
    lo, hi = 0, o.length[blk]
    while lo < hi:
        mid = (lo + hi) // 2
        if _below(o.machine[o.items[blk * CAP + mid]], key, strict):
            lo = mid + 1
        else:
            hi = mid
    s_out[0] = s
    k_out[0] = lo


cdef void _split(Order* o, int64_t s) noexcept nogil:
    """A full block at place ``s`` splits in two: the upper half goes to a new block right after."""
    cdef int64_t blk = o.sequence[s], half = CAP // 2, new, t, e
    new = _new_block(o, s + 1)
    for t in range(half, CAP):
        e = o.items[blk * CAP + t]
        o.items[new * CAP + t - half] = e
        o.where[e] = new
    o.length[blk] = half
    o.length[new] = CAP - half
    _tighten(o, blk)
    _tighten(o, new)


cdef int64_t _remove(Order* o, int64_t m) noexcept nogil:
    """Take machine ``m`` out of its block; returns the block when that leaves it empty, else -1."""
    cdef int64_t blk = o.where[m], k = 0, t
    while o.items[blk * CAP + k] != m:
        k += 1
    for t in range(k, o.length[blk] - 1):
        o.items[blk * CAP + t] = o.items[blk * CAP + t + 1]
    o.length[blk] -= 1
    o.where[m] = -1
    o.stale[blk] = 1
    return blk if o.length[blk] == 0 else -1


cdef void _drop_block(Order* o, int64_t blk) noexcept nogil:
    """An emptied block leaves the sequence and goes back on the free stack."""
    cdef int64_t s = 0, t
    while o.sequence[s] != blk:
        s += 1
    for t in range(s, o.box[BLOCKS] - 1):
        o.sequence[t] = o.sequence[t + 1]
    o.box[BLOCKS] -= 1
    o.free[o.box[FREE]] = blk
    o.box[FREE] += 1


cdef inline double _fitness(bint first, double delta, double q, double r0, double r1, double t0,
                            double t1) noexcept nogil:
    """The paper's ``H`` for a task of ratio ``delta`` (its non-dominant over its dominant resource)."""
    if first:
        return fabs(delta - q)
    if r1 > 0:
        return fabs(delta - r0 / t0 / (r1 / t1))
    return INFINITY


cdef inline bint _useful(double r0, double r1, const double* frontier, int64_t width) noexcept nogil:
    """Whether some (need a, need b) of the staircase ``frontier`` (2 x width) fits in room (r0, r1)."""
    cdef int64_t lo = 0, hi = width, mid
    while lo < hi:  # the last need a <= r0 has the smallest need b among those
        mid = (lo + hi) // 2
        if frontier[mid] <= r0:
            lo = mid + 1
        else:
            hi = mid
    return lo > 0 and frontier[width + lo - 1] <= r1


cdef int64_t _enter_chain(int64_t lo, int64_t hi, const int64_t* tenants, const unsigned char* alive,
                          int64_t* competing, int64_t* slot) noexcept nogil:
    """The tenants that compete in the fuzzy chain of entries ``lo`` to ``hi - 1``: each alive tenant's first entry
    there, in ``competing``; returns how many. ``slot`` is -1 for every tenant, and is again on return."""
    cdef int64_t rivals = 0, t, i, r
    for t in range(lo, hi):
        i = tenants[t]
        if alive[i] and slot[i] < 0:
            slot[i] = rivals
            competing[rivals] = t
            rivals += 1
    for r in range(rivals):
        slot[tenants[competing[r]]] = -1
    return rivals


cdef int64_t _choose(int64_t rivals, const int64_t* tenants, const double* keys,
                     const int64_t* competing) noexcept nogil:
    """Which competitor is served next: the lowest tenant index among the keys within ``TIE`` of the smallest."""
    cdef double smallest = keys[competing[0]]
    cdef int64_t r, t, best = -1
    for r in range(1, rivals):
        smallest = keys[competing[r]] if keys[competing[r]] < smallest else smallest
    for r in range(rivals):
        t = competing[r]
        if keys[t] <= smallest + TIE * smallest and (best < 0 or tenants[t] < tenants[competing[best]]):
            best = r
    return best


cdef int64_t _advance(int64_t r, int64_t rivals, int64_t hi, bint keep, const int64_t* tenants,
                      int64_t* competing) noexcept nogil:
    """Competitor ``r`` moves on to its next entry before ``hi``; without one (or unless ``keep``: its task fitted
    nowhere, or it reached its cap) it stops competing. Returns how many still compete."""
    cdef int64_t i, t
    if keep:
        i = tenants[competing[r]]
        for t in range(competing[r] + 1, hi):
            if tenants[t] == i:
                competing[r] = t
                return rivals
    competing[r] = competing[rivals - 1]
    return rivals - 1


cdef class Search:
    """The state arguments of ``serve_chunk`` bound once: ``Search(*state).serve(tenants, keys, chains, counts, caps,
    alive)`` is ``serve_chunk(tenants, keys, chains, counts, caps, alive, *state)``.

    Taking two dozen arrays costs a call about 7 us (a buffer acquired per array); bound, a call takes six. The
    caller binds again whenever an array of the state is replaced (``placed`` grown, a new ``frontier``); the
    arrays are kept referenced here.
    """

    cdef Order o
    cdef double t0, t1
    cdef const double[:, ::1] tenant
    cdef const unsigned char[::1] first
    cdef const int64_t[::1] machine_class, class_end
    cdef int64_t[::1] next_untouched, found_m, dead, box, competing, slot
    cdef int64_t[:, ::1] placed, items
    cdef double[::1] found_h
    cdef const double[:, ::1] frontier
    cdef double[:, ::1] machine, block_max
    cdef int64_t[::1] length, sequence, free, where
    cdef unsigned char[::1] stale
    cdef double empty

    def __init__(self, const double[::1] totals, const double[:, ::1] tenant, first,
                 const int64_t[::1] machine_class, int64_t[::1] next_untouched, const int64_t[::1] class_end,
                 int64_t[:, ::1] placed, double[::1] found_h, int64_t[::1] found_m, int64_t[::1] dead,
                 const double[:, ::1] frontier, int64_t[::1] competing, int64_t[::1] slot, double[:, ::1] machine, int64_t[:, ::1] items, int64_t[::1] length,
                 int64_t[::1] sequence, int64_t[::1] free, int64_t[::1] where, double[:, ::1] block_max, stale,
                 int64_t[::1] box):
        self.t0 = totals[0]
        self.t1 = totals[1]
        self.tenant, self.machine_class, self.next_untouched, self.class_end = tenant, machine_class, next_untouched, class_end
        self.first = first.view("u1")
        self.placed, self.found_h, self.found_m, self.dead, self.frontier = placed, found_h, found_m, dead, frontier
        self.competing, self.slot = competing, slot
        self.machine, self.items, self.length, self.sequence, self.free = machine, items, length, sequence, free
        self.where, self.block_max, self.box = where, block_max, box
        self.stale = stale.view("u1")
        self.o.machine = &machine[0, 0]
        self.o.machines = machine.shape[1]
        self.o.items = &items[0, 0]
        self.o.length = &length[0]
        self.o.sequence = &sequence[0]
        self.o.free = &free[0]
        self.o.where = &where[0]
        self.o.block_max = &block_max[0, 0]
        self.o.nblocks = block_max.shape[1]
        self.o.stale = &self.stale[0]
        self.o.box = &box[0]
        self.empty = 0.0

    def serve(self, const int64_t[::1] tenants, const double[::1] keys, const int64_t[:, ::1] chains,
              int64_t[::1] counts, const double[::1] caps, alive):
        """Grant a chunk of the grant order (``serve_chunk``'s first six arguments)."""
        cdef unsigned char[::1] alive_b = alive.view("u1")
        cdef const double* front = &self.frontier[0, 0] if self.frontier.shape[1] else &self.empty
        if keys.shape[0] != tenants.shape[0] or chains.shape[1] != 2:
            raise ValueError("a chunk needs one key per entry and chains as (lo, hi) rows")
        with nogil:
            _serve(&self.o, &tenants[0] if tenants.shape[0] else NULL, &keys[0] if keys.shape[0] else NULL,
                   tenants.shape[0], &chains[0, 0] if chains.shape[0] else NULL, chains.shape[0], &counts[0],
                   &caps[0], &alive_b[0], self.t0, self.t1, &self.tenant[0, 0], self.tenant.shape[1], &self.first[0],
                   &self.machine_class[0], &self.next_untouched[0], &self.class_end[0], &self.placed[0, 0],
                   self.placed.shape[1], &self.found_h[0], &self.found_m[0], &self.dead[0], front,
                   self.frontier.shape[1], &self.competing[0], &self.slot[0])


def serve_chunk(tenants, keys, chains, counts, caps, alive, *state):
    """Grant a chunk of the grant order, its fuzzy chains settled live: ``ratio_numba.serve_chunk`` (same arguments;
    the boolean arrays ``alive``, ``first`` and ``stale`` are numpy ``bool_``, read as bytes)."""
    Search(*state).serve(tenants, keys, chains, counts, caps, alive)


cdef void _serve(Order* o, const int64_t* tenants, const double* keys, int64_t ntenants, const int64_t* chains,
                 int64_t nchains, int64_t* counts, const double* caps, unsigned char* alive, double t0, double t1,
                 const double* tenant, int64_t width, const unsigned char* first, const int64_t* machine_class,
                 int64_t* next_untouched, const int64_t* class_end, int64_t* placed, int64_t placed_width,
                 double* found_h, int64_t* found_m, int64_t* dead, const double* frontier, int64_t fwidth,
                 int64_t* competing, int64_t* slot) noexcept nogil:
    cdef int64_t* box = o.box
    cdef int64_t M = o.machines, NB = o.nblocks
    cdef double* machine = o.machine
    cdef int64_t* items = o.items
    cdef int64_t* length = o.length
    cdef int64_t* sequence = o.sequence
    cdef int64_t* where = o.where
    cdef double* block_max = o.block_max
    cdef unsigned char* stale = o.stale
    cdef int64_t e = 0, chain = 0, rivals = 0, r = 0, hi = 0
    cdef int64_t i, found, s0, k0, way, step, s, k, blk, size, m, d, emptied, f, c, n, t
    cdef double need0, need1, delta, bound, r0, r1, h, limit, best, f0
    cdef bint head, fits, fitted, past
    while True:
        if rivals > 0:
            r = _choose(rivals, tenants, keys, competing)
            i = tenants[competing[r]]
        elif e == ntenants:
            break
        elif chain < nchains and e == chains[2 * chain]:  # a chain of near-ties starts
            hi = chains[2 * chain + 1]
            rivals = _enter_chain(e, hi, tenants, alive, competing, slot)
            e = hi
            chain += 1
            continue
        else:
            i = tenants[e]
            e += 1
        if alive[i]:
            found = 0
            dead[0] = 0
            if box[BLOCKS] > 0:
                need0 = tenant[NEED0 * width + i]
                need1 = tenant[NEED1 * width + i]
                delta = tenant[DELTA * width + i]
                head = first[i]
                _locate(o, tenant[TARGET * width + i], False, &s0, &k0)
                bound = INFINITY
                for way in range(2):  # right from the first entry at or above the target, then left of it
                    step = 1 if way == 0 else -1
                    s, k = s0, k0
                    if way == 1:
                        if k > 0:
                            k -= 1
                        else:
                            s, k = s - 1, -1  # -1: from the end of the block before
                    while 0 <= s < box[BLOCKS]:
                        blk = sequence[s]
                        size = length[blk]
                        if k < 0:
                            k += size
                        if not 0 <= k < size:
                            s += step
                            k = 0 if step > 0 else -1
                            continue
                        if block_max[blk] < need0 or block_max[NB + blk] < need1:  # nothing in the block fits
                            if bound < INFINITY:  # but the walk may already be past the bound
                                m = items[blk * CAP + k]
                                if _fitness(head, delta, machine[m], machine[M + m], machine[2 * M + m], t0, t1) > bound:
                                    break
                            s += step
                            k = 0 if step > 0 else -1
                            continue
                        fitted = past = False
                        while 0 <= k < size:
                            m = items[blk * CAP + k]
                            r0 = machine[M + m]
                            r1 = machine[2 * M + m]
                            fits = r0 >= need0 and r1 >= need1
                            if fits or bound < INFINITY:
                                h = _fitness(head, delta, machine[m], r0, r1, t0, t1)
                                if h > bound:
                                    past = True
                                    break
                                if fits:
                                    fitted = True
                                    found_h[found] = h
                                    found_m[found] = m
                                    found += 1
                                    limit = h + 2 * TIE * (1.0 + h)
                                    if limit < bound:
                                        bound = limit
                            if not fits and not _useful(r0, r1, frontier, fwidth):
                                dead[0] += 1
                                dead[dead[0]] = m
                            k += step
                        if past:
                            break
                        if not fitted and stale[blk]:  # scanned without a fit: make its maxima exact
                            _tighten(o, blk)
                        s += step
                        k = 0 if step > 0 else -1
                for d in range(1, dead[0] + 1):  # drop the entries no tenant alive fits
                    emptied = _remove(o, dead[d])
                    if emptied >= 0:
                        _drop_block(o, emptied)
            if found == 0:
                alive[i] = 0
            else:
                best = found_h[0]
                for f in range(1, found):
                    best = found_h[f] if found_h[f] < best else best
                m = -1
                for f in range(found):
                    if found_h[f] <= best + TIE * (1.0 + best) and (m < 0 or found_m[f] < m):
                        m = found_m[f]
                n = box[PLACED]
                placed[n] = i
                placed[placed_width + n] = m
                box[PLACED] = n + 1
                r0 = machine[M + m] - tenant[DEMAND0 * width + i]
                r1 = machine[2 * M + m] - tenant[DEMAND1 * width + i]
                f0 = r0 / t0
                c = machine_class[m]
                if m == next_untouched[c]:  # the class's entry: it moves on to the next untouched machine, if any
                    next_untouched[c] = m + 1
                    blk = where[m]
                    if m + 1 < class_end[c]:
                        k = 0
                        while items[blk * CAP + k] != m:
                            k += 1
                        items[blk * CAP + k] = m + 1  # same room, same q: same place
                        where[m + 1] = blk
                        where[m] = -1
                if where[m] >= 0:
                    emptied = _remove(o, m)
                    if emptied >= 0:
                        _drop_block(o, emptied)
                machine[m] = r1 / t1 / f0 if f0 > 0 else INFINITY
                machine[M + m] = r0
                machine[2 * M + m] = r1
                # Back in the order at its new q, after equal ones; a full block splits in two.
                if box[BLOCKS] == 0:
                    s = 0
                    blk = _new_block(o, 0)
                    length[blk] = 0
                    block_max[blk] = -INFINITY
                    block_max[NB + blk] = -INFINITY
                    stale[blk] = 0
                    k = 0
                else:
                    _locate(o, machine[m], True, &s, &k)
                    blk = sequence[s]
                t = length[blk]
                while t > k:
                    items[blk * CAP + t] = items[blk * CAP + t - 1]
                    t -= 1
                items[blk * CAP + k] = m
                length[blk] += 1
                where[m] = blk
                block_max[blk] = _max(block_max[blk], r0)
                block_max[NB + blk] = _max(block_max[NB + blk], r1)
                if length[blk] == CAP:
                    _split(o, s)
                counts[i] += 1
                if counts[i] >= caps[i]:
                    alive[i] = 0
        if rivals > 0:  # the chain under way: the tenant served moves on to its next entry, or stops competing
            rivals = _advance(r, rivals, hi, alive[i], tenants, competing)
