"""Evaluation runs end to end through the MCP tools: golden replay against the agent runtime, every
metric checked against numbers worked out by hand, run methods, tool-call behaviours, progress,
cancellation and recovery after a crash."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from sqlalchemy import delete, func, select, update

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER, Caller
from convener.ces.evaluation import executor
from convener.ces.evaluation.executor import MAX_ATTEMPTS, PlayResult, results_per_job
from convener.ces.tables import evaluation_results, evaluation_runs
from convener.config import Settings
from convener.jobs.tables import jobs
from convener.longrunning.models import Operation
from convener.server import mcp_servers
from convener.services import Services
from tests.ces.agents_under_test import CALLABLES
from tests.ces.session_helpers import (
    APP,
    FIXTURES,
    agent,
    agent_name,
    make_app,
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

pytestmark = pytest.mark.anyio

LOOKUP = tool_name("lookup_order")


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, worker_concurrency=2)


async def _checker_app(client: Client) -> None:
    await make_app(client)
    for tool_id, function in (("lookup_order", "lookup_order"), ("slow", "slow")):
        await call_json(client, "create_tool", {"parent": APP, "toolId": tool_id,
                                                "tool": {"pythonFunction": {"entryPoint": f"{FIXTURES}:{function}"}}})
    await agent(client, "helper", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await agent(client, "checker", pythonAgent={"entryPoint": f"{FIXTURES}:order_checker"}, tools=[LOOKUP],
                childAgents=[agent_name("helper")])
    await agent(client, "echo", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await agent(client, "sleepy", pythonAgent={"entryPoint": f"{FIXTURES}:sleepy_agent"}, tools=[tool_name("slow")])
    await set_root(client, "checker")


def said(text: str, comparison: str | None = "EQUALS") -> dict[str, Any]:
    expectation: dict[str, Any] = {"agentResponse": {"role": "agent", "chunks": [{"text": text}]}}
    if comparison:
        expectation["comparisonType"] = comparison
    return {"expectation": expectation}


def called(order_id: str, **extra: Any) -> dict[str, Any]:
    return {"expectation": {"toolCall": {"tool": LOOKUP, "args": {"order_id": order_id, **extra}}}}


def user(text: str) -> dict[str, Any]:
    return {"userInput": {"text": text}}


async def evaluate(client: Client, evaluation_id: str, turns: list[list[dict[str, Any]]], **run: Any) -> dict[str, Any]:
    """Create a golden evaluation, run it once, wait, and return its (only) result."""
    extra = run.pop("evaluation", {})
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": evaluation_id, "evaluation": {
        "displayName": evaluation_id, "golden": {"turns": [{"steps": steps} for steps in turns]}, **extra}})
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": [f"{APP}/evaluations/{evaluation_id}"],
                                                           **run})
    done = await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "60s"})
    assert done["done"] is True, done
    results = await call_json(client, "list_evaluation_results", {"parent": f"{APP}/evaluations/{evaluation_id}"})
    assert len(results["evaluationResults"]) == 1
    result: dict[str, Any] = results["evaluationResults"][0]
    assert_matches(EVALUATION_RESULT_VALIDATOR, result)
    evaluation = await call_json(client, "get_evaluation", {"name": f"{APP}/evaluations/{evaluation_id}",
                                                            "lastTenResults": True})
    assert_matches(EVALUATION_VALIDATOR, evaluation)
    return result


def outcomes(turn: dict[str, Any]) -> list[str]:
    return [item["outcome"] for item in turn["expectationOutcome"]]


async def test_a_golden_turn_is_scored_metric_by_metric(client: Client) -> None:
    await _checker_app(client)
    result = await evaluate(client, "two-orders", [[
        user("check B-2 and A-1"),
        called("A-1"),
        called("C-3"),
        {"expectation": {"toolResponse": {"tool": LOOKUP, "response": {
            "output": {"orderId": "B-2", "status": "processing", "total": 10}}}}},
        said("I checked 2 orders."),
        {"expectation": {"noToolCalls": True, "note": "Check_No_Tools"}},
    ]])

    assert result["executionState"] == "COMPLETED"
    assert result["evaluationStatus"] == "FAIL"
    turn = result["goldenResult"]["turnReplayResults"][0]
    expectations = turn["expectationOutcome"]
    # The agent called lookup_order(B-2) then lookup_order(A-1).
    # toolCall A-1: candidates B-2 (0/1 parameters equal) and A-1 (1/1): the best, A-1, scores 1.0 >= 1.0.
    assert expectations[0]["toolInvocationResult"]["parameterCorrectnessScore"] == 1.0
    assert expectations[0]["observedToolCall"]["args"] == {"order_id": "A-1"}
    # toolCall C-3: only B-2 is left: order_id differs, 0/1 = 0.0 < 1.0.
    assert expectations[1]["toolInvocationResult"] == {
        "parameterCorrectnessScore": 0.0, "outcome": "FAIL",
        "explanation": expectations[1]["toolInvocationResult"]["explanation"]}
    assert "order_id" in expectations[1]["toolInvocationResult"]["explanation"]
    # toolResponse of B-2: the recorded response equals the expected one.
    assert expectations[2]["outcome"] == "PASS"
    assert expectations[2]["observedToolResponse"]["response"]["output"]["orderId"] == "B-2"
    # EQUALS: the reply is exactly the expected text.
    assert expectations[3]["outcome"] == "PASS"
    assert expectations[3]["observedAgentResponse"] == {"role": "agent", "chunks": [{"text": "I checked 2 orders."}]}
    # noToolCalls: two calls were made.
    assert expectations[4]["outcome"] == "FAIL"
    assert expectations[4]["expectation"]["note"] == "Check_No_Tools"
    # Both expected tools were invoked: 2/2 = 1.0; in order: LCS([lo, lo], [lo, lo]) = 2, / 2 = 1.0; no extra call.
    assert turn["overallToolInvocationResult"] == {"toolInvocationScore": 1.0, "outcome": "PASS"}
    assert turn["toolOrderedInvocationScore"] == 1.0
    # No semantic agentResponse expectation: no turn-level similarity. Hallucination is computed, not counted.
    assert "semanticSimilarityResult" not in turn
    assert turn["hallucinationResult"]["score"] in (-1, 0, 1)
    assert [latency["tool"] for latency in turn["toolCallLatencies"]] == [LOOKUP, LOOKUP]
    assert [span["type"] for span in turn["spanLatencies"]] == ["TOOL", "TOOL"]
    assert turn["turnLatency"].endswith("s")
    conversation = await call_json(client, "get_conversation", {"name": turn["conversation"]})
    assert conversation["source"] == "EVAL"


async def test_parameter_thresholds_apply_at_expectation_then_evaluation_level(client: Client) -> None:
    await _checker_app(client)
    # The agent calls lookup_order(order_id=A-1); the expectation also wants "verbose": 1 of 2 parameters = 0.5.
    turns = [[user("check A-1"), called("A-1", verbose=True)]]
    default = await evaluate(client, "default", turns)
    assert default["goldenResult"]["turnReplayResults"][0]["expectationOutcome"][0]["toolInvocationResult"][
        "parameterCorrectnessScore"] == 0.5
    assert default["evaluationStatus"] == "FAIL", "0.5 < the default threshold 1.0"

    lenient = await evaluate(client, "evaluation-level", turns, evaluation={"evaluationMetricsThresholdOverride": {
        "goldenEvaluationMetricsThresholds": {"expectationLevelMetricsThresholds": {
            "toolInvocationParameterCorrectnessThreshold": 0.5}}}})
    assert lenient["evaluationStatus"] == "PASS", "0.5 >= 0.5"
    assert lenient["evaluationMetricsThresholds"]["goldenEvaluationMetricsThresholds"][
        "expectationLevelMetricsThresholds"] == {"toolInvocationParameterCorrectnessThreshold": 0.5}

    step = called("A-1", verbose=True)
    step["expectation"]["expectationLevelMetricsThresholdsOverride"] = {"toolInvocationParameterCorrectnessThreshold": 0.6}
    strict = await evaluate(client, "expectation-level", [[user("check A-1"), step]],
                            evaluation={"evaluationMetricsThresholdOverride": {"goldenEvaluationMetricsThresholds": {
                                "expectationLevelMetricsThresholds": {"toolInvocationParameterCorrectnessThreshold": 0.5}}}})
    assert strict["evaluationStatus"] == "FAIL", "the expectation's own 0.6 wins over the evaluation's 0.5"


async def test_an_extra_tool_call_fails_the_turn_unless_allowed(client: Client) -> None:
    await _checker_app(client)
    turns = [[user("check B-2 and A-1"), called("A-1")]]
    # One expected tool, invoked: 1/1 = 1.0; but B-2 matches no expectation: an extra call.
    failing = await evaluate(client, "extra-fail", turns)
    turn = failing["goldenResult"]["turnReplayResults"][0]
    assert turn["overallToolInvocationResult"] == {"toolInvocationScore": 1.0, "outcome": "FAIL"}
    assert failing["evaluationStatus"] == "FAIL"

    allowed = await evaluate(client, "extra-allow", turns, evaluation={"evaluationMetricsThresholdOverride": {
        "goldenEvaluationMetricsThresholds": {"toolMatchingSettings": {"extraToolCallBehavior": "ALLOW"}}}})
    assert allowed["goldenResult"]["turnReplayResults"][0]["overallToolInvocationResult"]["outcome"] == "PASS"
    assert allowed["evaluationStatus"] == "PASS"


async def test_tools_invoked_out_of_order_score_by_longest_common_subsequence(client: Client) -> None:
    await _checker_app(client)
    # Expected A-1, B-2, C-3 (one tool, so the sequence is [lo, lo, lo]); the agent calls B-2 and A-1 only.
    # Invoked: 2 of 3 expected = 0.667 < 1.0; ordered: LCS([lo, lo, lo], [lo, lo]) = 2 -> 2/3.
    result = await evaluate(client, "ordered", [[user("check B-2 and A-1"), called("A-1"), called("B-2"),
                                                  called("C-3")]])
    turn = result["goldenResult"]["turnReplayResults"][0]
    assert turn["overallToolInvocationResult"]["toolInvocationScore"] == pytest.approx(2 / 3)
    assert turn["overallToolInvocationResult"]["outcome"] == "FAIL"
    assert turn["toolOrderedInvocationScore"] == pytest.approx(2 / 3)
    assert turn["toolInvocationScore"] == pytest.approx(2 / 3), "the deprecated field mirrors the overall score"


async def test_stable_replays_each_turn_afresh_and_naive_in_one_session(client: Client) -> None:
    await _checker_app(client)
    await set_root(client, "echo")
    # echo_agent counts its turns in its session: a fresh session per turn says "echo 1" every time.
    turns = [[user("a"), said("echo 1: a")], [user("b"), said("echo 1: b")]]
    stable = await evaluate(client, "stable", turns)
    assert stable["goldenRunMethod"] == "STABLE"
    assert stable["evaluationStatus"] == "PASS"
    conversations = [turn["conversation"] for turn in stable["goldenResult"]["turnReplayResults"]]
    assert len(set(conversations)) == 2, "one session, so one conversation, per turn"

    naive = await evaluate(client, "naive", turns, goldenRunMethod="NAIVE")
    assert naive["goldenRunMethod"] == "NAIVE"
    second = naive["goldenResult"]["turnReplayResults"][1]
    assert second["expectationOutcome"][0]["observedAgentResponse"]["chunks"] == [{"text": "echo 2: b"}]
    assert naive["evaluationStatus"] == "FAIL"
    assert len({turn["conversation"] for turn in naive["goldenResult"]["turnReplayResults"]}) == 1


async def test_stable_starts_a_turn_on_the_agent_the_golden_reached_with_its_variables(client: Client) -> None:
    await _checker_app(client)
    turns = [
        [user("check A-1 remember handoff"), {"expectation": {"updatedVariables": {"remembered": ["A-1"]}}},
         {"expectation": {"agentTransfer": {"targetAgent": agent_name("helper")}}}],
        # The helper (echo_agent) answers turn 2 in a fresh session, since the golden transferred to it.
        [user("hi"), said("echo 1: hi")],
    ]
    result = await evaluate(client, "handoff", turns)
    first, second = result["goldenResult"]["turnReplayResults"]
    assert outcomes(first) == ["PASS", "PASS"]
    assert first["expectationOutcome"][1]["observedAgentTransfer"]["targetAgent"] == agent_name("helper")
    assert outcomes(second) == ["PASS"]
    conversation = await call_json(client, "get_conversation", {"name": second["conversation"]})
    user_chunks = conversation["turns"][0]["messages"][0]["chunks"]
    assert user_chunks[0] == {"updatedVariables": {"remembered": ["A-1"]}}, "the golden's variables are set again"


async def test_mock_tool_responses_answer_calls_and_fake_mode_runs_no_tool(client: Client) -> None:
    await _checker_app(client)
    lost = {"output": {"orderId": "A-1", "status": "lost"}}
    mocked = await evaluate(client, "mocked", [[
        user("check A-1"),
        {"expectation": {"mockToolResponse": {"tool": LOOKUP, "response": lost}}},
        {"expectation": {"toolResponse": {"tool": LOOKUP, "response": lost}}},
    ]])
    turn = mocked["goldenResult"]["turnReplayResults"][0]
    assert outcomes(turn) == ["SKIPPED", "PASS"], "a mock is a setup, not a check; the call got the mocked response"
    assert turn["expectationOutcome"][0]["observedToolResponse"]["response"] == lost

    from_golden = [[user("check B-2"), {"expectation": {"toolResponse": {"tool": LOOKUP, "response": {
        "output": {"orderId": "B-2", "status": "as the golden says"}}}}}]]
    real = await evaluate(client, "real", from_golden)
    assert outcomes(real["goldenResult"]["turnReplayResults"][0]) == ["FAIL"], "the real tool says processing"
    fake = await evaluate(client, "fake", from_golden, config={"toolCallBehaviour": "FAKE"})
    assert outcomes(fake["goldenResult"]["turnReplayResults"][0]) == ["PASS"]
    assert fake["config"] == {"toolCallBehaviour": "FAKE"}

    unknown = await evaluate(client, "fake-unknown", [[user("check A-1"), called("A-1")]],
                             config={"toolCallBehaviour": "FAKE"})
    turn = unknown["goldenResult"]["turnReplayResults"][0]
    conversation = await call_json(client, "get_conversation", {"name": turn["conversation"]})
    responses = [chunk["toolResponse"]["response"] for message in conversation["turns"][0]["messages"]
                 for chunk in message.get("chunks", []) if "toolResponse" in chunk]
    assert responses == [{"error": f"FAKE tool calls: the golden has no response for {LOOKUP}"}]


async def test_run_count_repeats_and_the_run_counts_its_results(client: Client) -> None:
    await _checker_app(client)
    for evaluation_id, order in (("passes", "A-1"), ("fails", "Z-9")):
        await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": evaluation_id, "evaluation": {
            "displayName": evaluation_id, "golden": {"turns": [{"steps": [user("check A-1"), called(order)]}]}}})
    names = [f"{APP}/evaluations/passes", f"{APP}/evaluations/fails"]
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names, "runCount": 3,
                                                           "displayName": "nightly"})
    assert operation["metadata"]["progress"]["totalCount"] == 6
    done = await call_json(client, "wait_operation", {"name": operation["name"]})
    assert done["metadata"]["progress"] == {"totalCount": 6, "failedCount": 3, "errorCount": 0, "completedCount": 6,
                                            "passedCount": 3}
    run = await call_json(client, "get_evaluation_run", {"name": done["response"]["evaluationRun"]})
    assert run["state"] == "COMPLETED" and run["runCount"] == 3 and run["displayName"] == "nightly"
    assert run["evaluationRunSummaries"] == {
        names[0]: {"passedCount": 3, "failedCount": 0, "errorCount": 0},
        names[1]: {"passedCount": 0, "failedCount": 3, "errorCount": 0},
    }
    assert len(run["evaluationResults"]) == 6

    across = await call_json(client, "list_evaluation_results", {
        "parent": f"{APP}/evaluations/-", "filter": f'evaluation_run = "{run["name"]}"', "pageSize": 4})
    assert len(across["evaluationResults"]) == 4 and across["nextPageToken"]
    rest = await call_json(client, "list_evaluation_results", {
        "parent": f"{APP}/evaluations/-", "filter": f'evaluation_run = "{run["name"]}"', "pageSize": 4,
        "pageToken": across["nextPageToken"]})
    listed = [r["name"] for r in across["evaluationResults"] + rest["evaluationResults"]]
    assert sorted(listed) == sorted(run["evaluationResults"])
    failed = await call_json(client, "list_evaluation_results", {
        "parent": f"{APP}/evaluations/-", "filter": 'evaluation_status = FAIL'})
    assert {r["name"].split("/results/")[0] for r in failed["evaluationResults"]} == {names[1]}

    evaluation = await call_json(client, "get_evaluation", {"name": names[1], "lastTenResults": True})
    metrics = evaluation["aggregatedMetrics"]["metricsByAppVersion"][0]
    assert (metrics["passCount"], metrics["failCount"]) == (0, 3)
    assert metrics["toolMetrics"] == [{"tool": LOOKUP, "passCount": 0, "failCount": 3}]
    assert len(evaluation["lastTenResults"]) == 3
    assert evaluation["evaluationRuns"] == [run["name"]]

    runs = await call_json(client, "list_evaluation_runs", {"parent": APP})
    assert [r["name"] for r in runs["evaluationRuns"]] == [run["name"]]
    await call_json(client, "delete_evaluation_run", {"name": run["name"]})
    assert (await call_json(client, "list_evaluation_results", {"parent": names[0]})).get("evaluationResults") is None


async def test_progress_is_notified_while_waiting(client: Client, services: Services) -> None:
    await _checker_app(client)
    await set_root(client, "sleepy")
    names = []
    for index in range(3):
        names.append(f"{APP}/evaluations/nap-{index}")
        await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"nap-{index}", "evaluation": {
            "displayName": f"nap {index}", "golden": {"turns": [{"steps": [user("0.2"), said("awake")]}]}}})
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names})
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    result = await client.call_tool("wait_operation", {"name": operation["name"], "timeout": "60s"},
                                    progress_callback=on_progress)
    assert result.structured_content and result.structured_content["done"] is True
    assert seen, "no progress notification arrived"
    assert seen[-1] == (3.0, 3.0)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen), "progress only goes forward"


@pytest.mark.parametrize("batched", [False, True], ids=["a job each", "one job"])
async def test_cancel_stops_queued_results_and_ends_the_operation_cancelled(
        client: Client, monkeypatch: pytest.MonkeyPatch, batched: bool) -> None:
    if batched:  # the six results in one job: those after the one playing are cancelled, not played
        monkeypatch.setattr(executor, "JOBS_PER_RUN", 1)
    await _checker_app(client)
    await set_root(client, "sleepy")
    names = []
    for index in range(6):
        names.append(f"{APP}/evaluations/nap-{index}")
        await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"nap-{index}", "evaluation": {
            "displayName": f"nap {index}", "golden": {"turns": [{"steps": [user("0.3"), said("awake")]}]}}})
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names})
    await call_json(client, "cancel_operation", {"name": operation["name"]})
    done = await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "30s"})
    assert done["done"] is True
    assert done["error"]["code"] == 1
    assert done["metadata"]["cancelRequested"] is True
    run = await call_json(client, "get_evaluation_run", {"name": done["metadata"]["evaluationRun"]})
    assert run["state"] == "CANCELLED"
    results = await call_json(client, "list_evaluation_results", {"parent": f"{APP}/evaluations/-"})
    states = [r["executionState"] for r in results["evaluationResults"]]
    assert "CANCELLED" in states and set(states) <= {"CANCELLED", "COMPLETED"}
    progress = run["progress"]
    assert progress["completedCount"] == states.count("COMPLETED")
    assert progress["totalCount"] == 6
    # Cancelling again, or a finished operation, changes nothing.
    await call_json(client, "cancel_operation", {"name": operation["name"]})
    assert (await call_json(client, "get_operation", {"name": operation["name"]}))["error"]["code"] == 1


async def _queue_checks(settings: Settings, count: int) -> tuple[dict[str, Any], list[int]]:
    """Queue a run of ``count`` passing golden evaluations from a process that runs nothing: its operation and
    its results' rows, in order."""
    first = Services.open(settings.model_copy(update={"worker": False}))
    try:
        async with Client(mcp_servers(first)["/mcp"]) as client:
            await _checker_app(client)
            names = []
            for index in range(count):
                names.append(f"{APP}/evaluations/e{index}")
                await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"e{index}", "evaluation": {
                    "displayName": f"e{index}", "golden": {"turns": [{"steps": [user(f"check A-{index}"),
                                                                                called(f"A-{index}")]}]}}})
            operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": names})
        with first.database.reading() as connection:
            pks = list(connection.execute(select(evaluation_results.c.id).order_by(
                evaluation_results.c.create_time_us, evaluation_results.c.id)).scalars())
    finally:
        first.close()
    return operation, pks


