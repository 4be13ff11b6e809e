"""Apps: the containers of agents and their recorded conversations."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from convener.api.errors import Aborted, AlreadyExists, InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.names import LocationName, check_id
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.ces.models import App
from convener.ces.names import AppName
from convener.ces.requests import (
    CreateAppRequest,
    DeleteAppRequest,
    GetAppRequest,
    ListAppsRequest,
    ListAppsResponse,
    UpdateAppRequest,
)
from convener.ces.tables import apps
from convener.store.database import AnyRow, Database

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
UPDATABLE = {"displayName": "display_name", "description": "description"}
"""Fields update_app may change: wire name → model attribute and column."""
MAX_LENGTH = {"displayName": 512, "description": 16_384}

APP_FILTER_FIELDS = {
    "displayName": FilterField(apps.c.display_name, FieldType.STRING),
    "description": FilterField(apps.c.description, FieldType.STRING),
    "createTime": FilterField(apps.c.create_time_us, FieldType.TIMESTAMP),
    "updateTime": FilterField(apps.c.update_time_us, FieldType.TIMESTAMP),
}


def _etag(values: dict[str, Any]) -> str:
    digest = hashlib.sha256(repr(sorted(values.items())).encode()).hexdigest()
    return digest[:16]


def _check_text(app: App) -> None:
    for field, limit in MAX_LENGTH.items():
        value = getattr(app, UPDATABLE[field])
        if value is not None and len(value) > limit:
            raise InvalidArgument(f"app.{field} is longer than {limit} characters")


def row_to_app(row: AnyRow) -> App:
    return App(
        name=row.name,
        display_name=row.display_name or None,
        description=row.description or None,
        create_time=Timestamp.from_micros(row.create_time_us),
        update_time=Timestamp.from_micros(row.update_time_us),
        etag=row.etag,
    )


class AppService:
    def __init__(self, database: Database, tokens: PageTokens) -> None:
        self.database = database
        self.tokens = tokens

    def app_pk(self, connection: Connection, name: AppName) -> int:
        """The app's row id, or NOT_FOUND."""
        pk = connection.scalar(select(apps.c.id).where(apps.c.name == str(name)))
        if pk is None:
            raise NotFound(f"app {name} does not exist")
        return int(pk)

    def create(self, request: CreateAppRequest, caller: Caller) -> App:
        parent = LocationName.parse(request.parent, "parent")
        app_id = check_id(request.app_id, "appId") if request.app_id else uuid.uuid4().hex
        _check_text(request.app)
        with self.database.transaction() as connection:
            return self.ensure(connection, AppName(parent.project, parent.location, app_id), request.app, create_only=True)

    def ensure(self, connection: Connection, name: AppName, app: App, *, create_only: bool = False) -> App:
        """Create the app if missing (or fail with ALREADY_EXISTS when ``create_only``); return it."""
        existing = connection.execute(select(apps).where(apps.c.name == str(name))).first()
        if existing is not None:
            if create_only:
                raise AlreadyExists(f"app {name} already exists")
            return row_to_app(existing)
        now = Timestamp.now().to_micros()
        values = {
            "name": str(name),
            "parent": str(name.parent),
            "app_id": name.app,
            "display_name": app.display_name or "",
            "description": app.description or "",
            "create_time_us": now,
            "update_time_us": now,
        }
        values["etag"] = _etag(values)
        try:
            with connection.begin_nested():
                connection.execute(insert(apps).values(**values))
        except IntegrityError:
            # Another writer created it between our look and our insert.
            if create_only:
                raise AlreadyExists(f"app {name} already exists") from None
        row = connection.execute(select(apps).where(apps.c.name == str(name))).one()
        return row_to_app(row)

    def get(self, request: GetAppRequest, caller: Caller) -> App:
        name = AppName.parse(request.name)
        with self.database.transaction() as connection:
            row = connection.execute(select(apps).where(apps.c.name == str(name))).first()
        if row is None:
            raise NotFound(f"app {name} does not exist")
        return row_to_app(row)

    def list(self, request: ListAppsRequest, caller: Caller) -> ListAppsResponse:
        parent = LocationName.parse(request.parent, "parent")
        page_size = resolve_page_size(request.page_size, default=DEFAULT_PAGE_SIZE, maximum=MAX_PAGE_SIZE)
        query = {"method": "list_apps", "parent": str(parent), "filter": request.filter or ""}
        statement = select(apps).where(apps.c.parent == str(parent))
        condition = compile_filter(request.filter, APP_FILTER_FIELDS)
        if condition is not None:
            statement = statement.where(condition)
        if request.page_token:
            match self.tokens.position(request.page_token, query=query, caller=caller.principal):
                case [str() as after]:
                    statement = statement.where(apps.c.app_id > after)
                case _:
                    raise InvalidArgument("pageToken is not valid for this request; start again without a pageToken")
        statement = statement.order_by(apps.c.app_id).limit(page_size + 1)
        with self.database.transaction() as connection:
            rows = connection.execute(statement).all()
        page, more = split_page(rows, page_size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[page[-1].app_id]) if more else None
        return ListAppsResponse(apps=[row_to_app(row) for row in page], next_page_token=token)

    def update(self, request: UpdateAppRequest, caller: Caller) -> App:
        name = AppName.parse(request.app.name, "app.name")
        _check_text(request.app)
        mask = [p.strip() for p in (request.update_mask or "*").split(",") if p.strip()]
        if mask == ["*"]:
            mask = list(UPDATABLE)
        unknown = [path for path in mask if path not in UPDATABLE]
        if unknown:
            raise InvalidArgument(
                f"updateMask: cannot update {', '.join(unknown)}; updatable fields: {', '.join(UPDATABLE)}"
            )
        with self.database.transaction() as connection:
            row = connection.execute(select(apps).where(apps.c.name == str(name))).first()
            if row is None:
                raise NotFound(f"app {name} does not exist")
            if request.app.etag and request.app.etag != row.etag:
                raise Aborted(f"app {name} was changed since etag {request.app.etag}; get it again and retry")
            values: dict[str, Any] = {UPDATABLE[path]: getattr(request.app, UPDATABLE[path]) or "" for path in mask}
            values["update_time_us"] = max(Timestamp.now().to_micros(), row.update_time_us + 1)
            values["etag"] = _etag({**row._asdict(), **values})
            # Conditional on the etag we read: of two writers that read the same version, one wins.
            changed = connection.execute(
                update(apps).where(apps.c.id == row.id, apps.c.etag == row.etag).values(**values)
            ).rowcount
            if changed == 0:
                raise Aborted(f"app {name} was changed concurrently; get it again and retry")
            return row_to_app(connection.execute(select(apps).where(apps.c.id == row.id)).one())

    def delete(self, request: DeleteAppRequest, caller: Caller) -> None:
        name = AppName.parse(request.name)
        with self.database.transaction() as connection:
            row = connection.execute(select(apps.c.id, apps.c.etag).where(apps.c.name == str(name))).first()
            if row is None:
                raise NotFound(f"app {name} does not exist")
            if request.etag and request.etag != row.etag:
                raise Aborted(f"app {name} was changed since etag {request.etag}; get it again and retry")
            deleted = connection.execute(delete(apps).where(apps.c.id == row.id, apps.c.etag == row.etag)).rowcount
            if deleted == 0:
                raise Aborted(f"app {name} was changed or deleted concurrently; get it again and retry")
