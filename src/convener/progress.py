"""Progress from a tool's worker thread to its caller, without the work ever waiting on the caller.

A tool reports progress from the worker thread it runs on; the notification leaves on the event loop, over a
stream the client reads at its own pace (an SSE response, stdio). Sending each one from the worker, as before,
let a client that reads slowly or not at all hold the work up; queueing each without bound would let it grow
the server's memory instead. The relay does neither: the worker only leaves its report in a short queue and
goes on, and one task on the event loop sends what waits, in order. When the queue is full, the newest report
replaces the last one waiting: progress values still only go forward, the latest always gets out, and the
client loses only intermediate steps it could not keep up with. The tool's result leaves after the relay has
sent what was waiting, so it is never the thing dropped.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from convener.outside.limits import PROGRESS_WAITING

# anyio is imported by the relay, which runs on the server's event loop: the work that reports progress (a
# session, an evaluation run, a command that prints its own) needs only ``Report``.
if TYPE_CHECKING:
    import anyio

logger = logging.getLogger(__name__)

Report = Callable[[float, float | None, str | None], None]
"""``report(progress, total, message)``: progress as a tool reports it from its worker thread (how many so far,
of how many, None when unknown, and what happened); an MCP progress notification if the caller asked for them."""

Notify = Callable[[float, float | None, str | None], Coroutine[Any, Any, None]]
"""Sends one MCP progress notification (``ctx.session.report_progress``); a no-op for a call without a token."""


@dataclass(frozen=True)
class ProgressUpdate:
    progress: float
    total: float | None
    message: str | None


class ProgressRelay:
    """One call's progress: ``report`` from the worker thread, ``run`` on the event loop until ``close``."""

    def __init__(self, notify: Notify, capacity: int = PROGRESS_WAITING) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._notify = notify
        self._capacity = capacity
        self._lock = threading.Lock()
        self._waiting: deque[ProgressUpdate] = deque()
        self._wake: anyio.Event | None = None
        """Set while ``run`` sleeps with nothing to send; whoever gives it something sets it."""
        self._closed = False
        self.replaced = 0
        """Reports a newer one replaced before they were sent (the client read slower than the work went)."""

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """Called from the worker thread: never blocks on the client, never raises."""
        with self._lock:
            if self._closed:
                return
            update = ProgressUpdate(progress, total, message)
            if len(self._waiting) >= self._capacity:
                self._waiting[-1] = update
                self.replaced += 1
            else:
                self._waiting.append(update)
            wake, self._wake = self._wake, None
        if wake is not None:
            import anyio.from_thread

            try:
                anyio.from_thread.run_sync(wake.set)
            except Exception:  # noqa: BLE001 - the loop is gone (shutting down): nothing will be sent anyway
                logger.debug("progress relay could not wake its sender", exc_info=True)

    def close(self) -> None:
        """The work is over (called on the event loop): ``run`` sends what waits, then returns."""
        with self._lock:
            self._closed = True
            wake, self._wake = self._wake, None
        if wake is not None:
            wake.set()

    async def run(self) -> None:
        import anyio

        while True:
            wake: anyio.Event | None = None
            with self._lock:
                update = self._waiting.popleft() if self._waiting else None
                if update is None:
                    if self._closed:
                        return
                    wake = self._wake = anyio.Event()
            if update is None:
                assert wake is not None
                await wake.wait()
                continue
            try:
                await self._notify(update.progress, update.total, update.message)
            except Exception:  # noqa: BLE001 - a client that went away must not fail the work
                logger.debug("progress notification dropped", exc_info=True)
