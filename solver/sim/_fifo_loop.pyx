# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The ``fifo`` policy's compiled event loop as a C extension: :mod:`fairpack.solver.sim.fifo_numba`, line for
line, in C.

Built when fairpack is installed (``setup.py``; optional: without a C compiler the install goes on and the
numba kernel serves). It exists because a process that runs numba's kernel first pays for importing numba and
loading its cached machine code (about 0.45 s of CPU, a third of a 100,000-job run), where this module loads in
a millisecond. The two kernels take the same arguments and give the same schedule to the last bit:
``tests/test_compiled_loop.py`` runs both against the engine, and the extension is compiled with
``-ffp-contract=off`` so that no ``a * b + c`` becomes a fused multiply-add that rounds once instead of twice.
The rules are described in :mod:`fairpack.solver.sim.compiled_loop`.
"""

from libc.math cimport INFINITY, fabs, floor
from libc.stdint cimport int64_t
from libc.stdlib cimport qsort

# Must equal fairpack.models.tolerance and fifo_state.MOST (tests/test_compiled_loop.py compares TOLERANCES).
cdef double FIT_EPS = 1e-9
cdef double TIME_RTOL = 1e-9
cdef double TIME_ATOL = 1e-15
cdef int64_t MOST = 1 << 30

TOLERANCES = (FIT_EPS, TIME_RTOL, TIME_ATOL, MOST)

# Slots of the integer and float state vectors, and the statuses of a slice (as in fifo_numba).
cdef enum:
    _EVENTS = 0
    _LAUNCHES = 1
    _ROWS = 2
    _HEAP = 3
    _NEXT_RELEASE = 4
    _RELEASED_POS = 5
    _IN_EVENT = 6
    _STAMP = 7
    _FAILED = 8
    _ACTIVE = 9
    _CHANGED = 10

cdef enum:
    _T = 0

cdef enum:
    DONE = 0
    MORE = 1
    NEED_ROWS = 2


cdef inline double _settled(double t) noexcept nogil:
    cdef double x = TIME_RTOL * fabs(t)
    return t - (TIME_ATOL if x < TIME_ATOL else x)


cdef inline bint _before(double e1, int64_t s1, double e2, int64_t s2) noexcept nogil:
    return e1 < e2 or (e1 == e2 and s1 < s2)


cdef int64_t _heap_push(int64_t* heap, int64_t size, int64_t launch, const double* ends) noexcept nogil:
    cdef int64_t pos = size, parent, p
    cdef double e = ends[launch]
    while pos > 0:
        parent = (pos - 1) >> 1
        p = heap[parent]
        if _before(e, launch, ends[p], p):
            heap[pos] = p
            pos = parent
        else:
            break
    heap[pos] = launch
    return size + 1


cdef int64_t _heap_pop(int64_t* heap, int64_t size, const double* ends) noexcept nogil:
    cdef int64_t last, pos, child, right, c
    cdef double e
    size -= 1
    last = heap[size]
    if size == 0:
        return size
    e = ends[last]
    pos = 0
    child = 1
    while child < size:
        right = child + 1
        c = heap[child]
        if right < size and _before(ends[heap[right]], heap[right], ends[c], c):
            child = right
            c = heap[child]
        if _before(ends[c], c, e, last):
            heap[pos] = c
            pos = child
            child = 2 * pos + 1
        else:
            break
    heap[pos] = last
    return size


cdef inline int64_t _find(int64_t* alive, int64_t p) noexcept nogil:
    while alive[p] != p:
        alive[p] = alive[alive[p]]
        p = alive[p]
    return p


cdef inline bint _fits(const double* room, int64_t width, const double* d, const int64_t* need, int64_t nneed,
                       int64_t m) noexcept nogil:
    cdef int64_t j, r
    for j in range(nneed):
        r = need[j]
        if room[m * width + r] < d[r]:
            return False
    return True


cdef inline double _fit_count(const double* room, int64_t width, const double* d, const int64_t* need,
                              int64_t nneed, int64_t m) noexcept nogil:
    cdef double least = INFINITY, q, v
    cdef int64_t j, r
    for j in range(nneed):
        r = need[j]
        q = room[m * width + r] / d[r]
        if q < least:
            least = q
    if least == INFINITY:
        return INFINITY
    v = floor(least + FIT_EPS)
    return v if v > 0.0 else 0.0


cdef inline void _change(double* free, double* room, const double* slack, int64_t width, int64_t m,
                         const double* d, int64_t n, int sign) noexcept nogil:
    cdef int64_t r, at
    cdef double value
    for r in range(width):
        at = m * width + r
        value = free[at] + <double>n * d[r] if sign > 0 else free[at] - <double>n * d[r]
        free[at] = value
        room[at] = value + slack[at]


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef struct Loop:
    # Sizes
    int64_t width
    int64_t machines
    int64_t nrelease
    int64_t rows_cap
    int64_t launches_cap
    # State
    int64_t* st
    double* ft
    # Workload
    const int64_t* order
    int64_t* alive
    const int64_t* release_order
    const double* release
    const int64_t* job_ptr
    const int64_t* released_pos
    const int64_t* dclass
    const double* demand
    const int64_t* need_ptr
    const int64_t* need_idx
    const double* duration
    const int64_t* child_ptr
    const int64_t* child_idx
    # Cluster
    double* free
    double* room
    const double* slack
    const double* capacity
    # Groups
    int64_t* unlaunched
    int64_t* running
    int64_t* missing
    int64_t* runnable
    int64_t* failed_at
    int64_t* machine_tasks
    int64_t* next_index
    # Launches and rows
    int64_t* heap
    double* launch_end
    int64_t* launch_lo
    int64_t* row_group
    int64_t* row_first
    int64_t* row_n
    double* row_start
    double* row_end
    int64_t* row_machine
    int64_t* changed
    int64_t* changed_at
    const int64_t* all_machines


cdef int64_t _launch(Loop* s, int64_t g, double t, const int64_t* cand, int64_t ncand) noexcept nogil:
    cdef const double* d = s.demand + g * s.width
    cdef const int64_t* need = s.need_idx + s.need_ptr[g]
    cdef int64_t nneed = s.need_ptr[g + 1] - s.need_ptr[g]
    cdef int64_t left = s.unlaunched[g] if s.unlaunched[g] < MOST else MOST
    cdef double end = t + s.duration[g]
    cdef int64_t rows = s.st[_ROWS]
    cdef int64_t launch = s.st[_LAUNCHES]
    cdef int64_t total = 0, i, m, n
    cdef double fc
    s.launch_lo[launch] = rows
    for i in range(ncand):
        m = cand[i]
        if not _fits(s.room, s.width, d, need, nneed, m):
            continue
        fc = _fit_count(s.room, s.width, d, need, nneed, m)
        n = <int64_t>fc if fc < left else left
        if n > 0:
            s.row_group[rows] = g
            s.row_first[rows] = s.next_index[g]
            s.row_n[rows] = n
            s.row_start[rows] = t
            s.row_end[rows] = end
            s.row_machine[rows] = m
            rows += 1
            s.next_index[g] += n
            _change(s.free, s.room, s.slack, s.width, m, d, n, -1)
            s.machine_tasks[m] += n
            left -= n
            total += n
        if left <= 0:
            break
    s.launch_lo[launch + 1] = rows
    s.launch_end[launch] = end
    s.st[_HEAP] = _heap_push(s.heap, s.st[_HEAP], launch, s.launch_end)
    s.st[_LAUNCHES] = launch + 1
    s.st[_ROWS] = rows
    s.unlaunched[g] -= total
    s.running[g] += total
    return total


cdef inline void _wake(Loop* s, int64_t g) noexcept nogil:
    """Group ``g`` becomes runnable: its demand class counts one more runnable group."""
    cdef int64_t c = s.dclass[g]
    s.runnable[c] += 1
    if s.runnable[c] == 1:
        s.st[_ACTIVE] += 1


cdef void _end_tasks(Loop* s, double t) noexcept nogil:
    cdef int64_t launch, lo, hi, g, n, row, m, count, r, j, c, at
    cdef const double* d
    while s.st[_HEAP] > 0 and _settled(s.launch_end[s.heap[0]]) <= t:
        launch = s.heap[0]
        s.st[_HEAP] = _heap_pop(s.heap, s.st[_HEAP], s.launch_end)
        lo = s.launch_lo[launch]
        hi = s.launch_lo[launch + 1]
        g = s.row_group[lo]
        d = s.demand + g * s.width
        n = 0
        for row in range(lo, hi):
            m = s.row_machine[row]
            count = s.row_n[row]
            n += count
            if s.changed_at[m] != s.st[_STAMP]:
                s.changed_at[m] = s.st[_STAMP]
                s.changed[s.st[_CHANGED]] = m
                s.st[_CHANGED] += 1
            _change(s.free, s.room, s.slack, s.width, m, d, count, 1)
            s.machine_tasks[m] -= count
            if s.machine_tasks[m] == 0:
                for r in range(s.width):
                    at = m * s.width + r
                    s.free[at] = s.capacity[at]
                    s.room[at] = s.capacity[at] + s.slack[at]
        s.running[g] -= n
        if s.running[g] == 0 and s.unlaunched[g] == 0:
            for j in range(s.child_ptr[g], s.child_ptr[g + 1]):
                c = s.child_idx[j]
                s.missing[c] -= 1
                if s.missing[c] == 0 and s.unlaunched[c] > 0:
                    _wake(s, c)


cdef void _release(Loop* s, double t) noexcept nogil:
    cdef int64_t i = s.st[_NEXT_RELEASE], k, g
    while i < s.nrelease and _settled(s.release[s.release_order[i]]) <= t:
        k = s.release_order[i]
        for g in range(s.job_ptr[k], s.job_ptr[k + 1]):
            if s.missing[g] == 0 and s.unlaunched[g] > 0:
                _wake(s, g)
        i += 1
        s.st[_RELEASED_POS] = s.released_pos[i - 1]
    s.st[_NEXT_RELEASE] = i


cdef bint _fits_somewhere(Loop* s, const double* d, const int64_t* need, int64_t nneed, const int64_t* cand,
                          int64_t ncand) noexcept nogil:
    cdef int64_t i
    for i in range(ncand):
        if _fits(s.room, s.width, d, need, nneed, cand[i]):
            return True
    return False


cdef int _dispatch(Loop* s) noexcept nogil:
    cdef double t = s.ft[_T]
    cdef int64_t stamp = s.st[_STAMP]
    cdef int64_t end = s.st[_RELEASED_POS]
    cdef int64_t nchanged = s.st[_CHANGED]
    cdef int64_t p, g, c, ncand, nneed
    cdef const int64_t* cand
    cdef const int64_t* need
    if nchanged > 1:
        qsort(s.changed, nchanged, sizeof(int64_t), _compare)
    p = _find(s.alive, 0)
    while p < end and s.st[_FAILED] < s.st[_ACTIVE]:
        g = s.order[p]
        c = s.dclass[g]
        if s.missing[g] == 0 and s.failed_at[c] != stamp:
            need = s.need_idx + s.need_ptr[g]
            nneed = s.need_ptr[g + 1] - s.need_ptr[g]
            if s.failed_at[c] == stamp - 1:
                cand, ncand = s.changed, nchanged
            else:
                cand, ncand = s.all_machines, s.machines
            while True:
                if not _fits_somewhere(s, s.demand + g * s.width, need, nneed, cand, ncand):
                    s.failed_at[c] = stamp
                    s.st[_FAILED] += 1
                    break
                if s.st[_ROWS] + s.machines > s.rows_cap or s.st[_LAUNCHES] + 1 >= s.launches_cap:
                    return NEED_ROWS
                _launch(s, g, t, cand, ncand)
                if s.unlaunched[g] == 0:
                    s.alive[p] = p + 1
                    s.runnable[c] -= 1
                    if s.runnable[c] == 0:
                        s.st[_ACTIVE] -= 1
                    break
        p = _find(s.alive, p + 1)
    return MORE


cdef double _next_time(Loop* s) noexcept nogil:
    cdef double t = INFINITY, r
    if s.st[_HEAP] > 0:
        t = s.launch_end[s.heap[0]]
    if s.st[_NEXT_RELEASE] < s.nrelease:
        r = s.release[s.release_order[s.st[_NEXT_RELEASE]]]
        if r < t:
            t = r
    return t


cdef int _slice(Loop* s, int64_t max_events, double horizon) noexcept nogil:
    cdef int64_t done = 0
    cdef double t
    while True:
        if s.st[_IN_EVENT] == 0:
            if done >= max_events:
                return MORE
            t = _next_time(s)
            if t == INFINITY or t > horizon:
                return DONE
            s.ft[_T] = t
            s.st[_EVENTS] += 1
            done += 1
            s.st[_STAMP] += 1
            s.st[_CHANGED] = 0
            _end_tasks(s, t)
            _release(s, t)
            s.st[_FAILED] = 0
            s.st[_IN_EVENT] = 1
        if _dispatch(s) == NEED_ROWS:
            return NEED_ROWS
        s.st[_IN_EVENT] = 0


def slice_run(int64_t[::1] st, double[::1] ft, int64_t max_events, double horizon, const int64_t[::1] order,
              int64_t[::1] alive, const int64_t[::1] release_order, const double[::1] release,
              const int64_t[::1] job_ptr, const int64_t[::1] released_pos, const int64_t[::1] dclass,
              const double[:, ::1] demand, const int64_t[::1] need_ptr, const int64_t[::1] need_idx,
              const double[::1] duration, const int64_t[::1] child_ptr, const int64_t[::1] child_idx,
              double[:, ::1] free, double[:, ::1] room, const double[:, ::1] slack, const double[:, ::1] capacity,
              int64_t[::1] unlaunched, int64_t[::1] running, int64_t[::1] missing, int64_t[::1] runnable,
              int64_t[::1] failed_at, int64_t[::1] machine_tasks, int64_t[::1] next_index, int64_t[::1] heap,
              double[::1] launch_end, int64_t[::1] launch_lo, int64_t[::1] row_group, int64_t[::1] row_first,
              int64_t[::1] row_n, double[::1] row_start, double[::1] row_end, int64_t[::1] row_machine,
              int64_t[::1] changed, int64_t[::1] changed_at, const int64_t[::1] machines):
    """Up to ``max_events`` events; returns DONE, MORE or NEED_ROWS, as ``fifo_numba.slice_run`` (same
    arguments)."""
    cdef Loop s
    cdef int status
    cdef int64_t empty_int = 0
    cdef double empty_double = 0.0
    s.width = free.shape[1]
    s.machines = machines.shape[0]
    s.nrelease = release_order.shape[0]
    s.rows_cap = row_group.shape[0]
    s.launches_cap = launch_end.shape[0]
    s.st = &st[0]
    s.ft = &ft[0]
    # Empty arrays (no groups, no children, no machines) have no first element to point at; nothing reads them.
    s.order = &order[0] if order.shape[0] else &empty_int
    s.alive = &alive[0]
    s.release_order = &release_order[0] if release_order.shape[0] else &empty_int
    s.release = &release[0] if release.shape[0] else &empty_double
    s.job_ptr = &job_ptr[0]
    s.released_pos = &released_pos[0] if released_pos.shape[0] else &empty_int
    s.dclass = &dclass[0] if dclass.shape[0] else &empty_int
    s.demand = &demand[0, 0] if demand.shape[0] and demand.shape[1] else &empty_double
    s.need_ptr = &need_ptr[0]
    s.need_idx = &need_idx[0] if need_idx.shape[0] else &empty_int
    s.duration = &duration[0] if duration.shape[0] else &empty_double
    s.child_ptr = &child_ptr[0]
    s.child_idx = &child_idx[0] if child_idx.shape[0] else &empty_int
    s.free = &free[0, 0] if free.shape[0] and free.shape[1] else NULL
    s.room = &room[0, 0] if room.shape[0] and room.shape[1] else NULL
    s.slack = &slack[0, 0] if slack.shape[0] and slack.shape[1] else &empty_double
    s.capacity = &capacity[0, 0] if capacity.shape[0] and capacity.shape[1] else &empty_double
    s.unlaunched = &unlaunched[0] if unlaunched.shape[0] else NULL
    s.running = &running[0] if running.shape[0] else NULL
    s.missing = &missing[0] if missing.shape[0] else NULL
    s.runnable = &runnable[0] if runnable.shape[0] else NULL
    s.failed_at = &failed_at[0] if failed_at.shape[0] else NULL
    s.machine_tasks = &machine_tasks[0] if machine_tasks.shape[0] else NULL
    s.next_index = &next_index[0] if next_index.shape[0] else NULL
    s.heap = &heap[0]
    s.launch_end = &launch_end[0]
    s.launch_lo = &launch_lo[0]
    s.row_group = &row_group[0]
    s.row_first = &row_first[0]
    s.row_n = &row_n[0]
    s.row_start = &row_start[0]
    s.row_end = &row_end[0]
    s.row_machine = &row_machine[0]
    s.changed = &changed[0] if changed.shape[0] else NULL
    s.changed_at = &changed_at[0] if changed_at.shape[0] else NULL
    s.all_machines = &machines[0] if machines.shape[0] else &empty_int
    with nogil:
        status = _slice(&s, max_events, horizon)
    return status
