"""Changelogs: every create, update and delete of an app or one of its parts, as CES's ``Changelog``.

A change is recorded by ``record_change`` in the transaction that makes it, so a change that fails leaves no
entry and an entry never outlives a change that was rolled back. Each app numbers its changes 1, 2, 3, ...:
the number is taken by bumping a counter on the app's row, which on PostgreSQL makes concurrent writers of one
app queue behind each other until commit (and on SQLite the write lock does), so numbers follow commit order
and ``createTime`` is kept increasing with them. ``list_changelogs`` pages newest first on that number.

What an entry keeps of the resource before and after a change is bounded (``ces.changelog.resource``): past the
bound, fields that did not change are left out, then the largest ones, and ``description`` says which.
Entries older than the retention (``CONVENER_CHANGELOG_RETENTION_DAYS``) are no longer served, and are deleted
by the app's next change (one indexed range delete); an app's changelogs are deleted with it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import Field
from sqlalchemy import BigInteger, Connection, bindparam, case, delete, insert, select, update
from sqlalchemy.sql.elements import ColumnElement

from convener.api.errors import InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Int64, ProtoModel, Struct, Timestamp
from convener.auth.caller import Caller
from convener.ces.models import PageSize, PageToken
from convener.ces.names import AppName, ChangelogName
from convener.ces.tables import apps, changelogs
from convener.outside.limits import CHANGELOG_RESOURCE_BYTES, DISPLAY_NAME_CHARACTERS
from convener.store.database import AnyRow, Database

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MICROS_PER_DAY = 86_400 * 1_000_000
_NOISE = frozenset({"name", "createTime", "updateTime", "etag", "lastUpdatedBy"})
"""Fields every write changes or that name the resource: not what a description of the change lists."""


class Action(StrEnum):
    """The actions CES writes in ``Changelog.action``."""

    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"


# -- wire models ---------------------------------------------------------------------------------------


class Changelog(ProtoModel):
    name: str | None = Field(None, description="projects/{project}/locations/{location}/apps/{app}/changelogs/{changelog}")
    author: str | None = Field(None, description="Output only. Who made the change (the caller's principal).")
    display_name: str | None = Field(None, description="Output only. Display name of the resource that was changed.")
    description: str | None = Field(None, description="Output only. What changed, typically the fields.")
    resource: str | None = Field(None, description="Output only. The resource that was changed.")
    resource_type: str | None = Field(None, description="Output only. Its type, e.g. Agent, Tool, App.")
    action: str | None = Field(None, description="Output only. Create, Update or Delete.")
    original_resource: Struct | None = Field(None, description="Output only. The resource before the change.")
    new_resource: Struct | None = Field(None, description="Output only. The resource after the change.")
    dependent_resources: list[Struct] | None = Field(
        None, description="Output only. Other resources the change changed with it.")
    create_time: Timestamp | None = Field(None, description="Output only.")
    sequence_number: Int64 | None = Field(
        None, description="Output only. Increases with every change of the app, from 1.")


class ListChangelogsRequest(ProtoModel):
    parent: str = Field(description="Required. The app: projects/{project}/locations/{location}/apps/{app}")
    page_size: PageSize = None
    page_token: PageToken = None
    filter: str | None = Field(
        None, description="AIP-160 over action, resource_type, resource_name, author and create_time; ':' is a "
                          "case-insensitive substring match, '=' exact. E.g. 'resource_type:agent AND "
                          "create_time > \"2025-01-01T00:00:00Z\"'.")
    order_by: str | None = Field(None, description='"create_time desc" (default, newest first), "create_time" or "name".')


class ListChangelogsResponse(ProtoModel):
    changelogs: list[Changelog] | None = None
    next_page_token: str | None = Field(None, description="Absent when there are no more pages.")


class GetChangelogRequest(ProtoModel):
    name: str = Field(description="Required. projects/{project}/locations/{location}/apps/{app}/changelogs/{changelog}")


# -- recording -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One change of a resource of an app, as its writer knows it: enough to make its Changelog."""

    action: Action
    resource: str
    """The resource's name (the app's own name for a change of the app)."""
    resource_type: str
    """The resource's message name in CES: App, Agent, Tool, Toolset, Guardrail, AppVersion, Evaluation, ..."""
    before: Mapping[str, Any] | None = None
    """The resource's proto3 JSON before the change (None for a create)."""
    after: Mapping[str, Any] | None = None
    """... and after it (None for a delete)."""
    dependents: Sequence[Mapping[str, Any]] = field(default=())
    """Other resources the same change wrote (proto3 JSON, each with its name)."""
    description: str | None = None
    """What changed; when None, it is worked out from before and after (the fields that differ)."""