def _finished_elsewhere(settings: Settings, operation: dict[str, Any]) -> tuple[Operation, list[Any]]:
    """Play the queued run on a server of its own to its end: its operation, its results' rows in order (and no
    job left held)."""
    second = Services.open(settings)
    try:
        second.jobs.start()
        done = second.operations.wait(operation["name"], "60s", LOCAL_USER)
        assert done.done is True
        with second.database.reading() as connection:
            rows = list(connection.execute(select(evaluation_results).order_by(evaluation_results.c.id)))
        second.jobs.stop()
        assert second.jobs.holdings() == []
    finally:
        second.close()
    return done, rows


def _only_the_second_given_up(done: Operation, rows: list[Any]) -> None:
    """Four results of which the second was interrupted on its job's last attempt: it alone ends ERROR."""
    assert (done.metadata or {})["progress"] == {"totalCount": 4, "failedCount": 0, "errorCount": 1,
                                                 "completedCount": 3, "passedCount": 3}
    assert [row.execution_state for row in rows] == ["COMPLETED", "ERROR", "COMPLETED", "COMPLETED"]
    assert f"interrupted {MAX_ATTEMPTS} times" in rows[1].body["errorInfo"]["errorMessage"]


async def test_a_run_whose_worker_died_is_finished_by_another_and_nothing_is_recorded_twice(
        database_url: str, tmp_path: Path) -> None:
    settings = runtime_settings(database_url, tmp_path, worker_concurrency=1)
    operation, pks = await _queue_checks(settings, 4)
    first = Services.open(settings.model_copy(update={"worker": False}))
    try:
        # As a worker killed mid-result leaves them: one result on its first attempt, one on its last; their jobs
        # are held by the dead worker, and their leases have lapsed.
        with first.database.transaction() as connection:
            job_of = {row.payload["result"]: row.id for row in connection.execute(select(jobs))}
            for pk, attempts in ((pks[0], 1), (pks[1], MAX_ATTEMPTS)):
                connection.execute(update(evaluation_results).where(evaluation_results.c.id == pk).values(
                    execution_state="RUNNING", attempts=attempts))
                connection.execute(update(jobs).where(jobs.c.id == job_of[pk]).values(
                    worker="dead-host:1:abc", attempts=attempts, lease_until_us=1))
    finally:
        first.close()
    done, rows = _finished_elsewhere(settings, operation)
    _only_the_second_given_up(done, rows)
    assert rows[0].attempts == 2, "the interrupted first attempt counts"


