"""Loading the demo: the Acme Support app from ``app.yaml``, and its conversations from ``scripts.yaml``.

No conversation is written by hand. Each script is a customer: a session ID, where the session comes
from, and what the customer types, taps or sends, turn by turn. The loader plays every script against
the app through ``run_session``, so what the agents answer, the tools they call and what those
return, the transfers between agents and the spans of every turn are what the runtime produced.

Loading is idempotent: the app is imported only when its stored definition differs from
``app.yaml``, and a script runs only when its conversation is missing or shorter than the script (a
run cut short, or a conversation deleted), so loading again finds everything in place, writes
nothing and takes a fraction of a second.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator
from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import Field, ValidationError
from sqlalchemy import delete, select

from convener.api.errors import ApiError, NotFound
from convener.api.protojson import ProtoModel
from convener.auth.caller import LOCAL_USER
from convener.ces.models import Source
from convener.ces.names import AgentName, AppName, DeploymentName
from convener.ces.session_models import (
    RunSessionRequest,
    RunSessionResponse,
    SessionConfig,
    SessionInput,
    ToolResponses,
)
from convener.ces.tables import conversations, sessions
from convener.demo import evaluations, tools
from convener.demo.chat import install_chat
from convener.demo.deployments import install_deployment
from convener.demo.analytics import install_analytics
from convener.demo.knowledge import install_knowledge
from convener.services import Services

APP = AppName("demo", "global", "support")
PACKAGE = "convener.demo"


class Script(ProtoModel):
    """One scripted customer: the inputs of each turn, in order; the agents' side is not scripted."""

    id: str = Field(description="Session ID, and so conversation ID: demo-001, demo-002, ...")
    title: str = Field(description="What the conversation shows, for people reading the scripts.")
    source: Source = Field(Source.LIVE, description="Recorded as the conversation's source.")
    entry_agent: str | None = Field(
        None, description="ID of the agent the session starts with; the app's root agent when unset."
    )
    deployment: str | None = Field(
        None, description="ID of the deployment the session comes through (web); the draft when unset."
    )
    turns: list[list[SessionInput]] = Field(
        description="Each turn is one run_session call with these inputs. A toolResponse without an id "
        "answers the next client tool call the previous turn left waiting."
    )


class ScriptFile(ProtoModel):
    scripts: list[Script]


def _text(name: str) -> str:
    return resources.files(PACKAGE).joinpath(name).read_text("utf-8")


def app_yaml() -> str:
    """The demo app, as export_app would write it (less the fields the server derives)."""
    return _text("app.yaml")


@cache
def scripts() -> tuple[Script, ...]:
    """The scripted customers, checked against the SessionInput schema."""
    try:
        return tuple(ScriptFile.model_validate(yaml.safe_load(_text("scripts.yaml"))).scripts)
    except ValidationError as error:  # a packaging mistake, not the caller's: say where
        raise ValueError(f"convener/demo/scripts.yaml is invalid: {error}") from None


# -- the app ---------------------------------------------------------------------------------------


def expected_export(document: dict[str, Any]) -> dict[str, Any]:
    """What export_app gives for the app imported from ``document``: the same, plus what the server
    derives from python tools (their function name and docstring)."""
    expected = copy.deepcopy(document)
    for tool in (expected.get("tools") or {}).values():
        python = tool.get("pythonFunction")
        if python is None:
            continue
        module, _, function_name = python["entryPoint"].partition(":")
        assert module == tools.__name__, "demo tools live in convener.demo.tools"
        function = getattr(tools, function_name)
        python.setdefault("name", function.__name__)
        python.setdefault("description", inspect.getdoc(function))
    return expected


def install_app(services: Services) -> bool:
    """Import ``app.yaml`` as the demo app unless it is already stored as is; whether it imported."""
    text = app_yaml()
    document = yaml.safe_load(text)
    try:
        stored = yaml.safe_load(services.runtime.bundles.export(str(APP), LOCAL_USER))
    except NotFound:
        stored = None
    if stored == expected_export(document):
        return False
    services.runtime.bundles.import_(str(APP.parent), APP.app, text, True, LOCAL_USER)
    return True


# -- the conversations -----------------------------------------------------------------------------


