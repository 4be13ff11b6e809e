"""The parts of an app (agents, tools, toolsets, app versions): one store, one set of CRUD rules.

Each part is kept whole as its proto3 JSON in ``ces_definitions``, keyed by (app, collection, ID).
The rules Google's API gives every one of them live here once: IDs, AIP-158 pages in ID order,
``updateMask`` over top-level fields, etags checked on update and delete. What differs between
parts (their model, their name type, how a definition is checked against the rest of the app) is
a ``PartKind``.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, bindparam, case, delete, insert, select, update

from convener.api.errors import Aborted, AlreadyExists, InvalidArgument, NotFound
from convener.api.names import check_id
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import ProtoModel, Timestamp
from convener.auth.caller import Caller
from convener.ces.apps import AppService
from convener.ces.changelogs import Action, Change
from convener.ces.names import AppChildName, AppName
from convener.ces.tables import definitions
from convener.outside.limits import (
    DEFINITION_BYTES,
    DESCRIPTION_CHARACTERS,
    DISPLAY_NAME_CHARACTERS,
    INSTRUCTION_CHARACTERS,
)
from convener.store.database import AnyRow, Database

Part = TypeVar("Part", bound=ProtoModel)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_DEFINITION_BYTES = DEFINITION_BYTES


_PART_EXISTS = select(definitions.c.id).where(
    definitions.c.app_pk == bindparam("app_pk"),
    definitions.c.collection == bindparam("collection"),
    definitions.c.resource_id == bindparam("resource_id"),
)
"""Built once: checking references runs it per reference (each evaluation result checks its evaluation's)."""


class AppParts:
    """A read view of one app's stored parts, for checking references while a definition is written."""

    def __init__(self, connection: Connection, app_pk: int, app: AppName, *, unchanging: bool = False) -> None:
        self.connection = connection
        self.app_pk = app_pk
        self.app = app
        self._seen: dict[tuple[str, str], bool] | None = {} if unchanging else None
        """``unchanging``: the caller writes no part while it uses this view, so each answer is read once (a run
        checks the same few references of each of its evaluations)."""

    def exists(self, collection: str, resource_id: str) -> bool:
        key = (collection, resource_id)
        if self._seen is not None and key in self._seen:
            return self._seen[key]
        found = self.connection.scalar(_PART_EXISTS, {"app_pk": self.app_pk, "collection": collection,
                                                      "resource_id": resource_id}) is not None
        if self._seen is not None:
            self._seen[key] = found
        return found

    def bodies(self, collection: str) -> dict[str, dict[str, Any]]:
        """Every part of a collection by ID. Used for whole-app questions (agent cycles, snapshots)."""
        rows = self.connection.execute(
            select(definitions.c.resource_id, definitions.c.body)
            .where(definitions.c.app_pk == self.app_pk, definitions.c.collection == collection)
            .order_by(definitions.c.resource_id)
        ).all()
        return {row.resource_id: row.body for row in rows}


Checker = Callable[[Any, AppChildName, AppParts], Any]
"""Checks a definition against the app; may return a normalised copy. Raises INVALID_ARGUMENT."""


@dataclass(frozen=True)
class PartKind(Generic[Part]):
    model: type[Part]
    name_type: type[AppChildName]
    singular: str
    """The request field holding the part, e.g. "agent"; also "<singular>Id" names the create-time ID."""
    output_only: frozenset[str]
    check: Checker
    oneofs: tuple[frozenset[str], ...] = ()
    """Groups of wire names of which setting one clears the others (proto oneofs)."""
    derive: Callable[[Part], dict[str, Any]] = field(default=lambda part: {})
    """Output-only fields computed from the definition (e.g. a tool's displayName)."""
    authors: bool = False
    """Record who created and who last updated each part (createdBy, lastUpdatedBy)."""
    unique_display_name: bool = False
    """displayName is required and unique within the app (evaluations, datasets, ...)."""

    @property
    def collection(self) -> str:
        return self.name_type.collection


def _etag(body: dict[str, Any], update_time_us: int) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":")) + str(update_time_us)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _definition_of(kind: PartKind[Part], part: Part) -> dict[str, Any]:
    """The caller's definition without the fields only the service may set."""
    body = {key: value for key, value in part.to_json().items() if key not in kind.output_only}
    if len(json.dumps(body)) > MAX_DEFINITION_BYTES:
        raise InvalidArgument(f"{kind.singular} is larger than {MAX_DEFINITION_BYTES} bytes (ces.definition)")
    for key, maximum, limit_name in _TEXT_LIMITS:
        value = body.get(key)
        if isinstance(value, str) and len(value) > maximum:
            raise InvalidArgument(f"{kind.singular}.{key} is longer than {maximum} characters ({limit_name})")
    return body


