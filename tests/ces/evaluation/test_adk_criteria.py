"""ADK's evaluation criteria (test_config.json) on imported evalsets: read, applied, computed and reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.api.errors import InvalidArgument
from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.adk_criteria import (
    ADK_METRIC_TAG,
    DEFAULT_CRITERIA,
    MAX_CONFIG_BYTES,
    AdkCriterion,
    Invocation,
    MatchType,
    apply_criteria,
    criterion_of,
    metric_prompt,
    parse_criteria,
    rouge1_fmeasure,
    score_metric,
)
from convener.ces.evaluation.models import EvaluationExpectation, LlmCriteria, Outcome
from convener.ces.evaluation.requests import ListEvaluationsRequest, RunEvaluationRequest
from convener.config import Settings
from convener.demo import tools as demo_tools
from convener.demo.loader import APP, install_app
from convener.services import Services
from tests.ces.session_helpers import llm_settings
from tests.e2e.conftest import call_json, error_text
from tests.llm.fake_openai import FakeOpenAI, Reply

REPLY = "Order AC-1001 (Ceramic pour-over set) was delivered on 2026-10-20."


def case(eval_id: str, calls: list[dict[str, Any]], reply: str | None) -> dict[str, Any]:
    invocation: dict[str, Any] = {
        "user_content": {"role": "user", "parts": [{"text": "Where is my order AC-1001?"}]},
        "intermediate_data": {"tool_uses": calls, "tool_responses": [
            {"name": "lookup_order", "response": demo_tools.lookup_order("AC-1001")}]},
    }
    if reply is not None:
        invocation["final_response"] = {"role": "model", "parts": [{"text": reply}]}
    return {"eval_id": eval_id, "conversation": [invocation]}


TRANSFER = {"name": "transfer_to_agent", "args": {"agent_name": "orders"}}
LOOKUP = {"name": "lookup_order", "args": {"order_id": "AC-1001"}}
EVALSET = json.dumps({"eval_set_id": "orders", "eval_cases": [
    case("exact", [TRANSFER, LOOKUP], REPLY),
    case("reworded", [TRANSFER, LOOKUP], "Your parcel has arrived, enjoy it."),
    case("other-args", [TRANSFER, {"name": "lookup_order", "args": {"order_id": "AC-1002"}}], REPLY),
    case("other-tool", [TRANSFER, {"name": "check_refund_eligibility", "args": {"order_id": "AC-1001"}}], REPLY),
    case("no-transfer", [LOOKUP], REPLY),
]})


# -- reading test_config.json ------------------------------------------------------------------------


def test_the_defaults_are_adks() -> None:
    assert DEFAULT_CRITERIA.criteria == (AdkCriterion("tool_trajectory_avg_score", 1.0),
                                         AdkCriterion("response_match_score", 0.8))


def test_thresholds_and_criterion_objects_are_read_in_either_spelling() -> None:
    read = parse_criteria(json.dumps({"criteria": {
        "tool_trajectory_avg_score": {"threshold": 0.5, "matchType": "in-order", "ignoreArgs": True},
        "response_match_score": 1,
        "safety_v1": {"threshold": 0.9, "judge_model_options": {"judge_model": "x"}},
        "rubric_based_final_response_quality_v1": {"threshold": 0.7, "rubrics": [
            {"rubric_id": "r1", "rubric_content": {"text_property": "The reply names the order."}}]},
    }}), "tests/test_config.json")

    assert read.criteria == (
        AdkCriterion("tool_trajectory_avg_score", 0.5, MatchType.IN_ORDER, True),
        AdkCriterion("response_match_score", 1.0),
        AdkCriterion("safety_v1", 0.9),
        AdkCriterion("rubric_based_final_response_quality_v1", 0.7, rubrics=("The reply names the order.",)),
    )
    assert read.source == "tests/test_config.json"
    assert any("judge_model_options" in warning for warning in read.warnings)


def test_match_types_are_read_as_adk_reads_them() -> None:
    for value, expected in ((0, MatchType.EXACT), (2, MatchType.ANY_ORDER), (" any order ", MatchType.ANY_ORDER)):
        read = parse_criteria(json.dumps({"criteria": {"tool_trajectory_avg_score": {
            "threshold": 1, "match_type": value}}}))
        assert read.criteria[0].match_type == expected


def test_custom_metrics_and_unknown_fields_are_reported_not_dropped() -> None:
    read = parse_criteria(json.dumps({"criteria": {"mine": 0.5, "response_match_score": 0.8},
                                      "custom_metrics": {"mine": {"code_config": {"name": "a.b"}}},
                                      "colour": "blue"}))

    assert [c.metric for c in read.criteria] == ["response_match_score"]
    assert any("custom_metrics were not applied" in warning for warning in read.warnings)
    assert any("colour is not an EvalConfig field" in warning for warning in read.warnings)


@pytest.mark.parametrize(("content", "named"), [
    pytest.param('{"criteria": {"response_match_score": 0.8,}}', "line 1 column 43", id="malformed-json"),
    pytest.param('{"criteria":\n {"response_match_score": }}', "line 2 column 27", id="malformed-json-line-2"),
    pytest.param("", "empty", id="empty"),
    pytest.param("[1]", "is a JSON object, not a list", id="not-an-object"),
    pytest.param('{"criteria": [0.8]}', "criteria: expected an object", id="criteria-a-list"),
    pytest.param('{"criteria": {"response_match_score": 1.5}}', "criteria.response_match_score: the threshold 1.5 "
                 "is outside [0, 1]", id="threshold-above-1"),
    pytest.param('{"criteria": {"tool_trajectory_avg_score": {"threshold": -0.1}}}',
                 "criteria.tool_trajectory_avg_score.threshold: the threshold -0.1 is outside", id="threshold-below-0"),
    pytest.param('{"criteria": {"response_match_score": NaN}}', "NaN is not a JSON number", id="nan"),
    pytest.param('{"criteria": {"response_match_score": true}}', "must be a number, not a boolean", id="boolean"),
    pytest.param('{"criteria": {"response_match_score": "0.8"}}', "must be a number, not a string", id="string"),
    pytest.param('{"criteria": {"tool_trajectory_avg_score": {}}}', "criteria.tool_trajectory_avg_score.threshold: "
                 "required", id="no-threshold"),
    pytest.param('{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "FUZZY"}}}',
                 "criteria.tool_trajectory_avg_score.match_type: expected EXACT, IN_ORDER or ANY_ORDER",
                 id="unknown-match-type"),
    pytest.param('{"criteria": {"response_match_scor": 0.8}}', "criteria.response_match_scor: not a metric ADK "
                 "knows", id="unknown-criterion"),
    pytest.param('{"criteria": {"tool_call_count_v1": 1}}', "criteria.tool_call_count_v1: an efficiency metric "
                 "takes no threshold", id="efficiency-metric"),
    pytest.param('{"criteria": {"rubric_based_tool_use_quality_v1": 0.5}}', "at least one rubric",
                 id="rubric-metric-without-rubrics"),
    pytest.param('{"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "ignore_args": "yes"}}}',
                 "ignore_args: expected a boolean", id="ignore-args-a-string"),
])
def test_hostile_configs_are_invalid_argument_naming_the_place(content: str, named: str) -> None:
    with pytest.raises(InvalidArgument) as raised:
        parse_criteria(content)
    assert named in raised.value.message, raised.value.message
    assert len(raised.value.message) < 1000


def test_a_huge_config_is_refused_before_it_is_parsed() -> None:
    huge = '{"criteria": {"response_match_score": 0.8}, "padding": "' + "x" * MAX_CONFIG_BYTES + '"}'
    with pytest.raises(InvalidArgument, match="larger than 1 MB"):
        parse_criteria(huge)
    with pytest.raises(InvalidArgument, match="not UTF-8"):
        parse_criteria(b'{"criteria": {"\xff": 1}}')


# -- the metrics --------------------------------------------------------------------------------------


def test_rouge_1_is_rouge_scores_with_adks_tokenizer() -> None:
    # Figures from google-adk 2.13's final_response_match_v1._calculate_rouge_1_scores on the same pairs.
    pairs = [
        ("Your order AC-1001 shipped yesterday and arrives Friday.",
         "Order AC-1001 was shipped yesterday; it should arrive on Friday.", 0.7000000000000001),
        ("The running dogs were happily jumping", "dog runs and jumps happily", 0.7272727272727272),
        ("注文は発送されました", "注文は 発送済み です", 0.5263157894736842),
        ("Généralement, les commandes arrivent vite.", "les commandes arrivent généralement rapidement",
         0.8000000000000002),
        ("", "something", 0.0),
        ("caresses ponies ties conditional relational generously", "caress pony tie condition relate generous", 1.0),
        ("It's 3.5 days; costs $12,000!", "3 5 day cost 12 000", 0.8571428571428571),
    ]
    for candidate, reference, expected in pairs:
        assert rouge1_fmeasure(candidate, reference) == pytest.approx(expected, abs=1e-12), candidate


def test_trajectory_match_types() -> None:
    a, b, c = ("a", {"x": 1}), ("b", {}), ("c", {"y": [1]})

    def score(match: MatchType, actual: list[Any], expected: list[Any], ignore: bool = False) -> float:
        criterion = AdkCriterion("tool_trajectory_avg_score", 1.0, match, ignore)
        return score_metric(criterion, [Invocation(tuple(expected))], [Invocation(tuple(actual))]).score

    assert score(MatchType.EXACT, [a, b], [a, b]) == 1.0
    assert score(MatchType.EXACT, [b, a], [a, b]) == 0.0
    assert score(MatchType.EXACT, [a, b, c], [a, b]) == 0.0
    assert score(MatchType.EXACT, [("a", {"x": 1.0})], [a]) == 1.0  # Python equality, as ADK compares args
    assert score(MatchType.EXACT, [("a", {"x": 2})], [a]) == 0.0
    assert score(MatchType.EXACT, [("a", {"x": 2})], [a], ignore=True) == 1.0
    assert score(MatchType.IN_ORDER, [a, c, b], [a, b]) == 1.0
    assert score(MatchType.IN_ORDER, [b, a], [a, b]) == 0.0
    assert score(MatchType.ANY_ORDER, [b, c, a], [a, b]) == 1.0
    assert score(MatchType.ANY_ORDER, [b, c], [a, b]) == 0.0
    assert score(MatchType.IN_ORDER, [], []) == 1.0


def test_a_metric_is_averaged_over_invocations() -> None:
    criterion = AdkCriterion("tool_trajectory_avg_score", 0.5)
    scored = score_metric(criterion, [Invocation((("a", {}),)), Invocation((("b", {}),))],
                          [Invocation((("a", {}),)), Invocation()])
    assert scored.score == 0.5 and scored.per_invocation == (1.0, 0.0)


def test_the_prompt_of_a_computed_metric_reads_back() -> None:
    for criterion in (AdkCriterion("tool_trajectory_avg_score", 0.25, MatchType.ANY_ORDER, True),
                      AdkCriterion("response_match_score", 0.8), AdkCriterion("response_match_score", 1.0)):
        expectation = EvaluationExpectation(llm_criteria=LlmCriteria(prompt=metric_prompt(criterion)),
                                            tags=[ADK_METRIC_TAG])
        assert criterion_of(expectation) == criterion
    untagged = EvaluationExpectation(llm_criteria=LlmCriteria(prompt=metric_prompt(AdkCriterion(
        "response_match_score", 0.8))))
    assert criterion_of(untagged) is None  # a prompt alone is judged, never computed


def test_criteria_needing_a_model_are_reported_when_there_is_none() -> None:
    read = parse_criteria(json.dumps({"criteria": {
        "response_match_score": 0.8, "final_response_match_v2": 0.5, "hallucinations_v1": 0.9, "safety_v1": 1.0,
        "per_turn_user_simulator_quality_v1": 0.5}}))

    offline = apply_criteria(read, model_judge=False)
    assert offline.applied == ("response_match_score",)
    for metric in ("final_response_match_v2", "hallucinations_v1", "safety_v1"):
        assert any(w.startswith(f"{metric} was not applied: it needs a model judge") for w in offline.warnings)
    assert any(w.startswith("per_turn_user_simulator_quality_v1 was not applied") for w in offline.warnings)

    judged = apply_criteria(read, model_judge=True)
    assert judged.applied == ("response_match_score", "final_response_match_v2", "hallucinations_v1", "safety_v1")
    assert judged.judge_responses and judged.hallucinations
    assert [e.expectation.tags for e in judged.expectations] == [
        ["adk", ADK_METRIC_TAG, "response_match_score"], ["adk", "safety_v1"]]


# -- through the service ------------------------------------------------------------------------------


def run_all(services: Services, names: list[str]) -> dict[str, Any]:
    evaluations = services.runtime.evaluations
    operation = evaluations.run(RunEvaluationRequest(app=str(APP), evaluations=names, run_count=1), LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "120s", LOCAL_USER)
    assert done.done
    found = {}
    for name in names:
        result = evaluations.get_evaluation(name, False, LOCAL_USER).last_completed_result
        assert result is not None and result.golden_result is not None
        found[name.rsplit("/", 1)[-1]] = result
    return found


def test_an_import_without_criteria_is_scored_with_adks_defaults(services: Services) -> None:
    install_app(services)

    done = services.runtime.evaluations.import_adk(str(APP), EVALSET, "orders.evalset.json", LOCAL_USER)

    assert done.warnings == ()
    evaluation = done.evaluations[0]
    assert evaluation.golden is not None
    assert evaluation.golden.evaluation_expectations == [
        f"{APP}/evaluationExpectations/adk-tool-trajectory-avg-score-1.0-exact",
        f"{APP}/evaluationExpectations/adk-response-match-score-0.8"]
    steps = [step.expectation for turn in evaluation.golden.turns or [] for step in turn.steps or []
             if step.expectation is not None]
    assert [bool(e.skip_evaluation) for e in steps if e.mock_tool_response is None] == [True, True, True]
    assert "Scored with ADK's default criteria" in (evaluation.description or "")

    results = run_all(services, [e.name or "" for e in done.evaluations])
    outcomes = {eval_id: [(r.outcome, (r.explanation or "").split(" (")[0]) for r in
                          result.golden_result.evaluation_expectation_results or []]
                for eval_id, result in results.items()}
    assert outcomes == {
        "exact": [(Outcome.PASS, "tool_trajectory_avg_score 1.0000 >= 1.0"),
                  (Outcome.PASS, "response_match_score 1.0000 >= 0.8")],
        "reworded": [(Outcome.PASS, "tool_trajectory_avg_score 1.0000 >= 1.0"),
                     (Outcome.FAIL, "response_match_score 0.0000 < 0.8")],
        "other-args": [(Outcome.FAIL, "tool_trajectory_avg_score 0.0000 < 1.0"),
                       (Outcome.PASS, "response_match_score 1.0000 >= 0.8")],
        "other-tool": [(Outcome.FAIL, "tool_trajectory_avg_score 0.0000 < 1.0"),
                       (Outcome.PASS, "response_match_score 1.0000 >= 0.8")],
        "no-transfer": [(Outcome.FAIL, "tool_trajectory_avg_score 0.0000 < 1.0"),
                        (Outcome.PASS, "response_match_score 1.0000 >= 0.8")],
    }
    assert {eval_id: r.evaluation_status for eval_id, r in results.items()} == {
        "exact": Outcome.PASS, "reworded": Outcome.FAIL, "other-args": Outcome.FAIL, "other-tool": Outcome.FAIL,
        "no-transfer": Outcome.FAIL}
    first = results["exact"].golden_result.evaluation_expectation_results[0]
    assert first.prompt is not None and first.prompt.startswith("ADK tool_trajectory_avg_score >= 1.0 (match_type EXACT")


def test_explicit_criteria_change_the_verdicts(services: Services) -> None:
    install_app(services)
    criteria = parse_criteria(json.dumps({"criteria": {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "ANY_ORDER", "ignore_args": True},
        "response_match_score": 0.0}}), "test_config.json")

    done = services.runtime.evaluations.import_adk(str(APP), EVALSET, "orders.evalset.json", LOCAL_USER, criteria)
    results = run_all(services, [e.name or "" for e in done.evaluations])

    assert {eval_id: r.evaluation_status for eval_id, r in results.items()} == {
        "exact": Outcome.PASS, "reworded": Outcome.PASS, "other-args": Outcome.PASS, "other-tool": Outcome.FAIL,
        "no-transfer": Outcome.PASS}
    assert "Scored with test_config.json: tool_trajectory_avg_score, response_match_score." in (
        done.evaluations[0].description or "")


def test_a_second_import_reuses_the_criteria_expectations(services: Services) -> None:
    install_app(services)
    services.runtime.evaluations.import_adk(str(APP), EVALSET, "a.evalset.json", LOCAL_USER)
    renamed = EVALSET.replace('"eval_id": "', '"eval_id": "again-')

    done = services.runtime.evaluations.import_adk(str(APP), renamed, "b.evalset.json", LOCAL_USER)

    assert len(done.evaluations) == 5
    listed, _ = services.runtime.evaluations.expectations.list(str(APP), 100, None, LOCAL_USER)
    assert sorted(e.name or "" for e in listed) == sorted(done.evaluations[0].golden.evaluation_expectations or [])


def test_an_expectation_squatting_a_criterion_id_is_refused(services: Services) -> None:
    install_app(services)
    services.runtime.evaluations.expectations.create(str(APP), "adk-response-match-score-0.8", EvaluationExpectation(
        display_name="mine", llm_criteria=LlmCriteria(prompt="Something else.")), LOCAL_USER)

    with pytest.raises(InvalidArgument, match="states something else"):
        services.runtime.evaluations.import_adk(str(APP), EVALSET, "orders.evalset.json", LOCAL_USER)

    listed, _ = services.runtime.evaluations.list_evaluations(ListEvaluationsRequest(parent=str(APP)), LOCAL_USER)
    assert not [e for e in listed if "adk" in (e.tags or [])]


@pytest.fixture
def judged_settings(database_url: str, tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return llm_settings(database_url, tmp_path, fake_openai.base_url)


def test_criteria_needing_a_model_map_to_the_configured_judge(judged_settings: Settings,
                                                               fake_openai: FakeOpenAI) -> None:
    fake_openai.responder = lambda body: Reply(text='{"score": 1, "explanation": "fine"}')
    services = Services.open(judged_settings)
    try:
        install_app(services)
        criteria = parse_criteria(json.dumps({"criteria": {
            "final_response_match_v2": 0.5, "hallucinations_v1": 0.9, "safety_v1": 1.0,
            "rubric_based_final_response_quality_v1": {"threshold": 0.5, "rubrics": [
                {"rubric_id": "r", "rubric_content": {"text_property": "The reply names the order."}}]}}}))
        done = services.runtime.evaluations.import_adk(str(APP), EVALSET, "orders.evalset.json", LOCAL_USER, criteria)
    finally:
        services.close()

    evaluation = done.evaluations[0]
    assert evaluation.golden is not None
    assert evaluation.evaluation_metrics_threshold_override is not None
    assert evaluation.evaluation_metrics_threshold_override.golden_hallucination_metric_behavior == "ENABLED"
    response = [s.expectation for t in evaluation.golden.turns or [] for s in t.steps or []
                if s.expectation is not None and s.expectation.agent_response is not None]
    assert response and not response[0].skip_evaluation  # final_response_match_v2: the judge's similarity
    names = evaluation.golden.evaluation_expectations or []
    assert len(names) == 2 and all("/evaluationExpectations/adk-" in name for name in names)
    assert any(w.startswith("final_response_match_v2: judged as Convener's semantic similarity")
               for w in done.warnings)


# -- through MCP ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_mcp_tool_takes_the_criteria_and_reports_what_was_not_applied(services: Services,
                                                                                client: Client) -> None:
    install_app(services)

    imported = await call_json(client, "import_adk_evaluations", {
        "parent": str(APP), "content": EVALSET, "criteria": json.dumps({"criteria": {
            "response_match_score": 0.5, "safety_v1": 1.0}})})

    assert len(imported["evaluations"]) == 5
    assert imported["evaluations"][0]["golden"]["evaluationExpectations"] == [
        f"{APP}/evaluationExpectations/adk-response-match-score-0.5"]
    assert imported["warnings"] == [
        "safety_v1 was not applied: it needs a model judge, and none is configured (configure a model provider and "
        "import again)"]

    text = error_text(await client.call_tool("import_adk_evaluations", {
        "parent": str(APP), "content": EVALSET, "criteria": '{"criteria": {"response_match_score": 2}}'}),
        "INVALID_ARGUMENT")
    assert "criteria: criteria.response_match_score: the threshold 2 is outside [0, 1]" in text
