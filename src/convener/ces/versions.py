"""App versions: immutable snapshots of an app with its agents, tools, toolsets and guardrails."""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from sqlalchemy import Connection, and_, func, select

from convener.api.errors import AlreadyExists, InvalidArgument, NotFound
from convener.api.names import check_id
from convener.auth.caller import Caller
from convener.ces.apps import row_to_app
from convener.ces.catalog import AppParts, PartService
from convener.ces.changelogs import Action
from convener.ces.definitions import Agent, AppSnapshot, AppVersion, Guardrail, Tool, Toolset
from convener.ces.names import AgentName, AppName, AppVersionName, GuardrailName, ToolName, ToolsetName
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.tables import apps, definitions
from convener.outside.limits import APP_VERSION_TEXT
from convener.store.database import Database
from convener.store.expressions import one_of

MAX_TEXT = APP_VERSION_TEXT


def _parts(parts: AppParts, model: type[Any], name_type: type[Any]) -> list[Any]:
    return [
        model.model_validate({**body, "name": str(parts.app.child(name_type, resource_id))})
        for resource_id, body in parts.bodies(name_type.collection).items()
    ]


BLUEPRINT_COLLECTIONS = (AgentName.collection, ToolName.collection, ToolsetName.collection,
                         GuardrailName.collection)
"""What a draft's Blueprint is made of (besides the app's row): only these parts key it, not the app's
evaluations, datasets or versions, which can be many and do not change how a turn runs."""
_PARTS_OF_APP = and_(definitions.c.app_pk == apps.c.id, one_of(definitions.c.collection, BLUEPRINT_COLLECTIONS))
DRAFT_FINGERPRINT = (
    apps.c.etag.label("draft_app_etag"),
    select(func.count()).where(_PARTS_OF_APP).scalar_subquery().label("draft_parts"),
    select(func.coalesce(func.sum(definitions.c.id), 0)).where(_PARTS_OF_APP).scalar_subquery().label("draft_ids"),
    select(func.coalesce(func.sum(definitions.c.update_time_us), 0)).where(_PARTS_OF_APP).scalar_subquery()
    .label("draft_times"),
)
"""Columns of a statement on ``apps`` that change whenever the app's draft Blueprint would: the app's etag, and how
many blueprint parts it has, the sum of their row IDs and the sum of their update times. A part created or
deleted changes the count; one replaced by another, the IDs (a new row) and the times (now, later than the old
one's); one updated, the times (a part's update time only grows). A turn reads them with its session, in the
same statement (``sessions``)."""


class KeptBlueprints:
    """The newest ``size`` Blueprints made, by a key that changes whenever what they were made of does.

    Every turn of every session needs its app's agents and tools; reading their etags is cheap,
    decoding and validating every definition again is not (a fifth of a golden evaluation's time)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.lock = threading.Lock()
        self.making = threading.Lock()
        self.kept: OrderedDict[Hashable, Blueprint] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], Blueprint]) -> Blueprint:
        """The Blueprint kept under ``key``, made by ``make`` if there is none. One is made at a time: the workers
        of a process starting a run together all miss the app's Blueprint, and each made it (a tenth of a second
        each, at a command's start) where the first one's serves them all."""
        found = self._kept(key)
        if found is not None:
            return found
        with self.making:
            found = self._kept(key)  # made while this thread waited
            if found is not None:
                return found
            blueprint = make()
            with self.lock:
                self.kept[key] = blueprint
                while len(self.kept) > self.size:
                    self.kept.popitem(last=False)
        return blueprint

    def _kept(self, key: Hashable) -> Blueprint | None:
        with self.lock:
            if key not in self.kept:
                return None
            self.kept.move_to_end(key)
            return self.kept[key]


class DraftBlueprints:
    """The draft of each app as a Blueprint, kept while nothing in the app changes."""

    def __init__(self, database: Database, size: int = 64) -> None:
        self.database = database
        self.kept = KeptBlueprints(size)

    def get(self, app_pk: int, app: AppName, fingerprint: tuple[Any, ...]) -> Blueprint:
        """The app's draft, made again only when its ``DRAFT_FINGERPRINT`` (as the caller read it) changed.

        Made in a reading of its own, so that its parts agree with each other whatever the caller's reading is:
        made after a change the fingerprint was read before, it is the newer draft, kept under the older
        fingerprint, which no reading begun after the change sees."""
        def make() -> Blueprint:
            with self.database.reading() as connection:
                return draft_blueprint(connection, app_pk, app)

        return self.kept.get((app_pk, fingerprint), make)


def draft_blueprint(connection: Connection, app_pk: int, app: AppName) -> Blueprint:
    """The app as it is now, read in one transaction so that its parts agree with each other."""
    row = connection.execute(select(apps).where(apps.c.id == app_pk)).one()
    parts = AppParts(connection, app_pk, app)
    snapshot = AppSnapshot(
        app=row_to_app(row),
        agents=_parts(parts, Agent, AgentName),
        tools=_parts(parts, Tool, ToolName),
        toolsets=_parts(parts, Toolset, ToolsetName),
        guardrails=_parts(parts, Guardrail, GuardrailName),
    )
    return Blueprint.from_snapshot(snapshot, None)


class VersionService:
    def __init__(self, versions: PartService[AppVersion]) -> None:
        self.versions = versions
        self.kept = KeptBlueprints()

    def create(self, parent_text: str, version_id: str | None, version: AppVersion, caller: Caller) -> AppVersion:
        parent = AppName.parse(parent_text, "parent")
        resource_id = check_id(version_id, "appVersionId") if version_id else uuid.uuid4().hex[:16]
        for field in ("display_name", "description"):
            value = getattr(version, field)
            if value is not None and len(value) > MAX_TEXT:
                raise InvalidArgument(f"appVersion.{field} is longer than {MAX_TEXT} characters")
        name = parent.child(AppVersionName, resource_id)
        service = self.versions
        with service.database.transaction() as connection:
            app_pk = service.apps.app_pk(connection, parent)
            if AppParts(connection, app_pk, parent).exists("versions", resource_id):
                raise AlreadyExists(f"app version {name} already exists")
            snapshot = draft_blueprint(connection, app_pk, parent).snapshot()
            body = {
                **AppVersion(display_name=version.display_name, description=version.description).to_json(),
                "creator": caller.principal,
                "snapshot": snapshot.to_json(),
            }
            created = service.insert(connection, app_pk, name, body)
            service.record(connection, app_pk, caller, Action.CREATE, name, after=created)
            return created

    def blueprint(self, connection: Connection, app_pk: int, version_text: str, app: AppName) -> Blueprint:
        name = AppVersionName.parse(version_text, "config.appVersion")
        if name.app_name != app:
            raise InvalidArgument(f"config.appVersion: {version_text} is not a version of {app}")
        # A version's snapshot never changes, but a version deleted and made again under its name is another
        # one: the etag of the row tells them apart.
        etag = connection.scalar(select(definitions.c.etag).where(
            definitions.c.app_pk == app_pk, definitions.c.collection == "versions", definitions.c.resource_id == name.id
        ))
        if etag is None:
            raise NotFound(f"{self.versions.kind.singular} {name} does not exist")  # as PartService says it

        def make() -> Blueprint:
            _, row = self.versions._row(connection, name)
            version = AppVersion.model_validate(row.body)
            return Blueprint.from_snapshot(version.snapshot or AppSnapshot(), str(name))

        return self.kept.get((app_pk, name.id, etag), make)
