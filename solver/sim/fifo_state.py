"""The FIFO loop's state layout, shared by its driver (``compiled_loop``) and its numba kernel (``fifo_numba``; the
C kernel ``_fifo_loop.pyx`` keeps the same numbers): slots of the integer and float state vectors, a slice's
statuses and the most tasks a launch."""

#: At most this many tasks a launch (the engine's FIFO asks for ``min(unlaunched, 1 << 30)``).
MOST = 1 << 30

# Slots of the integer state vector.
(_EVENTS, _LAUNCHES, _ROWS, _HEAP, _NEXT_RELEASE, _RELEASED_POS, _IN_EVENT, _STAMP, _FAILED, _ACTIVE,
 _CHANGED) = range(11)
# Slots of the float state vector.
_T = 0
# Statuses of a slice.
DONE, MORE, NEED_ROWS = 0, 1, 2
