"""The console's evaluation pages through Starlette's test client, on the demo workspace: the evaluations and
datasets, an evaluation, a result (expected against actual), runs, a comparison of two runs and the form
that starts one; access by scope, unknown names, bad parameters and hostile text."""

from __future__ import annotations

import re
import time

import pytest
from bs4 import BeautifulSoup

from convener.auth.caller import LOCAL_USER
from convener.ces.evaluation.models import Evaluation, EvaluationRunState
from convener.ces.evaluation.requests import ListEvaluationRunsRequest, RunEvaluationRequest
from convener.console import evaluations as pages
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.recorded import APP, HTML, SCRIPT
from tests.console.test_views import csrf, signed_in

HOSTILE_EVALUATION = "hostile-golden"
DATASET = f"{APP}/evaluationDatasets/regression"


def run_and_wait(services: Services, request: RunEvaluationRequest) -> str:
    """Start a run as the demo does and wait for it; the run's name."""
    operation = services.runtime.evaluations.run(request, LOCAL_USER)
    done = services.runtime.operations.wait(operation.name or "", "300s", LOCAL_USER)
    return str((done.metadata or {})["evaluationRun"])


def fix_and_rerun(services: Services) -> tuple[str, str]:
    """The demo's regression run, and a second run of it after cancelled-order-status's expected reply was
    brought up to date (so that evaluation goes FAIL → PASS): (before, after)."""
    service = services.runtime.evaluations
    runs, _ = service.list_runs(ListEvaluationRunsRequest(parent=APP), LOCAL_USER)
    before = next(run.name for run in runs if run.evaluation_dataset == DATASET)
    name = f"{APP}/evaluations/cancelled-order-status"
    evaluation = service.evaluations.get(name, LOCAL_USER)
    body = evaluation.model_dump(by_alias=True, exclude_none=True)
    reply = body["golden"]["turns"][0]["steps"][3]["expectation"]["agentResponse"]
    reply["chunks"] = [{"text": "Order AC-1006 was cancelled on 2026-10-23 and refunded in full."}]
    fixed = Evaluation.model_validate({key: value for key, value in body.items()
                                       if key in ("name", "displayName", "description", "tags", "golden")})
    service.update_evaluation(fixed, "golden", LOCAL_USER)
    after = run_and_wait(services, RunEvaluationRequest(app=APP, evaluation_dataset=DATASET,
                                                         display_name="After the fix"))
    assert before
    return before, after


