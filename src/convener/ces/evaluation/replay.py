"""Golden replay: the user's side of a golden conversation, played against the agent runtime.

Two methods, as in CES:

- STABLE (the default): each turn is a fresh session that starts where the golden conversation was:
  the expected earlier turns are its history (``historicalContexts``), the variables they set are set
  again, and it starts on the agent the golden conversation had reached. A turn's result does not
  depend on how the agent handled the turns before it.
- NAIVE: one session for the whole conversation, with no injected context: later turns see what the
  agent really did earlier.

Every replayed turn is recorded as a conversation with source EVAL: a NAIVE replay's as it goes (its next turn
reads the session), a STABLE replay's with the result (``Replayed.unsaved``), in the transaction that stores it.
Tool calls are answered by the
golden's ``mockToolResponse`` expectations when one names the tool; with tool-call behaviour FAKE no
tool runs at all (see :class:`GoldenFakes`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from convener.api.errors import ApiError
from convener.auth.caller import Caller
from convener.ces.evaluation.models import (
    ErrorType,
    EvaluationErrorInfo,
    Golden,
    GoldenTurn,
)
from convener.ces.evaluation.scoring import ObservedTurn, context_of, tool_name
from convener.ces.models import (
    Chunk,
    EvaluationToolCallBehaviour,
    GoldenRunMethod,
    Message,
    Source,
    ToolCall,
    ToolResponse,
    Turn,
)
from convener.ces.names import AppName, SessionName
from convener.ces.session_models import RunSessionRequest, SessionConfig, SessionInput
from convener.ces.sessions import Openings, SessionService, UnsavedTurn

ShouldStop = Callable[[], bool]
"""Asked between turns: True once the work should stop (its run was cancelled)."""


def never() -> bool:
    return False


def same_tool(call: ToolCall | ToolResponse, other: ToolCall | ToolResponse) -> bool:
    """Whether two exchanges name the same tool, by the rule scoring uses (``scoring.tool_name``)."""
    return tool_name(call) is not None and tool_name(call) == tool_name(other)


@dataclass
class GoldenFakes:
    """Answers the replayed agent's tool calls from the golden instead of running the tools.

    A call is answered by this turn's ``mockToolResponse`` expectations of the same tool (the first
    call by the first mock, and so on; the last mock answers any further calls). With FAKE tool-call
    behaviour every call is answered: by a mock, else by the turn's ``toolResponse`` expectations of
    the tool, else by any response of the tool anywhere in the golden, else with an error saying the
    golden has none, so that no real tool ever runs.
    """

    turn: GoldenTurn
    golden: Golden
    fake_everything: bool
    used: dict[int, int] = field(default_factory=dict)

    def _responses(self, call: ToolCall, turns: Sequence[GoldenTurn], conditions: tuple[str, ...]) -> list[ToolResponse]:
        found = []
        for turn in turns:
            for step in turn.steps or ():
                expectation = step.expectation
                if expectation is None:
                    continue
                for condition in conditions:
                    response = getattr(expectation, condition)
                    if response is not None and same_tool(call, response):
                        found.append(response)
        return found

    def _candidates(self, call: ToolCall) -> list[ToolResponse]:
        mocks = self._responses(call, [self.turn], ("mock_tool_response",))
        if mocks or not self.fake_everything:
            return mocks
        return (self._responses(call, [self.turn], ("tool_response",))
                or self._responses(call, self.golden.turns or [], ("mock_tool_response", "tool_response")))

    def has_answer(self, call: ToolCall) -> bool:
        return self.fake_everything or bool(self._candidates(call))

    def answer(self, call: ToolCall) -> dict[str, Any] | None:
        candidates = self._candidates(call)
        if not candidates:
            if self.fake_everything:
                label = call.tool or (call.toolset_tool.tool_id if call.toolset_tool else "the tool")
                return {"error": f"FAKE tool calls: the golden has no response for {label}"}
            return None
        key = id(candidates[0])
        index = self.used.get(key, 0)
        self.used[key] = index + 1
        return copy.deepcopy(candidates[min(index, len(candidates) - 1)].response or {})


def _user_chunks(inputs: Sequence[SessionInput]) -> list[Chunk]:
    chunks = []
    for item in inputs:
        if item.text is not None or item.dtmf is not None:
            chunks.append(Chunk(text=item.text if item.text is not None else item.dtmf))
        elif item.variables is not None:
            chunks.append(Chunk(updated_variables=item.variables))
        elif item.event is not None:
            chunks.append(Chunk(payload={"event": item.event.event or ""}))
        elif item.tool_responses is not None:
            chunks.extend(Chunk(tool_response=r) for r in item.tool_responses.tool_responses or ())
    return chunks


def expected_messages(turn: GoldenTurn) -> list[Message]:
    """The golden turn as a recording would show it: the user's inputs, then what the agent should do."""
    inputs = [step.user_input for step in turn.steps or () if step.user_input is not None]
    agent: list[Chunk] = []
    for step in turn.steps or ():
        if step.agent_transfer is not None:
            agent.append(Chunk(agent_transfer=step.agent_transfer))
        expectation = step.expectation
        if expectation is None or expectation.skip_evaluation:
            continue
        if expectation.tool_call is not None:
            agent.append(Chunk(tool_call=expectation.tool_call))
        elif expectation.tool_response is not None or expectation.mock_tool_response is not None:
            agent.append(Chunk(tool_response=expectation.tool_response or expectation.mock_tool_response))
        elif expectation.agent_response is not None:
            agent.extend(chunk for chunk in expectation.agent_response.chunks or () if chunk.text)
        elif expectation.agent_transfer is not None:
            agent.append(Chunk(agent_transfer=expectation.agent_transfer))
        elif expectation.updated_variables is not None:
            agent.append(Chunk(updated_variables=expectation.updated_variables))
    messages = [Message(role="user", chunks=_user_chunks(inputs) or None)]
    if agent:
        messages.append(Message(role="agent", chunks=agent))
    return messages


