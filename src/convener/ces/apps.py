"""Apps: the containers of agents and their recorded conversations."""

from __future__ import annotations

import hashlib
import re
import uuid
import zoneinfo
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from convener.api.errors import Aborted, AlreadyExists, InvalidArgument, NotFound
from convener.api.filtering import FieldType, FilterField, compile_filter
from convener.api.names import LocationName, check_id
from convener.api.paging import PageTokens, resolve_page_size, split_page
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.ces.changelogs import Action, Change, ChangeRecorder
from convener.ces.models import App
from convener.ces.names import AgentName, AppName, GuardrailName
from convener.ces.recording import LANGUAGE_CODE
from convener.ces.requests import (
    CreateAppRequest,
    DeleteAppRequest,
    GetAppRequest,
    ListAppsRequest,
    ListAppsResponse,
    UpdateAppRequest,
)
from convener.ces.schemas import check_json_schema, jsonschema_problem
from convener.ces.tables import apps, definitions
from convener.outside.limits import DESCRIPTION_CHARACTERS, DISPLAY_NAME_CHARACTERS, INSTRUCTION_CHARACTERS
from convener.store.database import AnyRow, Database

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
UPDATABLE = {"displayName": "display_name", "description": "description"}
"""Fields update_app may change that have columns of their own: wire name → model attribute and column."""
SETTINGS = ("rootAgent", "variableDeclarations", "globalInstruction", "modelSettings", "languageSettings",
            "timeZoneSettings", "guardrails", "evaluationSettings")
"""Fields update_app may change that live together in the ``settings`` document."""
TEXT_LIMITS = (("displayName", DISPLAY_NAME_CHARACTERS, "ces.display_name"),
               ("description", DESCRIPTION_CHARACTERS, "ces.description"))
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_VARIABLES = 500
MAX_GUARDRAILS = 64

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
    for field, limit, limit_name in TEXT_LIMITS:
        value = getattr(app, UPDATABLE[field])
        if value is not None and len(value) > limit:
            raise InvalidArgument(f"app.{field} is longer than {limit} characters ({limit_name})")
    if app.global_instruction is not None and len(app.global_instruction) > INSTRUCTION_CHARACTERS:
        raise InvalidArgument(
            f"app.globalInstruction is longer than {INSTRUCTION_CHARACTERS} characters (ces.instruction)"
        )


def _settings_of(app: App) -> dict[str, Any]:
    """The settings document of an app as a caller gave it, checked."""
    wire = app.to_json()
    settings = {key: wire[key] for key in SETTINGS if key in wire}
    if app.root_agent:
        AgentName.parse(app.root_agent, "app.rootAgent")
    if len(app.guardrails or ()) > MAX_GUARDRAILS:
        raise InvalidArgument(f"app.guardrails lists more than {MAX_GUARDRAILS} guardrails")
    for index, guardrail in enumerate(app.guardrails or ()):
        GuardrailName.parse(guardrail, f"app.guardrails[{index}]")
    names: set[str] = set()
    for index, declaration in enumerate(app.variable_declarations or ()):
        field = f"app.variableDeclarations[{index}]"
        if index >= MAX_VARIABLES:
            raise InvalidArgument(f"app.variableDeclarations: at most {MAX_VARIABLES} variables")
        if not VARIABLE_NAME.fullmatch(declaration.name or ""):
            raise InvalidArgument(f"{field}.name must start with a letter or _ and hold only letters, digits and _")
        if declaration.name in names:
            raise InvalidArgument(f"{field}.name: variable {declaration.name} is declared twice")
        names.add(declaration.name or "")
        check_json_schema(declaration.schema_, f"{field}.schema")
        if declaration.schema_ is not None and declaration.schema_.default is not None:
            problem = jsonschema_problem(declaration.schema_.default, declaration.schema_)
            if problem:
                raise InvalidArgument(f"{field}.schema.default: {problem}")
    language = app.language_settings.default_language_code if app.language_settings else None
    if language and not LANGUAGE_CODE.fullmatch(language):
        raise InvalidArgument(f'app.languageSettings.defaultLanguageCode "{language[:40]}" is not a BCP-47 tag')
    zone = app.time_zone_settings.time_zone if app.time_zone_settings else None
    if zone:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise InvalidArgument(f'app.timeZoneSettings.timeZone "{zone[:60]}" is not an IANA time zone') from None
    return settings


