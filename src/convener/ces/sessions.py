"""SessionService.RunSession: run a turn of a session and record it as the session's conversation.

A call reads the session (or starts it) and the app it runs (the draft, or an app version), runs the turn with
no transaction open (tools and models may be slow), then writes the session's new state and the new turn (a
row appended to the conversation) in one transaction, conditional on the session not having moved on
meanwhile (else ABORTED, and nothing is written). An evaluation's replay plays a turn and stores it later,
in the transaction that stores its result (``play_turn``, then ``save_all``, with a group of results' turns).
Nothing a turn reads or writes grows with the number of turns before it: the conversation's earlier turns are
read only if an agent looks at the history, and then only the last ones it asks for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, bindparam, select, update

from convener.api.errors import Aborted, ApiError, Code, FailedPrecondition, InvalidArgument
from convener.api.protojson import Timestamp
from convener.auth.caller import Caller
from convener.ces.apps import AppService
from convener.ces.conversations import Appended, ConversationService
from convener.ces.deployments import resolve_deployment
from convener.ces.models import Chunk, Conversation, Message, Source, Turn
from convener.ces.names import AgentName, AppName, SessionName
from convener.ces.runtime.blueprint import Blueprint
from convener.ces.runtime.toolbox import ToolFakes
from convener.ces.runtime.turn import TurnRecord, TurnRunner, new_state
from convener.ces.session_models import RunSessionRequest, RunSessionResponse, SessionConfig, SessionInput
from convener.ces.tables import apps, conversations, sessions
from convener.ces.versions import DRAFT_FINGERPRINT, DraftBlueprints, VersionService
from convener.config import Settings
from convener.llm.base import ModelProvider
from convener.outside.limits import RUN_SESSION_DTMF, RUN_SESSION_TEXT
from convener.progress import Report
from convener.store.database import AnyRow, Database
from convener.store.upsert import upsert

MAX_INPUTS = 100
_APP_AND_SESSION = select(
    apps.c.id.label("found_app_pk"), sessions, conversations.c.id.label("conversation_pk"),
    conversations.c.turn_count.label("conversation_turns"), *DRAFT_FINGERPRINT,
).select_from(apps.outerjoin(sessions, and_(
    sessions.c.app_pk == apps.c.id, sessions.c.session_id == bindparam("session_id"))).outerjoin(conversations, and_(
    conversations.c.app_pk == apps.c.id, conversations.c.conversation_id == bindparam("session_id")))).where(
    apps.c.name == bindparam("name"))
"""A turn's app (its row id), session (null columns before its first turn), recorded conversation (the
session's ID is its conversation's; null before it is recorded) and what its draft is made of, in one statement."""
_APP_DRAFT = select(apps.c.id, *DRAFT_FINGERPRINT).where(apps.c.name == bindparam("name"))
"""An app's row id and what its draft is made of: what an ``Opening`` is read from."""
_INSERTS_SESSIONS = {dialect: upsert(dialect, sessions, ["app_pk", "session_id"], []).returning(
    sessions.c.session_id) for dialect in ("sqlite", "postgresql")}
"""Sessions' first turns: each inserted unless a turn of the same session stored it first; it returns the IDs of
those it inserted (a rowcount would not say which). Executed with a list of rows, SQLAlchemy inserts them in one
statement ("insertmanyvalues")."""
_UPDATE_SESSION = (update(sessions)
                   .where(sessions.c.id == bindparam("b_pk"), sessions.c.revision == bindparam("b_revision"))
                   .values(revision=bindparam("b_next_revision"), state=bindparam("b_state"),
                           ended=bindparam("b_ended"), update_time_us=bindparam("b_update_time_us")))
"""Built once: every turn reads its session, and writes it."""

_ERRORS: dict[str, type[ApiError]] = {cls.code.name: cls for cls in ApiError.__subclasses__()}


def _error(code: str, message: str) -> ApiError:
    """An AgentFailure's code as the ApiError of that code (UNAVAILABLE when the code is not one we raise)."""
    kind = _ERRORS.get(code) or _ERRORS[Code.UNAVAILABLE.name]
    return kind(message)


def _check_input_sizes(inputs: Sequence[SessionInput]) -> None:
    """A turn's words are recorded, so their size is bounded before anything runs or is stored."""
    for index, given in enumerate(inputs):
        for field, value, maximum, limit_name in (
            ("text", given.text, RUN_SESSION_TEXT, "ces.run_session.text"),
            ("dtmf", given.dtmf, RUN_SESSION_DTMF, "ces.run_session.dtmf"),
        ):
            if value is not None and len(value) > maximum:
                raise InvalidArgument(
                    f"inputs[{index}].{field} is {len(value)} characters long: at most {maximum} ({limit_name})"
                )


