"""``start_export_app`` and ``start_import_app``: an app's YAML, zipped, moved by a job behind a long-running
operation, as Google's ces MCP server names them.

The archive is a zip holding one folder with ``app.yaml`` (what ``export_app`` writes); an import also takes
that YAML unzipped. The content travels inline (base64), or as a file on the server inside
``CONVENER_APP_ROOTS``, checked by the gate. Starting checks the request (the app, the path, the archive) and
queues the job with its operation in one transaction; the job reports progress per part, stops when the
operation is cancelled, and records how it ended. An import is one transaction, so a cancelled or failed
import leaves nothing behind. ``export_app`` and ``import_app`` stay as the synchronous tools.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import os
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

from pydantic import Field

from convener.api.errors import AlreadyExists, ApiError, Code, FailedPrecondition, InvalidArgument
from convener.api.names import LocationName, check_id
from convener.api.protojson import Bytes, ProtoModel
from convener.auth.caller import Caller
from convener.ces.bundles import Bundles, Step
from convener.ces.names import AppName
from convener.jobs.model import Attempt, Payload, Task
from convener.jobs.queue import Jobs
from convener.longrunning.models import Operation, Status
from convener.longrunning.service import OperationService
from convener.outside.bounded_reading import read_at_most
from convener.outside.gate import Gate
from convener.outside.limits import APP_ARCHIVE_BYTES, APP_ARCHIVE_ENTRIES, APP_CONTENT_BYTES

logger = logging.getLogger(__name__)

METADATA_TYPE = "type.googleapis.com/convener.ces.v1.AppTransferMetadata"
EXPORT_RESPONSE_TYPE = "type.googleapis.com/google.cloud.ces.v1.ExportAppResponse"
IMPORT_RESPONSE_TYPE = "type.googleapis.com/google.cloud.ces.v1.ImportAppResponse"
ARCHIVE_FILE = "app.yaml"
OK = 0
"""google.rpc.Code OK: the status of an import that succeeded."""
RECORD_EVERY_SECONDS = 1.0
MAX_ATTEMPTS = 3
"""A transfer whose worker stopped this many times is given up: ABORTED."""


# -- wire models (McpService.StartExportApp / StartImportApp) --------------------------------------------


class AppRequest(ProtoModel):
    """The app a transfer starts from (export) or makes (import), named by its parts as Google's tools do."""

    project_id: str = Field(description="Required. The app's project.")
    location_id: str = Field(description="Required. The app's location.")
    app_id: str = Field(description="Required. The app's ID.")

    def app_name(self) -> AppName:
        """The app's name, each part checked as an ID."""
        return AppName(check_id(self.project_id, "projectId"), check_id(self.location_id, "locationId"),
                       check_id(self.app_id, "appId"))


class StartExportAppRequest(AppRequest):
    path: str | None = Field(None, description="Convener extension. Write the zip to this new file on the server "
                                               "(inside CONVENER_APP_ROOTS) instead of returning content.")


class ExportAppOperation(ProtoModel):
    name: str | None = Field(None, description="The operation: follow it with wait_operation or get_operation.")
    done: bool | None = None
    content: Bytes | None = Field(None, description="Once done: the zip of the app folder (app.yaml), base64.")
    error: Status | None = Field(None, description="Convener extension. Once done, why it failed.")


class StartImportAppRequest(AppRequest):
    app_id: str = Field(description="Required. The ID of the app to create (or replace).")
    content: Bytes | None = Field(None, description="The zip start_export_app makes (or the YAML export_app "
                                                    "writes), base64. One of content and path.")
    path: str | None = Field(None, description="Convener extension. Read the zip or YAML from this file on the "
                                               "server, inside CONVENER_APP_ROOTS.")
    replace: bool | None = Field(None, description="Convener extension. Overwrite an existing app's definition; "
                                                   "its conversations, versions and deployments stay.")


class ImportAppOperation(ProtoModel):
    name: str | None = Field(None, description="The operation: follow it with wait_operation or get_operation.")
    done: bool | None = None
    status: Status | None = Field(None, description="Once done: code 0, or why the import failed.")


# -- jobs -------------------------------------------------------------------------------------------------


class ExportJob(Payload):
    app: str
    path: str | None = None
    """Already checked against the app roots; checked again when written."""
    principal: str


class ImportJob(Payload):
    parent: str
    app_id: str
    content: str
    """The app's YAML, unpacked and bounded when the import started."""
    replace: bool = False
    principal: str


Work = Callable[[Step], dict[str, object]]
"""A transfer's work, given its progress step; returns the operation's response."""


