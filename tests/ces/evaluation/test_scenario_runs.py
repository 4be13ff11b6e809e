"""Scenario evaluations end to end through the MCP tools: a simulated user pursues a task against playbook
agents (no model), and every field of the ScenarioResult is checked where the outcome is known.

Covered:

- known outcomes with the offline user and the offline judge: the expected call made (and mocked), missed,
  a refusal under each userGoalBehavior, a graceful handoff, a user who does not know what is asked, an
  unmocked client tool, a failing agent, hallucinations counted or not, metrics switched off;
- limits: maxTurns, a milestone's maxTurnCount, milestones' staticUtterance and event sent verbatim,
  milestones completed in order;
- runs: the default runCount (5 per scenario, 1 per golden: MIXED), personas taking turns and
  personaRunConfigs' taskCount, SPEED_OPTIMIZED and QUALITY_OPTIMIZED rubrics, evaluation expectations,
  lastCompletedResult and aggregatedMetrics, every result and evaluation against the seed's JSON schemas;
- the app's evaluationSettings: the AGENT opening with the event "welcome", FAKE tool calls;
- the model-driven simulated user and model judge over HTTP against the scripted OpenAI fake (the persona
  and task in its prompts, the rubric re-check of QUALITY_OPTIMIZED only), and a simulator that answers
  garbage (USER_SIMULATION_FAILURE);
- hostile scenario definitions and run requests;
- the CLI: ``convener simulate`` and ``convener eval run`` running scenarios too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner, Result

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.models import Evaluation
from convener.ces.requests import GetConversationRequest
from convener.cli import app as cli
from convener.config import Settings
from convener.demo.loader import install_app
from convener.server import mcp_servers
from convener.services import Services
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    client_tool,
    llm_settings,
    make_app,
    python_tool,
    runtime_settings,
    set_root,
    tool_name,
)
from tests.e2e.conftest import (
    EVALUATION_RESULT_VALIDATOR,
    EVALUATION_VALIDATOR,
    assert_matches,
    call_json,
    error_text,
)
from tests.llm.fake_openai import FakeOpenAI, Reply
from tests.test_cli_eval import APP as DEMO_APP
from tests.test_cli_eval import Store, assert_clean_failure, golden, read_junit

pytestmark = pytest.mark.anyio

LOOKUP = tool_name("lookup_order")
EXPLODE = tool_name("explode")
CONFIRM = tool_name("confirm")
ORDER = "AC-1002"
TRACKING = "JD0146"
"""Only the mock knows this tracking number: the real lookup_order has no order AC-1002."""
MOCK = {"output": {"orderId": ORDER, "status": f"with DHL, tracking number {TRACKING}"}}
STATUS = f"Order {ORDER} is with DHL, tracking number {TRACKING}."
"""The clerk's reply when the mock answers the lookup."""
TASK = "You want to know where your order is."
FACTS = [{"name": "order_number", "value": ORDER}]
ASK_ORDER = "Sure. What is your order number?"
WELCOME = "Hi, I am the shop's assistant."

CLERK: dict[str, Any] = {
    "intents": [
        {"name": "order_status", "patterns": [r"\b(?:order|parcel)\b"],
         "slots": [{"name": "order_id", "pattern": r"\b[A-Z]{2}-\d{4}\b", "required": True, "prompt": ASK_ORDER}],
         "steps": [
             {"callTool": {"tool": "lookup_order", "args": {"order_id": "{{ slots.order_id }}"}, "as": "order"}},
             {"when": "'error' in results.order", "reply": "I could not find order {{ slots.order_id }}."},
             {"when": "'output' in results.order",
              "reply": "Order {{ results.order.output.orderId }} is {{ results.order.output.status }}."},
         ]},
        {"name": "refund", "keywords": ["refund"],
         "steps": [{"reply": "I'm sorry, but I can't refund this blender."}]},
        {"name": "human", "patterns": [r"\b(?:human|person)\b"],
         "steps": [{"reply": "Let me connect you with a human colleague."},
                   {"endSession": {"reason": "handed over to a person"}}]},
        {"name": "dispute", "keywords": ["dispute"],
         "steps": [{"reply": "One moment, please."},
                   {"endSession": {"reason": "billing dispute", "sessionEscalated": True}}]},
        {"name": "birthday", "patterns": [r"\bbirthday\b"],
         "slots": [{"name": "birth_date", "pattern": r"\b\d{4}-\d{2}-\d{2}\b", "required": True,
                    "prompt": "What is your date of birth?"}],
         "steps": [{"reply": "Happy birthday!"}]},
        {"name": "hours", "keywords": ["hours"], "steps": [{"reply": "Our store hours end at 9 pm."}]},
        {"name": "cancel", "keywords": ["cancel"],
         "steps": [{"callTool": {"tool": "confirm", "args": {"question": "Cancel the order?"}, "as": "answer"}},
                   {"reply": "You said {{ results.answer.output }}."}]},
        {"name": "reset", "keywords": ["reset"],
         "steps": [
             {"callTool": {"tool": "explode", "args": {}, "as": "boom"}},
             {"when": "'error' in results.boom", "reply": "The reset failed: {{ results.boom.error }}"},
             {"when": "'output' in results.boom", "reply": "The reset says: {{ results.boom.output }}"},
         ]},
    ],
    "events": {"welcome": [{"reply": WELCOME}], "ping": [{"reply": "Pong."}]},
    "fallback": [{"reply": "Sorry, I only know about orders."}],
}
NAGGER: dict[str, Any] = {"fallback": [{"reply": "Noted. What is your order number?"}]}
"""Asks the same question whatever the user says: only a limit ends the conversation."""


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, worker_concurrency=2)


async def shop(client: Client) -> None:
    """The app under test: the clerk playbook (root) with lookup_order, explode and the client tool confirm, and
    the nagger."""
    await make_app(client)
    await python_tool(client, "lookup_order", "lookup_order")
    await python_tool(client, "explode", "explode")
    await client_tool(client, "confirm", "confirm")
    await agent(client, "clerk", playbookAgent=CLERK, tools=[LOOKUP, EXPLODE, CONFIRM])
    await agent(client, "nagger", playbookAgent=NAGGER)
    await set_root(client, "clerk")


# -- building scenarios ----------------------------------------------------------------------------------


def scenario(task: str = TASK, *, facts: list[dict[str, str]] | None = FACTS, **extra: Any) -> dict[str, Any]:
    """A scenario definition: the task, the user facts (FACTS unless given; None for none) and any other field."""
    body: dict[str, Any] = {"task": task, **extra}
    if facts:
        body["userFacts"] = facts
    return body


def expects_call(order_id: str = ORDER, response: dict[str, Any] = MOCK, tool: str = LOOKUP,
                 **args: Any) -> dict[str, Any]:
    """A toolExpectation: lookup_order(order_id) (or ``tool(**args)``), answered with ``response``."""
    given = args if tool != LOOKUP else {"order_id": order_id, **args}
    return {"toolExpectation": {"expectedToolCall": {"tool": tool, "args": given},
                                "mockToolResponse": {"tool": tool, "response": response}}}


def expects_reply(text: str) -> dict[str, Any]:
    return {"agentResponse": {"role": "agent", "chunks": [{"text": text}]}}


# -- running them ----------------------------------------------------------------------------------------


async def create(client: Client, evaluation_id: str, body: dict[str, Any], **evaluation: Any) -> str:
    """Create a scenario evaluation; return its name."""
    created = await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": evaluation_id, "evaluation": {
        "displayName": evaluation_id, "scenario": body, **evaluation}})
    assert_matches(EVALUATION_VALIDATOR, created)
    return str(created["name"])