def test_a_large_run_gives_each_job_a_few_results_and_a_small_run_one() -> None:
    assert [results_per_job(count) for count in (0, 1, 63, 64, 96, 200, 255, 256, 10_000)] == [1, 1, 1, 2, 3, 6, 7, 8, 8]
    job = PlayResult.model_validate({"result": 7, "more": [8, 9], "app_pk": 1, "run_id": "r"})
    assert job.results() == (7, 8, 9)
    assert PlayResult.model_validate({"result": 7}).results() == (7,), "a job queued before jobs played several"


async def test_a_large_run_plays_a_few_results_a_job_each_recorded_once(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "JOBS_PER_RUN", 2)  # 7 results: three a job
    settings = runtime_settings(database_url, tmp_path, worker_concurrency=2)
    operation, pks = await _queue_checks(settings, 7)
    services = Services.open(settings)
    try:
        with services.database.reading() as connection:
            queued = [PlayResult.model_validate(row.payload) for row in connection.execute(
                select(jobs).order_by(jobs.c.id))]
        assert [job.results() for job in queued] == [tuple(pks[0:3]), tuple(pks[3:6]), (pks[6],)]
        services.jobs.start()
        done = services.operations.wait(operation["name"], "60s", LOCAL_USER)
        assert done.done is True and done.error is None
        assert (done.metadata or {})["progress"] == {"totalCount": 7, "failedCount": 0, "errorCount": 0,
                                                     "completedCount": 7, "passedCount": 7}
        with services.database.reading() as connection:
            rows = connection.execute(select(evaluation_results).order_by(evaluation_results.c.id)).all()
        assert [(row.execution_state, row.evaluation_status, row.attempts) for row in rows] == [
            ("COMPLETED", "PASS", 1)] * 7
        services.jobs.stop()
        assert services.jobs.holdings() == []
    finally:
        services.close()


