"""Ingestion as a long-running operation: stored, with progress, cancellable, owned by its caller.

The ingest runs in the caller's request (so an MCP client gets progress notifications and the finished
operation back), and its operation is kept up to date in the store as it goes, so ``get_operation`` or
``wait_operation`` from elsewhere see it too. If the process dies, the documents written so far stay whole
and running the same ingest again resumes it: unchanged files are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from convener.api.errors import ApiError, Code
from convener.api.names import LocationName
from convener.auth.caller import Caller
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import IngestSummary
from convener.knowledge.service import KnowledgeService
from convener.longrunning.models import Operation, Status
from convener.longrunning.service import OperationService

LOCATION = LocationName("knowledge", "global")
"""Where ingest operations are listed: ``projects/knowledge/locations/global``."""
METADATA_TYPE = "type.googleapis.com/convener.knowledge.v1.IngestMetadata"
RESPONSE_TYPE = "type.googleapis.com/convener.knowledge.v1.IngestSummary"
RECORD_EVERY_SECONDS = 1.0

Report = Callable[[IngestSummary], None]


def ingest_operation(knowledge: KnowledgeService, operations: OperationService, plan: IngestPlan, caller: Caller,
                     report: Report | None = None) -> Operation:
    """Run ``plan`` as an operation and return it, done: with the summary as its response, or its error."""
    with operations.database.transaction() as connection:
        operation = operations.start(connection, LOCATION, caller, _metadata(plan, None))
    name = str(operation.name)
    last = 0.0

    def progress(summary: IngestSummary) -> None:
        nonlocal last
        if report is not None:
            report(summary)
        if time.monotonic() - last >= RECORD_EVERY_SECONDS:
            last = time.monotonic()
            with operations.database.transaction() as connection:
                operations.record(connection, name, metadata=_metadata(plan, summary))
            operations.notify()

    def stop_requested() -> bool:
        with operations.database.reading() as connection:
            return operations.cancel_requested(connection, name)

    changes: dict[str, object]
    try:
        summary = knowledge.ingest(plan, progress, _every(stop_requested, 25))
    except ApiError as error:
        changes = {"error": Status(code=error.code.value, message=error.message)}
    except BaseException:
        # Interrupted (Ctrl-C) or failed unexpectedly: the documents written so far are whole; say so and let
        # the interruption go on.
        with operations.database.transaction() as connection:
            operations.record(connection, name, done=True, error=Status(
                code=Code.ABORTED.value, message=f"ingest {name} was interrupted; run it again to resume"))
        operations.notify()
        raise
    else:
        changes = {"metadata": _metadata(plan, summary)}
        if stop_requested():
            changes["error"] = Status(code=Code.CANCELLED.value,
                                      message=f"ingest {name} was cancelled; run it again to resume")
        else:
            changes["response"] = {"@type": RESPONSE_TYPE, **summary.to_json()}
    with operations.database.transaction() as connection:
        operations.record(connection, name, done=True, **changes)
    operations.notify()
    return operations.get(name, caller)


def _metadata(plan: IngestPlan, summary: IngestSummary | None) -> dict[str, object]:
    metadata: dict[str, object] = {"@type": METADATA_TYPE, "dataSource": plan.data_source,
                                   "location": str(plan.location), "baseUrl": plan.base_url}
    if summary is not None:
        metadata["progress"] = summary.to_json()
    return metadata


def _every(check: Callable[[], bool], calls: int) -> Callable[[], bool]:
    """``check`` asked on every ``calls``-th call only: cancellation is read from the store, not per file."""
    count = 0

    def throttled() -> bool:
        nonlocal count
        count += 1
        return count % calls == 0 and check()

    return throttled