def _exists(connection: Connection, app_pk: int, collection: str, resource_id: str) -> bool:
    found = connection.scalar(
        select(definitions.c.id).where(
            definitions.c.app_pk == app_pk, definitions.c.collection == collection,
            definitions.c.resource_id == resource_id,
        )
    )
    return found is not None


def _check_references(connection: Connection, app_pk: int, name: AppName, settings: dict[str, Any]) -> None:
    """The root agent and the guardrails the settings name exist in the app."""
    root = settings.get("rootAgent")
    if root:
        agent = AgentName.parse(root, "app.rootAgent")
        if agent.app_name != name or not _exists(connection, app_pk, "agents", agent.id):
            raise InvalidArgument(f"app.rootAgent: agent {root} does not exist in {name}")
    for index, value in enumerate(settings.get("guardrails") or ()):
        guardrail = GuardrailName.parse(value, f"app.guardrails[{index}]")
        if guardrail.app_name != name or not _exists(connection, app_pk, "guardrails", guardrail.id):
            raise InvalidArgument(f"app.guardrails[{index}]: guardrail {value} does not exist in {name}")


def row_to_app(row: AnyRow) -> App:
    return App.model_validate({
        **(row.settings or {}),
        "name": row.name,
        "displayName": row.display_name or None,
        "description": row.description or None,
        "createTime": str(Timestamp.from_micros(row.create_time_us)),
        "updateTime": str(Timestamp.from_micros(row.update_time_us)),
        "etag": row.etag,
    })


_APP_PK = select(apps.c.id).where(apps.c.name == bindparam("name"))
"""Built once: every session turn looks its app up."""