async def run(client: Client, names: list[str], **request: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run evaluations, wait, and return the run and its results in the run's order, each schema-checked."""
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names, **request})
    done = await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "60s"})
    assert done["done"] is True, done
    the_run = await call_json(client, "get_evaluation_run", {"name": done["metadata"]["evaluationRun"]})
    results = [await call_json(client, "get_evaluation_result", {"name": name})
               for name in the_run["evaluationResults"]]
    for result in results:
        assert_matches(EVALUATION_RESULT_VALIDATOR, result)
    for name in names:
        assert_matches(EVALUATION_VALIDATOR, await call_json(client, "get_evaluation", {
            "name": name, "lastTenResults": True}))
    return the_run, results


async def run_scenario(client: Client, evaluation_id: str, body: dict[str, Any], *,
                       evaluation: dict[str, Any] | None = None, **request: Any) -> list[dict[str, Any]]:
    """Create a scenario evaluation, run it (once unless ``runCount`` is given; None leaves it unset), wait,
    and return its results in the run's order."""
    name = await create(client, evaluation_id, body, **(evaluation or {}))
    request.setdefault("runCount", 1)
    _, results = await run(client, [name], **{key: value for key, value in request.items() if value is not None})
    return results


async def run_one(client: Client, evaluation_id: str, body: dict[str, Any], **options: Any) -> dict[str, Any]:
    """:func:`run_scenario` once: its only result, which executed to completion."""
    (result,) = await run_scenario(client, evaluation_id, body, **options)
    assert result["executionState"] == "COMPLETED", result.get("errorInfo")
    return result


async def recorded(client: Client, result: dict[str, Any]) -> list[tuple[str, Any]]:
    """The recorded conversation of a scenario result as (role, chunk) pairs, chunk by chunk."""
    conversation = await call_json(client, "get_conversation", {"name": result["scenarioResult"]["conversation"]})
    return [(message["role"], chunk) for turn in conversation["turns"] for message in turn["messages"]
            for chunk in message.get("chunks", [])]


async def said(client: Client, result: dict[str, Any]) -> list[str]:
    """The conversation's texts as ``user: …`` / ``agent: …`` lines; an event (recorded as a user payload) as
    ``user: [event: NAME]``."""
    lines = []
    for role, chunk in await recorded(client, result):
        if "text" in chunk:
            lines.append(f"{role}: {chunk['text']}")
        elif "event" in chunk.get("payload", {}):
            lines.append(f"{role}: [event: {chunk['payload']['event']}]")
    return lines