def hostile_evaluation(services: Services) -> str:
    """A golden whose names, expected reply and tool arguments hold markup, run once; its result's name."""
    evaluation = Evaluation.model_validate({
        "displayName": f"{SCRIPT} evaluation",
        "description": HTML,
        "tags": [SCRIPT],
        "golden": {"turns": [{"steps": [
            {"userInput": {"text": f"Where is {SCRIPT}?"}},
            {"expectation": {"toolCall": {"tool": f"{APP}/tools/lookup_order", "args": {"order_id": SCRIPT}}}},
            {"expectation": {"note": HTML, "agentResponse": {"role": "agent", "chunks": [{"text": HTML}]}}},
        ]}]},
    })
    services.runtime.evaluations.create_evaluation(APP, HOSTILE_EVALUATION, evaluation, LOCAL_USER)
    run = run_and_wait(services, RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/{HOSTILE_EVALUATION}"]))
    return services.runtime.evaluations.get_run(run, LOCAL_USER).evaluation_results[0]  # type: ignore[index]


def links(html: str, pattern: str) -> list[str]:
    return re.findall(rf'href="/console/({pattern})"', html)


def assert_markup_is_ours(html: str) -> None:
    document = BeautifulSoup(html, "html.parser")
    assert [tag.get("src") for tag in document.find_all("script")] == ["/console/static/console.js"]
    assert not [tag for tag in document.find_all(True) if any(name.startswith("on") for name in tag.attrs)]
    assert not document.find_all("img") and not document.find_all("b")


def test_the_app_links_to_its_evaluations_and_they_list_with_their_latest_verdict(workspace: Services,
                                                                                   keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    assert f'href="/console/{APP}/evaluations"' in client.get(f"/console/{APP}").text
    page = client.get(f"/console/{APP}/evaluations")
    assert page.status_code == 200
    evaluations = set(links(page.text, rf"{APP}/evaluations/[\w-]+"))
    assert len(evaluations) == 10 and f"{APP}/evaluations/cancelled-order-status" in evaluations
    assert "Regression suite" in page.text and "?dataset=regression" in page.text
    document = BeautifulSoup(page.text, "html.parser")
    verdicts = [tag.get_text() for tag in document.select("table.evaluations .verdict")]
    assert verdicts.count("FAIL") == 3 and verdicts.count("PASS") == 7
    # Each row's trend: its last results as bars linking to their pages (a scenario ran five times).
    bars = document.select("svg.trend a rect")
    assert len(bars) == 3 * 5 + 7 and all(tag.parent["href"].startswith(f"/console/{APP}/evaluations/")
                                          for tag in bars)
    assert not document.find_all(style=True)
    only = client.get(f"/console/{APP}/evaluations", params={"dataset": "regression"})
    assert len(set(links(only.text, rf"{APP}/evaluations/[\w-]+"))) == 7


def test_evaluations_page_with_the_tools_tokens(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    first = client.get(f"/console/{APP}/evaluations", params={"pageSize": "4"}).text
    found = re.search(r'href="([^"]+)" rel="next"', first)
    assert found
    second = client.get(found.group(1).replace("&amp;", "&")).text
    ids = set(links(first, rf"{APP}/evaluations/[\w-]+"))
    assert len(ids) == 4 and not ids & set(links(second, rf"{APP}/evaluations/[\w-]+"))
    assert "« First page" in second


def test_an_evaluation_shows_its_definition_metrics_and_last_results(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    page = client.get(f"/console/{APP}/evaluations/cancelled-order-status")
    assert page.status_code == 200
    text = BeautifulSoup(page.text, "html.parser").get_text(" ")
    assert "What's the status of AC-1006?" in text and "Expect_Processing_Status" in text
    assert "is being packed and ships within two business days" in text
    assert "Metrics by app version" in text
    results = links(page.text, rf"{APP}/evaluations/cancelled-order-status/results/\w+")
    assert results and 'class="trend big"' in page.text
    scenario = client.get(f"/console/{APP}/evaluations/scenario-change-address").text
    assert "Milestones" in scenario and "12 Elm Street" in scenario
    assert len(set(links(scenario, rf"{APP}/evaluations/scenario-change-address/results/\w+"))) == 5


def test_an_evaluations_results_page_with_the_tools_tokens(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    path = f"/console/{APP}/evaluations/scenario-change-address"

    def listed(html: str) -> list[str]:
        return [link["href"] for link in BeautifulSoup(html, "html.parser").select("table.results tbody td:first-child a")]

    every = listed(client.get(path).text)
    assert len(every) == 5  # the scenario ran five times
    seen: list[str] = []
    page = client.get(path, params={"pageSize": "2"}).text
    while True:
        seen += listed(page)
        found = re.search(r'href="([^"]+)" rel="next"', page)
        if found is None:
            break
        assert found.group(1).endswith("#results")  # the next page opens at its results
        page = client.get(found.group(1).replace("&amp;", "&")).text
        assert "« First page" in page
    assert seen == every  # newest first, each once
    forged = client.get(path, params={"pageToken": "AAAA"})
    assert forged.status_code == 400 and "INVALID_ARGUMENT" in forged.text


def test_a_failed_result_shows_expected_against_actual_and_the_judges_reasons(workspace: Services,
                                                                             keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    evaluation = client.get(f"/console/{APP}/evaluations/cancelled-order-status").text
    result = links(evaluation, rf"{APP}/evaluations/cancelled-order-status/results/\w+")[0]
    page = client.get(f"/console/{result}")
    assert page.status_code == 200
    document = BeautifulSoup(page.text, "html.parser")
    rows = {row.select_one("td").get_text(" ", strip=True).split(" ")[0] + " " +
            row.select_one("td").get_text(" ", strip=True).split(" ")[1]: row for row in document.select("tr.check")}
    reply = rows["agent response"]
    assert "is being packed" in reply.select_one("td.expected").get_text()
    assert "was cancelled on 2026-10-23" in reply.select_one("td.actual").get_text()
    assert reply.select_one(".verdict").get_text() == "FAIL" and "Offline judge" in reply.get_text()
    call = rows["tool call"]
    assert '"order_id": "AC-1006"' in call.select_one("td.actual").get_text()
    assert "orders" in rows["agent transfer"].select_one("td.actual").get_text()
    verdicts = document.select_one("table.verdicts").get_text(" ")
    assert "Semantic similarity" in verdicts and "Hallucination" in verdicts and "Not justified" in verdicts
    assert f'href="/console/{APP}/conversations/eval-' in page.text  # the replayed turn's conversation
    assert f'href="/console/{APP}/evaluationRuns/' in page.text


def test_a_scenario_result_shows_milestones_rubrics_and_the_user_goal(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    evaluation = client.get(f"/console/{APP}/evaluations/scenario-change-address").text
    result = links(evaluation, rf"{APP}/evaluations/scenario-change-address/results/\w+")[0]
    page = client.get(f"/console/{result}")
    assert page.status_code == 200
    document = BeautifulSoup(page.text, "html.parser")
    assert len(document.select("table.milestones tbody tr.milestone-completed")) == 2
    assert "will go to" in document.select_one("table.rubrics").get_text()
    assert "User task completed" in document.select_one(".goal-verdict").get_text()
    assert "update_delivery_address" in document.select_one("table.checks").get_text()


def test_runs_a_run_and_the_comparison_of_two(workspace: Services, keys: Keys,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    before, after = fix_and_rerun(workspace)
    client = signed_in(workspace, keys.admin)
    runs = client.get(f"/console/{APP}/evaluationRuns")
    assert runs.status_code == 200
    assert {before, after} <= set(links(runs.text, rf"{APP}/evaluationRuns/\w+"))
    run = client.get(f"/console/{after}")
    assert run.status_code == 200 and "COMPLETED" in run.text
    document = BeautifulSoup(run.text, "html.parser")
    assert len(document.select("table.results tbody tr")) == 7
    assert [tag.get_text() for tag in document.select("table.results .verdict")].count("FAIL") == 2
    assert document.select_one("form.compare-form")["action"] == f"/console/{after}/compare"
    assert before.rsplit("/", 1)[-1] in [o["value"] for o in document.select("form.compare-form option")]
    compared = client.get(f"/console/{after}/compare", params={"with": before.rsplit("/", 1)[-1]})
    assert compared.status_code == 200
    table = BeautifulSoup(compared.text, "html.parser")
    fixed = table.select("tr.delta-fixed")
    assert len(fixed) == 1 and "cancelled" in fixed[0].get_text()
    assert "semantic similarity: 0.00 → 4.00 (+4.00)" in " ".join(fixed[0].get_text(" ").split())
    assert not table.select("tr.delta-broke") and "<strong>1</strong> evaluation changed" in compared.text
    swapped = client.get(f"/console/{before}/compare", params={"with": after.rsplit("/", 1)[-1]})
    assert len(BeautifulSoup(swapped.text, "html.parser").select("tr.delta-fixed")) == 1  # the older is "before"

    # A run's evaluations, and a comparison's, a few at a time, each shown with its display name.
    monkeypatch.setattr(pages, "SHOWN_EVALUATIONS", 3)
    summaries = [row.get_text(" ", strip=True) for row in document.select("table.summaries tbody tr")]
    assert len(summaries) == 7
    shown: list[str] = []
    path = f"/console/{after}"
    while path:
        page = BeautifulSoup(client.get(path).text, "html.parser")
        shown += [row.get_text(" ", strip=True) for row in page.select("table.summaries tbody tr")]
        following = page.select_one('nav[aria-label="Pages of evaluations"] a[rel="next"]')
        path = str(following["href"]) if following else ""
        assert not following or "evaluationsAfter=" in path
    assert shown == summaries
    deltas: list[str] = []
    for number in (1, 2, 3):
        page = BeautifulSoup(client.get(f"/console/{after}/compare", params={
            "with": before.rsplit("/", 1)[-1], "page": str(number)}).text, "html.parser")
        rows = page.select("tr.delta")
        assert len(rows) == (3 if number < 3 else 1)
        deltas += [row.select_one("td").get_text(strip=True) for row in rows]
        assert bool(page.select_one('a[rel="next"]')) == (number < 3)
    assert len(set(deltas)) == 7 and "cancelled" in deltas[0].lower()  # the changed one first
    assert "<strong>1</strong> evaluation changed" in compared.text
    for bad in ("0", "4", "x"):
        refused = client.get(f"/console/{after}/compare", params={"with": before.rsplit("/", 1)[-1], "page": bad})
        assert refused.status_code == 400 and "INVALID_ARGUMENT: page:" in refused.text


def test_the_form_starts_a_run_and_lands_on_its_page(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    token = csrf(client, f"/console/{APP}/evaluations")
    assert 'action="/console/' + APP + '/evaluationRuns"' in client.get(f"/console/{APP}/evaluations").text
    form = {"csrf_token": token, "target": "evaluation:shipping-to-canada", "runCount": "2", "displayName": "From the form"}
    assert client.post(f"/console/{APP}/evaluationRuns", data={**form, "csrf_token": ""}).status_code == 403
    answer = client.post(f"/console/{APP}/evaluationRuns", data=form)
    assert answer.status_code == 303
    run = answer.headers["location"].removeprefix("/console/")
    assert run.startswith(f"{APP}/evaluationRuns/")
    page = client.get(answer.headers["location"])
    assert page.status_code == 200 and "From the form" in page.text
    if 'data-refresh-seconds="2"' in page.text:
        assert "RUNNING" in page.text
    for _ in range(600):  # let the run finish before the store closes
        if workspace.runtime.evaluations.get_run(run, LOCAL_USER).state != EvaluationRunState.RUNNING:
            break
        time.sleep(0.05)
    finished = client.get(f"/console/{run}").text
    assert "data-refresh-seconds" not in finished and "2 of 2 finished" in finished
    for bad, message in (({"target": "nothing"}, "target"), ({"target": "dataset:../x"}, "target"),
                         ({"target": "dataset:regression", "runCount": "500"}, "runCount"),
                         ({"target": "dataset:regression", "runCount": "two"}, "runCount")):
        refused = client.post(f"/console/{APP}/evaluationRuns", data={"csrf_token": token, **bad})
        assert refused.status_code == 400 and "INVALID_ARGUMENT" in refused.text and message in refused.text, bad


def test_a_chat_only_key_sees_no_evaluation(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.chat_only)
    for path in (f"/console/{APP}/evaluations", f"/console/{APP}/evaluations/cancelled-order-status",
                 f"/console/{APP}/evaluations/cancelled-order-status/results/x1", f"/console/{APP}/evaluationRuns",
                 f"/console/{APP}/evaluationRuns/x1", f"/console/{APP}/evaluationRuns/x1/compare?with=x2"):
        answer = client.get(path)
        assert answer.status_code == 403, path
        assert "PERMISSION_DENIED" in answer.text and "AC-1006" not in answer.text
    refused = client.post(f"/console/{APP}/evaluationRuns",
                          data={"csrf_token": csrf(client, "/console/"), "target": "dataset:regression"})
    assert refused.status_code == 403


def test_unknown_names_and_bad_parameters(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    runs = client.get(f"/console/{APP}/evaluationRuns").text
    run = links(runs, rf"{APP}/evaluationRuns/\w+")[0]
    for path in (f"/console/{APP}/evaluations/nope", f"/console/{APP}/evaluations/nope/results/abc",
                 f"/console/{APP}/evaluations/cancelled-order-status/results/abc",
                 f"/console/{APP}/evaluationRuns/nope", f"/console/{run}/compare?with=nope",
                 "/console/projects/demo/locations/global/apps/nope/evaluations"):
        answer = client.get(path)
        assert answer.status_code == 404 and "NOT_FOUND" in answer.text, path
    for path, params in ((f"/console/{APP}/evaluations", {"pageSize": "many"}),
                         (f"/console/{APP}/evaluations", {"pageToken": "AAAA"}),
                         (f"/console/{APP}/evaluations", {"dataset": "../../x"}),
                         (f"/console/{APP}/evaluationRuns", {"pageSize": "-1"}),
                         (f"/console/{run}", {"pageToken": "forged"}),
                         (f"/console/{run}/compare", {}),
                         (f"/console/{run}/compare", {"with": "<script>"}),
                         (f"/console/{run}/compare", {"with": run.rsplit("/", 1)[-1]})):
        answer = client.get(path, params=params)
        assert answer.status_code == 400 and "INVALID_ARGUMENT" in answer.text, (path, params)
        assert "<script>" not in answer.text


def test_hostile_text_in_an_evaluation_and_its_result_stays_text(workspace: Services, keys: Keys) -> None:
    result = hostile_evaluation(workspace)
    client = signed_in(workspace, keys.admin)
    for path in (f"/console/{APP}/evaluations", f"/console/{APP}/evaluations/{HOSTILE_EVALUATION}",
                 f"/console/{result}"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page.text, path
        assert_markup_is_ours(page.text)
    text = BeautifulSoup(client.get(f"/console/{result}").text, "html.parser").get_text()
    assert f"Where is {SCRIPT}?" in text and HTML in text and '"order_id": "<script>' in text


def test_a_conversation_becomes_a_golden_evaluation_from_its_page(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    page = client.get(f"/console/{APP}/conversations/demo-004").text
    action = f"/console/{APP}/conversations/demo-004:generateEvaluation"
    assert f'action="{action}"' in page
    token = csrf(client, f"/console/{APP}/conversations/demo-004")
    assert client.post(action, data={"csrf_token": ""}).status_code == 403
    assert client.post(action, data={"csrf_token": token}, headers={"origin": "http://elsewhere.test"}).status_code == 403

    made = client.post(action, data={"csrf_token": token})

    assert made.status_code == 303
    evaluation = made.headers["location"].removeprefix("/console/")
    assert evaluation.startswith(f"{APP}/evaluations/")
    shown = client.get(made.headers["location"])
    assert shown.status_code == 200
    # The conversation's refund steps are the golden's expectations.
    assert "check_refund_eligibility" in shown.text and "create_refund" in shown.text
    for conversation, status, code in (("nope", 404, "NOT_FOUND"), ("bad%20id", 400, "INVALID_ARGUMENT"),
                                       ("<script>", 400, "INVALID_ARGUMENT")):
        answer = client.post(f"/console/{APP}/conversations/{conversation}:generateEvaluation",
                             data={"csrf_token": token})
        assert answer.status_code == status and code in answer.text and "<script>" not in answer.text, conversation
    chat_only = signed_in(workspace, keys.chat_only)
    assert 'generateEvaluation' not in chat_only.get(f"/console/{APP}/conversations/demo-004").text
    refused = chat_only.post(action, data={"csrf_token": csrf(chat_only, "/console/")})
    assert refused.status_code == 403 and "PERMISSION_DENIED" in refused.text
