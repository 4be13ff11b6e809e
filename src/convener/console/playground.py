"""The playground: talk to an app in the browser, one ``run_session`` call a form.

A session's page is its recorded conversation (the same transcript and waterfall as a conversation's page),
the client tool calls its last turn left waiting, each with a box for the answer, and a box for the next
message. Every turn goes through the ``run_session`` tool as the signed-in caller, so the session is recorded
like any other; nothing of the session lives in the page: a reload, another tab or another browser shows
the same state, read back from the store.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from convener.api.errors import ApiError, Code, FailedPrecondition, InvalidArgument, describe_validation
from convener.api.names import check_id
from convener.ces.client_answers import answer_shape, read_answer
from convener.ces.definitions import AppSnapshot, AppVersion, ClientFunction, Tool
from convener.ces.models import App, Conversation, ToolCall
from convener.ces.session_models import RunSessionResponse
from convener.console.access import Viewer
from convener.console.agents import AGENTS, DEPLOYMENTS, VERSIONS, PartKind, Row, row, version_label
from convener.console.present import WATERFALL_WIDTH, pretty, turn_views
from convener.console.views import STEPS_MARK, Console, location_of, streamed_steps

START_CHOICES = ("entryAgent", "appVersion", "deployment")
"""The start form's fields: config of a session's first turn (a started session keeps what it started with)."""
MAX_ANSWERED = 8
"""Client tool calls a page answers at once (each is two form fields; a form holds at most 20)."""
CHOICES = 100
"""Agents, versions and deployments offered on the start form."""
SHOWN_PROBLEMS = (Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION, Code.ABORTED, Code.NOT_FOUND,
                  Code.RESOURCE_EXHAUSTED)
"""Errors of a turn that the person fixes from the page (a typo, an ended session, a turn run twice at once,
an agent or version gone, too many pages running work at once): shown above the message box, with what they
typed kept."""


@dataclass(frozen=True)
class WaitingCall:
    """A client tool call of the session's last turn that no response has answered yet."""

    id: str
    name: str
    args: str
    shape: str
    """A sketch of the answer the tool declares (``{"verified": boolean, …}``); empty when it declares none."""


@dataclass(frozen=True)
class Choices:
    """What a new session may start on: the app's agents, versions and deployments."""

    agents: list[Row]
    versions: list[Row]
    deployments: list[Row]


def _app(request: Request) -> str:
    return f"{location_of(request)}/apps/{request.path_params['app']}"


def waiting_calls(conversation: Conversation) -> list[ToolCall]:
    """The tool calls of the last turn without a response in that turn: a server tool's response is recorded in
    the turn that called it, so these are the calls the client must answer."""
    if not conversation.turns:
        return []
    calls: list[ToolCall] = []
    answered: set[str] = set()
    for message in conversation.turns[-1].messages or ():
        for chunk in message.chunks or ():
            if chunk.tool_call is not None and chunk.tool_call.id:
                calls.append(chunk.tool_call)
            elif chunk.tool_response is not None and chunk.tool_response.id:
                answered.add(chunk.tool_response.id)
    return [call for call in calls if call.id not in answered]


def ended(conversation: Conversation) -> bool:
    """Whether the session's last turn ended it (the runtime marks the turn's root span)."""
    if not conversation.turns:
        return False
    root = conversation.turns[-1].root_span
    return root is not None and bool((root.attributes or {}).get("endSession"))