async def test_a_job_whose_run_is_gone_plays_nothing_and_ends(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(executor, "JOBS_PER_RUN", 1)  # the three results in one job
    settings = runtime_settings(database_url, tmp_path, worker_concurrency=1)
    _, pks = await _queue_checks(settings, 3)
    services = Services.open(settings)
    try:
        with services.database.transaction() as connection:  # as a deleted app takes its runs and results along
            connection.execute(delete(evaluation_results).where(evaluation_results.c.id.in_(pks)))
            connection.execute(delete(evaluation_runs))
        services.jobs.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with services.database.reading() as connection:
                if connection.execute(select(func.count()).select_from(jobs)).scalar_one() == 0:
                    break
            time.sleep(0.1)
        services.jobs.stop()
        with services.database.reading() as connection:
            assert connection.execute(select(func.count()).select_from(jobs)).scalar_one() == 0
            assert connection.execute(select(func.count()).select_from(evaluation_results)).scalar_one() == 0
        assert services.jobs.holdings() == []
        failures = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
        assert failures == [], "the job ended as a failure instead of finding nothing to do"
    finally:
        services.close()


async def test_a_job_of_several_results_whose_worker_died_gives_up_only_the_one_it_kept_interrupting(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(executor, "JOBS_PER_RUN", 1)  # the four results in one job
    settings = runtime_settings(database_url, tmp_path, worker_concurrency=1)
    operation, pks = await _queue_checks(settings, 4)
    first = Services.open(settings.model_copy(update={"worker": False}))
    try:
        # As workers killed while playing the second result leave it, the last time on the job's last attempt:
        # the first result stored, the second running, the last two never claimed; the job's lease has lapsed.
        with first.database.transaction() as connection:
            connection.execute(update(evaluation_results).where(evaluation_results.c.id == pks[1]).values(
                execution_state="RUNNING", attempts=MAX_ATTEMPTS))
            connection.execute(update(jobs).values(worker="dead-host:1:abc", attempts=MAX_ATTEMPTS, lease_until_us=1))
    finally:
        first.close()
    # (The first result is left queued: a later attempt plays a result no attempt stored, however many came before.)
    done, rows = _finished_elsewhere(settings, operation)
    _only_the_second_given_up(done, rows)
    assert {row.attempts for row in rows} == {MAX_ATTEMPTS + 1}


async def test_a_dataset_runs_on_an_app_version(client: Client) -> None:
    await _checker_app(client)
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "v", "evaluation": {
        "displayName": "v", "golden": {"turns": [{"steps": [user("check A-1"), called("A-1"), said("I checked 1 orders.")]}]}}})
    await call_json(client, "create_evaluation_dataset", {"parent": APP, "evaluationDatasetId": "smoke",
                                                          "evaluationDataset": {"displayName": "Smoke",
                                                                                "evaluations": [f"{APP}/evaluations/v"]}})
    version = await call_json(client, "create_app_version", {"parent": APP, "appVersionId": "v1",
                                                             "appVersion": {"displayName": "Version 1"}})
    await set_root(client, "echo")  # the draft changes; the version keeps the checker
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluationDataset": f"{APP}/evaluationDatasets/smoke",
                                                           "appVersion": version["name"]})
    done = await call_json(client, "wait_operation", {"name": operation["name"]})
    run = await call_json(client, "get_evaluation_run", {"name": done["response"]["evaluationRun"]})
    assert run["evaluationDataset"] == f"{APP}/evaluationDatasets/smoke"
    assert run["appVersionDisplayName"] == "Version 1"
    assert run["displayName"].startswith("Smoke run - ")
    result = await call_json(client, "get_evaluation_result", {"name": run["evaluationResults"][0]})
    assert result["evaluationStatus"] == "PASS" and result["appVersion"] == version["name"]
    evaluation = await call_json(client, "get_evaluation", {"name": f"{APP}/evaluations/v"})
    assert evaluation["aggregatedMetrics"]["metricsByAppVersion"][0]["appVersionId"] == "v1"