def attributes(result: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a result's root span: judge, simulatedUser, endedBy, turns..."""
    return dict(result["rootSpan"]["attributes"])


def tool_spans(span: dict[str, Any]) -> list[dict[str, Any]]:
    """The attributes of every TOOL span under ``span``, depth first."""
    found = [span["attributes"]] if span["name"] == "TOOL" else []
    return found + [item for child in span.get("childSpans", []) for item in tool_spans(child)]


# -- known outcomes, offline ---------------------------------------------------------------------------


async def test_the_expected_call_is_made_answered_by_the_mock_and_every_field_scored(client: Client) -> None:
    await shop(client)
    rubric = 'The agent gives the "tracking number".'
    result = await run_one(client, "track", scenario(
        maxTurns=6, rubrics=[rubric], scenarioExpectations=[expects_call(), expects_reply("is with DHL")]))

    # The user opened with the task in the first person and answered the question from its fact; the mock,
    # not the tool (which knows no order AC-1002), answered the call: the reply quotes what only it says.
    assert await said(client, result) == [
        "user: I want to know where my order is.", f"agent: {ASK_ORDER}", f"user: {ORDER}", f"agent: {STATUS}"]
    assert [span["faked"] for span in tool_spans(result["rootSpan"])] == [True]
    assert result["evaluationStatus"] == "PASS"
    assert "outcomeMetadata" not in result and "errorInfo" not in result
    scored = result["scenarioResult"]
    assert scored["task"] == TASK and scored["userFacts"] == FACTS
    tool, response = scored["expectationOutcomes"]
    assert tool["outcome"] == "PASS"
    assert tool["observedToolCall"]["toolCall"]["tool"] == LOOKUP
    assert tool["observedToolCall"]["toolCall"]["args"] == {"order_id": ORDER}
    assert tool["observedToolCall"]["toolResponse"]["response"] == MOCK
    assert tool["observedToolCall"]["toolResponse"]["id"] == tool["observedToolCall"]["toolCall"]["id"]
    assert response == {"expectation": expects_reply("is with DHL"), "outcome": "PASS",
                        "observedAgentResponse": {"role": "agent", "chunks": [{"text": STATUS}]}}
    assert scored["rubricOutcomes"] == [{
        "rubric": rubric, "score": 1.0, "scoreExplanation": "Offline judge: every quoted phrase appears in the "
        "transcript. [QUALITY_OPTIMIZED: judged with the judge's full sampling; an unmet rubric is re-checked.]"}]
    goal = scored["userGoalSatisfactionResult"]
    assert (goal["score"], goal["label"]) == (1, "User task completed")
    assert "lookup_order answered without an error" in goal["explanation"]
    assert goal["explanation"].endswith("The simulation ended because the simulated user stopped: the agent asked "
                                        "nothing more and no milestone is left to pursue.")
    assert scored["taskCompletionResult"] == {"score": 1, "label": "Task completed", "explanation": goal["explanation"]}
    assert scored["allExpectationsSatisfied"] is True and scored["taskCompleted"] is True
    # One hallucination verdict per turn: a question makes no claim (-1); the status is in the mock's response.
    assert [h["score"] for h in scored["hallucinationResult"]] == [-1, 1]
    assert [latency["tool"] for latency in scored["toolCallLatencies"]] == [LOOKUP]
    assert [span["type"] for span in scored["spanLatencies"]] == ["TOOL"]
    assert "milestoneResults" not in scored
    assert attributes(result) == {
        "judge": "offline", "simulatedUser": "offline", "scenarioExecutionMode": "QUALITY_OPTIMIZED", "turns": 2,
        "endedBy": "the simulated user stopped: the agent asked nothing more and no milestone is left to pursue",
        "simulatedUserLimits": attributes(result)["simulatedUserLimits"]}
    assert "does not improvise" in attributes(result)["simulatedUserLimits"]
    assert [span["name"] for span in result["rootSpan"]["childSpans"]] == ["TURN", "TURN"]

    result_id = result["name"].rsplit("/", 1)[-1]
    assert scored["conversation"] == f"{APP}/conversations/eval-{result_id}"
    conversation = await call_json(client, "get_conversation", {"name": scored["conversation"]})
    assert conversation["source"] == "EVAL" and conversation["turnCount"] == 2


async def test_a_missed_call_fails_and_shows_the_closest_call(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "missed", scenario(scenarioExpectations=[expects_call("AC-9999")]))

    (outcome,) = result["scenarioResult"]["expectationOutcomes"]
    assert outcome["outcome"] == "FAIL"
    observed = outcome["observedToolCall"]
    assert observed["toolCall"]["args"] == {"order_id": ORDER}, "the call of the same tool, with other args"
    # The mock answers only the expected call: the real tool ran and knows no such order.
    assert observed["toolResponse"]["response"] == {"error": f"no order {ORDER}"}
    assert [span.get("faked", False) for span in tool_spans(result["rootSpan"])] == [False]
    assert (await said(client, result))[-1] == f"agent: I could not find order {ORDER}."
    scored = result["scenarioResult"]
    assert scored["allExpectationsSatisfied"] is False and scored["taskCompleted"] is False
    assert scored["userGoalSatisfactionResult"]["score"] == 0
    assert result["evaluationStatus"] == "FAIL"


@pytest.mark.parametrize(("behavior", "status"), [
    ({}, "FAIL"),
    ({"userGoalBehavior": "USER_GOAL_SATISFIED"}, "FAIL"),
    ({"userGoalBehavior": "USER_GOAL_REJECTED"}, "PASS"),
    ({"userGoalBehavior": "USER_GOAL_IGNORED"}, "PASS"),
    ({"taskCompletionBehavior": "TASK_REJECTED"}, "PASS"),
])
async def test_a_refusal_fails_unless_the_user_goal_is_to_be_rejected_or_ignored(
        client: Client, behavior: dict[str, str], status: str) -> None:
    await shop(client)
    result = await run_one(client, "refund", scenario("You want a refund for your blender.", facts=None, **behavior))

    assert await said(client, result) == [
        "user: I want a refund for my blender.", "agent: I'm sorry, but I can't refund this blender."]
    scored = result["scenarioResult"]
    goal = scored["userGoalSatisfactionResult"]
    assert (goal["score"], goal["label"]) == (0, "User task not completed")
    assert goal["explanation"].startswith("Offline judge: refused:")
    assert scored["taskCompletionResult"]["score"] == 0
    assert scored["allExpectationsSatisfied"] is True, "no expectation: all of none"
    assert scored["taskCompleted"] is (status == "PASS")
    assert result["evaluationStatus"] == status


async def test_a_handoff_to_a_human_is_graceful(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "human", scenario("You want to talk to a human about a complaint.", facts=None))

    assert await said(client, result) == [
        "user: I want to talk to a human about a complaint.", "agent: Let me connect you with a human colleague."]
    scored = result["scenarioResult"]
    assert scored["userGoalSatisfactionResult"] == {
        "score": 2, "label": "Graceful handoff",
        "explanation": 'Offline judge: handoff: the agent said "Let me connect you with a human colleague." '
                       "The simulation ended because the agent ended the session: handed over to a person."}
    assert scored["taskCompletionResult"]["score"] == 1
    assert scored["taskCompletionResult"]["label"] == "Task completed"
    assert result["outcomeMetadata"] == "GRACEFUL_HANDOFF"
    assert result["evaluationStatus"] == "PASS"
    assert attributes(result)["endedBy"] == "the agent ended the session: handed over to a person"


async def test_an_escalated_end_of_session_is_a_graceful_handoff_whatever_the_agent_says(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "escalated", scenario("You want to dispute a charge on your bill.", facts=None))

    assert await said(client, result) == ["user: I want to dispute a charge on my bill.", "agent: One moment, please."]
    assert attributes(result)["endedBy"] == "the agent ended the session, escalating to a human agent: billing dispute"
    goal = result["scenarioResult"]["userGoalSatisfactionResult"]
    assert (goal["score"], goal["label"]) == (2, "Graceful handoff")
    assert goal["explanation"].startswith('Offline judge: handoff: the agent ended the session escalating to a human '
                                          'agent ("billing dispute")')
    assert result["outcomeMetadata"] == "GRACEFUL_HANDOFF"
    assert result["evaluationStatus"] == "PASS"
    conversation = await call_json(client, "get_conversation", {"name": result["scenarioResult"]["conversation"]})
    assert conversation["turns"][-1]["rootSpan"]["attributes"]["endSession"] == {
        "agent": "clerk", "reason": "billing dispute", "session_escalated": True}


async def test_a_user_who_does_not_know_the_answer_apologises_then_stops(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "birthday", scenario("You want a birthday discount."))

    question = "What is your date of birth?"
    assert await said(client, result) == [
        "user: I want a birthday discount.", f"agent: {question}", "user: Sorry, I don't know that.",
        f"agent: {question}"], "no fact matches, and the order number is not given for a date"
    ended = f'the simulated user stopped: the agent asked again for something the user does not know: "{question}"'
    assert attributes(result)["endedBy"] == ended
    assert attributes(result)["turns"] == 2
    goal = result["scenarioResult"]["userGoalSatisfactionResult"]
    assert goal["score"] == 0 and goal["explanation"].endswith(f"The simulation ended because {ended}.")
    assert result["evaluationStatus"] == "FAIL"


async def test_the_simulation_stops_when_the_agent_waits_for_an_unmocked_client_tool(client: Client) -> None:
    await shop(client)
    task = "You want to cancel your subscription."
    waiting = await run_one(client, "waiting", scenario(task, facts=None))
    assert attributes(waiting)["endedBy"] == ("the agent waits for the client tool confirm, which no toolExpectation "
                                              "of the scenario answers")
    assert attributes(waiting)["turns"] == 1
    assert [next(iter(chunk)) for role, chunk in await recorded(client, waiting) if role == "agent"] == ["toolCall"]
    assert waiting["evaluationStatus"] == "FAIL"

    # A toolExpectation answers the user's device instead: the agent goes on with the mock's answer.
    mocked = await run_one(client, "mocked", scenario(task, facts=None, scenarioExpectations=[
        expects_call(tool=CONFIRM, response={"output": "yes"}, question="Cancel the order?")]))
    assert (await said(client, mocked))[-1] == "agent: You said yes."
    assert mocked["scenarioResult"]["expectationOutcomes"][0]["outcome"] == "PASS"
    assert attributes(mocked)["endedBy"].startswith("the simulated user stopped")


async def test_a_failing_agent_fails_the_result_whatever_the_user_goal_behavior(client: Client) -> None:
    await shop(client)
    await agent(client, "crash", pythonAgent={"entryPoint": f"{FIXTURES}:crashing_agent"})
    await set_root(client, "crash")
    result = await run_one(client, "crash", scenario(userGoalBehavior="USER_GOAL_IGNORED"))

    assert result["executionState"] == "COMPLETED", "the agent failed, not the evaluation"
    error = result["errorInfo"]
    assert error["errorType"] == "RUNTIME_FAILURE"
    assert error["errorMessage"].startswith("FAILED_PRECONDITION: agent crash failed:")
    assert error["sessionId"] == result["scenarioResult"]["conversation"].rsplit("/", 1)[-1]
    assert attributes(result)["endedBy"] == "the agent failed"
    assert result["scenarioResult"]["taskCompleted"] is True, "the user goal is ignored"
    assert result["evaluationStatus"] == "FAIL"


async def test_hallucinations_count_only_when_the_scenario_behaviour_is_enabled(client: Client) -> None:
    await shop(client)
    body = scenario("You want the store hours.", facts=None)
    ignored = await run_one(client, "ignored", body)
    counted = await run_one(client, "counted", body, evaluation={
        "evaluationMetricsThresholdOverride": {"scenarioHallucinationMetricBehavior": "ENABLED"}})

    assert ignored["evaluationMetricsThresholds"]["scenarioHallucinationMetricBehavior"] == "DISABLED"
    assert counted["evaluationMetricsThresholds"]["scenarioHallucinationMetricBehavior"] == "ENABLED"
    for result in (ignored, counted):
        scored = result["scenarioResult"]
        # "9 pm" is nowhere in what the agent was told: a hallucination, though the user got an answer.
        assert [h["score"] for h in scored["hallucinationResult"]] == [0]
        assert scored["userGoalSatisfactionResult"]["score"] == 1
    assert ignored["scenarioResult"]["taskCompleted"] is True and ignored["evaluationStatus"] == "PASS"
    assert counted["scenarioResult"]["taskCompleted"] is False and counted["evaluationStatus"] == "FAIL"


async def test_metrics_switched_off_are_left_out_and_count_as_met(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "switched", scenario(scenarioExpectations=[expects_call("AC-9999")]), evaluation={
        "evaluationMetricsConfigOverride": {"scenarioMetricsConfig": {
            "userGoalMetMetricsConfig": {"enableUserGoalMetMetrics": False},
            "expectationsMetMetricsConfig": {"enableExpectationsMetMetrics": False}}}})

    scored = result["scenarioResult"]
    for left_out in ("expectationOutcomes", "userGoalSatisfactionResult", "taskCompletionResult"):
        assert left_out not in scored
    assert scored["allExpectationsSatisfied"] is True and scored["taskCompleted"] is True
    assert result["evaluationStatus"] == "PASS", "the missed call and the unmet goal are not looked at"


# -- limits ------------------------------------------------------------------------------------------------


async def test_max_turns_stops_the_conversation_exactly_there(client: Client) -> None:
    await shop(client)
    await set_root(client, "nagger")
    for limit in (1, 3):
        result = await run_one(client, f"nag-{limit}", scenario(maxTurns=limit))
        lines = await said(client, result)
        assert lines[0] == "user: I want to know where my order is."
        assert lines[1] == "agent: Noted. What is your order number?"
        assert lines[2:] == [f"user: {ORDER}", "agent: Noted. What is your order number?"] * (limit - 1)
        assert sum(line.startswith("user: ") for line in lines) == limit
        assert attributes(result)["turns"] == limit
        assert attributes(result)["endedBy"] == f"the conversation reached maxTurns ({limit})"
        assert len(result["scenarioResult"]["hallucinationResult"]) == limit
        conversation = await call_json(client, "get_conversation", {"name": result["scenarioResult"]["conversation"]})
        assert conversation["turnCount"] == limit
    # Unlimited, the same agent is cut short by the user instead: three identical answers, then it stops.
    unlimited = await run_one(client, "nag", scenario())
    assert attributes(unlimited)["turns"] == 4
    assert "the agent is looping" in attributes(unlimited)["endedBy"]


async def test_a_milestone_not_met_within_its_turns_ends_the_run_and_fails_it(client: Client) -> None:
    await shop(client)
    result = await run_one(client, "stuck", scenario(maxTurns=8, scenarioExpectations=[expects_call()], milestones=[
        {"goal": "Learn that the order was delivered", "successCriteria": 'The agent says "delivered"',
         "maxTurnCount": 2},
        {"goal": "Say thanks"},
    ]))

    assert attributes(result)["turns"] == 2, "the first milestone's two turns, though maxTurns is 8"
    assert attributes(result)["endedBy"] == "milestone 1 was not completed within its turns"
    scored = result["scenarioResult"]
    assert [(m["status"], m["justification"]) for m in scored["milestoneResults"]] == [
        ("IN_PROGRESS", "Not completed within its maxTurnCount of 2 turns; the user gave up."),
        ("NOT_STARTED", "Not reached: the conversation ended before this milestone started."),
    ]
    assert [m["milestone"]["goal"] for m in scored["milestoneResults"]] == ["Learn that the order was delivered",
                                                                            "Say thanks"]
    # The task itself was completed (the mocked lookup answered): only the milestone fails the result.
    assert scored["taskCompleted"] is True
    assert result["evaluationStatus"] == "FAIL"


async def test_milestones_send_their_static_utterance_and_event_verbatim(client: Client) -> None:
    await shop(client)
    utterance = f"Where is my parcel {ORDER}?"
    result = await run_one(client, "scripted", scenario(maxTurns=4, scenarioExpectations=[expects_call()], milestones=[
        {"goal": "Ask about the parcel", "staticUtterance": utterance, "successCriteria": 'The agent says "DHL"'},
        {"goal": "Ping the agent", "event": {"event": "ping"}, "successCriteria": 'The agent says "Pong"'},
    ]))

    user_inputs = [chunk for role, chunk in await recorded(client, result) if role == "user"]
    assert user_inputs == [{"text": utterance}, {"payload": {"event": "ping"}}]
    assert await said(client, result) == [f"user: {utterance}", f"agent: {STATUS}", "user: [event: ping]",
                                          "agent: Pong."]
    assert [m["status"] for m in result["scenarioResult"]["milestoneResults"]] == ["COMPLETED", "COMPLETED"]
    assert result["evaluationStatus"] == "PASS"


async def test_milestones_are_completed_in_order_in_a_passing_run(client: Client) -> None:
    await shop(client)
    milestones = [
        {"goal": "Ask where the order is", "successCriteria": 'The agent asks for the "order number"'},
        {"goal": "Get the order status", "successCriteria": f'The agent says "{TRACKING}"'},
    ]
    result = await run_one(client, "steps", scenario(scenarioExpectations=[expects_call()], milestones=milestones))

    results = result["scenarioResult"]["milestoneResults"]
    assert [m["milestone"] for m in results] == milestones
    assert [m["status"] for m in results] == ["COMPLETED", "COMPLETED"]
    for item in results:
        assert item["justification"].startswith("Completed after 1 turn(s). Offline judge: every quoted phrase")
    assert attributes(result)["turns"] == 2
    assert result["evaluationStatus"] == "PASS"


async def test_the_offline_user_stops_once_every_milestone_is_completed(client: Client) -> None:
    await shop(client)
    milestone = {"goal": "Ask where the order is", "successCriteria": 'The agent asks for the "order number"'}
    result = await run_one(client, "one-step", scenario(milestones=[milestone]))

    assert [m["status"] for m in result["scenarioResult"]["milestoneResults"]] == ["COMPLETED"]
    assert attributes(result)["turns"] == 1, "the agent's question is left unanswered: nothing is left to pursue"
    assert attributes(result)["endedBy"] == ("the simulated user stopped: every milestone is completed; nothing is "
                                             "left to pursue")


# -- runs ----------------------------------------------------------------------------------------------------


async def persona(client: Client, persona_id: str, display_name: str, personality: str) -> str:
    created = await call_json(client, "create_evaluation_persona", {
        "parent": APP, "evaluationPersonaId": persona_id, "evaluationPersona": {
            "displayName": display_name, "personality": personality, "description": f"{display_name}, for tests."}})
    return str(created["name"])


async def test_by_default_a_scenario_runs_five_times_and_a_golden_once(client: Client) -> None:
    await shop(client)
    track = await create(client, "track", scenario(scenarioExpectations=[expects_call()]))
    golden = (await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "golden", "evaluation": {
        "displayName": "golden", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}}}))["name"]

    the_run, results = await run(client, [track, golden])

    assert the_run["evaluationType"] == "MIXED"
    assert the_run["runCount"] == 5
    assert the_run["progress"] == {"totalCount": 6, "failedCount": 0, "errorCount": 0, "completedCount": 6,
                                   "passedCount": 6}
    scenarios = [r for r in results if r["name"].startswith(f"{track}/results/")]
    goldens = [r for r in results if r["name"].startswith(f"{golden}/results/")]
    assert len(scenarios) == 5 and len(goldens) == 1
    assert all("scenarioResult" in r and "goldenResult" not in r for r in scenarios)
    assert "goldenResult" in goldens[0] and "scenarioResult" not in goldens[0]
    assert [r["displayName"].rsplit(" ", 1)[-1] for r in scenarios] == ["#1", "#2", "#3", "#4", "#5"]
    assert {r["evaluationStatus"] for r in scenarios} == {"PASS"}, "the offline user and judge are deterministic"
    assert len({r["scenarioResult"]["conversation"] for r in scenarios}) == 5, "a conversation each"
    assert "goldenRunMethod" not in scenarios[0] and goldens[0]["goldenRunMethod"] == "STABLE"
    assert the_run["evaluationRunSummaries"][track] == {"passedCount": 5, "failedCount": 0, "errorCount": 0}


