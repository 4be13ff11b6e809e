"""An ingest is an operation run as a job: its progress is stored, it can be cancelled, and one whose worker
stopped leaves whole documents and is resumed by the next attempt, or given up as ABORTED."""

from __future__ import annotations

from pathlib import Path

import pytest

from convener.auth.caller import Caller
from convener.config import Settings
from convener.jobs import model as job_model
from convener.jobs.model import Attempt
from convener.knowledge.ingest import IngestPlan
from convener.knowledge.models import IngestSummary
from convener.knowledge.operations import LOCATION, MAX_ATTEMPTS, IngestJob
from convener.services import Services
from tests.knowledge.conftest import BASE_URL

ANA = Caller("users/ana")


def many_files(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"page-{index:03}.md").write_text(f"# Page {index}\n\nThis is page number {index}.\n")
    return folder


def test_a_finished_ingest_is_a_done_operation_of_its_caller(services: Services, docs: Path) -> None:
    operations = services.operations
    operation = services.ingests.ingest(IngestPlan.make(docs, BASE_URL), ANA)

    assert operation.done is True and operation.error is None
    assert operation.response is not None and operation.response["added"] == 4
    assert operation.metadata is not None and operation.metadata["progress"]["filesSeen"] == 4
    listed, _ = operations.list(str(LOCATION), None, None, None, ANA)
    assert [o.name for o in listed] == [operation.name]
    assert operations.list(str(LOCATION), None, None, None, Caller("users/ben"))[0] == []
    services.jobs.stop()  # returns once its worker has forgotten the jobs it finished
    assert services.jobs.holdings() == [], "a finished job is forgotten"