async def test_hostile_runs_are_refused_and_start_nothing(client: Client) -> None:
    await _checker_app(client)
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "ok", "evaluation": {
        "displayName": "ok", "golden": {"turns": [{"steps": [user("hi")]}]}}})
    ok = f"{APP}/evaluations/ok"
    cases = [
        ({"app": APP}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [ok], "evaluationDataset": f"{APP}/evaluationDatasets/x"}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [ok], "runCount": 101}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [ok], "runCount": -1}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [f"{APP}/evaluations/missing"]}, "NOT_FOUND"),
        ({"app": APP, "evaluations": ["projects/x/locations/y/apps/z/evaluations/ok"]}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": ["not a name"]}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [ok], "appVersion": f"{APP}/versions/nope"}, "NOT_FOUND"),
        ({"app": APP, "evaluations": [ok], "config": {"evaluationChannel": "AUDIO"}}, "INVALID_ARGUMENT"),
        ({"app": APP, "evaluations": [ok], "goldenRunMethod": "SIDEWAYS"}, "INVALID_ARGUMENT"),
        ({"app": f"{APP}-gone", "evaluations": [ok]}, "NOT_FOUND"),
        ({"app": APP, "evaluations": [ok], "personaRunConfigs": [{"persona": f"{APP}/evaluationPersonas/nobody"}]},
         "NOT_FOUND"),
        ({"app": APP, "evaluations": [ok], "personaRunConfigs": [{"taskCount": -2}]}, "INVALID_ARGUMENT"),
    ]
    for arguments, code in cases:
        error_text(await client.call_tool("run_evaluation", arguments), code)
    assert (await call_json(client, "list_evaluation_runs", {"parent": APP})).get("evaluationRuns") is None
    for tool, arguments, code in [
        ("get_operation", {"name": "projects/p/locations/l/operations/nope"}, "NOT_FOUND"),
        ("get_operation", {"name": "operations/nope"}, "INVALID_ARGUMENT"),
        ("wait_operation", {"name": "projects/p/locations/l/operations/nope", "timeout": "forever"}, "INVALID_ARGUMENT"),
        ("list_operations", {"name": "projects/p/locations/l", "filter": "done = maybe"}, "INVALID_ARGUMENT"),
        ("get_evaluation_run", {"name": f"{APP}/evaluationRuns/nope"}, "NOT_FOUND"),
        ("get_evaluation_result", {"name": f"{APP}/evaluations/ok/results/nope"}, "NOT_FOUND"),
        ("list_evaluation_results", {"parent": f"{APP}/evaluations/missing"}, "NOT_FOUND"),
        ("list_evaluation_results", {"parent": f"{APP}/evaluations/-", "filter": "secret = 1"}, "INVALID_ARGUMENT"),
        ("list_evaluation_runs", {"parent": APP, "orderBy": "drop table"}, "INVALID_ARGUMENT"),
    ]:
        error_text(await client.call_tool(tool, arguments), code)


