"""Long-running operations: stored, read, listed, cancelled and waited for.

An operation belongs to the principal that started it; others are told it does not exist. The work
itself is done elsewhere (an evaluation run, say), which updates the stored operation as it goes;
``wait`` watches the store, so it sees work done by another process on the same store too.
"""

from __future__ import annotations

import builtins
import dataclasses
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from convener.api.errors import FailedPrecondition, InvalidArgument, NotFound
from convener.api.names import LocationName, ResourceName
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Duration, Timestamp
from convener.auth.caller import Caller
from convener.jobs.model import Attempt
from convener.longrunning.models import Operation, Status
from convener.longrunning.tables import operations
from convener.store.database import AnyRow, Database

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
DEFAULT_WAIT_SECONDS = 60.0
MAX_WAIT_SECONDS = 600.0
POLL_SECONDS = 0.25

Progress = Callable[[Operation], None]


@dataclasses.dataclass(frozen=True)
class OperationName(ResourceName):
    template: ClassVar[str] = "projects/{project}/locations/{location}/operations/{operation}"
    parent_type: ClassVar[type[ResourceName] | None] = LocationName
    project: str
    location: str
    operation: str

    @property
    def location_name(self) -> LocationName:
        return LocationName(self.project, self.location)


_BY_NAME = (operations.c.location == bindparam("location"), operations.c.operation_id == bindparam("operation_id"))
_ROW = select(operations).where(*_BY_NAME)
_CANCEL_REQUESTED = select(operations.c.cancel_requested).where(*_BY_NAME)
_DONE = select(operations.c.done).where(*_BY_NAME)
"""Statements read on every job's path, built once: building and keying a statement costs more than running it."""
CANCEL_REQUESTED_OF = select(operations.c.cancel_requested).where(*_BY_NAME).scalar_subquery()
"""Whether the operation ``operation_key`` binds was asked to stop, as a column: a job's claim reads it with the
rows it locks, not in a statement of its own."""


def _key(name: OperationName) -> dict[str, str]:
    return {"location": str(name.location_name), "operation_id": name.operation}


def operation_key(name: str) -> dict[str, str]:
    """The binds of ``CANCEL_REQUESTED_OF`` for the operation named ``name``."""
    return _key(OperationName.parse(name))