async def test_get_evaluation_shows_the_last_scenario_result_and_aggregated_metrics(client: Client) -> None:
    await shop(client)
    passing = await create(client, "passing", scenario(scenarioExpectations=[expects_call()]))
    failing = await create(client, "failing", scenario(scenarioExpectations=[expects_call("AC-9999")]))
    _, results = await run(client, [passing, failing], runCount=2)

    evaluation = await call_json(client, "get_evaluation", {"name": passing, "lastTenResults": True})
    last = evaluation["lastCompletedResult"]
    assert last["name"] in [r["name"] for r in results] and last["scenarioResult"]["taskCompleted"] is True
    assert len(evaluation["lastTenResults"]) == 2
    (metrics,) = evaluation["aggregatedMetrics"]["metricsByAppVersion"]
    assert (metrics["passCount"], metrics["failCount"]) == (2, 0)
    assert metrics["toolMetrics"] == [{"tool": LOOKUP, "passCount": 2, "failCount": 0}]
    # Per turn: the question makes no claim (-1, left out), the answer is supported (1): the mean is 1.0.
    assert metrics["hallucinationMetrics"] == [{"score": 1.0}]
    assert [turn["turnIndex"] for turn in metrics["metricsByTurn"]] == [0, 1]
    assert "hallucinationMetrics" not in metrics["metricsByTurn"][0]
    assert metrics["metricsByTurn"][1]["hallucinationMetrics"] == [{"score": 1.0}]
    assert [m["tool"] for m in metrics["toolCallLatencyMetrics"]] == [LOOKUP]

    (metrics,) = (await call_json(client, "get_evaluation", {"name": failing}))["aggregatedMetrics"][
        "metricsByAppVersion"]
    assert (metrics["passCount"], metrics["failCount"]) == (0, 2)
    assert metrics["toolMetrics"] == [{"tool": LOOKUP, "passCount": 0, "failCount": 2}]
    # "I could not find order AC-1002.": "find" is not in the tool's error, so the offline judge scores it 0.
    assert metrics["hallucinationMetrics"] == [{"score": 0.0}]


