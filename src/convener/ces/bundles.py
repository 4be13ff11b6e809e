"""Apps as readable YAML: the app's settings, agents, tools, toolsets and guardrails, by ID.

References inside the file are short IDs (``rootAgent: front``, ``tools: [lookup]``, ``guardrails:
[no_swearing]``, a guardrail's ``transferAgent.agent: human``), so a file exported from one app imports
into any other. Import is one transaction: every part is checked against the parts imported before it
(toolsets, tools, a placeholder of every agent, guardrails, then the agents themselves), and either the
whole app is written or nothing is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from pydantic import ValidationError
from sqlalchemy import delete, select

from convener.api.errors import AlreadyExists, InvalidArgument, describe_validation
from convener.api.names import LocationName, check_id
from convener.api.protojson import check_storable_json
from convener.auth.caller import Caller
from convener.ces.apps import AppService, row_to_app
from convener.ces.catalog import AppParts, PartService
from convener.ces.changelogs import Action, Change
from convener.ces.definitions import Agent, Guardrail, Tool, Toolset
from convener.ces.models import App
from convener.ces.names import AgentName, AppChildName, AppName, GuardrailName, ToolName, ToolsetName
from convener.ces.tables import apps, definitions
from convener.outside.yaml_documents import read_yaml

FORMAT = "convener.app/v1"
Step = Callable[[int, int], None]
"""Called after each part with (parts done, parts in all); long-running exports and imports report progress
with it, and stop by raising from it (an import's transaction is then rolled back whole)."""
OUTPUT_ONLY = ("name", "createTime", "updateTime", "etag")


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _shorten_agent(body: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in body.items() if k not in OUTPUT_ONLY}
    for key in ("tools", "childAgents", "guardrails"):
        if key in body:
            body[key] = [_short(name) for name in body[key]]
    if "toolsets" in body:
        body["toolsets"] = [{**item, "toolset": _short(item["toolset"])} for item in body["toolsets"]]
    return body


def _expand_agent(body: dict[str, Any], app: AppName, where: str) -> dict[str, Any]:
    body = dict(body)
    try:
        if "tools" in body:
            body["tools"] = [str(app.child(ToolName, check_id(t, f"{where}.tools"))) for t in body["tools"]]
        if "childAgents" in body:
            body["childAgents"] = [str(app.child(AgentName, check_id(a, f"{where}.childAgents")))
                                   for a in body["childAgents"]]
        if "toolsets" in body:
            body["toolsets"] = [{**item, "toolset": str(app.child(ToolsetName, check_id(item["toolset"], f"{where}.toolsets")))}
                                for item in body["toolsets"]]
        if "guardrails" in body:
            body["guardrails"] = _expand_ids(body["guardrails"], GuardrailName, app, f"{where}.guardrails")
    except (TypeError, KeyError, AttributeError):
        raise InvalidArgument(f"{where}: tools, childAgents, toolsets and guardrails list IDs") from None
    return body


def _expand_ids(ids: Any, kind: type[AppChildName], app: AppName, where: str) -> list[str]:
    if not isinstance(ids, list):
        raise InvalidArgument(f"{where} must be a list of IDs")
    return [str(app.child(kind, check_id(str(item), where))) for item in ids]


def _transfer_target(body: dict[str, Any]) -> dict[str, Any] | None:
    """The guardrail's ``action.transferAgent``, the one reference inside a guardrail, if it has one."""
    action = body.get("action")
    target = action.get("transferAgent") if isinstance(action, dict) else None
    return target if isinstance(target, dict) and isinstance(target.get("agent"), str) else None


def _shorten_guardrail(body: dict[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in body.items() if k not in OUTPUT_ONLY}
    if _transfer_target(body) is not None:
        body["action"] = {**body["action"], "transferAgent": {**body["action"]["transferAgent"],
                                                              "agent": _short(body["action"]["transferAgent"]["agent"])}}
    return body


def _expand_guardrail(body: dict[str, Any], app: AppName, where: str) -> dict[str, Any]:
    target = _transfer_target(body)
    if target is None:
        return body
    agent = str(app.child(AgentName, check_id(target["agent"], f"{where}.action.transferAgent.agent")))
    return {**body, "action": {**body["action"], "transferAgent": {**target, "agent": agent}}}


def _without(keys: tuple[str, ...]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {k: v for k, v in body.items() if k not in keys}


class Bundles:
    def __init__(self, apps: AppService, agents: PartService[Agent], tools: PartService[Tool],
                 toolsets: PartService[Toolset], guardrails: PartService[Guardrail]) -> None:
        self.apps = apps
        self.parts: dict[str, PartService[Any]] = {"toolsets": toolsets, "tools": tools, "guardrails": guardrails,
                                                   "agents": agents}

    def export(self, name_text: str, caller: Caller, step: Step | None = None) -> str:
        name = AppName.parse(name_text)
        database = self.apps.database
        with database.reading() as connection:
            app_pk = self.apps.app_pk(connection, name)
            app = row_to_app(connection.execute(select(apps).where(apps.c.id == app_pk)).one()).to_json()
            parts = AppParts(connection, app_pk, name)
            bodies = {collection: parts.bodies(collection) for collection in ("agents", "tools", "toolsets", "guardrails")}
        total = 1 + sum(len(found) for found in bodies.values())
        done = 0

        def shaped(collection: str, shape: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
            nonlocal done
            section = {}
            for part_id, body in bodies[collection].items():
                section[part_id] = shape(body)
                done += 1
                if step is not None:
                    step(done, total)
            return section

        document: dict[str, Any] = {"format": FORMAT, "app": {k: v for k, v in app.items() if k not in OUTPUT_ONLY}}
        if "rootAgent" in document["app"]:
            document["app"]["rootAgent"] = _short(document["app"]["rootAgent"])
        if "guardrails" in document["app"]:
            document["app"]["guardrails"] = [_short(name) for name in document["app"]["guardrails"]]
        if bodies["agents"]:
            document["agents"] = shaped("agents", _shorten_agent)
        for collection, derived in (("tools", ("displayName",)), ("toolsets", ())):
            if bodies[collection]:
                document[collection] = shaped(collection, _without((*OUTPUT_ONLY, *derived)))
        if bodies["guardrails"]:
            document["guardrails"] = shaped("guardrails", _shorten_guardrail)
        text: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)
        if step is not None:
            step(total, total)
        return text

    def import_(self, parent_text: str, app_id: str | None, content: str, replace: bool, caller: Caller,
                step: Step | None = None) -> App:
        parent = LocationName.parse(parent_text, "parent")
        document = self._load(content)
        total = 1 + sum(len(self._section(document, collection)) for collection in self.parts)
        done = 0

        def advance() -> None:
            nonlocal done
            done += 1
            if step is not None:
                step(done, total)

        app_id = check_id(app_id or document.get("id") or "", "appId")
        name = AppName(parent.project, parent.location, app_id)
        app_body = document.get("app") or {}
        if not isinstance(app_body, dict):
            raise InvalidArgument("appContent: app must be a mapping")
        root = app_body.pop("rootAgent", None)
        app_guardrails = app_body.pop("guardrails", None)
        try:
            app = App.model_validate({k: v for k, v in app_body.items() if k not in OUTPUT_ONLY})
        except ValidationError as error:
            raise InvalidArgument(f"appContent: app.{describe_validation(error)}") from None
        database = self.apps.database
        with database.transaction() as connection:
            existing = connection.scalar(select(apps.c.id).where(apps.c.name == str(name)))
            before = None
            if existing is not None:
                if not replace:
                    raise AlreadyExists(f"app {name} already exists; import with replace to overwrite its definition")
                before = row_to_app(connection.execute(select(apps).where(apps.c.id == existing)).one()).to_json()
                # The definition is replaced; the app's versions and conversations stay.
                connection.execute(delete(definitions).where(
                    definitions.c.app_pk == existing, definitions.c.collection.in_(list(self.parts))
                ))
            self.apps.ensure(connection, name, app)
            app_pk = self.apps.app_pk(connection, name)
            for collection in ("toolsets", "tools"):
                for part_id, body in self._section(document, collection).items():
                    self._write(connection, caller, app_pk, name, collection, part_id, body)
                    advance()
            # Agents name each other (child agents, playbook transfers, back and forth) and guardrails
            # name agents (transferAgent) that name them back: every agent is placed first, so that each
            # definition is then checked against all the others.
            agents = self._section(document, "agents")
            for agent_id in agents:
                placeholder = name.child(AgentName, check_id(str(agent_id), f"appContent: agents.{agent_id}"))
                self.parts["agents"].insert(connection, app_pk, placeholder, {"displayName": str(agent_id)})
            for guardrail_id, body in self._section(document, "guardrails").items():
                where = f"appContent: guardrails.{guardrail_id}"
                expanded = _expand_guardrail(body, name, where) if isinstance(body, dict) else body
                self._write(connection, caller, app_pk, name, "guardrails", guardrail_id, expanded)
                advance()
            for agent_id, body in agents.items():
                where = f"appContent: agents.{agent_id}"
                expanded = _expand_agent(body, name, where) if isinstance(body, dict) else body
                self._write(connection, caller, app_pk, name, "agents", agent_id, expanded)
                advance()
            if root is not None:
                app = app.model_copy(update={"root_agent": f"{name}/agents/{check_id(str(root), 'app.rootAgent')}"})
            if app_guardrails is not None:
                app = app.model_copy(update={
                    "guardrails": _expand_ids(app_guardrails, GuardrailName, name, "appContent: app.guardrails")})
            try:
                imported = self.apps.overwrite(connection, name, app)
            except InvalidArgument as error:
                raise InvalidArgument(f"appContent: {error.message}") from None
            self._record(connection, caller, app_pk, name, before, imported)
            advance()  # the last step, still inside the transaction: a stop here keeps nothing
            return imported

    def _record(self, connection: Any, caller: Caller, app_pk: int, name: AppName, before: dict[str, Any] | None,
                imported: App) -> None:
        """An import is one change of the app: its parts, all written anew, are the change's dependent resources."""
        parts = AppParts(connection, app_pk, name)
        dependents: list[dict[str, Any]] = []
        counts: list[str] = []
        for collection, service in self.parts.items():
            bodies = parts.bodies(collection)
            counts.append(f"{len(bodies)} {collection}")
            dependents += [{**body, "name": str(name.child(service.kind.name_type, part_id))}
                           for part_id, body in bodies.items()]
        what = "replaced by import_app" if before is not None else "created by import_app"
        self.apps.changes.record(connection, app_pk, caller, Change(
            Action.UPDATE if before is not None else Action.CREATE, str(name), "App", before=before,
            after=imported.to_json(), dependents=dependents, description=f"App {what}: {', '.join(counts)}"))

    def _write(self, connection: Any, caller: Caller, app_pk: int, app: AppName, collection: str, part_id: str, body: Any) -> None:
        """Check one part of the file against the app so far and store it (over its placeholder, if any)."""
        service = self.parts[collection]
        where = f"appContent: {collection}.{part_id}"
        resource_id = check_id(part_id, where)
        if not isinstance(body, dict):
            raise InvalidArgument(f"{where} must be a mapping")
        name: AppChildName = app.child(service.kind.name_type, resource_id)
        try:
            part = service.kind.model.model_validate({k: v for k, v in body.items() if k not in OUTPUT_ONLY})
            checked = service._checked(part, name, AppParts(connection, app_pk, app), caller)
        except ValidationError as error:
            raise InvalidArgument(f"{where}: {describe_validation(error)}") from None
        except InvalidArgument as error:
            raise InvalidArgument(f"{where}: {error.message}") from None
        if collection == "agents":
            service.overwrite(connection, app_pk, name, checked)
        else:
            service.insert(connection, app_pk, name, checked)

    @staticmethod
    def _load(content: str) -> dict[str, Any]:
        document = read_yaml(content, "appContent", size_limit="ces.app_content")
        if not isinstance(document, dict):
            raise InvalidArgument("appContent must be a YAML mapping with app, agents, tools, toolsets and guardrails")
        if document.get("format", FORMAT) != FORMAT:
            raise InvalidArgument(f"appContent: format must be {FORMAT}")
        unknown = sorted(set(document) - {"format", "id", "app", "agents", "tools", "toolsets", "guardrails"})
        if unknown:
            raise InvalidArgument(f"appContent: unknown sections {', '.join(map(str, unknown))}")
        check_storable_json(document, "appContent")
        return document

    @staticmethod
    def _section(document: dict[str, Any], collection: str) -> dict[str, Any]:
        section = document.get(collection) or {}
        if not isinstance(section, dict):
            raise InvalidArgument(f"appContent: {collection} must be a mapping of ID to definition")
        return section
