"""Calls of the callables apps name, under a deadline (which callables: tests/outside/test_callables.py)."""

from __future__ import annotations

import threading
import time

import pytest

from convener.ces.runtime.entrypoints import call_with_deadline
from convener.ces.runtime.failures import ToolFailure


def test_call_with_deadline_returns_the_result() -> None:
    assert call_with_deadline(lambda: 6 * 7, 5, "tool answer") == 42


def test_call_with_deadline_gives_up_on_a_slow_call() -> None:
    release = threading.Event()
    started = time.monotonic()

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(lambda: release.wait(10), 0.2, "tool sleepy")

    release.set()  # let the abandoned worker finish
    assert failure.value.code == "DEADLINE_EXCEEDED"
    assert failure.value.message == "tool sleepy did not finish within 0.2 s"
    assert time.monotonic() - started < 2


def test_call_with_deadline_reports_an_exception_without_a_traceback() -> None:
    def crash() -> None:
        raise KeyError("customer")

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(crash, 5, "tool lookup")

    assert failure.value.code == "INTERNAL"
    assert failure.value.message == "tool lookup failed: KeyError: 'customer'"


def test_call_with_deadline_clips_long_messages_and_passes_tool_failures_through() -> None:
    def verbose() -> None:
        raise ValueError("x" * 5000)

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(verbose, 5, "tool verbose")
    assert len(failure.value.message) == 500

    def deliberate() -> None:
        raise ToolFailure("no such order", code="NOT_FOUND")

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(deliberate, 5, "tool orders")
    assert (failure.value.code, failure.value.message) == ("NOT_FOUND", "no such order")
