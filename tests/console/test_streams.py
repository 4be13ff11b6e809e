"""A console page streaming a tool's work: its events reach the page, its waiting takes no worker thread, and
only ``console.streams`` run at once."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest

from convener.api.errors import ResourceExhausted
from convener.api.protojson import ProtoModel
from convener.auth.caller import LOCAL_USER, Caller
from convener.console.access import ConsoleTools
from convener.outside.limits import CONSOLE_STREAMS
from convener.progress import Report
from convener.tooling import ToolRegistry, ToolSpec


class Nothing(ProtoModel):
    pass


class Said(ProtoModel):
    text: str | None = None


def _tools(release: threading.Event, started: threading.Semaphore) -> ConsoleTools:
    def slow(request: Nothing, caller: Caller, report: Report) -> Said:
        report(1, None, "begun")
        started.release()
        if not release.wait(timeout=30):
            raise TimeoutError("never released")
        report(2, None, "ending")
        return Said(text="done")

    registry = ToolRegistry("ces")
    registry.group("agents").add(ToolSpec(
        name="slow", title="Slow", description="Waits to be released.", request=Nothing, response=Said,
        annotations=types.ToolAnnotations(read_only_hint=True), handler=lambda request, caller: Said(),
        progress_handler=slow))
    return ConsoleTools({"ces": registry}, read_only=False)


async def _all(events: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in events]


def test_a_stream_yields_each_report_then_the_answer() -> None:
    release, started = threading.Event(), threading.Semaphore(0)
    tools = _tools(release, started)
    release.set()

    async def main() -> list[Any]:
        return await _all(tools.call_reporting("slow", {}, LOCAL_USER, Said))

    assert anyio.run(main) == ["begun", "ending", Said(text="done")]


def test_streams_past_the_limit_are_refused_and_waiting_ones_hold_no_worker_thread() -> None:
    release, started = threading.Event(), threading.Semaphore(0)
    tools = _tools(release, started)

    async def main() -> None:
        # Fewer worker threads than open streams: were each page to wait on one, the tool call below would
        # wait for a page to finish, and the pages for its release.
        anyio.to_thread.current_default_thread_limiter().total_tokens = 2
        streams = [tools.call_reporting("slow", {}, LOCAL_USER, Said) for _ in range(CONSOLE_STREAMS)]
        firsts = [await anext(stream) for stream in streams]
        assert firsts == ["begun"] * CONSOLE_STREAMS
        with pytest.raises(ResourceExhausted, match="console.streams"):
            await anext(tools.call_reporting("slow", {}, LOCAL_USER, Said))
        with anyio.fail_after(10):
            assert await anyio.to_thread.run_sync(lambda: "a tool call still runs") == "a tool call still runs"
        release.set()
        for stream in streams:
            assert await _all(stream) == ["ending", Said(text="done")]
        # Their work over, the slots are free again.
        assert await _all(tools.call_reporting("slow", {}, LOCAL_USER, Said)) == ["begun", "ending",
                                                                                  Said(text="done")]

    anyio.run(main)


def test_pages_that_leave_do_not_stop_their_work_which_keeps_its_slot_until_it_ends() -> None:
    release, started = threading.Event(), threading.Semaphore(0)
    tools = _tools(release, started)

    async def main() -> None:
        streams = [tools.call_reporting("slow", {}, LOCAL_USER, Said) for _ in range(CONSOLE_STREAMS)]
        for stream in streams:
            assert await anext(stream) == "begun"
            await stream.aclose()  # the browser left
        with pytest.raises(ResourceExhausted):  # their work goes on, and counts
            await anext(tools.call_reporting("slow", {}, LOCAL_USER, Said))
        release.set()
        with anyio.fail_after(10):  # each ends by itself, recorded though nobody reads it
            while any(thread.name == "console-slow" for thread in threading.enumerate()):
                await anyio.sleep(0.02)
        # and gave its slot back: as many pages may start again
        again = [tools.call_reporting("slow", {}, LOCAL_USER, Said) for _ in range(CONSOLE_STREAMS)]
        for stream in again:
            assert await _all(stream) == ["begun", "ending", Said(text="done")]

    anyio.run(main)