def _client_calls(response: RunSessionResponse) -> Iterator[str]:
    """IDs of the client tool calls a turn left waiting, in order."""
    for output in response.outputs or ():
        if output.tool_calls is not None:
            for call in output.tool_calls.tool_calls or ():
                if call.id:
                    yield call.id


def _answering(item: SessionInput, waiting: list[str], where: str) -> SessionInput:
    """The input with each toolResponse that names no call answering the next one waiting."""
    if item.tool_responses is None:
        return item
    answers = []
    for answer in item.tool_responses.tool_responses or ():
        if answer.id is None:
            if not waiting:
                raise ValueError(f"{where}: a toolResponse answers no waiting client tool call")
            answer = answer.model_copy(update={"id": waiting.pop(0)})
        answers.append(answer)
    return item.model_copy(update={"tool_responses": ToolResponses(tool_responses=answers)})


def run_script(services: Services, script: Script) -> list[RunSessionResponse]:
    """Play a script against the demo app, one run_session call per turn; the responses, in order."""
    config = SessionConfig(
        session=f"{APP}/sessions/{script.id}",
        entry_agent=str(APP.child(AgentName, script.entry_agent)) if script.entry_agent else None,
        deployment=str(APP.child(DeploymentName, script.deployment)) if script.deployment else None,
        source=script.source,
    )
    responses: list[RunSessionResponse] = []
    waiting: list[str] = []
    for index, turn in enumerate(script.turns):
        where = f"demo script {script.id}, turn {index + 1}"
        inputs = [_answering(item, waiting, where) for item in turn]
        try:
            request = RunSessionRequest(config=config, inputs=inputs)
            response = services.runtime.sessions.run(request, LOCAL_USER)
        except ApiError as error:
            raise type(error)(f"{where}: {error.message}") from None
        waiting = list(_client_calls(response))
        responses.append(response)
    return responses


def _recorded_turns(services: Services) -> dict[str, int]:
    """Turn count of every stored conversation of the app, by ID."""
    with services.database.reading() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        rows = connection.execute(
            select(conversations.c.conversation_id, conversations.c.turn_count)
            .where(conversations.c.app_pk == app_pk)
        ).all()
    return {row.conversation_id: row.turn_count for row in rows}


def _forget(services: Services, session_id: str) -> None:
    """Drop what an unfinished run of a script left (its session and partial conversation): the demo
    owns its session IDs, and a script only makes sense played from its first turn."""
    with services.database.transaction() as connection:
        app_pk = services.apps.app_pk(connection, APP)
        connection.execute(delete(conversations).where(
            conversations.c.app_pk == app_pk, conversations.c.conversation_id == session_id))
        connection.execute(delete(sessions).where(
            sessions.c.app_pk == app_pk, sessions.c.session_id == session_id))


def load_demo(services: Services, reissue_keys: bool = False) -> str:
    """Put the demo app in place, play every script not yet recorded, import the demo's chat and give its
    demo users keys (those of the last load while they work, new ones when ``reissue_keys``); a summary,
    one line for the app, one for the chat (with the keys), one each for knowledge and analytics."""
    imported = install_app(services)
    install_deployment(services, APP)
    recorded = _recorded_turns(services)
    played = 0
    for script in scripts():
        if recorded.get(script.id, 0) >= len(script.turns):
            continue  # recorded whole (and maybe continued since by someone trying the app: keep that)
        _forget(services, script.id)
        run_script(services, script)
        played += 1
    state = "imported" if imported else "unchanged"
    written, counted, ran = 0, 0, []
    for file in evaluations.FILES:
        written += evaluations.install_evaluations(services, APP, file)
        defined, (dataset_id, _) = evaluations.definitions(APP, file)
        counted += len(defined)
        ran.append(evaluations.run_once(services, APP, dataset_id))
    run = "; ran them in " + ", ".join(name for name in ran if name) if any(ran) else ""
    chat = install_chat(services, reissue_keys)
    knowledge = install_knowledge(services)
    analytics = install_analytics(services)
    return (f"{APP}: app {state}, {counted} evaluations ({written} written{run}), "
            f"{len(scripts())} conversations ({played} new)\n{chat}\n{knowledge}\n{analytics}")