async def test_personas_take_turns_across_repetitions(client: Client) -> None:
    await shop(client)
    patient = await persona(client, "a-patient", "Patient", "Polite and patient.")
    hurried = await persona(client, "b-hurried", "Hurried", "Curt; wants the answer now.")
    track = await create(client, "track", scenario(scenarioExpectations=[expects_call()]))
    golden = (await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "golden", "evaluation": {
        "displayName": "golden", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}}}))["name"]

    # No personaRunConfigs: every persona of the app, in ID order, in turn.
    the_run, results = await run(client, [track, golden], runCount=4)
    scenarios = [r for r in results if r["name"].startswith(track)]
    assert [r["persona"]["name"] for r in scenarios] == [patient, hurried, patient, hurried]
    assert scenarios[1]["persona"]["displayName"] == "Hurried"
    assert scenarios[1]["persona"]["personality"] == "Curt; wants the answer now."
    assert all("persona" not in r for r in results if r["name"].startswith(golden)), "a golden plays no persona"
    assert the_run["personaRunConfigs"] == [{"persona": patient, "taskCount": 2}, {"persona": hurried, "taskCount": 2}]

    # personaRunConfigs: each persona taskCount times (once when unset), repetitions taking them in turn.
    configs = [{"persona": hurried, "taskCount": 2}, {"persona": patient}]
    the_run, results = await run(client, [track], personaRunConfigs=configs)
    assert [r["persona"]["name"] for r in results] == [hurried, hurried, patient, hurried, hurried]
    assert the_run["personaRunConfigs"] == configs


async def test_rubrics_say_whether_speed_or_quality_scored_them(client: Client) -> None:
    await shop(client)
    rubrics = ['The agent gives the "tracking number".', 'The agent says "goodbye".']
    body = scenario(rubrics=rubrics, scenarioExpectations=[expects_call()])
    quality = await run_one(client, "quality", body)
    speed = await run_one(client, "speed", {**body, "scenarioExecutionMode": "SPEED_OPTIMIZED"})

    assert attributes(quality)["scenarioExecutionMode"] == "QUALITY_OPTIMIZED"
    assert attributes(speed)["scenarioExecutionMode"] == "SPEED_OPTIMIZED"
    met, unmet = quality["scenarioResult"]["rubricOutcomes"]
    assert (met["rubric"], met["score"], unmet["rubric"], unmet["score"]) == (*rubrics[:1], 1.0, rubrics[1], 0.0)
    assert met["scoreExplanation"].endswith("[QUALITY_OPTIMIZED: judged with the judge's full sampling; an unmet "
                                            "rubric is re-checked.]")
    assert unmet["scoreExplanation"] == ('Offline judge: "goodbye" does not appear in the transcript. [QUALITY_OPTIMIZED: '
                                         "judged with the judge's full sampling; an unmet rubric is re-checked. Not "
                                         "re-checked: the offline judge is deterministic.]")
    for outcome, score in zip(speed["scenarioResult"]["rubricOutcomes"], (1.0, 0.0), strict=True):
        assert outcome["score"] == score
        assert outcome["scoreExplanation"].endswith(
            "[SPEED_OPTIMIZED: judged with one judge sample; rubrics are not re-checked.]")
    # Rubrics are scored, not gating: both results pass on their expectations and user goal.
    assert quality["evaluationStatus"] == speed["evaluationStatus"] == "PASS"


async def test_evaluation_expectations_judge_the_whole_conversation(client: Client) -> None:
    await shop(client)
    names = []
    for expectation_id, prompt in (("tracks", f'The agent gives the tracking number "{TRACKING}".'),
                                   ("apologises", 'The agent says "sorry".')):
        names.append((await call_json(client, "create_evaluation_expectation", {
            "parent": APP, "evaluationExpectationId": expectation_id, "evaluationExpectation": {
                "displayName": expectation_id, "llmCriteria": {"prompt": prompt}}}))["name"])
    result = await run_one(client, "criteria", scenario(scenarioExpectations=[expects_call()],
                                                        evaluationExpectations=names))

    scored = result["scenarioResult"]
    assert [(r["evaluationExpectation"], r["outcome"]) for r in scored["evaluationExpectationResults"]] == [
        (names[0], "PASS"), (names[1], "FAIL")]
    assert scored["expectationOutcomes"][0]["outcome"] == "PASS"
    assert scored["allExpectationsSatisfied"] is False and scored["taskCompleted"] is False
    assert result["evaluationStatus"] == "FAIL"


# -- the app's evaluation settings ------------------------------------------------------------------------


async def evaluation_settings(client: Client, **settings: str) -> None:
    updated = await call_json(client, "update_app", {"app": {"name": APP, "evaluationSettings": settings},
                                                     "updateMask": "evaluationSettings"})
    assert updated["evaluationSettings"] == settings


async def test_when_the_agent_opens_the_welcome_event_comes_first(client: Client) -> None:
    await shop(client)
    greeting = "Hi, I am the shop's assistant. How can I help you?"
    await agent(client, "greeter", playbookAgent={**CLERK, "events": {"welcome": [{"reply": greeting}]}},
                tools=[LOOKUP, EXPLODE, CONFIRM])
    await set_root(client, "greeter")
    await evaluation_settings(client, scenarioConversationInitiator="AGENT")
    result = await run_one(client, "welcomed", scenario(scenarioExpectations=[expects_call()]))

    chunks = await recorded(client, result)
    assert chunks[0] == ("user", {"payload": {"event": "welcome"}}), "the first turn is the event, not the user"
    assert chunks[1] == ("agent", {"text": greeting})
    assert await said(client, result) == [
        "user: [event: welcome]", f"agent: {greeting}", "user: I want to know where my order is.",
        f"agent: {ASK_ORDER}", f"user: {ORDER}", f"agent: {STATUS}"]
    assert attributes(result)["turns"] == 3
    assert result["evaluationStatus"] == "PASS"


