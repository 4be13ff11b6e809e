"""Scenario runs: a simulated user pursues a scenario's task against the agent runtime, turn by turn.

One session, recorded as one conversation (source EVAL inside a run, SIMULATOR when explored by hand).
The first call carries the scenario's ``variableOverrides`` as a variables input; when the app's
evaluation settings say the AGENT opens, the first turn is the event ``welcome`` and the user answers
it. Each later turn is one input of the simulated user:

- a milestone's ``staticUtterance`` (as text) or ``event`` is sent exactly, on the milestone's first turn;
- otherwise the :class:`~convener.ces.evaluation.simulated_user.SimulatedUser` says something, or stops.

Milestones are pursued in order. After each turn the judge reads the turns since the current milestone
started against its ``successCriteria`` (its ``goal`` when there are none): met, it is COMPLETED and the
next one starts; not met within its ``maxTurnCount`` turns, it stays IN_PROGRESS and the simulation ends
(the user gives up on it); milestones never reached stay NOT_STARTED.

The simulation ends when the user stops, the agent ends the session or fails, the agent waits for a
client tool that no toolExpectation answers, a milestone runs out of turns, or ``maxTurns`` turns (default and at most 100) have run. Tool calls matching a scenario's
``toolExpectation`` (same tool, and every parameter the expectation gives equal; the others are free)
are answered by its ``mockToolResponse`` instead of the tool; with FAKE tool-call behaviour every call
is answered without running a tool (see :class:`ScenarioFakes`).
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
    EvaluationPersona,
    Milestone,
    MilestoneResult,
    MilestoneStatus,
    Scenario,
    ToolExpectation,
)
from convener.ces.evaluation.replay import ShouldStop, never, same_tool
from convener.ces.evaluation.scoring import (
    ObservedTurn,
    compare_args,
    context_of,
    session_end_of,
    transcript_of,
)
from convener.ces.evaluation.simulated_user import Exchange, Say, SimulatedUser, Stop, UserView
from convener.ces.models import (
    EvaluationToolCallBehaviour,
    ScenarioConversationInitiator,
    Source,
    ToolCall,
    Turn,
)
from convener.ces.names import AppName, SessionName
from convener.ces.session_models import Event, RunSessionRequest, SessionConfig, SessionInput
from convener.ces.sessions import SessionService
from convener.llm.judges import Judge

MAX_TURNS = 100
OPENING_EVENT = "welcome"


def matches(expected: ToolCall, call: ToolCall) -> bool:
    """Whether ``call`` is the expected call: the same tool, and each parameter the expectation gives equal."""
    missing, different = compare_args(expected.args or {}, call.args or {})
    return same_tool(expected, call) and not missing and not different


@dataclass
class ScenarioFakes:
    """Answers the agent's tool calls from the scenario's tool expectations instead of running the tools.

    A call matching an expectation's ``expectedToolCall`` (see :func:`matches`) gets that expectation's
    ``mockToolResponse``; other calls run the tool. With FAKE tool-call behaviour no tool runs: a call of a
    tool some expectation names gets that expectation's mock even when the parameters differ, and any
    other call an error saying the scenario mocks no response for it.
    """

    expectations: Sequence[ToolExpectation]
    fake_everything: bool

    def _mock(self, call: ToolCall) -> ToolExpectation | None:
        named = [e for e in self.expectations if e.expected_tool_call is not None and e.mock_tool_response is not None]
        exact = next((e for e in named if matches(e.expected_tool_call, call)), None)  # type: ignore[arg-type]
        if exact is not None or not self.fake_everything:
            return exact
        return next((e for e in named if same_tool(e.expected_tool_call, call)), None)  # type: ignore[arg-type]

    def has_answer(self, call: ToolCall) -> bool:
        return self.fake_everything or self._mock(call) is not None

    def answer(self, call: ToolCall) -> dict[str, Any] | None:
        mock = self._mock(call)
        if mock is not None and mock.mock_tool_response is not None:
            return copy.deepcopy(mock.mock_tool_response.response or {})
        if self.fake_everything:
            label = call.tool or (call.toolset_tool.tool_id if call.toolset_tool else "the tool")
            return {"error": f"FAKE tool calls: the scenario mocks no response for {label}"}
        return None


@dataclass(frozen=True)
class SimulationPlan:
    scenario: Scenario
    persona: EvaluationPersona | None
    initiator: ScenarioConversationInitiator
    tool_calls: EvaluationToolCallBehaviour
    app_version: str | None
    """``…/versions/{version}``, or None for the draft."""
    source: Source = Source.EVAL

    @property
    def max_turns(self) -> int:
        return self.scenario.max_turns or MAX_TURNS


@dataclass
class MilestoneProgress:
    milestone: Milestone
    status: MilestoneStatus = MilestoneStatus.NOT_STARTED
    turns: int = 0
    justification: str = "Not reached: the conversation ended before this milestone started."

    def result(self) -> MilestoneResult:
        return MilestoneResult(milestone=self.milestone, status=self.status, justification=self.justification)


@dataclass
class Simulation:
    """What happened in one simulated conversation, for scoring."""

    session: SessionName
    user: SimulatedUser
    observed: list[ObservedTurn] = field(default_factory=list)
    history: list[Exchange] = field(default_factory=list)
    milestones: list[MilestoneProgress] = field(default_factory=list)
    ended_by: str = ""
    """Why the simulation stopped, in a sentence."""
    user_goal_reached: bool | None = None
    """The simulated user's own view when it stopped: True done, False gave up, None unknown."""
    error: EvaluationErrorInfo | None = None
    """The agent's failure that ended the conversation, if one did."""

    @property
    def conversation(self) -> str:
        return str(self.session.app_name.conversation(self.session.id))

    @property
    def transcript(self) -> str:
        return transcript_of(self.observed)