class Stopped(Exception):
    """Raised from a transfer's progress step when its operation was cancelled (or its job lost)."""


def unpack(data: bytes, field: str) -> str:
    """The app YAML in ``data``: a zip with exactly one ``.yaml``/``.yml`` file, or the YAML itself."""
    if len(data) > APP_ARCHIVE_BYTES:
        raise InvalidArgument(f"{field} is larger than {APP_ARCHIVE_BYTES} bytes (ces.app_archive)")
    text = data
    if data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                entries = archive.infolist()
                if len(entries) > APP_ARCHIVE_ENTRIES:
                    raise InvalidArgument(f"{field}: the archive holds more than {APP_ARCHIVE_ENTRIES} entries "
                                          "(ces.app_archive.entries)")
                found = [entry for entry in entries
                         if not entry.is_dir() and entry.filename.lower().endswith((".yaml", ".yml"))]
                if len(found) != 1:
                    raise InvalidArgument(f"{field}: the archive must hold exactly one .yaml file (it holds "
                                          f"{len(found)})")
                # Read no further than the limit, whatever the entry's header claims (a zip bomb stops here).
                with archive.open(found[0]) as stream:
                    text = stream.read(APP_CONTENT_BYTES + 1)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError,
                zlib.error, ValueError) as error:
            raise InvalidArgument(f"{field} is not a readable zip archive ({type(error).__name__})") from None
        if len(text) > APP_CONTENT_BYTES:
            raise InvalidArgument(f"{field}: app.yaml is larger than {APP_CONTENT_BYTES} bytes (ces.app_content)")
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{field} is neither a zip archive nor UTF-8 YAML") from None


