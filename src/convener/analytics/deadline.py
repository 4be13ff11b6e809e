"""A query's deadline, enforced from outside the engine.

The query runs on a worker thread (kept for the next query once it is done: ``_Workers``); the asking thread waits for it until the deadline, then asks the engine to
stop (DuckDB's and SQLite's ``interrupt()``, PostgreSQL's cancel request) and, after a short grace, answers
``DEADLINE_EXCEEDED`` whether or not the engine has stopped yet: an engine checks for interrupts only between
pieces of work, and making one huge value (``repeat('x', 1e9)``) is one piece that takes seconds. The
worker then winds down on its own, interrupted again every 50 ms until it does, and rolls back and closes
what the query held.

At most ``ANALYTICS_RUNNING`` queries run at once, interrupted ones still stopping included, so asking
again and again cannot pile up engines' memory: a query waits for a slot within its own deadline.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from convener.api.errors import DeadlineExceeded, ResourceExhausted
from convener.outside.limits import ANALYTICS_RUNNING

T = TypeVar("T")
GRACE_SECONDS = 0.25
"""How long past the deadline the asker waits for an interrupted engine to stop, to report its own error."""
REPEAT_SECONDS = 0.05
"""An interrupt that lands before the engine has started the query is lost: repeated until the query ends."""

_SLOTS = threading.BoundedSemaphore(ANALYTICS_RUNNING)


def deadline_error(seconds: float) -> DeadlineExceeded:
    return DeadlineExceeded(f"the query took longer than {seconds:g} s")


@dataclass
class Watch:
    """What a running query knows of its deadline: whether it has passed, and who to call when it does."""

    deadline: float
    seconds: float
    _expired: threading.Event = field(default_factory=threading.Event)
    _finished: threading.Event = field(default_factory=threading.Event)
    _cancels: dict[int, tuple[Callable[[], object], bool]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def expired(self) -> bool:
        return self._expired.is_set() or time.monotonic() > self.deadline

    def check(self) -> None:
        """``DeadlineExceeded`` once the deadline has passed: between steps of a query."""
        if self.expired:
            raise deadline_error(self.seconds)

    def on_expiry(self, cancel: Callable[[], object], *, repeat: bool = True) -> None:
        """Call ``cancel`` when the deadline passes (now, if it has), again every 50 ms while ``repeat``."""
        with self._lock:
            self._cancels[id(cancel)] = (cancel, repeat)
            if self._expired.is_set():
                _quietly(cancel)

    @contextmanager
    def cancellable(self, cancel: Callable[[], object], *, repeat: bool = True) -> Iterator[None]:
        """``on_expiry`` for the duration of the block only: a pooled connection's cancel must never reach the
        next query that uses the connection."""
        self.on_expiry(cancel, repeat=repeat)
        try:
            yield
        finally:
            with self._lock:
                self._cancels.pop(id(cancel), None)

    def expire(self) -> None:
        """The deadline has passed: cancel now, and keep interrupting until the worker has finished."""
        with self._lock:
            if self._expired.is_set():
                return
            self._expired.set()
            for cancel, _ in self._cancels.values():
                _quietly(cancel)
        threading.Thread(target=self._keep_cancelling, name="analytics-interrupt", daemon=True).start()

    def _keep_cancelling(self) -> None:
        while not self._finished.wait(REPEAT_SECONDS):
            with self._lock:  # held while cancelling, so that no cancel runs after its block has ended
                for cancel, repeat in self._cancels.values():
                    if repeat:
                        _quietly(cancel)


def _quietly(cancel: Callable[[], object]) -> None:
    try:
        cancel()
    except Exception:  # noqa: BLE001 — the query may have ended and its cursor closed meanwhile
        pass


@dataclass
class _Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


def run_within(seconds: float, work: Callable[[Watch], T]) -> T:
    """``work(watch)`` on a worker thread, its result or its error; ``DEADLINE_EXCEEDED`` at ``seconds`` (plus
    a short grace), ``RESOURCE_EXHAUSTED`` when no slot frees up in time."""
    watch = Watch(time.monotonic() + seconds, seconds)
    if not _SLOTS.acquire(timeout=seconds):
        raise ResourceExhausted(f"{ANALYTICS_RUNNING} data source queries are running already; ask again shortly")
    outcome: _Outcome[T] = _Outcome()

    def worker() -> None:
        try:
            outcome.value = work(watch)
        except BaseException as error:  # noqa: BLE001 — handed to the asking thread
            outcome.error = error
        finally:
            watch._finished.set()
            _SLOTS.release()

    try:
        _WORKERS.run(worker)
    except BaseException:
        _SLOTS.release()
        raise
    if not watch._finished.wait(max(0.0, watch.deadline - time.monotonic())):
        watch.expire()
        if not watch._finished.wait(GRACE_SECONDS):
            raise deadline_error(seconds)
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]  # set whenever no error was


IDLE_WORKERS = 4
"""Query threads kept waiting for the next query: starting a thread costs about as much as a small query."""
IDLE_SECONDS = 30.0
"""A kept thread that has had no query for this long ends."""


class _Workers:
    """Threads that run one query at a time, kept between queries. A query runs on an idle thread, or on a
    new one when none is idle; a thread still winding down an interrupted query is not idle, so it delays no
    other query (as a thread of its own per query would not)."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None:
            worker = _Worker(self)
            worker.jobs.put(job)
            worker.start()
        else:
            worker.jobs.put(job)

    def done(self, worker: _Worker) -> bool:
        """Whether ``worker`` is kept (idle) after its query, rather than ending."""
        with self._lock:
            if len(self._idle) >= IDLE_WORKERS:
                return False
            self._idle.append(worker)
            return True

    def busy(self) -> int:
        """How many query threads are running or still stopping a query (alive and not idle)."""
        with self._lock:
            idle = set(self._idle)
        return sum(1 for thread in threading.enumerate()
                   if isinstance(thread, _Worker) and thread.workers is self and thread not in idle)

    def retire(self, worker: _Worker) -> bool:
        """Whether ``worker``, idle too long, may end: not if a query was just handed to it."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False


class _Worker(threading.Thread):
    def __init__(self, workers: _Workers) -> None:
        super().__init__(name="analytics-query", daemon=True)
        self.workers = workers
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                if self.workers.retire(self):
                    return
                continue  # handed a query while timing out: it is on its way
            job()  # catches everything itself (run_within's worker)
            del job
            if not self.workers.done(self):
                return


_WORKERS = _Workers()


def queries_running() -> int:
    """How many queries are running or still stopping after an interruption, in this process."""
    return _WORKERS.busy()