@pytest.mark.slow
async def test_a_run_survives_the_kill_of_the_process_running_it(database_url: str, tmp_path: Path) -> None:
    settings = runtime_settings(database_url, tmp_path)
    setup = Services.open(settings)
    try:
        async with Client(mcp_servers(setup)["/mcp"]) as client:
            await _checker_app(client)
            await set_root(client, "sleepy")
            for index in range(4):
                await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": f"nap-{index}", "evaluation": {
                    "displayName": f"nap {index}", "golden": {"turns": [{"steps": [
                        user("0.5"), {"expectation": {"toolCall": {"tool": tool_name("slow"), "args": {"seconds": 0.5}}}},
                        said("awake")]}]}}})
    finally:
        setup.close()
    # A real process runs the evaluations, one at a time, and is killed (SIGKILL) in the middle of one.
    environment = {**os.environ, "CONVENER_PYTHON_CALLABLES": ",".join(CALLABLES), "CONVENER_WORKER_CONCURRENCY": "1",
                   "CONVENER_JOB_LEASE_SECONDS": "2"}
    process = subprocess.Popen(  # noqa: ASYNC220 - started once and killed; nothing awaits it
        [sys.executable, "-m", "convener", "eval", "run", "--app", APP, "--database-url", database_url,
         "--data-dir", str(settings.data_dir)],
        env=environment, cwd=Path(__file__).parents[3], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watcher = Services.open(settings)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with watcher.database.reading() as connection:
                states = connection.execute(select(evaluation_results.c.execution_state)).scalars().all()
            if "COMPLETED" in states and "RUNNING" in states:
                break
            await anyio.sleep(0.05)
        else:
            pytest.fail(f"the run never got under way: {states}")
        process.kill()
        process.wait(timeout=10)
    finally:
        watcher.close()
        if process.poll() is None:
            process.kill()

    restarted = Services.open(settings)
    try:
        restarted.jobs.start()  # takes the killed process's job once its lease lapses
        [operation], _ = restarted.operations.list("projects/acme/locations/global", None, None, None, LOCAL_USER)
        assert restarted.operations.wait(str(operation.name), "60s", LOCAL_USER).done is True
        with restarted.database.reading() as connection:
            rows = connection.execute(select(evaluation_results)).all()
        assert sorted(row.execution_state for row in rows) == ["COMPLETED"] * 4
        assert max(row.attempts for row in rows) == 2, "the result the kill interrupted ran again"
        run_name = rows[0].evaluation_run
        run = restarted.runtime.evaluations.get_run(run_name, LOCAL_USER)
        assert run.state == "COMPLETED"
        assert run.progress is not None and run.progress.to_json() == {
            "totalCount": 4, "failedCount": 0, "errorCount": 0, "completedCount": 4, "passedCount": 4}
        operations, _ = restarted.runtime.operations.list("projects/acme/locations/global", None, None, None, LOCAL_USER)
        assert [op.done for op in operations] == [True]
        assert (operations[0].response or {})["evaluationRun"] == run_name
    finally:
        restarted.close()


async def test_an_operation_is_seen_and_cancelled_only_by_who_started_it(client: Client, services: Services) -> None:
    await _checker_app(client)
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "mine", "evaluation": {
        "displayName": "mine", "golden": {"turns": [{"steps": [user("check A-1"), called("A-1")]}]}}})
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": [f"{APP}/evaluations/mine"]})
    stranger = Caller("users/mallory")
    operations = services.runtime.operations
    for attempt in (lambda: operations.get(operation["name"], stranger),
                    lambda: operations.cancel(operation["name"], stranger),
                    lambda: operations.wait(operation["name"], "1s", stranger)):
        with pytest.raises(NotFound):
            attempt()
    assert operations.list("projects/acme/locations/global", None, None, None, stranger) == ([], None)
    done = await call_json(client, "wait_operation", {"name": operation["name"]})
    assert done["done"] is True and "error" not in done, "the stranger's cancel did nothing"


async def test_an_evaluation_named_twice_runs_once_in_the_order_first_named(client: Client) -> None:
    await _checker_app(client)
    for evaluation_id in ("b", "a"):
        await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": evaluation_id, "evaluation": {
            "displayName": evaluation_id, "golden": {"turns": [{"steps": [user("check A-1"), called("A-1")]}]}}})
    named = [f"{APP}/evaluations/{evaluation_id}" for evaluation_id in ("b", "a", "b", "a", "b")]
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": named})
    done = await call_json(client, "wait_operation", {"name": operation["name"]})
    run = await call_json(client, "get_evaluation_run", {"name": done["response"]["evaluationRun"]})
    assert run["evaluations"] == named[:2]
    assert [name.split("/evaluations/")[1].split("/")[0] for name in run["evaluationResults"]] == ["b", "a"]