@dataclass
class PlaygroundPages:
    console: Console

    async def call(self, viewer: Viewer, tool: str, arguments: dict[str, Any], response: type[Any]) -> Any:
        """A tool as the viewer calls it (the page's one way to the services)."""
        return await self.console.tools.call(tool, arguments, viewer.caller, response)

    async def start(self, request: Request, viewer: Viewer) -> Response:
        """The form that starts a session: what it runs, the agent it starts with, its first message. It posts
        to a new session's page, whose first turn starts the session with those choices."""
        app_name = _app(request)
        app = await self.call(viewer, "get_app", {"name": app_name}, App)
        return self.console.render(request, "playground_start.html", viewer, app=app, app_name=app_name,
                                   choices=await self._choices(viewer, app_name),
                                   session=f"pg-{secrets.token_hex(6)}")

    async def _choices(self, viewer: Viewer, app_name: str) -> Choices:
        async def rows(kind: PartKind[Any]) -> list[Row]:
            listed = await self.call(viewer, kind.list_tool, {"parent": app_name, "pageSize": CHOICES}, kind.listed)
            return [row(part) for part in getattr(listed, kind.field) or []]

        return Choices(agents=await rows(AGENTS), versions=await rows(VERSIONS), deployments=await rows(DEPLOYMENTS))

    async def session(self, request: Request, viewer: Viewer) -> Response:
        """GET: the session so far and the boxes for the next turn. POST: that turn, the page streamed while it
        runs: the turns so far, each tool call, response, transfer and variable update as it happens, then
        the turn as recorded and the boxes for the next."""
        app_name = _app(request)
        session = check_id(request.path_params["session"], "session")
        conversation = await self._conversation(viewer, app_name, session)
        app = await self.call(viewer, "get_app", {"name": app_name}, App)
        if request.method == "GET":
            return await self._page(request, viewer, app, session, conversation)
        form = await self.console.checked_form(request)
        if isinstance(form, Response):
            return form
        text = form.get("text", "")
        config = self._config(app_name, session, {} if conversation.turns else form)
        calls = [(form.get(f"call-{index}", ""), form.get(f"answer-{index}", ""))
                 for index in range(MAX_ANSWERED) if f"call-{index}" in form]
        try:
            inputs = await self._answers(viewer, conversation, calls) if calls else [{"text": _message(text)}]
            events = self.console.tools.call_reporting("run_session", {"config": config, "inputs": inputs},
                                                       viewer.caller, RunSessionResponse)
            first = await anext(events)
        except ApiError as error:  # refused before the turn ran: the page, with the problem and what was typed
            if error.code not in SHOWN_PROBLEMS:
                raise
            return await self._page(request, viewer, app, session, conversation, text=text, kept=form,
                                    problem=f"{error.code.name}: {error.message}")
        except ValidationError as error:
            return await self._page(request, viewer, app, session, conversation, text=text, kept=form,
                                    problem=f"INVALID_ARGUMENT: {describe_validation(error)}")
        sent = text if not calls else "your client's answer"
        head = await self._page(request, viewer, app, session, conversation, sent=sent, working=True)

        async def finish(answer: RunSessionResponse | None, problem: str) -> Response:
            after = await self._conversation(viewer, app_name, session)
            return await self._page(request, viewer, app, session, after, kept=form, problem=problem,
                                    text="" if answer is not None else text,
                                    shown_before=len(conversation.turns or ()))

        return StreamingResponse(streamed_steps(head, first, events, finish), media_type="text/html; charset=utf-8")

    @staticmethod
    def _config(app_name: str, session: str, form: dict[str, str]) -> dict[str, Any]:
        """The session's config: its name, and on the start form's post the choices it starts with."""
        config: dict[str, Any] = {"session": f"{app_name}/sessions/{session}"}
        for key, collection in zip(START_CHOICES, ("agents", "versions", "deployments"), strict=True):
            if chosen := form.get(key, "").strip():
                config[key] = f"{app_name}/{collection}/{check_id(chosen, key)}"
        return config

    async def _page(self, request: Request, viewer: Viewer, app: App, session: str,
                    conversation: Conversation, *, text: str = "", problem: str = "", sent: str = "",
                    working: bool = False, shown_before: int | None = None,
                    kept: dict[str, str] | None = None) -> Response:
        """The session's page; ``kept``: the form just sent, whose start choices a session not yet started
        keeps for the next try."""
        app_name = app.name or ""
        declared = _Declared(self, viewer, conversation)
        waiting = [] if working else [await self._waiting(declared, call)
                                      for call in waiting_calls(conversation)[:MAX_ANSWERED]]
        turns = turn_views(conversation)
        return self.console.render(
            request, "playground.html", viewer, status=400 if problem else 200, app=app, app_name=app_name,
            session=session, conversation=conversation, recorded=bool(conversation.turns), turns=turns,
            shown_before=len(turns) if shown_before is None else shown_before, bar_width=WATERFALL_WIDTH,
            waiting=waiting, ended=ended(conversation), text=text, problem=problem, sent=sent, working=working,
            steps_mark=STEPS_MARK, start_choices={key: (kept or {}).get(key, "") for key in START_CHOICES},
            runs_on=version_label(conversation.app_version) if conversation.app_version else "the draft")

    async def _conversation(self, viewer: Viewer, app_name: str, session: str) -> Conversation:
        """The session's recording; an empty one before its first turn (the page then starts it)."""
        try:
            conversation: Conversation = await self.call(
                viewer, "get_conversation", {"name": f"{app_name}/conversations/{session}"}, Conversation)
        except ApiError as error:
            if error.code is not Code.NOT_FOUND:
                raise
            return Conversation()
        return conversation

    @staticmethod
    async def _waiting(declared: "_Declared", call: ToolCall) -> WaitingCall:
        return WaitingCall(id=call.id or "", name=call.display_name or (call.tool or "tool").rsplit("/", 1)[-1],
                           args=pretty(call.args or {}), shape=answer_shape(await declared(call)))

    async def _answers(self, viewer: Viewer, conversation: Conversation,
                       calls: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """The input answering the waiting client tool calls with what was typed for each, read against the
        answer each tool declares."""
        waiting = {call.id: call for call in waiting_calls(conversation)}
        declared = _Declared(self, viewer, conversation)
        responses = []
        for call_id, typed in calls:
            call = waiting.get(call_id)
            if call is None:
                raise FailedPrecondition("that tool call is no longer waiting for an answer (answered in another "
                                         "tab?); the page now shows what is")
            name = call.display_name or "the tool"
            try:
                response = read_answer(typed, name, await declared(call))
            except InvalidArgument as error:
                raise InvalidArgument(f"{name}: {error.message}") from None
            responses.append({"id": call_id, "displayName": call.display_name, "response": response})
        return [{"toolResponses": {"toolResponses": responses}}]


@dataclass
class _Declared:
    """The client function a call is to, as the version the session runs declares it (the draft's when it runs
    the draft); None when it is gone, and any JSON is then taken. The version is read once for all the calls of
    a request."""

    pages: PlaygroundPages
    viewer: Viewer
    conversation: Conversation
    _snapshot: AppSnapshot | None = None

    async def __call__(self, call: ToolCall) -> ClientFunction | None:
        if not call.tool:
            return None
        version = self.conversation.app_version
        try:
            if version and not version.endswith("/-"):
                if self._snapshot is None:
                    read: AppVersion = await self.pages.call(self.viewer, "get_app_version", {"name": version},
                                                              AppVersion)
                    self._snapshot = read.snapshot or AppSnapshot()
                tool = next((t for t in self._snapshot.tools or () if t.name == call.tool), None)
            else:
                tool = await self.pages.call(self.viewer, "get_tool", {"name": call.tool}, Tool)
        except ApiError:
            return None
        return tool.client_function if tool is not None else None


def _message(text: str) -> str:
    if not text.strip():
        raise InvalidArgument("type a message first")
    return text