_FOLLOWING = apps.c.changelog_time_us + 1
_CLOCK = bindparam("clock", type_=BigInteger)
_TAKE_NUMBER = (
    update(apps).where(apps.c.id == bindparam("app_pk"))
    .values(changelog_sequence=apps.c.changelog_sequence + 1,
            changelog_time_us=case((_FOLLOWING > _CLOCK, _FOLLOWING), else_=_CLOCK))
    .returning(apps.c.changelog_sequence, apps.c.changelog_time_us, apps.c.name)
)
"""One statement takes the number and the time: a microsecond after the app's last change at least, so that
createTime increases with sequenceNumber even if the clock steps back. Built once, as every statement a write
runs (building one costs more than SQLite takes to run it)."""
_PRUNE = delete(changelogs).where(changelogs.c.app_pk == bindparam("app_pk"),
                                  changelogs.c.create_time_us < bindparam("cutoff"))
_INSERT = insert(changelogs)


def record_change(connection: Connection, app_pk: int, author: str, change: Change, *,
                  retention_days: int = 0) -> ChangelogName:
    """Record ``change`` of the app ``app_pk`` in the caller's open transaction, as made by ``author``; returns the
    new changelog's name. Every write path of an app's resources calls this once per change, after the change."""
    sequence, now, app_text = connection.execute(_TAKE_NUMBER, {"app_pk": app_pk,
                                                                "clock": Timestamp.now().to_micros()}).one()
    app_name = AppName.parse(app_text)
    if retention_days:
        connection.execute(_PRUNE, {"app_pk": app_pk, "cutoff": int(now) - retention_days * MICROS_PER_DAY})
    changelog_id = uuid.uuid4().hex[:16]
    connection.execute(_INSERT, {
        "app_pk": app_pk, "changelog_id": changelog_id, "sequence_number": int(sequence), "create_time_us": int(now),
        "author": author, "action": change.action.value, "resource": change.resource,
        "resource_type": change.resource_type, "body": _body(change)})
    return _named(app_name, changelog_id)


def _named(app: AppName, changelog_id: str) -> ChangelogName:
    return ChangelogName(app.project, app.location, app.app, changelog_id)


