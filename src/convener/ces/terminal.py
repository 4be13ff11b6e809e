"""``convener chat``: talk to an app's agents in the terminal, one run_session call per line.

Tool calls, tool responses, agent transfers and variable changes of each turn are shown as the
turn reports them. A client tool call is answered at the prompt, as the app's client would: with a value
of the shape the tool declares (its ``clientFunction.response``), which the prompt shows and checks, and
which reaches the agent as ``{"output": value}``; or with CES's own ``{"output": …}`` / ``{"error": …}``.
The app (and the agent and version asked for) must exist before the first prompt.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from convener.api.errors import ApiError, InvalidArgument
from convener.auth.caller import LOCAL_USER
from convener.ces.client_answers import answer_shape, read_answer
from convener.ces.definitions import AppSnapshot, ClientFunction, Tool
from convener.ces.models import ToolCall
from convener.ces.names import AppName
from convener.ces.requests import GetAppRequest
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.services import Services

HELP = "Type a message. /event NAME sends an event, /vars {\"k\": 1} sets variables, /quit leaves."


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Chat:
    def __init__(self, services: Services, app: AppName, *, session: str | None, entry_agent: str | None,
                 version: str | None, ask: Callable[[str], str], show: Callable[[str], None]) -> None:
        self.services = services
        self.config = SessionConfig(
            session=f"{app}/sessions/{session or 'chat-' + uuid.uuid4().hex[:8]}",
            entry_agent=f"{app}/agents/{entry_agent}" if entry_agent else None,
            app_version=f"{app}/versions/{version}" if version else None,
        )
        self.ask = ask
        self.show = show
        self.app = app
        # Checked now, so that a mistyped name fails before the first prompt rather than at every turn.
        services.apps.get(GetAppRequest(name=str(app)), LOCAL_USER)
        if self.config.entry_agent:
            services.runtime.agents.get(self.config.entry_agent, LOCAL_USER)
        self.snapshot_tools: dict[str, Tool] | None = None
        """The tools of the version the session runs; None when it runs the draft."""
        if self.config.app_version:
            pinned = services.runtime.versions.versions.get(self.config.app_version, LOCAL_USER)
            snapshot = pinned.snapshot or AppSnapshot()
            self.snapshot_tools = {tool.name: tool for tool in snapshot.tools or [] if tool.name}

    def loop(self) -> None:
        self.show(f"session {self.config.session}\n{HELP}")
        while True:
            try:
                line = self.ask("you> ").strip()
            except EOFError:
                return
            if not line:
                continue
            if line in ("/quit", "/exit"):
                return
            item = self._input(line)
            if item is not None and self.turn([item]):
                return

    def _input(self, line: str) -> SessionInput | None:
        if line.startswith("/event "):
            return SessionInput.model_validate({"event": {"event": line[7:].strip()}})
        if line.startswith("/vars "):
            try:
                variables = json.loads(line[6:])
            except ValueError:
                variables = None
            if not isinstance(variables, dict):
                self.show('/vars takes a JSON object, e.g. /vars {"tier": "gold"}')
                return None
            return SessionInput(variables=variables)
        if line.startswith("/"):
            self.show(HELP)
            return None
        return SessionInput(text=line)

    def turn(self, inputs: list[SessionInput]) -> bool:
        """Run one turn (and the turns that answer client tool calls); True when the session ended."""
        try:
            response = self.services.runtime.sessions.run(RunSessionRequest(config=self.config, inputs=inputs), LOCAL_USER)
        except ApiError as error:
            self.show(f"{error.code.name}: {error.message}")
            return False
        waiting = [call for output in response.outputs or () if output.tool_calls is not None
                   for call in output.tool_calls.tool_calls or ()]
        for output in response.outputs or ():
            if output.diagnostic_info is not None:
                self._happenings(output.diagnostic_info.messages or [], {call.id for call in waiting})
        ended = any(output.end_session is not None for output in response.outputs or ())
        answers = [{"id": call.id, "response": self._answer(call)} for call in waiting]
        if ended:
            self.show("(the session has ended)")
            return True
        if answers:
            return self.turn([SessionInput.model_validate({"toolResponses": {"toolResponses": answers}})])
        return False

    def _declared(self, call: ToolCall) -> ClientFunction | None:
        """The client function a call is to: from the version the session runs, else the app's draft."""
        if not call.tool:
            return None
        if self.snapshot_tools is not None:
            tool = self.snapshot_tools.get(call.tool)
        else:
            try:
                tool = self.services.runtime.tools.get(call.tool, LOCAL_USER)
            except ApiError:
                return None  # deleted since the call: take any JSON
        return tool.client_function if tool is not None else None

    def _answer(self, call: ToolCall) -> dict[str, Any]:
        """Ask for the client tool's response until it is JSON of the declared shape (or CES's envelope)."""
        name = call.display_name or "tool"
        declared = self._declared(call)
        if sketch := answer_shape(declared):
            self.show(f"  {name} answers {sketch}")
        while True:
            try:
                return read_answer(self.ask(f"  answer for {name} (JSON; empty for {{}}): "), name, declared)
            except InvalidArgument as problem:
                self.show(f"  {problem.message}")

    def _happenings(self, messages: list[Any], waiting: set[str | None]) -> None:
        """The agents' side of the turn in the order it happened: replies, tool calls and their
        responses, transfers, variables; calls waiting for the client are marked with ``?``."""
        for message in messages:
            if message.role != "agent":
                continue
            for chunk in message.chunks or ():
                if chunk.text is not None:
                    self.show(f"agent> {chunk.text}")
                elif chunk.payload is not None:
                    self.show(f"agent (payload)> {_short(chunk.payload)}")
                elif chunk.tool_call is not None:
                    mark = "?" if chunk.tool_call.id in waiting else "·"
                    client = "client tool " if mark == "?" else ""
                    self.show(f"  {mark} {client}{chunk.tool_call.display_name}({_short(chunk.tool_call.args or {})})")
                elif chunk.tool_response is not None:
                    self.show(f"    → {_short(chunk.tool_response.response or {})}")
                elif chunk.agent_transfer is not None:
                    self.show(f"  ↪ transferred to {chunk.agent_transfer.display_name}")
                elif chunk.updated_variables is not None:
                    self.show(f"  = variables {_short(chunk.updated_variables)}")