def pack(app_id: str, text: str) -> bytes:
    """The zip of an app folder: ``{app_id}/app.yaml``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{app_id}/{ARCHIVE_FILE}", text)
    return buffer.getvalue()


class AppTransfers:
    def __init__(self, bundles: Bundles, operations: OperationService, jobs: Jobs, gate: Gate) -> None:
        self.bundles = bundles
        self.operations = operations
        self.jobs = jobs
        self.gate = gate
        self.export_task = Task(name="ces.export_app", queue="apps", payload=ExportJob, run=self.run_export)
        self.import_task = Task(name="ces.import_app", queue="apps", payload=ImportJob, run=self.run_import)
        jobs.register(self.export_task)
        jobs.register(self.import_task)

    # -- starting ------------------------------------------------------------------------------------------

    def start_export(self, request: StartExportAppRequest, caller: Caller) -> Operation:
        name = request.app_name()
        target = self._target(request.path) if request.path is not None else None
        with self.operations.database.transaction() as connection:
            self.bundles.apps.app_pk(connection, name)  # NOT_FOUND now rather than in the operation
            operation = self.operations.start(connection, LocationName(name.project, name.location), caller,
                                              _metadata(name, "export", 0, 0))
            self.jobs.submit(connection, self.export_task, [ExportJob(
                app=str(name), path=str(target) if target else None, principal=caller.principal)], str(operation.name))
        self.jobs.submitted()
        return operation

    def start_import(self, request: StartImportAppRequest, caller: Caller) -> Operation:
        name = request.app_name()
        parent = LocationName(name.project, name.location)
        if (request.content is None) == (request.path is None):
            raise InvalidArgument("give exactly one of content and path")
        if request.content is not None:
            try:
                data = base64.b64decode(request.content, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument("content must be base64") from None
            text = unpack(data, "content")
        else:
            assert request.path is not None
            path = self.gate.path(request.path, self.gate.app_roots, "path")
            try:
                with path.open("rb") as stream:
                    text = unpack(read_at_most(stream, "ces.app_archive", "path"), "path")
            except OSError as error:
                raise FailedPrecondition(f"path {request.path[:200]!r} cannot be read ({type(error).__name__})") from None
        with self.operations.database.transaction() as connection:
            operation = self.operations.start(connection, parent, caller, _metadata(name, "import", 0, 0))
            self.jobs.submit(connection, self.import_task, [ImportJob(
                parent=str(parent), app_id=name.app, content=text, replace=bool(request.replace),
                principal=caller.principal)], str(operation.name))
        self.jobs.submitted()
        return operation

    def _target(self, value: str) -> Path:
        """Where an export may be written: inside the app roots, not the store, a new file in a folder."""
        path = self.gate.path(value, self.gate.app_roots, "path")
        if path.exists():
            raise AlreadyExists(f"path {value[:200]!r} exists; name a new file")
        if not path.parent.is_dir():
            raise FailedPrecondition(f"path {value[:200]!r}: its folder does not exist")
        return path

    # -- the jobs ------------------------------------------------------------------------------------------

    def run_export(self, job: ExportJob, attempt: Attempt) -> None:
        name = AppName.parse(job.app)

        def work(step: Step) -> dict[str, object]:
            text = self.bundles.export(job.app, Caller(job.principal), step)
            data = pack(name.app, text)
            if job.path is None:
                return {"@type": EXPORT_RESPONSE_TYPE, "appContent": base64.b64encode(data).decode("ascii")}
            _write_new(self.gate.path(job.path, self.gate.app_roots, "path"), data)
            return {"@type": EXPORT_RESPONSE_TYPE, "appUri": Path(job.path).as_uri()}

        self._run(attempt, name, "export", work, record_steps=True)

    def run_import(self, job: ImportJob, attempt: Attempt) -> None:
        parent = LocationName.parse(job.parent)
        name = AppName(parent.project, parent.location, job.app_id)

        def work(step: Step) -> dict[str, object]:
            app = self.bundles.import_(job.parent, job.app_id, job.content, job.replace, Caller(job.principal), step)
            return {"@type": IMPORT_RESPONSE_TYPE, "name": app.name}

        # The import writes in one transaction: its steps are shown to waiters in this process, not recorded
        # (on SQLite a second writer would wait for the import's own transaction to end).
        self._run(attempt, name, "import", work, record_steps=False)

    def _run(self, attempt: Attempt, app: AppName, kind: str, work: Work, *, record_steps: bool) -> None:
        operation = attempt.operation
        with self.operations.database.reading() as connection:
            if self.operations.is_done(connection, operation):
                return  # finished before its worker could forget the job
        if attempt.number > MAX_ATTEMPTS:
            self.operations.finish(operation, attempt, error=Status(code=Code.ABORTED.value, message=(
                f"{kind} {operation} was interrupted {attempt.number - 1} times; start it again")))
            return
        last = 0.0
        reached = (0, 0)

        def step(done: int, total: int) -> None:
            nonlocal last, reached
            reached = (done, total)
            metadata = _metadata(app, kind, done, total)
            self.operations.publish(operation, metadata)
            if record_steps and time.monotonic() - last >= RECORD_EVERY_SECONDS and not attempt.lost:
                last = time.monotonic()
                with self.operations.database.transaction() as connection:
                    self.operations.record(connection, operation, metadata=metadata)
                self.operations.notify()
            if attempt.should_stop():
                raise Stopped

        try:
            if attempt.should_stop():
                raise Stopped
            response = work(step)
        except Stopped:
            metadata = _metadata(app, kind, *reached)
            if self.operations.is_cancelled(operation):
                metadata["cancelRequested"] = True  # as cancel_operation marked it
            self.operations.finish(operation, attempt, metadata, error=Status(
                code=Code.CANCELLED.value, message=f"{kind} of {app} was cancelled; nothing was {kind}ed"))
            return
        except ApiError as error:
            self.operations.finish(operation, attempt, _metadata(app, kind, *reached),
                                   error=Status(code=error.code.value, message=error.message))
            return
        except Exception as error:  # a bug: the operation still ends, saying so, rather than stay running
            logger.exception("%s %s failed", kind, operation)
            self.operations.finish(operation, attempt, error=Status(code=Code.INTERNAL.value, message=(
                f"{kind} {operation} failed unexpectedly ({type(error).__name__}); see the server log")))
            return
        self.operations.finish(operation, attempt, _metadata(app, kind, reached[1], reached[1]), response=response)


def _write_new(path: Path, data: bytes) -> None:
    """Write a new file, never through a link planted since the path was checked, never over another file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o640)
    except FileExistsError:
        raise AlreadyExists(f"path {str(path)[:200]!r} exists; name a new file") from None
    except OSError as error:
        raise FailedPrecondition(f"path {str(path)[:200]!r} cannot be written ({type(error).__name__})") from None
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def _metadata(app: AppName, kind: str, done: int, total: int) -> dict[str, object]:
    metadata: dict[str, object] = {"@type": METADATA_TYPE, "app": str(app), "kind": kind}
    if total:
        metadata["progress"] = {"totalCount": total, "completedCount": done}
    return metadata


def export_view(operation: Operation) -> ExportAppOperation:
    content = (operation.response or {}).get("appContent")
    return ExportAppOperation(name=operation.name, done=bool(operation.done),
                              content=content if isinstance(content, str) else None, error=operation.error)


def import_view(operation: Operation) -> ImportAppOperation:
    status = None
    if operation.done:
        status = operation.error or Status(code=OK)
    return ImportAppOperation(name=operation.name, done=bool(operation.done), status=status)