class OperationService:
    def __init__(self, database: Database, tokens: PageTokens) -> None:
        self.database = database
        self.tokens = tokens
        self._changed = threading.Condition()
        self._live: dict[str, dict[str, Any]] = {}
        """Metadata published by work running in this process, fresher than the store's (see ``publish``)."""
        self.cancel_hooks: list[Callable[[str], None]] = []
        """Called with an operation's name after its cancellation was recorded, to stop the work."""

    # -- for the services that do the work --------------------------------------------------------

    def start(self, connection: Connection, location: LocationName, caller: Caller, metadata: dict[str, Any]) -> Operation:
        """A new operation, in the caller's transaction: it exists exactly when the work it stands for does."""
        name = OperationName(location.project, location.location, uuid.uuid4().hex)
        operation = Operation(name=str(name), metadata=metadata, done=False)
        connection.execute(insert(operations).values(
            location=str(location), operation_id=name.operation, owner=caller.principal,
            create_time_us=Timestamp.now().to_micros(), done=False, cancel_requested=False, body=operation.to_json(),
        ))
        return operation

    def record(self, connection: Connection, name: str, **changes: Any) -> None:
        """Change the stored operation (``metadata``, ``done``, ``error``, ``response``) in the caller's transaction."""
        parsed = OperationName.parse(name)
        row = self._row(connection, parsed)
        body = dict(row.body)
        for key, value in changes.items():
            body[key] = value.to_json() if hasattr(value, "to_json") else value
        connection.execute(update(operations).where(operations.c.id == row.id).values(
            body=body, done=bool(body.get("done"))))

    def change_metadata(self, connection: Connection, name: str,
                        change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Rewrite the stored operation's metadata from what it holds now, in the caller's transaction."""
        row = self._row(connection, OperationName.parse(name))
        body = {**row.body, "metadata": change(dict(row.body.get("metadata") or {}))}
        connection.execute(update(operations).where(operations.c.id == row.id).values(body=body))

    def notify(self) -> None:
        """Wake the callers waiting in ``wait`` after a change was committed."""
        with self._changed:
            self._changed.notify_all()

    def cancel_requested(self, connection: Connection, name: str) -> bool:
        return bool(connection.scalar(_CANCEL_REQUESTED, _key(OperationName.parse(name))))

    def is_done(self, connection: Connection, name: str) -> bool:
        return bool(connection.scalar(_DONE, _key(OperationName.parse(name))))

    def publish(self, name: str, metadata: dict[str, Any] | None) -> None:
        """Show waiters in this process the work's progress at once, without a write (the store is updated
        less often); ``None`` when the work has recorded its end."""
        with self._changed:
            if metadata is None:
                self._live.pop(name, None)
            else:
                self._live[name] = metadata
            self._changed.notify_all()

    def finish(self, name: str, attempt: Attempt, metadata: dict[str, Any] | None = None, *,
               error: Status | None = None, response: dict[str, Any] | None = None) -> None:
        """Record a job's operation done, unless ``attempt`` lost the job: the attempt that took it over goes on
        and records the end, and waiters here must read its progress from the store, not the last step this
        attempt published."""
        if attempt.lost:
            self.publish(name, None)
            return
        changes: dict[str, Any] = {"done": True}
        if metadata is not None:
            changes["metadata"] = metadata
        if error is not None:
            changes["error"] = error
        if response is not None:
            changes["response"] = response
        with self.database.transaction() as connection:
            self.record(connection, name, **changes)
        self.publish(name, None)
        self.notify()

    def is_cancelled(self, name: str) -> bool:
        """Whether cancelling the operation was asked, as the store says now (for work in any process)."""
        with self.database.reading() as connection:
            return self.cancel_requested(connection, name)

    # -- the API ------------------------------------------------------------------------------------

    def get(self, name_text: str, caller: Caller) -> Operation:
        name = OperationName.parse(name_text)
        with self.database.reading() as connection:
            return self._model(self._row(connection, name, caller))

    def list(self, location_text: str, filter_text: str | None, page_size: int | None, page_token: str | None,
             caller: Caller) -> tuple[builtins.list[Operation], str | None]:
        location = LocationName.parse(location_text)
        done = _done_filter(filter_text)
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        query = {"method": "list_operations", "name": str(location), "filter": filter_text or ""}
        statement = select(operations).where(operations.c.location == str(location),
                                             operations.c.owner == caller.principal)
        if done is not None:
            statement = statement.where(operations.c.done == done)
        if page_token:
            match self.tokens.position(page_token, query=query, caller=caller.principal):
                case [int() as created, str() as after]:
                    statement = statement.where(
                        operations.c.create_time_us <= created,
                        (operations.c.create_time_us < created) | (operations.c.operation_id > after),
                    )
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        statement = statement.order_by(operations.c.create_time_us.desc(), operations.c.operation_id).limit(size + 1)
        with self.database.reading() as connection:
            rows = connection.execute(statement).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal,
                                  position=[page[-1].create_time_us, page[-1].operation_id]) if more else None
        return [self._model(row) for row in page], token

    def cancel(self, name_text: str, caller: Caller) -> None:
        """Ask the work to stop. Idempotent; cancelling a finished operation changes nothing."""
        name = OperationName.parse(name_text)
        with self.database.transaction() as connection:
            row = self._row(connection, name, caller)
            if not row.done:
                body = dict(row.body)
                body["metadata"] = {**(body.get("metadata") or {}), "cancelRequested": True}
                connection.execute(update(operations).where(operations.c.id == row.id).values(
                    cancel_requested=True, body=body))
        for hook in self.cancel_hooks:
            hook(str(name))
        self.notify()

    def delete(self, name_text: str, caller: Caller) -> None:
        name = OperationName.parse(name_text)
        with self.database.transaction() as connection:
            row = self._row(connection, name, caller)
            if not row.done:
                raise FailedPrecondition(f"operation {name} is still running; cancel it first or wait for it")
            connection.execute(delete(operations).where(operations.c.id == row.id))

    def wait(self, name_text: str, timeout_text: str | None, caller: Caller, progress: Progress | None = None) -> Operation:
        """The operation once done, or as it is when the timeout passes. ``progress`` sees each change."""
        name = OperationName.parse(name_text)
        timeout = _timeout(timeout_text)
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        operation: Operation | None = None
        while True:
            # Live metadata first, the store second: work records its end before it withdraws its live metadata,
            # so a read that finds none finds the end recorded, never an older recorded step.
            live = self._live.get(str(name))
            remaining = deadline - time.monotonic()
            # While work in this process still publishes, a caller that shows no progress has nothing to read
            # but the end: the store is read first (the operation is the caller's, and may be done), once the
            # live metadata is withdrawn, and when the time is up. A run of quick evaluations published 37
            # steps, each of which was read and parsed anew beside the threads playing it.
            if operation is None or live is None or progress is not None or remaining <= 0:
                with self.database.reading() as connection:
                    operation = self._model(self._row(connection, name, caller))
                if live is not None and not operation.done:
                    operation = operation.model_copy(update={"metadata": live})
                if progress is not None and operation.metadata != last:
                    last = operation.metadata
                    progress(operation)
            if operation.done or remaining <= 0:
                return operation
            with self._changed:
                self._changed.wait(min(POLL_SECONDS, remaining))

    # -- rows -----------------------------------------------------------------------------------------

    def _row(self, connection: Connection, name: OperationName, caller: Caller | None = None) -> AnyRow:
        row = connection.execute(_ROW, _key(name)).first()
        if row is None or (caller is not None and row.owner != caller.principal):
            raise NotFound(f"operation {name} does not exist")
        return row

    @staticmethod
    def _model(row: AnyRow) -> Operation:
        return Operation.model_validate(row.body)


def _done_filter(text: str | None) -> bool | None:
    if not text or not text.strip():
        return None
    compact = "".join(text.split()).lower()
    if compact in ("done=true", "done:true"):
        return True
    if compact in ("done=false", "done:false"):
        return False
    raise InvalidArgument(f'filter "{text[:80]}" is not supported; use "done=true" or "done=false"')


def _timeout(text: str | None) -> float:
    if not text:
        return DEFAULT_WAIT_SECONDS
    try:
        seconds = Duration.parse(text).seconds()
    except ValueError as error:
        raise InvalidArgument(f"timeout: {error}") from None
    if seconds < 0:
        raise InvalidArgument("timeout must not be negative")
    return min(seconds, MAX_WAIT_SECONDS)
