"""Ctrl-C (SIGINT): one meaning for every method, policy and sweep.

The first SIGINT stops the search or the simulation, and the call returns its best answer so far, verified, with
status ``interrupted``; a second one ends at once (the command line: exit 130 and one line on stderr; a library
call: ``KeyboardInterrupt``). How a call stops:

* every loop that watches a time limit also watches :func:`requested` (the time budget, ``solver.budget``, looks
  expired once it is set), and no solve starts after it;
* a solve running in C/C++ is stopped through what its library offers, registered with :func:`stopping` for the
  length of the solve: ``CpSolver.stop_search`` (CP-SAT), ``interrupt_solve`` (OR-Tools' linear solvers), the
  signal passed on to the ``cbc`` process (CBC stops and writes its incumbent); HiGHS asks its interrupt
  callbacks, which read :func:`requested`.

Mechanics. Python runs a signal handler only when the main thread executes bytecode, so while that thread is
blocked inside a C/C++ solve (CP-SAT's ``Solve``, HiGHS's ``run``, waiting for ``cbc``) the handler waits for the
solve to end. :func:`handling` therefore also installs a wake-up file descriptor (``signal.set_wakeup_fd``): the
C-level handler writes the signal's number to it at once, and a watcher thread blocked on reading it counts the
signals, sets the flag and calls the registered stops. (CP-SAT's own SIGINT catching, ``catch_sigint_signal``, is
turned off for every solve: it took the signal for itself, stopped that one solve and let the run go on, silently,
and ended the process on the third signal.)

The handler is installed only in the main thread and only while a call runs; the previous handler and wake-up
descriptor are restored after. A process that ignores SIGINT (a sweep's task process, a background job) keeps
ignoring it, and a call in another thread leaves signals alone.
"""

from __future__ import annotations

import _thread
import contextlib
import itertools
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

#: The exit code of an interrupted command (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130
#: Seconds between two calls of the registered stops after an interrupt, while some are registered: a stop
#: that came between a solve's registration and its start would otherwise be lost.
RESTOP_S = 0.1
#: What the command line says on stderr at the first SIGINT and, before exiting, at the second.
FIRST_NOTICE = "fairpack: interrupted: stopping; the best answer so far follows (Ctrl-C again to quit at once)"
SECOND_NOTICE = "fairpack: interrupted again: quitting at once, nothing more is written"

_requested = False  # set by the first SIGINT while a handler is installed; read by every loop
_trips = 0  # how many times the flag was set, ever (a call compares it with its own start)
_lock = threading.Lock()
_stops: dict[int, Callable[[], object]] = {}
_keys = itertools.count()
_guard: _Guard | None = None


def requested() -> bool:
    """Whether the search should stop now: SIGINT came while a call was running."""
    return _requested


def active() -> bool:
    """Whether a SIGINT handler of this module is installed (solvers subscribe interrupt callbacks only then)."""
    return _guard is not None


def stop_reason(limit: str = "time limit reached") -> str:
    """How to say why a phase stopped early: ``interrupted``, else ``limit``."""
    return "interrupted" if _requested else limit


@contextlib.contextmanager
def stopping(stop: Callable[[], object]) -> Iterator[None]:
    """Inside the block, an interrupt calls ``stop()`` (from another thread: it must be thread-safe), and calls it
    again every ``RESTOP_S`` while the block lasts; a solve registers the call that stops it here."""
    key = next(_keys)
    with _lock:
        _stops[key] = stop
    try:
        yield
    finally:
        with _lock:
            _stops.pop(key, None)


def _stop_all() -> None:
    with _lock:
        stops = list(_stops.values())
    for stop in stops:
        with contextlib.suppress(Exception):  # a solve that just ended may refuse to be stopped
            stop()


def _trip() -> None:
    """The first SIGINT: set the flag and stop what runs."""
    global _requested, _trips
    if not _requested:
        _requested = True
        _trips += 1
    _stop_all()


class Call:
    """One call under :func:`handling`: whether SIGINT came while it ran (or had come before it started)."""

    def __init__(self) -> None:
        self._trips = _trips
        self._requested = _requested

    @property
    def interrupted(self) -> bool:
        return self._requested or _requested or _trips != self._trips