@dataclass(frozen=True)
class ReplayPlan:
    golden: Golden
    method: GoldenRunMethod
    tool_calls: EvaluationToolCallBehaviour
    app_version: str | None
    """``…/versions/{version}``, or None for the draft."""


@dataclass(frozen=True)
class Replayed:
    """What a replay observed, turn by turn, and the turns it played but did not store."""

    observed: list[ObservedTurn]
    unsaved: tuple[UnsavedTurn, ...] = ()
    """A STABLE replay's turns: each ran in a session of its own, which no later turn reads, so they are stored
    with the result (``SessionService.save``), not a transaction each."""


class GoldenReplay:
    def __init__(self, sessions: SessionService, caller: Caller, openings: Openings | None = None) -> None:
        self.sessions = sessions
        self.caller = caller
        # A STABLE replay's sessions are its own, begun by its turns: they start from an opening, read once for
        # the replays played together (an evaluation job's group of results) instead of once a turn.
        self.openings = openings if openings is not None else Openings(sessions)

    def run(self, plan: ReplayPlan, app: AppName, session_prefix: str, stop: ShouldStop = never) -> Replayed:
        """Play the golden's turns; ``stop`` is asked before each (a cancelled run stops at its next turn)."""
        stable = plan.method != GoldenRunMethod.NAIVE
        fake_everything = plan.tool_calls == EvaluationToolCallBehaviour.FAKE
        observed: list[ObservedTurn] = []
        unsaved: list[UnsavedTurn] = []
        expected_history: list[Message] = []
        actual_history: list[Message] = []
        variables: dict[str, Any] = {}
        agent: str | None = None
        for index, turn in enumerate(plan.golden.turns or ()):
            if stop():
                break
            agent = _leading_transfer(turn) or agent
            session = SessionName(app.project, app.location, app.app,
                                  f"{session_prefix}-t{index}" if stable else session_prefix)
            inputs = [step.user_input for step in turn.steps or () if step.user_input is not None]
            if stable and variables:
                inputs = [SessionInput(variables=copy.deepcopy(variables)), *inputs]
            config = SessionConfig(
                session=str(session), app_version=plan.app_version, source=Source.EVAL,
                entry_agent=agent if (stable or index == 0) else None,
                historical_contexts=list(expected_history) if stable and expected_history else None,
            )
            context = context_of(Turn(messages=expected_history if stable else actual_history))
            fakes = GoldenFakes(turn, plan.golden, fake_everything)
            recorded = _conversation(session)
            request = RunSessionRequest(config=config, inputs=inputs)
            try:
                if stable:
                    played = self.sessions.play_turn(request, self.caller, fakes,
                                                     opening=self.openings.get(app, plan.app_version))
                    unsaved.append(played)
                    record = played.record
                else:
                    record = self.sessions.run_turn(request, self.caller, fakes)
            except ApiError as failure:
                observed.append(ObservedTurn(None, recorded, tuple(context),
                                             _error(failure.code.name, failure.message, session)))
                if not stable:
                    break  # the session cannot go on
                continue
            replayed = Turn(messages=[m for m in record.messages if m.chunks], root_span=record.root_span)
            error = None
            if record.failure is not None:
                error = _error(record.failure.code, record.failure.message, session)
            observed.append(ObservedTurn(replayed, recorded, tuple(context), error))
            actual_history.extend(replayed.messages or ())
            expected = expected_messages(turn)
            expected_history.extend(expected)
            for message in expected:
                for chunk in message.chunks or ():
                    if chunk.updated_variables:
                        variables.update(chunk.updated_variables)
                    if chunk.agent_transfer is not None and chunk.agent_transfer.target_agent:
                        agent = chunk.agent_transfer.target_agent
            if not stable and record.state.get("ended") and index + 1 < len(plan.golden.turns or ()):
                observed.append(ObservedTurn(None, recorded, (), _error(
                    "FAILED_PRECONDITION", "the agent ended the session before the golden conversation ended",
                    session)))
                break
        return Replayed(observed, tuple(unsaved))


def _leading_transfer(turn: GoldenTurn) -> str | None:
    """An agentTransfer step before the turn's first user input: the agent the turn starts with."""
    for step in turn.steps or ():
        if step.user_input is not None:
            return None
        if step.agent_transfer is not None and step.agent_transfer.target_agent:
            return step.agent_transfer.target_agent
    return None


def _conversation(session: SessionName) -> str:
    return str(session.app_name.conversation(session.id))


def _error(code: str, message: str, session: SessionName) -> EvaluationErrorInfo:
    return EvaluationErrorInfo(
        error_type=ErrorType.RUNTIME_FAILURE, error_message=f"{code}: {message}", session_id=session.id,
        user_facing_error_message="The agent failed during the replay of this turn.",
    )
