"""An evaluation run judged by the configured model: the real provider code over HTTP against the scripted
OpenAI-compatible fake, which answers the judge's questions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.config import Settings
from tests.ces.session_helpers import APP, FIXTURES, agent, llm_settings, make_app, set_root
from tests.e2e.conftest import EVALUATION_RESULT_VALIDATOR, assert_matches, call_json
from tests.llm.fake_openai import FakeOpenAI, Reply

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return llm_settings(database_url, tmp_path, fake_openai.base_url)


def judge_answers(body: dict[str, Any]) -> Reply:
    prompt = str(body["messages"][-1]["content"])
    if "Rate how consistent" in prompt:
        return Reply(text='{"score": 2, "explanation": "the reply leaves the order number out"}')
    if "justified by the CONTEXT" in prompt:
        return Reply(text='```json\n{"score": 0, "explanation": "it invents a delivery date"}\n```')
    return Reply(text='{"score": 1, "explanation": "the agent greeted the user"}')


async def test_a_run_asks_the_model_judge_and_scores_with_its_majority(client: Client, fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = judge_answers
    await make_app(client)
    await agent(client, "echo", pythonAgent={"entryPoint": f"{FIXTURES}:echo_agent"})
    await set_root(client, "echo")
    expectation = await call_json(client, "create_evaluation_expectation", {
        "parent": APP, "evaluationExpectationId": "greets",
        "evaluationExpectation": {"displayName": "Greets", "llmCriteria": {"prompt": "The agent greets the user."}}})
    await call_json(client, "create_evaluation", {"parent": APP, "evaluationId": "judged", "evaluation": {
        "displayName": "judged",
        "golden": {"turns": [{"steps": [
            {"userInput": {"text": "hello"}},
            {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "echo 1: hello"}]}}},
        ], "hallucinationMetricBehaviorOverride": "ENABLED"}],
            "evaluationExpectations": [expectation["name"]]},
    }})
    operation = await call_json(client, "run_evaluation", {"app": APP, "evaluations": [f"{APP}/evaluations/judged"]})
    done = await call_json(client, "wait_operation", {"name": operation["name"]})
    run = await call_json(client, "get_evaluation_run", {"name": done["response"]["evaluationRun"]})
    result = await call_json(client, "get_evaluation_result", {"name": run["evaluationResults"][0]})
    assert_matches(EVALUATION_RESULT_VALIDATOR, result)

    turn = result["goldenResult"]["turnReplayResults"][0]
    assert turn["semanticSimilarityResult"] == {
        "score": 2, "label": "Partially consistent (minor omissions)", "outcome": "FAIL",
        "explanation": turn["semanticSimilarityResult"]["explanation"]}
    assert turn["semanticSimilarityResult"]["explanation"].startswith("Model judge:")
    assert turn["hallucinationResult"]["score"] == 0
    assert result["goldenResult"]["evaluationExpectationResults"] == [{
        "evaluationExpectation": expectation["name"], "prompt": "The agent greets the user.", "outcome": "PASS",
        "explanation": result["goldenResult"]["evaluationExpectationResults"][0]["explanation"]}]
    assert result["evaluationStatus"] == "FAIL"
    assert result["rootSpan"]["attributes"]["judge"] == "model"
    # Three questions (similarity, hallucination, the criterion), each sampled three times; the similarity
    # asked for the expectation and for the turn is the same question, answered from the judge's cache.
    assert len(fake_openai.requests) == 9