def test_a_cancelled_ingest_stops_between_files_and_resumes_later(services: Services, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # A worker reads its operation's cancellation at most every CANCEL_CHECK_SECONDS: on a quiet machine the
    # files after the 30th were all ingested within that time, and the cancel came after the end. Here it is read
    # before every file, so that where the ingest stops depends on the cancel alone.
    monkeypatch.setattr(job_model, "CANCEL_CHECK_SECONDS", 0.0)
    folder = many_files(tmp_path / "roots" / "many", 300)
    operations = services.operations
    plan = IngestPlan.make(folder, BASE_URL)
    asked: list[str] = []

    def cancel_after_some(summary: IngestSummary) -> None:
        if (summary.files_seen or 0) >= 30 and not asked:
            [running], _ = operations.list(str(LOCATION), "done=false", None, None, ANA)
            asked.append(str(running.name))
            operations.cancel(str(running.name), ANA)

    cancelled = services.ingests.ingest(plan, ANA, cancel_after_some)

    assert asked and cancelled.done is True and cancelled.error is not None and cancelled.error.code == 1
    written = cancelled.metadata["progress"]["added"] if cancelled.metadata else 0
    assert 30 <= written < 300
    resumed = services.ingests.ingest(plan, ANA)
    assert resumed.response is not None
    assert (resumed.response["unchanged"], resumed.response["added"]) == (written, 300 - written)
    assert resumed.response.get("removed", 0) == 0


def idle(settings: Settings) -> Services:
    """Services of a process that runs no jobs: what it queues stays queued for the test to run by hand."""
    return Services.open(settings.model_copy(update={"worker": False}))


def test_an_ingest_whose_worker_died_is_resumed_by_the_next_attempt(settings: Settings, tmp_path: Path) -> None:
    folder = many_files(tmp_path / "roots" / "many", 40)
    plan = IngestPlan.make(folder, BASE_URL)
    services = idle(settings)
    try:
        operation = services.ingests.start(plan, ANA)
        [queued] = services.jobs.holdings()
        assert (queued.state, queued.task, queued.operation) == ("queued", "knowledge.ingest", operation.name)

        def die(summary: IngestSummary) -> None:  # the first worker stops after ten files, as if killed
            if summary.files_seen == 10:
                raise KeyboardInterrupt

        try:
            services.knowledge.ingest(plan, die)
        except KeyboardInterrupt:
            pass
        unfinished = services.operations.get(str(operation.name), ANA)
        assert unfinished.done is False
        services.ingests.run(IngestJob.of(plan), Attempt(number=2, operation=str(operation.name), worker="w2"))
        resumed = services.operations.get(str(operation.name), ANA)
        assert resumed.done is True and resumed.error is None and resumed.response is not None
        assert (resumed.response["unchanged"], resumed.response["added"]) == (10, 30)
        page = services.knowledge.get_documents([f"documents/docs.quill.example/page-{i:03}.md" for i in range(10)])
        assert all(d.content and f"page number {i}." in d.content for i, d in enumerate(page))
    finally:
        services.close()


def test_an_ingest_interrupted_too_often_ends_aborted_never_left_running(settings: Settings, docs: Path) -> None:
    services = idle(settings)
    try:
        plan = IngestPlan.make(docs, BASE_URL)
        operation = services.ingests.start(plan, ANA)
        services.ingests.run(IngestJob.of(plan),
                             Attempt(number=MAX_ATTEMPTS + 1, operation=str(operation.name), worker="w"))
        aborted = services.operations.get(str(operation.name), ANA)
        assert aborted.done is True and aborted.error is not None and aborted.error.code == 10
        assert f"interrupted {MAX_ATTEMPTS} times; run it again" in (aborted.error.message or "")
    finally:
        services.close()


def test_a_lost_attempt_writes_nothing(settings: Settings, docs: Path) -> None:
    services = idle(settings)
    try:
        plan = IngestPlan.make(docs, BASE_URL)
        operation = services.ingests.start(plan, ANA)
        attempt = Attempt(number=1, operation=str(operation.name), worker="w")
        attempt.lose("taken over")
        services.ingests.run(IngestJob.of(plan), attempt)
        assert services.operations.get(str(operation.name), ANA).done is False
    finally:
        services.close()


def test_an_attempt_lost_midway_leaves_waiters_the_stored_progress(
        settings: Settings, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services = idle(settings)
    try:
        plan = IngestPlan.make(docs, BASE_URL)
        operation = services.ingests.start(plan, ANA)
        attempt = Attempt(number=1, operation=str(operation.name), worker="w")

        def lost_midway(plan: IngestPlan, progress: object, should_stop: object) -> IngestSummary:
            assert callable(progress)
            progress(IngestSummary(files_seen=1, added=1))  # recorded, and published live in this process
            progress(IngestSummary(files_seen=2, added=2))  # published live only: the store is written less often
            attempt.lose("taken over")  # another worker goes on with the job
            return IngestSummary(files_seen=1, added=1)

        monkeypatch.setattr(services.knowledge, "ingest", lost_midway)
        services.ingests.run(IngestJob.of(plan), attempt)
        stored = services.operations.get(str(operation.name), ANA)
        assert stored.done is False
        # This attempt's last step is not left for waiters here: they see what the store says, where the
        # attempt that took the job over records its progress.
        assert services.operations.wait(str(operation.name), "0.01s", ANA).metadata == stored.metadata
    finally:
        services.close()


def test_an_ingest_that_fails_unexpectedly_ends_internal_never_left_running(
        settings: Settings, docs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    services = idle(settings)
    try:
        plan = IngestPlan.make(docs, BASE_URL)
        operation = services.ingests.start(plan, ANA)

        def broken(*args: object, **kwargs: object) -> IngestSummary:
            raise RuntimeError("a bug")

        monkeypatch.setattr(services.knowledge, "ingest", broken)
        services.ingests.run(IngestJob.of(plan), Attempt(number=1, operation=str(operation.name), worker="w"))
        failed = services.operations.get(str(operation.name), ANA)
        assert failed.done is True and failed.error is not None and failed.error.code == 13
        assert "failed unexpectedly (RuntimeError)" in (failed.error.message or "")
        assert "a bug" not in (failed.error.message or ""), "an exception's text is for the log, not the caller"
    finally:
        services.close()