async def test_simulate_scenario_scores_one_conversation_and_reports_each_turn(client: Client) -> None:
    await shop(client)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    called = await client.call_tool("simulate_scenario", {"app": APP, "scenario": scenario(
        maxTurns=5, scenarioExpectations=[expects_call()])}, progress_callback=on_progress)
    response = called.structured_content
    assert response is not None and not called.is_error, called
    assert response["evaluationStatus"] == "PASS" and response["turnCount"] == 2
    assert response["simulatedUser"] == "offline" and "userFacts" in response["simulatedUserLimits"]
    assert response["endedBy"].startswith("the simulated user stopped")
    assert_matches(EVALUATION_RESULT_VALIDATOR, {"scenarioResult": response["scenarioResult"]})
    conversation = await call_json(client, "get_conversation", {"name": response["conversation"]})
    assert conversation["source"] == "SIMULATOR"
    assert [(progress, total) for progress, total, _ in seen] == [(1.0, 5.0), (2.0, 5.0)]
    assert seen[1][2] == f"turn 2: user: {ORDER} | agent: {STATUS}"
    # Nothing but the conversation is stored: no evaluation, run or result.
    assert (await call_json(client, "list_evaluation_runs", {"parent": APP})).get("evaluationRuns") is None
    for arguments, code in [({"app": APP, "scenario": {"task": " "}}, "INVALID_ARGUMENT"),
                            ({"app": f"{APP}-gone", "scenario": {"task": "x"}}, "NOT_FOUND"),
                            ({"app": APP, "scenario": {"task": "x"}, "persona": f"{APP}/evaluationPersonas/no"},
                             "NOT_FOUND")]:
        error_text(await client.call_tool("simulate_scenario", arguments), code)


async def test_when_the_agent_opens_with_a_plain_greeting_the_user_still_says_the_task(client: Client) -> None:
    await shop(client)
    await evaluation_settings(client, scenarioConversationInitiator="AGENT")
    result = await run_one(client, "greeted", scenario(scenarioExpectations=[expects_call()]))

    assert (await said(client, result))[:3] == [
        "user: [event: welcome]", f"agent: {WELCOME}", "user: I want to know where my order is."]
    assert result["evaluationStatus"] == "PASS"


async def test_fake_tool_calls_run_no_tool(client: Client) -> None:
    await shop(client)
    # The expectation names a parameter explode() does not get: REAL runs the tool, which blows up.
    body = scenario("You want to reset your router.", facts=None,
                    scenarioExpectations=[expects_call(tool=EXPLODE, response={"output": "router reset"}, force=True)])
    real = await run_one(client, "real", body)
    assert (await said(client, real))[-1] == \
        "agent: The reset failed: tool explode failed: RuntimeError: the warehouse is on fire"
    assert [span.get("faked", False) for span in tool_spans(real["rootSpan"])] == [False]

    await evaluation_settings(client, scenarioEvaluationToolCallBehaviour="FAKE")
    fake = await run_one(client, "fake", body)
    assert (await said(client, fake))[-1] == "agent: The reset says: router reset", "the tool's mock, not the tool"
    assert [span["faked"] for span in tool_spans(fake["rootSpan"])] == [True]
    (outcome,) = fake["scenarioResult"]["expectationOutcomes"]
    assert outcome["outcome"] == "FAIL", "answered by the mock of its tool, but not the expected call"
    assert outcome["observedToolCall"]["toolResponse"]["response"] == {"output": "router reset"}

    # A call no expectation mocks gets an error under FAKE instead of running.
    unmocked = await run_one(client, "unmocked", scenario())
    responses = [chunk["toolResponse"]["response"] for role, chunk in await recorded(client, unmocked)
                 if "toolResponse" in chunk]
    assert responses == [{"error": f"FAKE tool calls: the scenario mocks no response for {LOOKUP}"}]

    # The run's config.toolCallBehaviour wins over the app's setting.
    overridden = await run_one(client, "overridden", body, config={"toolCallBehaviour": "REAL"})
    assert "the warehouse is on fire" in (await said(client, overridden))[-1]
    assert overridden["config"] == {"toolCallBehaviour": "REAL"}


# -- the model-driven simulated user and judge, over HTTP ------------------------------------------------------


@asynccontextmanager
async def model_client(database_url: str, tmp_path: Path, fake: FakeOpenAI) -> AsyncIterator[Client]:
    """A client of a server whose model provider is the scripted fake: the simulated user and the judge ask it;
    the agents under test are playbooks and never do."""
    services = Services.open(llm_settings(database_url, tmp_path, fake.base_url, worker_concurrency=2))
    try:
        async with Client(mcp_servers(services)["/mcp"]) as client:
            yield client
    finally:
        services.close()


def customer(messages: list[dict[str, Any]]) -> str:
    """The scripted customer: asks where the order is, gives its number when asked (as fenced JSON, which is
    accepted too), then is done. Decided from the conversation, so any number of conversations can share it."""
    last = str(messages[-1]["content"])
    if last.startswith("(The conversation starts."):
        return json.dumps({"action": "reply", "text": "Hi, where is my order?", "reason": ""})
    if "order number" in last:
        return "Sure:\n```json\n" + json.dumps({"action": "reply", "text": f"It is {ORDER}.", "reason": ""}) + "\n```"
    return json.dumps({"action": "done", "text": "", "reason": "I got the tracking number."})


class Script:
    """Answers the fake's requests: the simulated user's with ``user`` (given the messages), the judge's questions
    with fixed verdicts (a rubric's re-check with ``recheck``); it keeps every request by kind."""

    QUESTIONS = (("Rate how consistent", "similarity"), ("justified by the CONTEXT", "hallucination"),
                 ("meets the CRITERION", "criterion"), ("simulated USER's TASK was accomplished", "user_goal"))

    def __init__(self, user: Callable[[list[dict[str, Any]]], str], goal: int = 2, criterion: int = 1,
                 recheck: int = 1) -> None:
        self.user = user
        self.verdicts = {"similarity": 4, "hallucination": 1, "criterion": criterion, "user_goal": goal}
        self.recheck = recheck
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        kind = "user" if "role-play a CUSTOMER" in str(messages[0]["content"]) else next(
            (kind for words, kind in self.QUESTIONS if words in str(messages[-1]["content"])), "unknown")
        with self._lock:
            self.requests.setdefault(kind, []).append(body)
        if kind == "user":
            return Reply(text=self.user(messages))
        assert kind != "unknown", f"unexpected request: {str(messages[-1]['content'])[:200]}"
        score = self.recheck if "(Re-check:" in str(messages[-1]["content"]) else self.verdicts[kind]
        return Reply(text=json.dumps({"score": score, "explanation": f"the fake's {kind} verdict"}))