@dataclass(frozen=True)
class ChangeRecorder:
    """``record_change`` with the installation's retention: what the write paths of the ces service hold."""

    retention_days: int = 0

    def record(self, connection: Connection, app_pk: int, caller: Caller | str, change: Change) -> ChangelogName:
        author = caller if isinstance(caller, str) else caller.principal
        return record_change(connection, app_pk, author, change, retention_days=self.retention_days)


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def changed_fields(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """Top-level fields whose values differ, but for those every write changes."""
    if before is None or after is None:
        return []
    return sorted(key for key in set(before) | set(after) if key not in _NOISE and before.get(key) != after.get(key))


def _fitted(resource: Mapping[str, Any] | None, changed: Sequence[str],
            limit: int) -> tuple[dict[str, Any] | None, list[str]]:
    """``resource`` within ``limit`` bytes, and the fields left out to make it fit: first those the change did not
    touch (when it is an update), then the largest."""
    if resource is None:
        return None, []
    kept = dict(resource)
    if _size(kept) <= limit:
        return kept, []
    left_out: list[str] = []
    if changed:
        for key in sorted(set(kept) - set(changed) - {"name"}):
            kept.pop(key)
            left_out.append(key)
    for key, _ in sorted(((k, _size(v)) for k, v in kept.items() if k != "name"), key=lambda item: -item[1]):
        if _size(kept) <= limit:
            break
        kept.pop(key)
        left_out.append(key)
    return kept, left_out


def _dependents(dependents: Sequence[Mapping[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int, int]:
    """The dependent resources within ``limit`` bytes: whole while they fit, then by name only, then none;
    with how many were cut to their name and how many were left out."""
    kept: list[dict[str, Any]] = []
    used = named = dropped = 0
    for dependent in dependents:
        whole = dict(dependent)
        short = {"name": dependent.get("name")} if dependent.get("name") is not None else {}
        if used + _size(whole) <= limit:
            kept.append(whole)
            used += _size(whole)
        elif short and used + _size(short) <= limit:
            kept.append(short)
            used += _size(short)
            named += 1
        else:
            dropped += 1
    return kept, named, dropped


def _description(change: Change, changed: Sequence[str]) -> str:
    if change.description is not None:
        return change.description
    match change.action:
        case Action.CREATE:
            return f"Created {change.resource_type}"
        case Action.DELETE:
            return f"Deleted {change.resource_type}"
        case _:
            return f"Updated {', '.join(changed)}" if changed else "Updated (no field changed)"


def _body(change: Change) -> dict[str, Any]:
    """The stored part of a Changelog that has no column: proto3 JSON field names."""
    changed = changed_fields(change.before, change.after)
    before, before_out = _fitted(change.before, changed, CHANGELOG_RESOURCE_BYTES)
    after, after_out = _fitted(change.after, changed, CHANGELOG_RESOURCE_BYTES)
    dependents, named, dropped = _dependents(change.dependents, CHANGELOG_RESOURCE_BYTES)
    notes = [_description(change, changed)]
    limit_note = f"over {CHANGELOG_RESOURCE_BYTES} bytes, ces.changelog.resource"
    if before_out:
        notes.append(f"originalResource leaves out {', '.join(before_out)} ({limit_note})")
    if after_out:
        notes.append(f"newResource leaves out {', '.join(after_out)} ({limit_note})")
    if named or dropped:
        notes.append(f"dependentResources: {named} by name only, {dropped} left out ({limit_note})")
    source = change.after or change.before or {}
    display_name = source.get("displayName")
    if not isinstance(display_name, str) or not display_name:
        display_name = change.resource.rsplit("/", 1)[-1]
    body: dict[str, Any] = {"displayName": display_name[:DISPLAY_NAME_CHARACTERS], "description": "; ".join(notes)}
    if before is not None:
        body["originalResource"] = before
    if after is not None:
        body["newResource"] = after
    if dependents:
        body["dependentResources"] = dependents
    return body


# -- reading -------------------------------------------------------------------------------------------


_FIELDS = {
    "action": FilterField(changelogs.c.action, FieldType.STRING, fold_case=True),
    "resource_type": FilterField(changelogs.c.resource_type, FieldType.STRING, fold_case=True),
    "resource_name": FilterField(changelogs.c.resource, FieldType.STRING, fold_case=True),
    "author": FilterField(changelogs.c.author, FieldType.STRING, fold_case=True),
    "create_time": FilterField(changelogs.c.create_time_us, FieldType.TIMESTAMP),
}
FILTER_FIELDS = {**_FIELDS, "resourceType": _FIELDS["resource_type"], "resourceName": _FIELDS["resource_name"],
                 "createTime": _FIELDS["create_time"]}
"""As CES names them (snake_case), and as JSON clients write them."""

_ORDERS = {"create_time desc": ("sequence", True), "create_time": ("sequence", False),
           "create_time asc": ("sequence", False), "name": ("name", False), "name asc": ("name", False),
           "name desc": ("name", True)}


def _order(text: str | None) -> tuple[str, bool]:
    """(keyset, descending) of an orderBy; CES allows name and create_time."""
    words = " ".join((text or "create_time desc").replace("createTime", "create_time").split())
    found = _ORDERS.get(words)
    if found is None:
        raise InvalidArgument(f'orderBy "{words[:60]}" is not supported; use "create_time desc", "create_time" '
                              'or "name" (with asc or desc)')
    return found


def changelog_model(row: AnyRow, app: AppName) -> Changelog:
    return Changelog.model_validate({
        **row.body,
        "name": str(_named(app, row.changelog_id)),
        "author": row.author,
        "resource": row.resource,
        "resourceType": row.resource_type,
        "action": row.action,
        "createTime": str(Timestamp.from_micros(row.create_time_us)),
        "sequenceNumber": str(row.sequence_number),
    })


def latest_changelog(connection: Connection, app_pk: int, app: AppName,
                     retention_days: int = 0) -> tuple[ChangelogName, Timestamp] | None:
    """The app's newest changelog still kept, and its createTime: what a run of the draft ran."""
    row = connection.execute(
        select(changelogs.c.changelog_id, changelogs.c.create_time_us)
        .where(changelogs.c.app_pk == app_pk, *_kept(retention_days))
        .order_by(changelogs.c.sequence_number.desc()).limit(1)).first()
    if row is None:
        return None
    return _named(app, row.changelog_id), Timestamp.from_micros(row.create_time_us)


def _kept(retention_days: int) -> list[ColumnElement[bool]]:
    """Entries past the retention are not served, even before the app's next change prunes them."""
    if not retention_days:
        return []
    # "+ 0" keeps the planner off the time index for this bound, which holds for nearly every entry: else SQLite
    # takes that index for the range and sorts the whole app's changelog for each page instead of walking the
    # sequence index (10,000 entries: first page 3.5x the time of a deep one).
    return [changelogs.c.create_time_us + 0 >= Timestamp.now().to_micros() - retention_days * MICROS_PER_DAY]


class ChangelogService:
    """list_changelogs and get_changelog."""

    def __init__(self, database: Database, tokens: PageTokens, retention_days: int) -> None:
        self.database = database
        self.tokens = tokens
        self.retention_days = retention_days

    @staticmethod
    def _app_pk(connection: Connection, app: AppName) -> int:
        pk = connection.scalar(select(apps.c.id).where(apps.c.name == str(app)))
        if pk is None:
            raise NotFound(f"app {app} does not exist")
        return int(pk)

    def get(self, request: GetChangelogRequest, caller: Caller) -> Changelog:
        name = ChangelogName.parse(request.name)
        with self.database.reading() as connection:
            app_pk = self._app_pk(connection, name.app_name)
            row = connection.execute(select(changelogs).where(
                changelogs.c.app_pk == app_pk, changelogs.c.changelog_id == name.id, *_kept(self.retention_days),
            )).first()
        if row is None:
            raise NotFound(f"changelog {name} does not exist")
        return changelog_model(row, name.app_name)

    def list(self, request: ListChangelogsRequest, caller: Caller) -> ListChangelogsResponse:
        parent = AppName.parse(request.parent, "parent")
        size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        keyset, descending = _order(request.order_by)
        query = {"method": "list_changelogs", "parent": str(parent), "filter": request.filter or "",
                 "orderBy": f"{keyset} {descending}"}
        column: Any = changelogs.c.sequence_number if keyset == "sequence" else changelogs.c.changelog_id
        condition = compile_filter(request.filter, FILTER_FIELDS)
        with self.database.reading() as connection:
            app_pk = self._app_pk(connection, parent)
            statement = select(changelogs).where(changelogs.c.app_pk == app_pk, *_kept(self.retention_days))
            if condition is not None:
                statement = statement.where(condition)
            if request.page_token:
                position = self.tokens.position(request.page_token, query=query, caller=caller.principal)
                expected = int if keyset == "sequence" else str
                if len(position) != 1 or type(position[0]) is not expected:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
                statement = statement.where(column < position[0] if descending else column > position[0])
            statement = statement.order_by(column.desc() if descending else column.asc()).limit(size + 1)
            rows = connection.execute(statement).all()
        page, more = split_page(rows, size)
        token = None
        if more:
            last = page[-1].sequence_number if keyset == "sequence" else page[-1].changelog_id
            token = self.tokens.issue(query=query, caller=caller.principal, position=[last])
        return ListChangelogsResponse(changelogs=[changelog_model(row, parent) for row in page] or None,
                                      next_page_token=token)
