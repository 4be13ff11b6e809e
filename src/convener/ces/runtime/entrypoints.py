"""Running the Python callables apps name (python agents, tools, callbacks) under a deadline.

Which callables an app may name at all is the gate's decision: ``convener.outside.callables`` admits only
registered ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from convener.ces.runtime.failures import ToolFailure

T = TypeVar("T")

MAX_FAILURE_MESSAGE = 500


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_with_deadline(function: Callable[[], T], timeout: float, what: str) -> T:
    """``function()``, on a daemon worker thread, waited for at most ``timeout`` seconds.

    A deadline keeps a slow or hung callable from holding up the session. Python cannot kill a thread, so on
    timeout the worker is abandoned, not stopped: it runs on in the background until the callable returns
    (being a daemon, it does not keep the process alive), and whatever it returns then is dropped.

    Raises ``ToolFailure`` DEADLINE_EXCEEDED on timeout, and INTERNAL with the exception's type and message
    (never its traceback) when the callable raises; a ``ToolFailure`` the callable raises itself passes
    through as it is, so a tool can choose its own message and code.
    """
    outcome: list[tuple[bool, Any]] = []
    finished = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: a thread must not die silently
            outcome.append((False, error))
        finally:
            finished.set()

    worker = threading.Thread(target=run, name=f"convener-call:{_clip(what, 60)}", daemon=True)
    worker.start()
    if not finished.wait(max(timeout, 0.0)):
        raise ToolFailure(f"{what} did not finish within {timeout:g} s", code="DEADLINE_EXCEEDED")
    succeeded, value = outcome[0]
    if succeeded:
        return value  # type: ignore[no-any-return]
    if isinstance(value, ToolFailure):
        raise value
    message = f"{what} failed: {type(value).__name__}: {value}"[:MAX_FAILURE_MESSAGE]
    raise ToolFailure(message, code="INTERNAL") from value