async def test_the_model_user_and_judge_drive_and_score_the_conversation(
        database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    script = Script(customer, goal=2)
    fake_openai.responder = script
    async with model_client(database_url, tmp_path, fake_openai) as client:
        await shop(client)
        patient = await persona(client, "patient", "Patient Pat", "Polite and patient.")
        result = await run_one(client, "modelled", scenario(
            rubrics=['The agent gives the "tracking number".'], scenarioExpectations=[expects_call()]),
            personaRunConfigs=[{"persona": patient}])

        assert await said(client, result) == [
            "user: Hi, where is my order?", f"agent: {ASK_ORDER}", f"user: It is {ORDER}.",
            f"agent: {STATUS}"]
    assert attributes(result) == {"judge": "model", "simulatedUser": "model", "scenarioExecutionMode": "QUALITY_OPTIMIZED",
                                  "turns": 2, "endedBy": "the simulated user stopped: I got the tracking number.",
                                  "userSaysGoalReached": True}
    scored = result["scenarioResult"]
    goal = scored["userGoalSatisfactionResult"]
    assert (goal["score"], goal["label"]) == (2, "Graceful handoff"), "the fake judge's verdict, not the offline one"
    assert goal["explanation"].startswith("Model judge: the fake's user_goal verdict (3 of 3 samples gave 2)")
    assert result["outcomeMetadata"] == "GRACEFUL_HANDOFF" and result["evaluationStatus"] == "PASS"
    assert scored["rubricOutcomes"][0]["score"] == 1.0
    assert [h["score"] for h in scored["hallucinationResult"]] == [1, 1]
    assert result["persona"]["name"] == patient

    # Three questions to the simulated user, each with the persona, the task and the facts; the roles reversed.
    assert len(script.requests["user"]) == 3
    for body in script.requests["user"]:
        system = body["messages"][0]["content"]
        assert "Name: Patient Pat" in system and "Personality (behave like this): Polite and patient." in system
        assert f"Your task (what you want from the agent): {TASK}" in system
        assert f"- order_number: {ORDER}" in system
    last = script.requests["user"][-1]["messages"]
    assert [(m["role"], m["content"]) for m in last[1:]] == [
        ("assistant", "Hi, where is my order?"), ("user", ASK_ORDER), ("assistant", f"It is {ORDER}."),
        ("user", STATUS)]


async def test_a_simulator_answering_garbage_errors_the_result_and_the_run_completes(
        database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    replies = iter(["I'd rather not say.", json.dumps({"action": "dance"})])
    script = Script(lambda messages: next(replies))
    fake_openai.responder = script
    async with model_client(database_url, tmp_path, fake_openai) as client:
        await shop(client)
        garbled = await create(client, "garbled", scenario())
        golden = (await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "golden", "evaluation": {
            "displayName": "golden", "golden": {"turns": [{"steps": [{"userInput": {"text": "hi"}}]}]}}}))["name"]
        the_run, results = await run(client, [garbled, golden], runCount=1)

    assert the_run["state"] == "COMPLETED"
    assert the_run["progress"] == {"totalCount": 2, "failedCount": 0, "errorCount": 1, "completedCount": 1,
                                   "passedCount": 1}
    (errored,) = [r for r in results if r["name"].startswith(garbled)]
    assert errored["executionState"] == "ERROR" and "scenarioResult" not in errored
    assert errored["errorInfo"]["errorType"] == "USER_SIMULATION_FAILURE"
    message = errored["errorInfo"]["errorMessage"]
    assert message.startswith("UNAVAILABLE: the simulated user (openai/fake-model) gave no usable reply in 2 attempts")
    assert "not a JSON object" in message and '"dance"' in message
    assert len(script.requests["user"]) == 2, "asked again once, then given up"


# -- hostile definitions and requests ---------------------------------------------------------------------------

OTHER_TOOL = tool_name("lookup_order", "projects/acme/locations/global/apps/other")
HOSTILE_SCENARIOS: list[tuple[dict[str, Any], str]] = [
    ({"task": ""}, "scenario.task"),
    ({"task": "   "}, "scenario.task"),
    ({"task": "x" * 20_001}, "scenario.task"),
    ({"maxTurns": 101}, "scenario.maxTurns"),
    ({"maxTurns": -1}, "scenario.maxTurns"),
    ({"userFacts": [{"name": f"f{i}", "value": "v"} for i in range(101)]}, "scenario.userFacts"),
    ({"userFacts": [{"value": ORDER}]}, "scenario.userFacts[0]"),
    ({"userFacts": [{"name": "  ", "value": ORDER}]}, "scenario.userFacts[0]"),
    ({"userFacts": [{"name": "order_number", "value": "x" * 4_001}]}, "scenario.userFacts[0].value"),
    ({"rubrics": [""]}, "scenario.rubrics[0]"),
    ({"rubrics": ["ok", "  "]}, "scenario.rubrics[1]"),
    ({"scenarioExpectations": [{}]}, "scenario.scenarioExpectations[0]"),
    ({"scenarioExpectations": [{"toolExpectation": {"expectedToolCall": {"tool": LOOKUP, "args": {}}}}]},
     "scenario.scenarioExpectations[0].toolExpectation"),
    ({"scenarioExpectations": [{"agentResponse": {"role": "agent", "chunks": []}}]},
     "scenario.scenarioExpectations[0].agentResponse"),
    ({"milestones": [{"successCriteria": "anything"}]}, "scenario.milestones[0].goal"),
    ({"milestones": [{"goal": "a", "staticUtterance": "hi", "event": {"event": "ping"}}]}, "scenario.milestones[0]"),
    ({"milestones": [{"goal": "a", "staticUtterance": " "}]}, "scenario.milestones[0].staticUtterance"),
    ({"milestones": [{"goal": "a", "event": {}}]}, "scenario.milestones[0].event"),
    ({"milestones": [{"goal": "a", "maxTurnCount": 101}]}, "scenario.milestones[0].maxTurnCount"),
    ({"scenarioExpectations": [expects_call(tool=OTHER_TOOL)]},
     "scenario.scenarioExpectations[0].toolExpectation.expectedToolCall.tool"),
    ({"scenarioExpectations": [expects_call(tool=tool_name("missing"))]},
     "scenario.scenarioExpectations[0].toolExpectation.expectedToolCall.tool"),
    ({"evaluationExpectations": [f"{APP}/evaluationExpectations/missing"]}, "scenario.evaluationExpectations[0]"),
    ({"rubrics": ["ok"] * 101}, "scenario.rubrics"),
    ({"milestones": [{"goal": "a"}] * 101}, "scenario.milestones"),
]


async def test_hostile_scenario_definitions_are_refused_and_nothing_is_written(client: Client) -> None:
    await shop(client)
    for index, (change, field) in enumerate(HOSTILE_SCENARIOS):
        body = {**scenario(), **change}
        text = error_text(await client.call_tool("create_evaluation", {
            "parent": APP, "evaluationId": f"hostile-{index}", "evaluation": {"displayName": f"h{index}", "scenario": body}}),
            "INVALID_ARGUMENT")
        assert field in text, (change if len(str(change)) < 200 else field, text)
    assert (await call_json(client, "list_evaluations", {"parent": APP})).get("evaluations") is None

    # The limits themselves are allowed.
    await create(client, "limits", scenario("x" * 20_000, facts=[{"name": "order_number", "value": "9" * 4_000}],
                                            maxTurns=100, rubrics=["ok"] * 100))

    # An update is checked the same way, and leaves the evaluation as it was.
    name = await create(client, "fine", scenario())
    text = error_text(await client.call_tool("update_evaluation", {
        "evaluation": {"name": name, "scenario": {**scenario(), "maxTurns": 101}}, "updateMask": "scenario"}),
        "INVALID_ARGUMENT")
    assert "scenario.maxTurns" in text
    assert "maxTurns" not in (await call_json(client, "get_evaluation", {"name": name}))["scenario"]