class _Guard:
    """The installed handler: counts SIGINTs through the watcher thread, acts on the first and the second."""

    def __init__(self, exit_code: int | None, raise_first: bool, first_notice: str, second_notice: str,
                 before_exit: Callable[[], object] | None) -> None:  # fmt: skip
        self.exit_code = exit_code  # the second SIGINT ends the process with it (None: KeyboardInterrupt)
        self.before_exit = before_exit
        self.raise_first = raise_first
        self.first_notice = first_notice
        self.second_notice = second_notice
        self.count = 0
        self.second = False  # the second SIGINT came: the main thread's handler raises KeyboardInterrupt once
        self.raised = 0  # KeyboardInterrupts the handler raised (one for raise_first, one for the second)
        self.watching = False
        self.forward = -1  # the wake-up descriptor installed before this one (other signals' bytes go on to it)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """The Python-level handler (runs in the main thread, between bytecodes)."""
        if not self.watching:  # no wake-up descriptor here: count in the handler itself
            self.count += 1
            self._act()
        elif self.count == 0:
            _trip()  # the watcher will count it; the flag need not wait for it
        if self.raise_first and self.raised == 0:
            self.raised = 1
            raise KeyboardInterrupt
        if self.second and self.raised < 1 + self.raise_first:
            self.raised = 1 + self.raise_first
            raise KeyboardInterrupt

    def _act(self) -> None:
        if self.count == 1:
            if self.first_notice:
                _say(self.first_notice)
            _trip()
            return
        if self.exit_code is not None:
            if self.second_notice:
                _say(self.second_notice)
            if self.before_exit is not None:
                with contextlib.suppress(Exception):
                    self.before_exit()
            os._exit(self.exit_code)
        if not self.second:
            self.second = True
            if self.watching:
                _thread.interrupt_main(signal.SIGINT)  # the handler raises KeyboardInterrupt in the main thread

    def watch(self, fd: int) -> None:
        """The watcher thread: read the signal numbers the C-level handler writes, until a zero byte."""
        poll = select.poll()  # not select.select: a process with over 1,024 files open may get a larger fd
        poll.register(fd, select.POLLIN)
        try:
            while True:
                waiting = _requested and bool(_stops)
                if not poll.poll(1000 * RESTOP_S if waiting else None):
                    _stop_all()
                    continue
                for number in os.read(fd, 512):
                    if number == 0:
                        return
                    if number != signal.SIGINT:
                        self._pass_on(number)
                        continue
                    self.count += 1
                    self._act()
        finally:
            os.close(fd)  # the read end is the watcher's: the block may end without waiting for it

    def _pass_on(self, number: int) -> None:
        """Another signal's byte, for whoever installed the wake-up descriptor before (asyncio, say)."""
        if self.forward >= 0:
            with contextlib.suppress(OSError):
                os.write(self.forward, bytes([number]))


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno() if sys.stderr is not None else 2, (line + "\n").encode())


@contextlib.contextmanager
def handling(exit_code: int | None = None, *, raise_first: bool = False, first_notice: str = "",
             second_notice: str = "", before_exit: Callable[[], object] | None = None) -> Iterator[Call]:  # fmt: skip
    """SIGINT stops the search inside the block instead of raising ``KeyboardInterrupt``.

    Parameters
    ----------
    exit_code
        The second SIGINT ends the process at once with this code (the command line: 130), after
        ``second_notice`` on stderr; ``None`` (a library call): it raises ``KeyboardInterrupt`` in the main thread.
    raise_first
        The first SIGINT raises ``KeyboardInterrupt`` too (a sweep stops that way) besides setting the flag.
    first_notice
        A line for stderr at the first SIGINT (the command line says what happens next; a library call says
        nothing: its result's status does).
    before_exit
        Called (from the watcher thread) before the second SIGINT ends the process: a sweep kills its task
        processes there.

    Yields
    ------
    Call
        ``interrupted`` tells whether SIGINT came while the block ran.

    Nested blocks share the outer one's handler; outside the main thread, or where SIGINT is ignored (SIG_IGN) or
    handled by code outside Python, nothing is installed. The flag is cleared when the outermost block ends.
    """
    global _guard, _requested
    call = Call()
    if _guard is not None or threading.current_thread() is not threading.main_thread():
        yield call
        return
    previous: Any = signal.getsignal(signal.SIGINT)
    if previous is None or previous == signal.SIG_IGN:
        yield call
        return
    guard = _Guard(exit_code, raise_first, first_notice, second_notice, before_exit)
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    watcher = threading.Thread(target=guard.watch, args=(read_fd,), name="fairpack-sigint", daemon=True)
    signal.signal(signal.SIGINT, guard.on_signal)
    if hasattr(select, "poll"):  # else (Windows, where the descriptor must be a socket) the handler counts alone
        try:
            guard.forward = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
            guard.watching = True
        except (ValueError, OSError):
            pass
    if guard.watching:
        watcher.start()
    _guard = guard
    try:
        yield call
    finally:
        try:
            if guard.watching:
                signal.set_wakeup_fd(guard.forward)
            signal.signal(signal.SIGINT, previous)
            _guard = None
            if guard.watching:  # the signals written before the zero byte are counted first
                os.write(write_fd, b"\0")
                os.close(write_fd)
                watcher.join()
            else:
                os.close(read_fd)
                os.close(write_fd)
        finally:  # even if a second SIGINT's KeyboardInterrupt lands in the lines above
            _guard = None
            _requested = False
