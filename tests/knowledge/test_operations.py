"""An ingest is an operation: its progress is stored, it can be cancelled, and an interrupted one leaves
whole documents and resumes where it stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from convener.auth.caller import Caller
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import IngestSummary
from convener.knowledge.operations import LOCATION, ingest_operation
from convener.services import Services
from tests.knowledge.conftest import BASE_URL

ANA = Caller("users/ana")


def many_files(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"page-{index:03}.md").write_text(f"# Page {index}\n\nThis is page number {index}.\n")
    return folder


def test_a_finished_ingest_is_a_done_operation_of_its_caller(services: Services, docs: Path) -> None:
    operations = services.runtime.operations
    operation = ingest_operation(services.knowledge, operations, IngestPlan.make(docs, BASE_URL), ANA)

    assert operation.done is True and operation.error is None
    assert operation.response is not None and operation.response["added"] == 4
    assert operation.metadata is not None and operation.metadata["progress"]["filesSeen"] == 4
    listed, _ = operations.list(str(LOCATION), None, None, None, ANA)
    assert [o.name for o in listed] == [operation.name]
    assert operations.list(str(LOCATION), None, None, None, Caller("users/ben"))[0] == []


def test_a_cancelled_ingest_stops_between_files_and_resumes_later(services: Services, tmp_path: Path) -> None:
    folder = many_files(tmp_path / "roots" / "many", 120)
    operations = services.runtime.operations
    plan = IngestPlan.make(folder, BASE_URL)

    def cancel_after_some(summary: IngestSummary) -> None:
        if summary.files_seen == 30:
            [running], _ = operations.list(str(LOCATION), "done=false", None, None, ANA)
            operations.cancel(str(running.name), ANA)

    cancelled = ingest_operation(services.knowledge, operations, plan, ANA, cancel_after_some)

    assert cancelled.done is True and cancelled.error is not None and cancelled.error.code == 1
    written = cancelled.metadata["progress"]["added"] if cancelled.metadata else 0
    assert 30 <= written < 120
    resumed = ingest_operation(services.knowledge, operations, plan, ANA)
    assert resumed.response is not None
    assert (resumed.response["unchanged"], resumed.response["added"]) == (written, 120 - written)
    assert resumed.response.get("removed", 0) == 0


def test_an_interrupted_ingest_is_recorded_as_aborted_and_keeps_whole_documents(
        services: Services, tmp_path: Path) -> None:
    folder = many_files(tmp_path / "roots" / "many", 40)
    operations = services.runtime.operations

    def interrupt(summary: IngestSummary) -> None:
        if summary.files_seen == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        ingest_operation(services.knowledge, operations, IngestPlan.make(folder, BASE_URL), ANA, interrupt)

    [aborted], _ = operations.list(str(LOCATION), None, None, None, ANA)
    assert aborted.done is True and aborted.error is not None and aborted.error.code == 10
    assert "run it again" in (aborted.error.message or "")
    resumed = services.knowledge.ingest(IngestPlan.make(folder, BASE_URL))
    assert (resumed.unchanged, resumed.added) == (10, 30)
    page = services.knowledge.get_documents([f"documents/docs.quill.example/page-{i:03}.md" for i in range(10)])
    assert all(d.content and f"page number {i}." in d.content for i, d in enumerate(page))