async def test_hostile_run_requests_are_refused_and_start_nothing(client: Client) -> None:
    await shop(client)
    name = await create(client, "fine", scenario())
    patient = await persona(client, "patient", "Patient", "Polite.")
    hostile: list[tuple[dict[str, Any], str, str]] = [
        ({"personaRunConfigs": [{"persona": f"{APP}/evaluationPersonas/nobody"}]}, "NOT_FOUND", "personaRunConfigs[0]"),
        ({"personaRunConfigs": [{"persona": patient}, {"persona": "projects/x/locations/y/apps/z/evaluationPersonas/p"}]},
         "NOT_FOUND", "personaRunConfigs[1]"),
        ({"personaRunConfigs": [{"persona": patient, "taskCount": -1}]}, "INVALID_ARGUMENT",
         "personaRunConfigs[0].taskCount"),
        ({"personaRunConfigs": [{"persona": patient, "taskCount": 101}]}, "INVALID_ARGUMENT",
         "personaRunConfigs[0].taskCount"),
        ({"personaRunConfigs": [{"taskCount": 1}]}, "INVALID_ARGUMENT", "personaRunConfigs[0].persona"),
        ({"runCount": 101}, "INVALID_ARGUMENT", "runCount"),
    ]
    for request, code, field in hostile:
        text = error_text(await client.call_tool("run_evaluation", {"app": APP, "evaluations": [name], **request}), code)
        assert field in text, text
    assert (await call_json(client, "list_evaluation_runs", {"parent": APP})).get("evaluationRuns") is None
    assert (await call_json(client, "list_evaluation_results", {"parent": name})).get("evaluationResults") is None


# -- the command line --------------------------------------------------------------------------------------------


@pytest.fixture
def demo(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    """The CLI's store (see tests/test_cli_eval.py): the demo app with a passing and a failing golden evaluation."""
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG", "CONVENER_WORKER_CONCURRENCY",
                     "CONVENER_LLM_PROVIDER"):
        monkeypatch.delenv(variable, raising=False)
    made = Store(database_url, tmp_path)
    with made.services() as services:
        install_app(services)
        for evaluation_id, display_name, order_id in (("status", "Order status", "AC-1001"),
                                                      ("wrong", "Wrong order id", "AC-9999")):
            services.runtime.evaluations.create_evaluation(DEMO_APP, evaluation_id, golden(display_name, order_id),
                                                           LOCAL_USER)
    return made


def simulate(store: Store, *args: str) -> Result:
    return CliRunner().invoke(cli, ["simulate", DEMO_APP, *args, *store.options])


def test_simulate_prints_the_conversation_and_a_verdict(demo: Store) -> None:
    result = simulate(demo, "--task", "You want to know where your order is.", "--fact", "order_number=AC-1002",
                      "--max-turns", "6")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == ["user", "agent", "user", "agent"]
    assert lines[0] == "user: I want to know where my order is."
    assert lines[2] == "user: AC-1002", "the fact given with --fact"
    assert "tracking number JD0146000023" in lines[3]
    report = result.stderr.splitlines()
    assert report[-1] == "verdict: PASS"
    assert "user goal: 1 User task completed: Offline judge: completed" in result.stderr
    assert report[0].startswith("ended: the simulated user stopped") and report[0].endswith("(2 turns)")
    (conversation,) = [line.removeprefix("conversation: ") for line in report if line.startswith("conversation: ")]
    with demo.services() as services:
        recorded_conversation = services.conversations.get(GetConversationRequest(name=conversation), LOCAL_USER)
    assert recorded_conversation.source == "SIMULATOR", "explored by hand, not an evaluation run"
    assert recorded_conversation.turn_count == 2


@pytest.mark.parametrize("fact", ["novalue", "=AC-1002", " =x"])
def test_simulate_refuses_a_fact_without_a_name_or_value_separator(demo: Store, fact: str) -> None:
    result = simulate(demo, "--task", "You want to know where your order is.", "--fact", fact)
    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "--fact" in result.stderr


def test_simulate_refuses_a_hostile_scenario_and_an_unknown_persona(demo: Store) -> None:
    assert_clean_failure(simulate(demo, "--task", "   "), "INVALID_ARGUMENT")
    assert "scenario.task" in simulate(demo, "--task", "   ").stderr
    unknown = simulate(demo, "--task", "x", "--persona", "nobody")
    assert_clean_failure(unknown, "NOT_FOUND")
    assert f"{DEMO_APP}/evaluationPersonas/nobody does not exist" in unknown.stderr
    no_version = simulate(demo, "--task", "x", "--version", "v404")
    assert_clean_failure(no_version, "NOT_FOUND")
    assert f"{DEMO_APP}/versions/v404" in no_version.stderr


def test_eval_run_without_evaluation_runs_the_scenarios_too(demo: Store) -> None:
    with demo.services() as services:
        services.runtime.evaluations.create_evaluation(DEMO_APP, "parcel", Evaluation.model_validate({
            "displayName": "Where is my parcel", "scenario": scenario(
                facts=[{"name": "order_number", "value": "AC-1002"}], maxTurns=6,
                scenarioExpectations=[expects_call("AC-1002", tool=f"{DEMO_APP}/tools/lookup_order", response={
                    "output": {"orderId": "AC-1002", "status": "SHIPPED", "summary": "Wool throw blanket",
                               "carrier": "DHL", "tracking": "JD0146000023", "estimatedDelivery": "2026-11-04"}})],
            )}), LOCAL_USER)

    result = demo.run("run", "--app", DEMO_APP, "--fail-under", "0")

    assert result.exit_code == 0, result.output
    assert "7 results: 6 passed, 1 failed, 0 errors" in result.stdout, "two goldens once, the scenario five times"
    scenario_lines = [line for line in result.stdout.splitlines() if "Where is my parcel" in line]
    assert [line.split("  ")[0] for line in scenario_lines] == [f"Where is my parcel #{n}" for n in range(1, 6)]
    assert all("PASS" in line and "2/2" in line for line in scenario_lines), "two turns each, passed"
    assert "skipped" not in result.stderr

    report = demo.tmp_path / "scenarios.xml"
    only = demo.run("run", "--app", DEMO_APP, "--evaluation", "parcel", "--junit", str(report))
    assert only.exit_code == 0, only.output
    cases = read_junit(report).findall("./testsuite/testcase")
    assert [case.get("name") for case in cases] == [f"Where is my parcel #{n}" for n in range(1, 6)]
    assert not read_junit(report).findall(".//failure")


async def test_the_model_judge_re_checks_an_unmet_rubric_in_quality_mode_only(
        database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    script = Script(customer, goal=1, criterion=0, recheck=1)
    fake_openai.responder = script
    rubric = 'The agent gives the "tracking number".'
    body = scenario(rubrics=[rubric], scenarioExpectations=[expects_call()])
    async with model_client(database_url, tmp_path, fake_openai) as client:
        await shop(client)
        quality = await run_one(client, "quality", body)
        asked = {kind: len(requests) for kind, requests in script.requests.items()}
        speed = await run_one(client, "speed", {**body, "scenarioExecutionMode": "SPEED_OPTIMIZED"})
        asked_again = {kind: len(requests) - asked.get(kind, 0) for kind, requests in script.requests.items()}

    (outcome,) = quality["scenarioResult"]["rubricOutcomes"]
    assert outcome["score"] == 0.5, "unmet (0), then met on the re-check (1): the mean"
    assert "Re-check: Model judge: the fake's criterion verdict" in outcome["scoreExplanation"]
    assert outcome["scoreExplanation"].endswith("an unmet rubric is re-checked.]")
    # Three samples per question: the rubric and its re-check, the user goal, two turns' hallucination.
    assert asked == {"user": 3, "criterion": 6, "user_goal": 3, "hallucination": 6}

    (outcome,) = speed["scenarioResult"]["rubricOutcomes"]
    assert outcome["score"] == 0.0
    assert outcome["scoreExplanation"].endswith("[SPEED_OPTIMIZED: judged with one judge sample; rubrics are not "
                                                "re-checked.]")
    assert asked_again == {"user": 3, "criterion": 1, "user_goal": 1, "hallucination": 2}
    assert {body["temperature"] for body in script.requests["criterion"][-1:]} == {0.0}
    assert attributes(speed)["scenarioExecutionMode"] == "SPEED_OPTIMIZED"
