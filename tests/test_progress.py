"""The progress relay between a tool's worker thread and its client: the work never waits on the client, what
waits is bounded, progress only goes forward, and the last step always gets out."""

from __future__ import annotations

import itertools

import anyio
import anyio.to_thread
import pytest

from convener.outside.limits import PROGRESS_WAITING
from convener.progress import ProgressRelay

pytestmark = pytest.mark.anyio


class StalledClient:
    """A client that reads nothing until told to, then everything sent to it."""

    def __init__(self) -> None:
        self.reading = anyio.Event()
        self.received: list[tuple[float, float | None, str | None]] = []

    async def notify(self, progress: float, total: float | None, message: str | None) -> None:
        await self.reading.wait()
        self.received.append((progress, total, message))


async def run_work(relay: ProgressRelay, client: StalledClient, steps: int) -> None:
    """Report ``steps`` steps from a worker thread while the client reads nothing; it reads when the work ends."""

    def work() -> None:
        for step in range(1, steps + 1):
            relay.report(float(step), float(steps), f"step {step}")

    try:
        async with anyio.create_task_group() as sending:
            sending.start_soon(relay.run)
            # If a report waited on the client, the work would never end: fail instead of hanging.
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            relay.close()
            client.reading.set()
    finally:
        client.reading.set()


async def test_a_client_that_reads_nothing_holds_up_no_work_and_what_waits_for_it_is_bounded() -> None:
    client = StalledClient()
    relay = ProgressRelay(client.notify, capacity=4)

    await run_work(relay, client, 10_000)

    steps = [progress for progress, _, _ in client.received]
    assert len(steps) <= 4 + 1, "at most the queue and the one being sent"
    assert all(a < b for a, b in itertools.pairwise(steps)), steps
    assert client.received[-1] == (10_000.0, 10_000.0, "step 10000"), "the last step is never dropped"
    assert relay.replaced == 10_000 - len(steps)


async def test_as_many_steps_as_the_queue_holds_all_arrive_in_order() -> None:
    client = StalledClient()
    relay = ProgressRelay(client.notify)
    steps = PROGRESS_WAITING  # what the queue holds, however far the sender got when the work ended

    await run_work(relay, client, steps)

    assert [progress for progress, _, _ in client.received] == [float(step) for step in range(1, steps + 1)]
    assert relay.replaced == 0


async def test_a_client_that_went_away_fails_neither_the_work_nor_the_relay() -> None:
    attempts: list[float] = []

    async def gone(progress: float, total: float | None, message: str | None) -> None:
        attempts.append(progress)
        raise anyio.BrokenResourceError

    relay = ProgressRelay(gone)

    def work() -> str:
        for step in range(1, 6):
            relay.report(float(step), None, None)
        return "done"

    async with anyio.create_task_group() as sending:
        sending.start_soon(relay.run)
        assert await anyio.to_thread.run_sync(work) == "done"
        relay.close()
    assert attempts and attempts[-1] == 5.0


async def test_a_report_after_the_work_ended_is_ignored() -> None:
    client = StalledClient()
    client.reading.set()
    relay = ProgressRelay(client.notify)
    async with anyio.create_task_group() as sending:
        sending.start_soon(relay.run)
        await anyio.to_thread.run_sync(relay.report, 1.0, None, None)
        relay.close()
    await anyio.to_thread.run_sync(relay.report, 2.0, None, None)
    assert [progress for progress, _, _ in client.received] == [1.0]