class AppService:
    def __init__(self, database: Database, tokens: PageTokens, changes: ChangeRecorder | None = None) -> None:
        self.database = database
        self.tokens = tokens
        self.changes = changes or ChangeRecorder()
        """Records each change of an app or its parts in its transaction; every ces write path reaches it here."""

    def app_pk(self, connection: Connection, name: AppName) -> int:
        """The app's row id, or NOT_FOUND."""
        pk = connection.scalar(_APP_PK, {"name": str(name)})
        if pk is None:
            raise self.missing(name)
        return int(pk)

    @staticmethod
    def missing(name: AppName) -> NotFound:
        """The error of a path that found no app ``name``."""
        return NotFound(f"app {name} does not exist")

    def create(self, request: CreateAppRequest, caller: Caller) -> App:
        parent = LocationName.parse(request.parent, "parent")
        app_id = check_id(request.app_id, "appId") if request.app_id else uuid.uuid4().hex
        _check_text(request.app)
        if request.app.root_agent:
            raise InvalidArgument("app.rootAgent: an app has no agents yet when it is created; set it with update_app")
        if request.app.guardrails:
            raise InvalidArgument("app.guardrails: an app has no guardrails yet when it is created; set them with "
                                  "update_app")
        with self.database.transaction() as connection:
            return self.ensure(connection, AppName(parent.project, parent.location, app_id), request.app,
                               create_only=True, author=caller.principal)

    def ensure(self, connection: Connection, name: AppName, app: App, *, create_only: bool = False,
               author: str | None = None) -> App:
        """Create the app if missing (or fail with ALREADY_EXISTS when ``create_only``); return it. When ``author``
        is given and the app is created here, its creation is recorded in the app's changelog (a caller that
        records the whole of a larger change itself, such as import_app, gives none)."""
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
            "settings": _settings_of(app),
        }
        values["etag"] = _etag(values)
        try:
            with connection.begin_nested():
                connection.execute(insert(apps).values(**values))
        except IntegrityError:
            # Another writer created it between our look and our insert.
            if create_only:
                raise AlreadyExists(f"app {name} already exists") from None
            author = None
        row = connection.execute(select(apps).where(apps.c.name == str(name))).one()
        created = row_to_app(row)
        if author is not None:
            self.changes.record(connection, row.id, author, Change(Action.CREATE, str(name), "App",
                                                                   after=created.to_json()))
        return created

    def overwrite(self, connection: Connection, name: AppName, app: App) -> App:
        """Set every field of an existing app at once, in the caller's transaction (imports do this)."""
        _check_text(app)
        row = connection.execute(select(apps).where(apps.c.name == str(name))).one()
        settings = _settings_of(app)
        _check_references(connection, row.id, name, settings)
        values: dict[str, Any] = {
            "display_name": app.display_name or "",
            "description": app.description or "",
            "settings": settings,
            "update_time_us": max(Timestamp.now().to_micros(), row.update_time_us + 1),
        }
        values["etag"] = _etag({**row._asdict(), **values})
        connection.execute(update(apps).where(apps.c.id == row.id).values(**values))
        return row_to_app(connection.execute(select(apps).where(apps.c.id == row.id)).one())

    def get(self, request: GetAppRequest, caller: Caller) -> App:
        name = AppName.parse(request.name)
        with self.database.reading() as connection:
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
        with self.database.reading() as connection:
            rows = connection.execute(statement).all()
        page, more = split_page(rows, page_size)
        token = self.tokens.issue(query=query, caller=caller.principal, position=[page[-1].app_id]) if more else None
        return ListAppsResponse(apps=[row_to_app(row) for row in page], next_page_token=token)

    def update(self, request: UpdateAppRequest, caller: Caller) -> App:
        name = AppName.parse(request.app.name, "app.name")
        _check_text(request.app)
        incoming = _settings_of(request.app)
        mask = [p.strip() for p in (request.update_mask or "*").split(",") if p.strip()]
        if mask == ["*"]:
            mask = [*UPDATABLE, *SETTINGS]
        unknown = [path for path in mask if path not in UPDATABLE and path not in SETTINGS]
        if unknown:
            raise InvalidArgument(
                f"updateMask: cannot update {', '.join(unknown)}; updatable fields: {', '.join([*UPDATABLE, *SETTINGS])}"
            )
        with self.database.transaction() as connection:
            row = connection.execute(select(apps).where(apps.c.name == str(name))).first()
            if row is None:
                raise NotFound(f"app {name} does not exist")
            if request.app.etag and request.app.etag != row.etag:
                raise Aborted(f"app {name} was changed since etag {request.app.etag}; get it again and retry")
            values: dict[str, Any] = {
                UPDATABLE[path]: getattr(request.app, UPDATABLE[path]) or "" for path in mask if path in UPDATABLE
            }
            settings = dict(row.settings or {})
            for path in mask:
                if path in SETTINGS:
                    if path in incoming:
                        settings[path] = incoming[path]
                    else:
                        settings.pop(path, None)
            _check_references(connection, row.id, name, settings)
            values["settings"] = settings
            values["update_time_us"] = max(Timestamp.now().to_micros(), row.update_time_us + 1)
            values["etag"] = _etag({**row._asdict(), **values})
            # Conditional on the etag we read: of two writers that read the same version, one wins.
            changed = connection.execute(
                update(apps).where(apps.c.id == row.id, apps.c.etag == row.etag).values(**values)
            ).rowcount
            if changed == 0:
                raise Aborted(f"app {name} was changed concurrently; get it again and retry")
            updated = row_to_app(connection.execute(select(apps).where(apps.c.id == row.id)).one())
            self.changes.record(connection, row.id, caller, Change(
                Action.UPDATE, str(name), "App", before=row_to_app(row).to_json(), after=updated.to_json()))
            return updated

    def delete(self, request: DeleteAppRequest, caller: Caller) -> None:
        """Delete the app with everything under it, its changelogs too: so its deletion is recorded nowhere."""
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
