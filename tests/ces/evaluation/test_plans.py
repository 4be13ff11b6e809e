"""A result's plan (``ResultPlan``): its column JSON round-trips, plans stored before the model read the same,
and a run stores what the executor then plays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from pydantic import ValidationError
from sqlalchemy import select, update

from convener.ces.evaluation.executor import PlayResult
from convener.ces.evaluation.models import Evaluation, EvaluationExpectation, EvaluationPersona
from convener.ces.evaluation.plans import ResultPlan
from convener.ces.models import EvaluationToolCallBehaviour, GoldenRunMethod, ScenarioConversationInitiator
from convener.ces.tables import evaluation_results
from convener.config import Settings
from convener.jobs.model import Attempt
from convener.services import Services
from tests.ces.session_helpers import APP, FIXTURES, agent, make_app, runtime_settings, set_root
from tests.e2e.conftest import call_json

VERSION = f"{APP}/versions/v1"
GOLDEN: dict[str, Any] = {
    "name": f"{APP}/evaluations/hello",
    "displayName": "hello",
    "golden": {"turns": [{"steps": [{"userInput": {"text": "hello"}},
                                    {"expectation": {"agentResponse": {"role": "agent",
                                                                       "chunks": [{"text": "echo 1: hello"}]},
                                                     "comparisonType": "EQUALS"}}]}],
               "evaluationExpectations": [f"{APP}/evaluationExpectations/polite"]},
    "evaluationMetricsThresholdOverride": {"goldenEvaluationMetricsThresholds": {
        "turnLevelMetricsThresholds": {"semanticSimilaritySuccessThreshold": 2}}},
}
SCENARIO: dict[str, Any] = {"name": f"{APP}/evaluations/refund", "displayName": "refund",
                            "scenario": {"task": "Get a refund for order A-1.", "maxTurns": 4}}
CRITERION: dict[str, Any] = {"name": f"{APP}/evaluationExpectations/polite", "displayName": "polite",
                             "llmCriteria": {"prompt": "The agent is polite."}}
PERSONA: dict[str, Any] = {"name": f"{APP}/evaluationPersonas/hurried", "displayName": "Hurried",
                           "personality": "Curt; wants the answer now."}


def test_a_plan_round_trips_through_its_column_json() -> None:
    plan = ResultPlan(evaluation=Evaluation.model_validate(GOLDEN), golden_run_method=GoldenRunMethod.NAIVE,
                      tool_call_behaviour=EvaluationToolCallBehaviour.FAKE, app_version=VERSION,
                      criteria=[EvaluationExpectation.model_validate(CRITERION)],
                      persona=EvaluationPersona.model_validate(PERSONA),
                      initiator=ScenarioConversationInitiator.AGENT)

    stored = json.loads(json.dumps(plan.to_json()))  # as a JSON column gives it back

    assert stored == {"evaluation": GOLDEN, "goldenRunMethod": "NAIVE", "toolCallBehaviour": "FAKE",
                      "appVersion": VERSION, "criteria": [CRITERION], "persona": PERSONA,
                      "initiator": "AGENT"}
    assert ResultPlan.model_validate(stored) == plan
    with pytest.raises(ValidationError):
        plan.app_version = None  # type: ignore[misc]  # decided once: a plan is never changed afterwards


def test_a_draft_plan_without_persona_or_criteria_omits_them() -> None:
    plan = ResultPlan(evaluation=Evaluation.model_validate(SCENARIO))

    assert plan.to_json() == {"evaluation": SCENARIO, "goldenRunMethod": "STABLE",
                              "toolCallBehaviour": "REAL", "initiator": "USER"}
    assert ResultPlan.model_validate(plan.to_json()) == plan


def test_a_plan_stored_in_the_previous_shape_still_reads() -> None:
    # As the run wrote the column before the plan had a model: the draft as "", no persona as null.
    golden = ResultPlan.model_validate({
        "evaluation": GOLDEN, "goldenRunMethod": "NAIVE", "toolCallBehaviour": "FAKE", "appVersion": "",
        "criteria": [CRITERION], "persona": None, "initiator": "USER",
    })
    scenario = ResultPlan.model_validate({
        "evaluation": SCENARIO, "goldenRunMethod": "STABLE", "toolCallBehaviour": "REAL",
        "appVersion": VERSION, "criteria": [], "persona": PERSONA, "initiator": "AGENT",
    })

    replay = golden.replay()
    assert (replay.method, replay.tool_calls, replay.app_version) == (
        GoldenRunMethod.NAIVE, EvaluationToolCallBehaviour.FAKE, None)
    assert replay.golden == Evaluation.model_validate(GOLDEN).golden
    assert golden.criteria == [EvaluationExpectation.model_validate(CRITERION)] and golden.persona is None
    assert golden.evaluation.to_json()["evaluationMetricsThresholdOverride"] == GOLDEN[
        "evaluationMetricsThresholdOverride"], "the thresholds ride with the evaluation"
    simulation = scenario.simulation()
    assert simulation.scenario == Evaluation.model_validate(SCENARIO).scenario
    assert simulation.persona == EvaluationPersona.model_validate(PERSONA)
    assert (simulation.initiator, simulation.tool_calls, simulation.app_version, simulation.max_turns) == (
        ScenarioConversationInitiator.AGENT, EvaluationToolCallBehaviour.REAL, VERSION, 4)
    with pytest.raises(ValueError, match="has no scenario"):
        golden.simulation()
    with pytest.raises(ValueError, match="has no golden"):
        scenario.replay()
    with pytest.raises(ValidationError):
        ResultPlan.model_validate({"evaluation": GOLDEN, "toolCallBehavior": "FAKE"})  # a misspelt key


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, worker=False)  # results stay queued until played below


@pytest.mark.anyio
async def test_a_run_stores_its_plan_and_a_row_of_the_previous_shape_still_plays(
        client: Client, services: Services) -> None:
    executor = services.runtime.evaluations.executor
    await make_app(client)
    await agent(client, "echo", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await set_root(client, "echo")
    for evaluation_id in ("kept", "legacy"):
        await call_json(client, "create_evaluation", {
            "parent": APP, "evaluationId": evaluation_id,
            "evaluation": {"displayName": evaluation_id, "golden": {"turns": GOLDEN["golden"]["turns"]}}})
    operation = await call_json(client, "run_evaluation", {"app": APP, "goldenRunMethod": "NAIVE", "evaluations": [
        f"{APP}/evaluations/kept", f"{APP}/evaluations/legacy"]})
    with services.database.reading() as connection:
        rows = connection.execute(select(evaluation_results).order_by(evaluation_results.c.id)).all()

    plans = [ResultPlan.model_validate(row.plan) for row in rows]
    assert [plan.evaluation.name for plan in plans] == [f"{APP}/evaluations/{e}" for e in ("kept", "legacy")]
    chosen = {(plan.golden_run_method, plan.tool_call_behaviour, plan.app_version, plan.persona)
              for plan in plans}
    assert chosen == {(GoldenRunMethod.NAIVE, EvaluationToolCallBehaviour.REAL, None, None)}
    assert rows[0].plan == plans[0].to_json()
    # The second result's plan as the run stored it before: every key, the draft as "", no persona as null.
    with services.database.transaction() as connection:
        connection.execute(update(evaluation_results).where(evaluation_results.c.id == rows[1].id).values(
            plan={"evaluation": plans[1].evaluation.to_json(), "goldenRunMethod": "STABLE",
                  "toolCallBehaviour": "REAL", "appVersion": "", "criteria": [], "persona": None,
                  "initiator": "USER"}))

    for row in rows:
        executor.play(PlayResult(result=row.id), Attempt(number=1, operation=operation["name"], worker="test"))

    with services.database.reading() as connection:
        played = connection.execute(select(evaluation_results).order_by(evaluation_results.c.id)).all()
    assert [(row.execution_state, row.evaluation_status) for row in played] == [("COMPLETED", "PASS")] * 2
    methods = [row.body["rootSpan"]["attributes"]["goldenRunMethod"] for row in played]
    assert methods == ["NAIVE", "STABLE"], "each played as its plan says"