_TEXT_LIMITS = (
    ("displayName", DISPLAY_NAME_CHARACTERS, "ces.display_name"),
    ("description", DESCRIPTION_CHARACTERS, "ces.description"),
    ("instruction", INSTRUCTION_CHARACTERS, "ces.instruction"),
)
"""The texts every kind of part may have, each with its own limit under the definition's."""


class PartService(Generic[Part]):
    """create/get/list/update/delete of one kind of app part."""

    def __init__(self, kind: PartKind[Part], database: Database, tokens: PageTokens, apps: AppService) -> None:
        self.kind = kind
        self.database = database
        self.tokens = tokens
        self.apps = apps

    # -- reading -----------------------------------------------------------------------------------

    def to_model(self, row: AnyRow, name: str) -> Part:
        stored = {
            "name": name,
            "createTime": str(Timestamp.from_micros(row.create_time_us)),
            "updateTime": str(Timestamp.from_micros(row.update_time_us)),
            "etag": row.etag,
        }
        fields = {info.alias or key for key, info in self.kind.model.model_fields.items()}
        return self.kind.model.model_validate({**row.body, **{k: v for k, v in stored.items() if k in fields}})

    def _row(self, connection: Connection, name: AppChildName) -> tuple[int, AnyRow]:
        app_pk = self.apps.app_pk(connection, name.app_name)
        row = connection.execute(
            select(definitions).where(
                definitions.c.app_pk == app_pk,
                definitions.c.collection == self.kind.collection,
                definitions.c.resource_id == name.id,
            )
        ).first()
        if row is None:
            raise NotFound(f"{self.kind.singular} {name} does not exist")
        return app_pk, row

    def get(self, name_text: str, caller: Caller) -> Part:
        name = self.kind.name_type.parse(name_text)
        with self.database.reading() as connection:
            _, row = self._row(connection, name)
        return self.to_model(row, str(name))

    def list(self, parent_text: str, page_size: int | None, page_token: str | None, caller: Caller) -> tuple[builtins.list[Part], str | None]:
        parent = AppName.parse(parent_text, "parent")
        size = resolve_page_size(page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        query = {"method": f"list_{self.kind.collection}", "parent": str(parent)}
        with self.database.reading() as connection:
            app_pk = self.apps.app_pk(connection, parent)
            statement = select(definitions).where(
                definitions.c.app_pk == app_pk, definitions.c.collection == self.kind.collection
            )
            if page_token:
                match self.tokens.position(page_token, query=query, caller=caller.principal):
                    case [str() as after]:
                        statement = statement.where(definitions.c.resource_id > after)
                    case _:
                        raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
            rows = connection.execute(statement.order_by(definitions.c.resource_id).limit(size + 1)).all()
        page, more = split_page(rows, size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[page[-1].resource_id]) if more else None
        return [self.to_model(row, str(parent.child(self.kind.name_type, row.resource_id))) for row in page], token

    # -- writing -----------------------------------------------------------------------------------

    def _checked(self, part: Part, name: AppChildName, parts: AppParts, caller: Caller,
                 previous: dict[str, Any] | None = None) -> dict[str, Any]:
        checked = self.kind.check(part, name, parts)
        part = checked if isinstance(checked, self.kind.model) else part
        body = _definition_of(self.kind, part)
        body.update(self.kind.derive(part))
        if self.kind.unique_display_name:
            self._check_display_name(body, name, parts)
        if self.kind.authors:
            body["createdBy"] = (previous or {}).get("createdBy", caller.principal)
            body["lastUpdatedBy"] = caller.principal
        return body

    def _check_display_name(self, body: dict[str, Any], name: AppChildName, parts: AppParts) -> None:
        display_name = body.get("displayName")
        if not isinstance(display_name, str) or not display_name.strip():
            raise InvalidArgument(f"{self.kind.singular}.displayName is required")
        if len(display_name) > 512:
            raise InvalidArgument(f"{self.kind.singular}.displayName is longer than 512 characters")
        taken = parts.connection.scalar(
            select(definitions.c.resource_id).where(
                definitions.c.app_pk == parts.app_pk,
                definitions.c.collection == self.kind.collection,
                definitions.c.display_name == display_name,
                definitions.c.resource_id != name.id,
            ).limit(1)
        )
        if taken is not None:
            raise AlreadyExists(
                f'{self.kind.singular} displayName "{display_name[:80]}" is already used by '
                f"{parts.app.child(self.kind.name_type, taken)}"
            )

    def _display_name(self, body: dict[str, Any]) -> str | None:
        value = body.get("displayName")
        return value if self.kind.unique_display_name and isinstance(value, str) else None

    def create(self, parent_text: str, part_id: str | None, part: Part, caller: Caller) -> Part:
        parent = AppName.parse(parent_text, "parent")
        resource_id = check_id(part_id, f"{self.kind.singular}Id") if part_id else uuid.uuid4().hex[:16]
        name = parent.child(self.kind.name_type, resource_id)
        with self.database.transaction() as connection:
            app_pk = self.apps.app_pk(connection, parent)
            parts = AppParts(connection, app_pk, parent)
            body = self._checked(part, name, parts, caller)
            if parts.exists(self.kind.collection, resource_id):
                raise AlreadyExists(f"{self.kind.singular} {name} already exists")
            created = self.insert(connection, app_pk, name, body)
            self.record(connection, app_pk, caller, Action.CREATE, name, after=created)
            return created

    def record(self, connection: Connection, app_pk: int, caller: Caller, action: Action, name: AppChildName, *,
               before: Part | None = None, after: Part | None = None,
               dependents: Sequence[ProtoModel] = (), description: str | None = None) -> None:
        """Record a change of one of these parts in the app's changelog, in the change's transaction."""
        self.apps.changes.record(connection, app_pk, caller, Change(
            action, str(name), self.kind.model.__name__,
            before=before.to_json() if before is not None else None,
            after=after.to_json() if after is not None else None,
            dependents=[dependent.to_json() for dependent in dependents], description=description,
        ))

    def insert(self, connection: Connection, app_pk: int, name: AppChildName, body: dict[str, Any]) -> Part:
        """Store a new part in the caller's transaction; the caller records the change (``record``)."""
        now = Timestamp.now().to_micros()
        values = {
            "app_pk": app_pk,
            "collection": self.kind.collection,
            "resource_id": name.id,
            "create_time_us": now,
            "update_time_us": now,
            "etag": _etag(body, now),
            "body": body,
            "display_name": self._display_name(body),
        }
        connection.execute(insert(definitions).values(**values))
        _, row = self._row(connection, name)
        return self.to_model(row, str(name))

    def overwrite(self, connection: Connection, app_pk: int, name: AppChildName, body: dict[str, Any]) -> Part:
        """Replace a stored part's body in the caller's transaction (imports fill placeholders this way), and
        the part as stored now; the caller records the change."""
        now = Timestamp.now().to_micros()
        connection.execute(
            update(definitions)
            .where(definitions.c.app_pk == app_pk, definitions.c.collection == self.kind.collection,
                   definitions.c.resource_id == name.id)
            # A part's update time only grows (a draft's fingerprint sums them: see ``versions``).
            .values(body=body, update_time_us=case((definitions.c.update_time_us >= now,
                                                    definitions.c.update_time_us + 1), else_=now),
                    etag=_etag(body, now), display_name=self._display_name(body))
        )
        _, row = self._row(connection, name)
        return self.to_model(row, str(name))

    def update(self, part: Part, update_mask: str | None, caller: Caller) -> Part:
        name = self.kind.name_type.parse(getattr(part, "name", None), f"{self.kind.singular}.name")
        incoming = _definition_of(self.kind, part)
        mask = [path.strip() for path in (update_mask or "*").split(",") if path.strip()]
        fields = {info.alias or key for key, info in self.kind.model.model_fields.items()} - self.kind.output_only
        if mask != ["*"]:
            unknown = sorted(path for path in mask if path not in fields)
            if unknown:
                raise InvalidArgument(
                    f"updateMask: cannot update {', '.join(unknown)}; updatable fields: {', '.join(sorted(fields))}"
                )
        with self.database.transaction() as connection:
            app_pk, row = self._row(connection, name)
            etag = getattr(part, "etag", None)
            if etag and etag != row.etag:
                raise Aborted(f"{self.kind.singular} {name} was changed since etag {etag}; get it again and retry")
            merged = dict(incoming) if mask == ["*"] else self._merge(dict(row.body), incoming, mask)
            merged_part = self.kind.model.model_validate(merged)
            body = self._checked(merged_part, name, AppParts(connection, app_pk, name.app_name), caller, row.body)
            now = max(Timestamp.now().to_micros(), row.update_time_us + 1)
            # Conditional on the etag we read: of two writers that read the same version, one wins.
            changed = connection.execute(
                update(definitions)
                .where(definitions.c.id == row.id, definitions.c.etag == row.etag)
                .values(body=body, update_time_us=now, etag=_etag(body, now), display_name=self._display_name(body))
            ).rowcount
            if changed == 0:
                raise Aborted(f"{self.kind.singular} {name} was changed concurrently; get it again and retry")
            before = self.to_model(row, str(name))
            _, row = self._row(connection, name)
            updated = self.to_model(row, str(name))
            self.record(connection, app_pk, caller, Action.UPDATE, name, before=before, after=updated)
            return updated

    def _merge(self, current: dict[str, Any], incoming: dict[str, Any], mask: builtins.list[str]) -> dict[str, Any]:
        for path in mask:
            if path in incoming:
                current[path] = incoming[path]
                for group in self.kind.oneofs:
                    if path in group:  # setting one member of a oneof clears the others
                        for other in group - {path}:
                            current.pop(other, None)
            else:
                current.pop(path, None)
        return current

    def delete(self, name_text: str, etag: str | None, caller: Caller) -> None:
        name = self.kind.name_type.parse(name_text)
        with self.database.transaction() as connection:
            app_pk, removed = self.remove(connection, name, etag)
            self.record(connection, app_pk, caller, Action.DELETE, name, before=removed)

    def remove(self, connection: Connection, name: AppChildName, etag: str | None) -> tuple[int, Part]:
        """Delete a part in the caller's transaction (with what else goes with it), checking the etag; the app's
        row id and the part as it was. The caller records the change."""
        app_pk, row = self._row(connection, name)
        if etag and etag != row.etag:
            raise Aborted(f"{self.kind.singular} {name} was changed since etag {etag}; get it again and retry")
        deleted = connection.execute(
            delete(definitions).where(definitions.c.id == row.id, definitions.c.etag == row.etag)
        ).rowcount
        if deleted == 0:
            raise Aborted(f"{self.kind.singular} {name} was changed or deleted concurrently; get it again and retry")
        return app_pk, self.to_model(row, str(name))