def happening(chunk: Chunk) -> str | None:
    """What a chunk of the agents' side says happened, in a few words; None for a text reply, which a guardrail
    or callback may still take back before the turn ends (the turn's outputs carry the replies that stand)."""
    if chunk.tool_call is not None:
        return f"tool call {chunk.tool_call.display_name or chunk.tool_call.tool or ''}".rstrip()
    if chunk.tool_response is not None:
        return f"tool response {chunk.tool_response.display_name or chunk.tool_response.tool or ''}".rstrip()
    if chunk.agent_transfer is not None:
        return f"transferred to {chunk.agent_transfer.display_name or chunk.agent_transfer.target_agent}"
    if chunk.updated_variables is not None:
        return "variables updated: " + ", ".join(sorted(chunk.updated_variables))
    if chunk.payload is not None:
        return "payload"
    return None


def _reporting(report: Report) -> Callable[[Chunk], None]:
    count = 0

    def observe(chunk: Chunk) -> None:
        nonlocal count
        if (said := happening(chunk)) is not None:
            count += 1
            report(float(count), None, said)

    return observe


class SessionService:
    def __init__(self, database: Database, settings: Settings, apps: AppService, conversations: ConversationService,
                 versions: VersionService, provider: Callable[[], ModelProvider | None]) -> None:
        self.database = database
        self.settings = settings
        self.apps = apps
        self.conversations = conversations
        self.versions = versions
        self.provider = provider
        self.drafts = DraftBlueprints(database)

    def run(self, request: RunSessionRequest, caller: Caller, report: Report | None = None) -> RunSessionResponse:
        """The turn's outputs; ``report``, when given, hears of each tool call, tool response, transfer and
        variable update the moment it happens (MCP progress notifications; the console's playground)."""
        record = self.run_turn(request, caller, observe=_reporting(report) if report is not None else None)
        if record.failure is not None:
            raise _error(record.failure.code, record.failure.message)
        return RunSessionResponse(outputs=record.outputs)

    def run_turn(self, request: RunSessionRequest, caller: Caller, fakes: ToolFakes | None = None,
                 observe: Callable[[Chunk], None] | None = None) -> TurnRecord:
        """Run and record one turn; an agent's failure is in the record (the turn is recorded all the same).
        ``fakes`` (evaluations) answers tool calls instead of the tools."""
        turn = self.play_turn(request, caller, fakes, observe)
        with self.database.transaction() as connection:
            self.save(connection, turn)
        return turn.record

    def play_turn(self, request: RunSessionRequest, caller: Caller, fakes: ToolFakes | None = None,
                  observe: Callable[[Chunk], None] | None = None, opening: Opening | None = None) -> UnsavedTurn:
        """Run one turn and store nothing: ``save`` stores it, in a transaction of the caller's. A later turn of
        the session does not see it until then.

        ``opening`` (``SessionService.opening``) says that no turn has begun the session (an evaluation's replay plays each turn
        in a session named after its result, a turn's) and what it runs, read once for many such sessions: the
        turn then reads nothing before it runs. (Were the session there after all, its turn would not be
        stored: ``save_all`` inserts a session only where none is.)"""
        config = request.config
        name = SessionName.parse(config.session, "config.session")
        if not request.inputs:
            raise InvalidArgument("inputs: at least one input is required")
        if len(request.inputs) > MAX_INPUTS:
            raise InvalidArgument(f"inputs: at most {MAX_INPUTS} inputs per call")
        _check_input_sizes(request.inputs)
        row: AnyRow | None = None
        recorded: Sequence[Message] | None = None
        if opening is not None and opening.starts(name, config):
            app_pk, blueprint, deployment = opening.app_pk, opening.blueprint, ""
        else:
            # Not one snapshot: the turn's statements need not agree (a draft is made in a reading of its own,
            # the recorded conversation read when looked at), and its reading is then one statement, without
            # BEGIN and COMMIT round trips on PostgreSQL.
            with self.database.reading(snapshot=False) as connection:
                found = connection.execute(_APP_AND_SESSION, {"name": str(name.app_name),
                                                              "session_id": name.id}).first()
                if found is None:
                    raise self.apps.missing(name.app_name)
                app_pk = found.found_app_pk
                row = found if found.id is not None else None
                version, deployment = self._pinned(connection, app_pk, name, row, config)
                blueprint = self._blueprint(connection, app_pk, name.app_name, version, _draft_of(found))
                recorded = (self.conversations.history(found.conversation_pk, found.conversation_turns)
                            if found.conversation_pk is not None else None)
        state = copy.deepcopy(row.state) if row is not None else self._start(blueprint, config.entry_agent, name)
        if state.get("ended"):
            raise FailedPrecondition(f"session {name} has ended; start a new session")
        history: Sequence[Message] = recorded if recorded is not None else list(config.historical_contexts or ())
        record = TurnRunner(blueprint, self.settings, self.provider(), str(name), state, history,
                            fakes, observe).run(request.inputs)
        return UnsavedTurn(app_pk, name, row, blueprint, deployment, record, config, begins=recorded is None)

    def save(self, connection: Connection, turn: UnsavedTurn) -> None:
        """Store a played turn: the session's new state, and the turn in the session's conversation. If the
        session moved on since the turn read it (another turn of it was stored first), nothing is stored:
        ABORTED."""
        if not self.save_all(connection, [turn]):
            raise Aborted(f"session {turn.name} ran another turn at the same time; nothing of this turn was kept, "
                          "retry it")

    def save_all(self, connection: Connection, turns: Sequence[UnsavedTurn]) -> list[UnsavedTurn]:
        """Store played turns as ``save`` does, in order, those whose sessions have not moved on meanwhile (a session
        that did keeps its own turn; conflicts never fail the caller's transaction: an evaluation stores the turns
        of a group of results with them): the turns stored. The sessions they begin are inserted together, a
        statement for each app's, and so are the conversations these begin (``ConversationService.append``)."""
        begun: dict[tuple[int, str], UnsavedTurn] = {}
        for turn in turns:
            if turn.row is None:
                begun.setdefault((turn.app_pk, turn.name.id), turn)
        inserted: set[tuple[int, str]] = set()
        for app_pk, firsts in _by_app(begun.values()).items():
            inserted.update((app_pk, session) for session in self._insert_sessions(connection, app_pk, firsts))
        stored: list[UnsavedTurn] = []
        for turn in turns:
            key = (turn.app_pk, turn.name.id)
            if turn.row is None:
                if begun[key] is turn and key in inserted:
                    stored.append(turn)
            elif self._update_session(connection, turn):
                stored.append(turn)
        for app_pk, recorded in _by_app(stored).items():
            self.conversations.append(connection, app_pk, [appended for turn in recorded
                                                           if (appended := self._appended(turn)) is not None])
        return stored

    @staticmethod
    def _pinned(connection: Connection, app_pk: int, name: SessionName, row: AnyRow | None,
                config: SessionConfig) -> tuple[str, str]:
        """The version the session runs and the deployment it came through: chosen when it starts (a
        deployment's version as the deployment names it then), kept for every later turn."""
        if row is not None:
            if config.app_version and config.app_version != row.app_version:
                raise FailedPrecondition(f"session {name} runs {row.app_version or 'the draft'}; it cannot switch versions")
            if config.deployment and config.deployment != row.deployment:
                raise FailedPrecondition(f"session {name} was started through {row.deployment or 'no deployment'}; "
                                         "it cannot switch deployments")
            return row.app_version, row.deployment
        if not config.deployment:
            return config.app_version or "", ""
        version = resolve_deployment(connection, app_pk, name.app_name, config.deployment)
        if config.app_version and config.app_version != version:
            raise InvalidArgument(f"config.appVersion: deployment {config.deployment} runs "
                                  f"{version or 'the draft'}; give one of config.deployment and config.appVersion")
        return version, config.deployment

    def opening(self, app: AppName, version: str | None) -> Opening:
        """What a new session of ``app`` running ``version`` (the draft when None) starts from, as it is now: one
        statement (two for a version)."""
        with self.database.reading(snapshot=False) as connection:
            found = connection.execute(_APP_DRAFT, {"name": str(app)}).first()
            if found is None:
                raise self.apps.missing(app)
            blueprint = self._blueprint(connection, found.id, app, version, _draft_of(found))
        return Opening(app, version or "", found.id, blueprint)

    def _blueprint(self, connection: Connection, app_pk: int, app: AppName, version: str | None,
                   draft: tuple[Any, ...]) -> Blueprint:
        if version:
            return self.versions.blueprint(connection, app_pk, version, app)
        return self.drafts.get(app_pk, app, draft)

    def _start(self, blueprint: Blueprint, entry_agent: str | None, name: SessionName) -> dict[str, Any]:
        if entry_agent:
            agent = AgentName.parse(entry_agent, "config.entryAgent")
            if agent.app_name != name.app_name or agent.id not in blueprint.agents:
                raise InvalidArgument(f"config.entryAgent: agent {entry_agent} does not exist in this app")
            entry = agent.id
        elif blueprint.app.root_agent:
            entry = AgentName.parse(blueprint.app.root_agent, "app.rootAgent").id
            if entry not in blueprint.agents:
                raise FailedPrecondition(f"the app's rootAgent {blueprint.app.root_agent} does not exist")
        else:
            raise FailedPrecondition(f"app {name.app_name} has no rootAgent; set one with update_app or give config.entryAgent")
        defaults = {
            declaration.name: copy.deepcopy(declaration.schema_.default)
            for declaration in blueprint.app.variable_declarations or ()
            if declaration.name and declaration.schema_ is not None and declaration.schema_.default is not None
        }
        return new_state(entry, defaults)

    @staticmethod
    def _insert_sessions(connection: Connection, app_pk: int, turns: Sequence[UnsavedTurn]) -> set[str]:
        """Insert the sessions ``turns`` begin (each its session's first turn, of app ``app_pk``) with the state each
        leaves, each unless a turn of the same session stored it first: the IDs of those inserted."""
        now = Timestamp.now().to_micros()
        rows = [{"app_pk": app_pk, "session_id": turn.name.id, "app_version": turn.blueprint.version or "",
                 "deployment": turn.deployment, "revision": 1, **_state_values(turn, now)} for turn in turns]
        return set(connection.execute(_INSERTS_SESSIONS[connection.dialect.name], rows).scalars())

    @staticmethod
    def _update_session(connection: Connection, turn: UnsavedTurn) -> bool:
        """Write the session's new state; False (nothing written) if it moved on since the turn read it."""
        row = turn.row
        assert row is not None
        values = _state_values(turn, Timestamp.now().to_micros())
        return bool(connection.execute(_UPDATE_SESSION, {
            "b_pk": row.id, "b_revision": row.revision, "b_next_revision": row.revision + 1,
            **{f"b_{key}": value for key, value in values.items()}}).rowcount)

    @staticmethod
    def _appended(turn: UnsavedTurn) -> Appended | None:
        """The turn as the session's conversation records it; None when nothing happened that a recording would
        show."""
        record, blueprint, config = turn.record, turn.blueprint, turn.config
        if not record.messages:
            return None
        name = turn.name
        start = Conversation(
            start_time=record.root_span.start_time,
            entry_agent=blueprint.agent_name(record.state["entryAgent"]),
            deployment=turn.deployment or None,
            app_version=blueprint.version,
            language_code=(blueprint.app.language_settings.default_language_code
                           if blueprint.app.language_settings else None),
            source=config.source if config.source not in (None, Source.SOURCE_UNSPECIFIED) else Source.LIVE,
        )
        return Appended(name.app_name.conversation(name.id),
                        Turn(messages=[m for m in record.messages if m.chunks], root_span=record.root_span),
                        record.root_span.end_time, start, seen_absent=turn.begins)