TurnListener = Callable[[Exchange, Sequence[Exchange]], None]
"""Told of each turn as it happens (the user's input, the agent's replies): ``convener simulate`` prints them."""


class ScenarioSimulator:
    def __init__(self, sessions: SessionService, caller: Caller, user: SimulatedUser, judge: Judge) -> None:
        self.sessions = sessions
        self.caller = caller
        self.user = user
        self.judge = judge

    def run(self, plan: SimulationPlan, app: AppName, session_id: str,
            on_turn: TurnListener | None = None, stop: ShouldStop = never) -> Simulation:
        scenario = plan.scenario
        simulation = Simulation(SessionName(app.project, app.location, app.app, session_id), self.user,
                                milestones=[MilestoneProgress(m) for m in scenario.milestones or ()])
        fakes = ScenarioFakes([e.tool_expectation for e in scenario.scenario_expectations or ()
                               if e.tool_expectation is not None],
                              plan.tool_calls == EvaluationToolCallBehaviour.FAKE)
        config = SessionConfig(session=str(simulation.session), app_version=plan.app_version, source=plan.source)
        setup: list[SessionInput] = [SessionInput(variables=copy.deepcopy(scenario.variable_overrides))] \
            if scenario.variable_overrides else []
        current = 0  # index of the milestone being pursued
        started = False  # whether it has had its first turn
        if plan.initiator == ScenarioConversationInitiator.AGENT:
            opening = Exchange("user", f"[event: {OPENING_EVENT}]")
            if not self._turn(simulation, config, [*setup, SessionInput(event=Event(event=OPENING_EVENT))],
                              opening, fakes, on_turn, user_spoke=False):
                return simulation
            setup = []
        while True:
            if stop():
                simulation.ended_by = "stopped: its run was cancelled"
                break
            if len(simulation.observed) >= plan.max_turns:
                simulation.ended_by = f"the conversation reached maxTurns ({plan.max_turns})"
                break
            progress = simulation.milestones[current] if current < len(simulation.milestones) else None
            first_of_milestone = progress is not None and not started
            if progress is not None and not started:
                progress.status = MilestoneStatus.IN_PROGRESS
                progress.justification = "Started; not completed yet."
                started = True
            inputs, said = self._next_input(simulation, scenario, plan.persona, progress, first_of_milestone)
            if said is None:
                break
            if not self._turn(simulation, config, [*setup, *inputs], said, fakes, on_turn):
                break
            setup = []
            if progress is not None:
                progress.turns += 1
                if self._milestone_met(simulation, progress):
                    current, started = current + 1, False
                elif progress.milestone.max_turn_count and progress.turns >= progress.milestone.max_turn_count:
                    progress.justification = (f"Not completed within its maxTurnCount of "
                                              f"{progress.milestone.max_turn_count} turns; the user gave up.")
                    simulation.ended_by = f"milestone {current + 1} was not completed within its turns"
                    simulation.user_goal_reached = False
                    break
            if simulation.ended_by:
                break
        return simulation

    def _next_input(self, simulation: Simulation, scenario: Scenario, persona: EvaluationPersona | None,
                    progress: MilestoneProgress | None,
                    first_of_milestone: bool) -> tuple[list[SessionInput], Exchange | None]:
        milestone = progress.milestone if progress is not None else None
        if first_of_milestone and milestone is not None:
            if milestone.static_utterance is not None:
                return [SessionInput(text=milestone.static_utterance)], Exchange("user", milestone.static_utterance)
            if milestone.event is not None:
                return [SessionInput(event=milestone.event)], Exchange("user", f"[event: {milestone.event.event}]")
        view = UserView(task=scenario.task or "", facts=tuple(scenario.user_facts or ()), persona=persona,
                        milestone=milestone, milestone_started=first_of_milestone,
                        history=tuple(simulation.history), turn=len(simulation.observed),
                        milestones_done=bool(simulation.milestones) and milestone is None)
        decision = self.user.next(view)
        if isinstance(decision, Stop):
            simulation.ended_by = f"the simulated user stopped: {decision.reason}"
            simulation.user_goal_reached = decision.goal_reached
            return [], None
        assert isinstance(decision, Say)
        return [SessionInput(text=decision.text)], Exchange("user", decision.text)

    def _turn(self, simulation: Simulation, config: SessionConfig, inputs: list[SessionInput], said: Exchange,
              fakes: ScenarioFakes, on_turn: TurnListener | None, user_spoke: bool = True) -> bool:
        """Run one turn and record it; False when the conversation cannot go on. ``user_spoke`` is False for
        the opening event of an agent-initiated conversation: the user has not said anything yet."""
        context = tuple(item for turn in simulation.observed if turn.turn is not None for item in context_of(turn.turn))
        if user_spoke:
            simulation.history.append(said)
        try:
            record = self.sessions.run_turn(RunSessionRequest(config=config, inputs=inputs), self.caller, fakes)
        except ApiError as failure:
            simulation.error = _error(failure.code.name, failure.message, simulation.session)
            simulation.observed.append(ObservedTurn(None, simulation.conversation, context, simulation.error))
            simulation.ended_by = "the agent failed"
            return False
        turn = Turn(messages=[m for m in record.messages if m.chunks], root_span=record.root_span)
        error = _error(record.failure.code, record.failure.message, simulation.session) if record.failure else None
        simulation.observed.append(ObservedTurn(turn, simulation.conversation, context, error))
        replies = [chunk.text for message in turn.messages or () if message.role != "user"
                   for chunk in message.chunks or () if chunk.text]
        agent = Exchange("agent", "\n".join(replies))
        simulation.history.append(agent)
        if on_turn is not None:
            on_turn(said, [agent] if replies else [])
        if error is not None:
            simulation.error = error
            simulation.ended_by = "the agent failed"
            return False
        if record.state.get("ended"):
            simulation.ended_by = f"the {session_end_of(turn) or 'agent ended the session'}"
            return False
        waiting = [call for output in record.outputs if output.tool_calls is not None
                   for call in output.tool_calls.tool_calls or ()]
        if waiting:
            # A client tool (the user's device) the scenario mocks no response for: nobody can answer it.
            label = waiting[0].display_name or waiting[0].tool or "a client tool"
            simulation.ended_by = (f"the agent waits for the client tool {label}, which no toolExpectation of the "
                                   "scenario answers")
            return False
        return True

    def _milestone_met(self, simulation: Simulation, progress: MilestoneProgress) -> bool:
        milestone = progress.milestone
        criteria = (milestone.success_criteria or "").strip() or (milestone.goal or "").strip()
        since = simulation.observed[-progress.turns:]
        verdict = self.judge.criterion(criteria, transcript_of(since))
        if verdict.score == 1:
            progress.status = MilestoneStatus.COMPLETED
            progress.justification = f"Completed after {progress.turns} turn(s). {verdict.explanation}"
            return True
        progress.justification = f"Not completed after {progress.turns} turn(s). {verdict.explanation}"
        return False


def _error(code: str, message: str, session: SessionName) -> EvaluationErrorInfo:
    return EvaluationErrorInfo(
        error_type=ErrorType.RUNTIME_FAILURE, error_message=f"{code}: {message}", session_id=session.id,
        user_facing_error_message="The agent failed during the simulated conversation.",
    )


def milestone_results(simulation: Simulation) -> list[MilestoneResult]:
    return [progress.result() for progress in simulation.milestones]
