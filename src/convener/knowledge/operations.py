"""Ingestion as a job behind a long-running operation: stored, with progress, cancellable, owned by its caller.

``ingest_documents`` (and ``convener knowledge ingest``) start the operation and queue its job in one
transaction, then wait for it: a worker runs the ingest (in this process unless it runs none), keeping the
operation up to date as it goes, so ``get_operation`` or ``wait_operation`` from anywhere see it too. A worker
killed mid-way loses the job when its hold lapses and another runs the ingest again, which resumes it: the
documents written so far are whole and unchanged files are skipped. An ingest interrupted too often ends ABORTED.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from convener.api.errors import ApiError, Code
from convener.api.names import LocationName
from convener.auth.caller import Caller
from convener.jobs.model import Attempt, Payload, Task
from convener.jobs.queue import Jobs
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import IngestSummary
from convener.knowledge.service import KnowledgeService
from convener.longrunning.models import Operation, Status
from convener.longrunning.service import MAX_WAIT_SECONDS, OperationService

logger = logging.getLogger(__name__)

LOCATION = LocationName("knowledge", "global")
"""Where ingest operations are listed: ``projects/knowledge/locations/global``."""
METADATA_TYPE = "type.googleapis.com/convener.knowledge.v1.IngestMetadata"
RESPONSE_TYPE = "type.googleapis.com/convener.knowledge.v1.IngestSummary"
RECORD_EVERY_SECONDS = 1.0
MAX_ATTEMPTS = 3
"""An ingest whose worker stopped this many times is given up: ABORTED, to be run again by hand."""

Report = Callable[[IngestSummary], None]


class IngestJob(Payload):
    """A job: ingest a folder, file or archive (already checked against the knowledge roots) as a data source."""

    location: str
    base_url: str
    data_source: str
    keep_removed: bool = False

    @classmethod
    def of(cls, plan: IngestPlan) -> IngestJob:
        return cls(location=str(plan.location), base_url=plan.base_url, data_source=plan.data_source,
                   keep_removed=plan.keep_removed)

    def plan(self) -> IngestPlan:
        return IngestPlan(Path(self.location), self.base_url, self.data_source, self.keep_removed)


class Ingests:
    def __init__(self, knowledge: KnowledgeService, operations: OperationService, jobs: Jobs) -> None:
        self.knowledge = knowledge
        self.operations = operations
        self.jobs = jobs
        self.task = Task(name="knowledge.ingest", queue="ingests", payload=IngestJob, run=self.run)
        jobs.register(self.task)

    def start(self, plan: IngestPlan, caller: Caller) -> Operation:
        """The ingest's operation, with its job queued in the same transaction."""
        with self.operations.database.transaction() as connection:
            operation = self.operations.start(connection, LOCATION, caller, _metadata(plan, None))
            self.jobs.submit(connection, self.task, [IngestJob.of(plan)], str(operation.name))
        self.jobs.submitted()
        return operation

    def ingest(self, plan: IngestPlan, caller: Caller, report: Report | None = None) -> Operation:
        """Start the ingest and wait for it (at most ``wait_operation``'s longest wait): the operation as it ends.

        ``report`` sees its progress: every file when a worker of this process runs it, else as it is recorded."""
        operation = self.start(plan, caller)

        def progress(current: Operation) -> None:
            summary = _progress(current)
            if report is not None and summary is not None:
                report(summary)

        return self.operations.wait(str(operation.name), f"{MAX_WAIT_SECONDS:.0f}s", caller, progress)

    # -- the job ---------------------------------------------------------------------------------------

    def run(self, job: IngestJob, attempt: Attempt) -> None:
        name = attempt.operation
        with self.operations.database.reading() as connection:
            if self.operations.is_done(connection, name):
                return  # finished before its worker could forget the job
        plan = job.plan()
        if attempt.number > MAX_ATTEMPTS:
            self.operations.finish(name, attempt, error=Status(code=Code.ABORTED.value, message=(
                f"ingest {name} was interrupted {attempt.number - 1} times; run it again to resume")))
            return
        last = 0.0

        def progress(summary: IngestSummary) -> None:
            nonlocal last
            metadata = _metadata(plan, summary)
            self.operations.publish(name, metadata)
            if time.monotonic() - last >= RECORD_EVERY_SECONDS and not attempt.lost:
                last = time.monotonic()
                with self.operations.database.transaction() as connection:
                    self.operations.record(connection, name, metadata=metadata)
                self.operations.notify()

        try:
            summary = self.knowledge.ingest(plan, progress, attempt.should_stop)
        except ApiError as error:
            self.operations.finish(name, attempt, error=Status(code=error.code.value, message=error.message))
            return
        except Exception as error:  # a bug: the operation still ends, saying so, rather than stay running
            logger.exception("ingest %s failed", name)
            self.operations.finish(name, attempt, error=Status(code=Code.INTERNAL.value, message=(
                f"ingest {name} failed unexpectedly ({type(error).__name__}); see the server log")))
            return
        if attempt.should_stop():
            self.operations.finish(name, attempt, _metadata(plan, summary), error=Status(
                code=Code.CANCELLED.value, message=f"ingest {name} was cancelled; run it again to resume"))
        else:
            self.operations.finish(name, attempt, _metadata(plan, summary),
                                   response={"@type": RESPONSE_TYPE, **summary.to_json()})


def _metadata(plan: IngestPlan, summary: IngestSummary | None) -> dict[str, object]:
    metadata: dict[str, object] = {"@type": METADATA_TYPE, "dataSource": plan.data_source,
                                   "location": str(plan.location), "baseUrl": plan.base_url}
    if summary is not None:
        metadata["progress"] = summary.to_json()
    return metadata


def _progress(operation: Operation) -> IngestSummary | None:
    """An ingest operation's progress so far, from its metadata (this module wrote it)."""
    found = (operation.metadata or {}).get("progress")
    return IngestSummary.model_validate(found) if isinstance(found, dict) else None

