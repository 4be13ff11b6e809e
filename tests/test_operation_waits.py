"""Waiting for an operation whose work runs in this process: what the waiter reads from the store."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from convener.api.names import LocationName
from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.longrunning.models import Operation
from convener.longrunning.service import OperationService
from convener.services import Services

STEPS = 20


@pytest.fixture
def operations(settings: Settings) -> Iterator[OperationService]:
    services = Services.open(settings.model_copy(update={"worker": False}))
    try:
        yield services.operations
    finally:
        services.close()


def started(operations: OperationService) -> str:
    with operations.database.transaction() as connection:
        operation = operations.start(connection, LocationName("p", "global"), LOCAL_USER, {"step": 0})
    return operation.name or ""


def counting_reads(operations: OperationService, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads = [0]
    read = operations._row

    def counted(*args: object, **kwargs: object) -> object:
        reads[0] += 1
        return read(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(operations, "_row", counted)
    return reads


def work(operations: OperationService, name: str) -> None:
    """Publish each step live, as running work does, then record the end and withdraw the live metadata."""
    for step in range(1, STEPS + 1):
        operations.publish(name, {"step": step})
        time.sleep(0.005)  # the waiter wakes between steps
    with operations.database.transaction() as connection:
        operations.record(connection, name, done=True, metadata={"step": STEPS})
    operations.publish(name, None)


def waited(operations: OperationService, name: str, progress: list[Operation] | None) -> Operation:
    worker = threading.Thread(target=work, args=(operations, name))
    worker.start()
    try:
        return operations.wait(name, "30s", LOCAL_USER, progress=progress.append if progress is not None else None)
    finally:
        worker.join(timeout=30)


def test_a_waiter_that_shows_no_progress_reads_the_store_first_and_at_the_end_not_at_each_step(
        operations: OperationService, monkeypatch: pytest.MonkeyPatch) -> None:
    name = started(operations)
    reads = counting_reads(operations, monkeypatch)
    done = waited(operations, name, None)
    assert done.done is True and done.metadata == {"step": STEPS}
    assert reads[0] <= 3, f"{reads[0]} reads of the store for {STEPS} steps published live"


def test_a_waiter_that_shows_progress_sees_the_steps(operations: OperationService) -> None:
    name = started(operations)
    shown: list[Operation] = []
    done = waited(operations, name, shown)
    assert done.done is True
    steps = [(operation.metadata or {}).get("step") for operation in shown]
    assert steps == sorted(steps) and len(steps) > 2 and steps[-1] == STEPS


def test_a_waiter_whose_time_runs_out_gets_the_latest_live_step(operations: OperationService) -> None:
    name = started(operations)
    operations.publish(name, {"step": 1})
    operations.publish(name, {"step": 2})
    try:
        now = operations.wait(name, "0.05s", LOCAL_USER)
    finally:
        operations.publish(name, None)
    assert now.done is False and now.metadata == {"step": 2}


def test_a_waiter_of_someone_elses_operation_is_refused_while_its_work_publishes(
        operations: OperationService) -> None:
    from convener.api.errors import NotFound
    from convener.auth.caller import Caller

    name = started(operations)
    operations.publish(name, {"step": 1})
    try:
        with pytest.raises(NotFound):
            operations.wait(name, "0.05s", Caller(principal="users/someone-else"))
    finally:
        operations.publish(name, None)