def _state_values(turn: UnsavedTurn, now: int) -> dict[str, Any]:
    """The session columns every turn writes: the state it leaves."""
    return {"state": turn.record.state, "ended": bool(turn.record.state.get("ended")), "update_time_us": now}


def _by_app(turns: Iterable[UnsavedTurn]) -> dict[int, list[UnsavedTurn]]:
    """``turns`` by their app's row, in order."""
    apps: dict[int, list[UnsavedTurn]] = {}
    for turn in turns:
        apps.setdefault(turn.app_pk, []).append(turn)
    return apps


@dataclass(frozen=True)
class Opening:
    """What a session no turn has begun runs (``SessionService.opening``): its app's row and the app as the
    version says (``""``: the draft), read once for the turns that begin many sessions."""

    app: AppName
    version: str
    app_pk: int
    blueprint: Blueprint

    def starts(self, name: SessionName, config: SessionConfig) -> bool:
        """Whether a new session ``name`` begun with ``config`` runs this: the same app and version, through no
        deployment (which picks its version when the session begins)."""
        return name.app_name == self.app and (config.app_version or "") == self.version and not config.deployment


class Openings:
    """Openings read when first asked for, then kept: a group of turns played together (an evaluation job's
    results) begins its sessions from the app as its first turn found it."""

    def __init__(self, sessions: SessionService) -> None:
        self.sessions = sessions
        self._read: dict[tuple[AppName, str | None], Opening] = {}

    def get(self, app: AppName, version: str | None) -> Opening:
        key = (app, version)
        if key not in self._read:
            self._read[key] = self.sessions.opening(app, version)
        return self._read[key]


def _draft_of(found: object) -> tuple[Any, ...]:
    """What the draft is made of, as a reading with ``DRAFT_FINGERPRINT`` found it."""
    return tuple(getattr(found, column.name) for column in DRAFT_FINGERPRINT)


@dataclass(frozen=True)
class UnsavedTurn:
    """A turn that ran and is not stored yet (``SessionService.play_turn``): what ``save`` writes."""

    app_pk: int
    name: SessionName
    row: AnyRow | None
    """The session as the turn read it; None when the turn starts it."""
    blueprint: Blueprint
    deployment: str
    record: TurnRecord
    config: SessionConfig
    begins: bool
    """The turn's reading found no recorded conversation: it begins one (without looking for it first)."""
