"""``convener eval``: golden evaluations of the demo app run from the command line, for people and CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from convener.api.errors import FailedPrecondition
from convener.auth.caller import LOCAL_USER
from convener.ces.definitions import AppVersion
from convener.ces.evaluation.executor import RunExecutor
from convener.ces.evaluation.junit import ResultSummary, junit_xml
from convener.ces.evaluation.models import Evaluation, EvaluationDataset, EvaluationRunState
from convener.ces.evaluation.requests import ListEvaluationRunsRequest, ListEvaluationsRequest
from convener.cli import app
from convener.config import Settings
from convener.demo.loader import install_app
from convener.longrunning.service import OperationService
from convener.services import Services

APP = "projects/demo/locations/global/apps/support"
LOOKUP = f"{APP}/tools/lookup_order"
ORDERS = f"{APP}/agents/orders"


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG", "CONVENER_EVAL_PARALLELISM"):
        monkeypatch.delenv(variable, raising=False)


def golden(display_name: str, order_id: str, note: str | None = "Looks up the order") -> Evaluation:
    """The customer asks for an order's status: triage hands over to orders, which looks the order up."""
    lookup: dict[str, Any] = {"toolCall": {"tool": LOOKUP, "args": {"order_id": order_id}}}
    if note:
        lookup["note"] = note
    return Evaluation.model_validate({"displayName": display_name, "golden": {"turns": [{"steps": [
        {"userInput": {"text": "What's the status of order AC-1001?"}},
        {"expectation": {"agentTransfer": {"targetAgent": ORDERS}}},
        {"expectation": lookup},
    ]}]}})


class Store:
    """The store the CLI runs against: the demo app with a passing and a failing golden evaluation."""

    def __init__(self, database_url: str, tmp_path: Path) -> None:
        self.settings = Settings(data_dir=tmp_path / "data", database_url=database_url)
        self.options = ["--data-dir", str(tmp_path / "data"), "--database-url", database_url]
        self.tmp_path = tmp_path

    @contextmanager
    def services(self) -> Iterator[Services]:
        opened = Services.open(self.settings)
        try:
            yield opened
        finally:
            opened.close()

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(app, ["eval", *args, *self.options])


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Store:
    made = Store(database_url, tmp_path)
    with made.services() as services:
        install_app(services)
        evaluations = services.runtime.evaluations
        evaluations.create_evaluation(APP, "status", golden("Order status", "AC-1001"), LOCAL_USER)
        evaluations.create_evaluation(APP, "wrong", golden("Wrong order id", "AC-9999"), LOCAL_USER)
    return made


def assert_clean_failure(result: Result, code: str, exit_code: int = 2) -> None:
    """Failed with ``CODE: message`` on stderr, the exit code given and no Python traceback."""
    assert result.exit_code == exit_code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1].startswith(f"{code}: "), result.stderr


def read_junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root


def cases(root: ET.Element) -> list[ET.Element]:
    return root.findall("./testsuite/testcase")


# --- eval run -------------------------------------------------------------------------------------


def test_a_run_with_a_failing_evaluation_exits_1_and_shows_every_result(store: Store) -> None:
    result = store.run("run", "--app", APP)

    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stdout.splitlines()
    (passing,) = [line for line in lines if "Order status" in line]
    (failing,) = [line for line in lines if "Wrong order id" in line]
    assert "PASS" in passing and "1/1" in passing
    assert "FAIL" in failing and "0/1" in failing and "Looks up the order" in failing
    assert "2 results: 1 passed, 1 failed, 0 errors; pass rate 50.0% (required 100.0%)" in result.stdout
    assert f"{APP}/evaluationRuns/" in result.stderr


def test_fail_under_sets_the_pass_rate_needed(store: Store) -> None:
    assert store.run("run", "--app", APP, "--fail-under", "0.5").exit_code == 0
    assert store.run("run", "--app", APP, "--fail-under", "0.51").exit_code == 1
    assert store.run("run", "--app", APP, "--fail-under", "1.5").exit_code == 2


def test_junit_has_one_testcase_per_result_and_a_failure_naming_the_tool(store: Store) -> None:
    report = store.tmp_path / "report.xml"

    result = store.run("run", "--app", APP, "--junit", str(report))

    assert result.exit_code == 1, result.output
    root = read_junit(report)
    (suite,) = root.findall("testsuite")
    assert suite.get("name", "").startswith(f"{APP}/evaluationRuns/")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    found = {case.get("name"): case for case in cases(root)}
    assert set(found) == {"Order status", "Wrong order id"}
    assert {case.get("classname") for case in found.values()} == {APP}
    assert found["Order status"].find("failure") is None
    failure = found["Wrong order id"].find("failure")
    assert failure is not None
    message = failure.get("message", "")
    assert "lookup_order" in message and "AC-9999" in message and "Looks up the order" in message
    assert "lookup_order" in (failure.text or "")
    assert len(root.findall(".//failure")) == 1
    for case in found.values():
        assert float(case.get("time", "")) > 0
    properties = {p.get("name"): p.get("value") for p in suite.findall("./properties/property")}
    assert properties["evaluationRun"] == suite.get("name")
    assert properties["toolCallBehaviour"] == "REAL"


def test_evaluation_selects_by_id_or_by_full_name(store: Store) -> None:
    report = store.tmp_path / "one.xml"

    passing = store.run("run", "--app", APP, "--evaluation", "status", "--junit", str(report))

    assert passing.exit_code == 0, passing.output
    assert "1 result: 1 passed, 0 failed, 0 errors; pass rate 100.0%" in passing.stdout
    assert "Wrong order id" not in passing.stdout
    assert [case.get("name") for case in cases(read_junit(report))] == ["Order status"]
    failing = store.run("run", "--app", APP, "--evaluation", f"{APP}/evaluations/wrong")
    assert failing.exit_code == 1, failing.output
    assert "Order status" not in failing.stdout


def test_dataset_runs_its_evaluations(store: Store) -> None:
    with store.services() as services:
        services.runtime.evaluations.datasets.create(APP, "ds", EvaluationDataset(
            display_name="DS", evaluations=[f"{APP}/evaluations/status", f"{APP}/evaluations/wrong"]), LOCAL_USER)
        services.runtime.evaluations.datasets.create(APP, "green", EvaluationDataset(
            display_name="Green", evaluations=[f"{APP}/evaluations/status"]), LOCAL_USER)

    both = store.run("run", "--app", APP, "--dataset", "ds")
    green = store.run("run", "--app", APP, "--dataset", f"{APP}/evaluationDatasets/green")

    assert both.exit_code == 1, both.output
    assert "2 results: 1 passed, 1 failed" in both.stdout
    assert green.exit_code == 0, green.output
    assert "1 result: 1 passed" in green.stdout
    with store.services() as services:
        runs, _ = services.runtime.evaluations.list_runs(
            ListEvaluationRunsRequest(parent=APP, order_by="create_time"), LOCAL_USER)
    assert {run.evaluation_dataset for run in runs} == {f"{APP}/evaluationDatasets/ds",
                                                        f"{APP}/evaluationDatasets/green"}


def test_run_count_repeats_every_evaluation(store: Store) -> None:
    report = store.tmp_path / "twice.xml"

    result = store.run("run", "--app", APP, "--run-count", "2", "--junit", str(report))

    assert result.exit_code == 1, result.output
    assert "4 results: 2 passed, 2 failed" in result.stdout
    assert sorted(case.get("name", "") for case in cases(read_junit(report))) == [
        "Order status #1", "Order status #2", "Wrong order id #1", "Wrong order id #2"]


def test_method_and_fake_tools_reach_the_run(store: Store) -> None:
    report = store.tmp_path / "fake.xml"

    result = store.run("run", "--app", APP, "--evaluation", "status", "--method", "naive", "--fake-tools",
                       "--junit", str(report))

    assert result.exit_code == 0, result.output
    (suite,) = read_junit(report).findall("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.findall("./properties/property")}
    assert (properties["goldenRunMethod"], properties["toolCallBehaviour"]) == ("NAIVE", "FAKE")
    with store.services() as services:
        run = services.runtime.evaluations.get_run(suite.get("name", ""), LOCAL_USER)
    assert run.golden_run_method is not None and run.golden_run_method.value == "NAIVE"
    assert run.config is not None and run.config.tool_call_behaviour is not None
    assert run.config.tool_call_behaviour.value == "FAKE"


def test_app_version_runs_a_version_of_the_app(store: Store) -> None:
    with store.services() as services:
        services.runtime.versions.create(APP, "v1", AppVersion(display_name="First"), LOCAL_USER)
    report = store.tmp_path / "v1.xml"

    result = store.run("run", "--app", APP, "--evaluation", "status", "--app-version", "v1", "--junit", str(report))

    assert result.exit_code == 0, result.output
    (suite,) = read_junit(report).findall("testsuite")
    properties = {p.get("name"): p.get("value") for p in suite.findall("./properties/property")}
    assert properties["appVersion"] == f"{APP}/versions/v1"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--app", "projects/demo/locations/global/apps/nowhere"], "app projects/demo/locations/global/apps/nowhere"),
        (["--app", APP, "--evaluation", "nope"], f"evaluation {APP}/evaluations/nope does not exist"),
        (["--app", APP, "--dataset", "nope"], f"evaluation dataset {APP}/evaluationDatasets/nope does not exist"),
        (["--app", APP, "--evaluation", "status", "--app-version", "v9"], "app version"),
    ],
    ids=["app", "evaluation", "dataset", "version"],
)
def test_what_does_not_exist_fails_with_not_found(store: Store, arguments: list[str], message: str) -> None:
    result = store.run("run", *arguments)

    assert_clean_failure(result, "NOT_FOUND")
    assert message in result.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        ["--app", "not-an-app"],
        ["--app", APP, "--evaluation", "status", "--dataset", "ds"],
        ["--app", APP, "--evaluation", "status", "--junit", "no/such/directory/report.xml"],
    ],
    ids=["app-name", "evaluation-and-dataset", "junit-directory"],
)
def test_usage_errors_exit_2_with_invalid_argument(store: Store, arguments: list[str]) -> None:
    assert_clean_failure(store.run("run", *arguments), "INVALID_ARGUMENT")


def test_an_unknown_method_is_a_usage_error(store: Store) -> None:
    result = store.run("run", "--app", APP, "--method", "SOMETIMES")

    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_running_them_all_runs_scenario_evaluations_five_times(store: Store) -> None:
    with store.services() as services:
        services.runtime.evaluations.create_evaluation(APP, "simulated", Evaluation.model_validate(
            {"displayName": "Simulated", "scenario": {"task": "Ask where order AC-1001 is."}}), LOCAL_USER)

    result = store.run("run", "--app", APP, "--fail-under", "0")

    assert result.exit_code == 0, result.output
    assert "7 results" in result.stdout  # two goldens once, the scenario five times
    assert all(f"Simulated #{k}" in result.stdout for k in range(1, 6))


def test_an_app_without_golden_evaluations_fails_with_failed_precondition(store: Store) -> None:
    with store.services() as services:
        for evaluation in ("status", "wrong"):
            services.runtime.evaluations.evaluations.delete(f"{APP}/evaluations/{evaluation}", None, LOCAL_USER)

    assert_clean_failure(store.run("run", "--app", APP), "FAILED_PRECONDITION")


def test_results_that_error_are_junit_errors(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: RunExecutor, row: Any, *_: Any) -> dict[str, Any]:
        raise FailedPrecondition("the agent <broke> & stopped")

    monkeypatch.setattr(RunExecutor, "_outcome", broken)
    report = store.tmp_path / "errors.xml"

    result = store.run("run", "--app", APP, "--junit", str(report), "--fail-under", "0")

    assert result.exit_code == 0, result.output
    assert "2 results: 0 passed, 0 failed, 2 errors; pass rate 0.0%" in result.stdout
    assert result.stdout.count("ERROR") == 2
    root = read_junit(report)
    errors = root.findall(".//error")
    assert len(errors) == 2 and not root.findall(".//failure")
    assert {error.get("message") for error in errors} == {"FAILED_PRECONDITION: the agent <broke> & stopped"}
    assert {error.get("type") for error in errors} == {"ERROR"}
    suite = root.find("testsuite")
    assert suite is not None and suite.get("errors") == "2"


def test_ctrl_c_cancels_the_run_and_exits_130(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVENER_WORKER", "false")  # nothing runs: the run waits for ever
    cancelled: list[str] = []
    cancel = OperationService.cancel

    def interrupted(self: OperationService, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    def recording_cancel(self: OperationService, name: str, caller: Any) -> None:
        cancelled.append(name)
        cancel(self, name, caller)

    monkeypatch.setattr(OperationService, "wait", interrupted)
    monkeypatch.setattr(OperationService, "cancel", recording_cancel)

    result = store.run("run", "--app", APP)

    assert result.exit_code == 130, result.output
    assert "Traceback" not in result.output
    assert "cancelled" in result.stderr
    assert len(cancelled) == 1
    with store.services() as services:
        (run,) = services.runtime.evaluations.list_runs(ListEvaluationRunsRequest(parent=APP), LOCAL_USER)[0]
        operation = services.runtime.operations.get(cancelled[0], LOCAL_USER)
    assert run.state == EvaluationRunState.CANCELLED
    assert operation.done and operation.error is not None and operation.error.code == 1


def test_display_names_with_markup_and_xml_characters_survive(store: Store) -> None:
    name = 'Order [bold]"status"[/bold] <AC-1001> & more'
    with store.services() as services:
        services.runtime.evaluations.create_evaluation(APP, "odd", golden(name, "AC-1001", note=None), LOCAL_USER)
    report = store.tmp_path / "odd.xml"

    result = store.run("run", "--app", APP, "--evaluation", "odd", "--junit", str(report))

    assert result.exit_code == 0, result.output
    assert "[bold]" in result.stdout
    assert [case.get("name") for case in cases(read_junit(report))] == [name]


def test_junit_replaces_characters_xml_cannot_hold(tmp_path: Path) -> None:
    summary = ResultSummary(name="r", display_name="bell\x07 and nul\x00", status="FAIL",
                            failures=["turn 1: said \x1b[31mred\x1b[0m"], latencies=[0.5, 0.25])
    tree = junit_xml("run", "app", [summary])
    path = tmp_path / "x.xml"
    tree.write(path, encoding="utf-8", xml_declaration=True)

    (case,) = cases(read_junit(path))
    assert case.get("name") == "bell\ufffd and nul\ufffd"
    assert case.get("time") == "0.750"
    failure = case.find("failure")
    assert failure is not None and "red" in failure.get("message", "")


# --- eval import-adk ------------------------------------------------------------------------------

EVALSET = {
    "eval_set_id": "orders",
    "eval_cases": [{
        "eval_id": "order status",
        "conversation": [{
            "user_content": {"parts": [{"text": "What's the status of order AC-1001?"}], "role": "user"},
            "intermediate_data": {"tool_uses": [
                {"name": "transfer_to_agent", "args": {"agent_name": "orders"}},
                {"name": "lookup_order", "args": {"order_id": "AC-1001"}},
            ]},
        }],
    }],
}


def test_import_adk_creates_evaluations_that_run(store: Store) -> None:
    evalset = store.tmp_path / "orders.evalset.json"
    evalset.write_text(json.dumps(EVALSET), encoding="utf-8")
    # The case expects no final response, which ADK's default response_match_score would fail (ROUGE of
    # anything against nothing is 0): its test_config.json, found beside it as ADK finds it, scores tools only.
    (store.tmp_path / "test_config.json").write_text('{"criteria": {"tool_trajectory_avg_score": 1.0}}', "utf-8")

    imported = store.run("import-adk", str(evalset), "--app", APP)

    assert imported.exit_code == 0, imported.output
    assert imported.stdout.split() == [f"{APP}/evaluations/order-status"]
    assert "1 evaluation imported, scored with " in imported.stderr and "test_config.json" in imported.stderr
    with store.services() as services:
        evaluation = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/order-status", False, LOCAL_USER)
    assert evaluation.display_name == "order status"
    assert evaluation.tags == ["adk", "orders"]
    ran = store.run("run", "--app", APP, "--evaluation", "order-status")
    assert ran.exit_code == 0, ran.output
    again = store.run("import-adk", str(evalset), "--app", APP)
    assert_clean_failure(again, "INVALID_ARGUMENT")
    assert "already exists" in again.stderr

UNKNOWN_TOOL = {"eval_set_id": "dice", "eval_cases": [{"eval_id": "roll", "conversation": [{
    "user_content": {"parts": [{"text": "roll a die"}]},
    "intermediate_data": {"tool_uses": [{"name": "roll_die", "args": {"sides": 6}}]},
}]}]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"eval_cases": 3}', "eval_set_id"),
        (b"[", "not JSON"),
        (b"\xff\xfe{}", "UTF-8"),
        (json.dumps(UNKNOWN_TOOL).encode(), "tools/roll_die does not exist"),
    ],
    ids=["not-an-evalset", "not-json", "not-utf8", "unknown-tool"],
)
def test_import_adk_rejects_a_bad_file_with_invalid_argument(store: Store, content: bytes, message: str) -> None:
    bad = store.tmp_path / "bad.evalset.json"
    bad.write_bytes(content)

    result = store.run("import-adk", str(bad), "--app", APP)

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert message in result.stderr
    with store.services() as services:
        evaluations, _ = services.runtime.evaluations.list_evaluations(ListEvaluationsRequest(parent=APP), LOCAL_USER)
    assert sorted(e.name or "" for e in evaluations) == [f"{APP}/evaluations/status", f"{APP}/evaluations/wrong"]


def imported_expectations(store: Store, evaluation_id: str) -> list[str]:
    with store.services() as services:
        evaluation = services.runtime.evaluations.get_evaluation(f"{APP}/evaluations/{evaluation_id}", False,
                                                                  LOCAL_USER)
    assert evaluation.golden is not None
    return [name.rsplit("/", 1)[-1] for name in evaluation.golden.evaluation_expectations or []]


def test_import_adk_without_a_config_scores_with_adks_defaults(store: Store) -> None:
    evalset = store.tmp_path / "orders.evalset.json"
    evalset.write_text(json.dumps(EVALSET), encoding="utf-8")

    imported = store.run("import-adk", str(evalset), "--app", APP)

    assert imported.exit_code == 0, imported.output
    assert "scored with ADK default criteria" in imported.stderr
    assert imported_expectations(store, "order-status") == ["adk-tool-trajectory-avg-score-1.0-exact",
                                                            "adk-response-match-score-0.8"]
    # The case expects no final response: ROUGE-1 of anything against nothing is 0, so ADK fails it, and so do we.
    ran = store.run("run", "--app", APP, "--evaluation", "order-status")
    assert ran.exit_code == 1, ran.output
    assert "response_match_score 0.0000 < 0.8" in " ".join(ran.stdout.split())


def test_import_adk_criteria_option_wins_over_the_file_beside(store: Store) -> None:
    evalset = store.tmp_path / "orders.evalset.json"
    evalset.write_text(json.dumps(EVALSET), encoding="utf-8")
    (store.tmp_path / "test_config.json").write_text('{"criteria": {"response_match_score": 0.5}}', "utf-8")
    explicit = store.tmp_path / "strict.json"
    explicit.write_text(json.dumps({"criteria": {
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"}, "safety_v1": 1.0}}), "utf-8")

    imported = store.run("import-adk", str(evalset), "--app", APP, "--criteria", str(explicit))

    assert imported.exit_code == 0, imported.output
    assert imported_expectations(store, "order-status") == ["adk-tool-trajectory-avg-score-1.0-in-order"]
    assert "warning: safety_v1 was not applied: it needs a model judge" in " ".join(imported.stderr.split())
    assert f"scored with {explicit}" in " ".join(imported.stderr.split())


@pytest.mark.parametrize(("config", "message"), [
    (b'{"criteria": {"response_match_score": 0.8', "not JSON: Expecting ',' delimiter at line 1 column 42"),
    (b'{"criteria": {"response_match_score": 80}}', "criteria.response_match_score: the threshold 80 is outside"),
    (b'{"criteria": {"rouge": 0.8}}', "criteria.rouge: not a metric ADK knows"),
    (b'{"x": "' + b"y" * (1024 * 1024) + b'"}', "larger than 1 MB"),
], ids=["malformed", "out-of-range", "unknown-criterion", "huge"])
def test_import_adk_rejects_a_bad_config_and_imports_nothing(store: Store, config: bytes, message: str) -> None:
    evalset = store.tmp_path / "orders.evalset.json"
    evalset.write_text(json.dumps(EVALSET), encoding="utf-8")
    (store.tmp_path / "test_config.json").write_bytes(config)

    result = store.run("import-adk", str(evalset), "--app", APP)

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert message in " ".join(result.stderr.split()), result.stderr
    assert "test_config.json" in result.stderr
    with store.services() as services:
        evaluations, _ = services.runtime.evaluations.list_evaluations(ListEvaluationsRequest(parent=APP), LOCAL_USER)
    assert f"{APP}/evaluations/order-status" not in [e.name for e in evaluations]
    assert_clean_failure(store.run("import-adk", str(evalset), "--app", APP, "--criteria",
                                   str(store.tmp_path / "none.json")), "NOT_FOUND")


def test_import_adk_of_a_missing_file_or_app_fails_cleanly(store: Store) -> None:
    assert_clean_failure(store.run("import-adk", str(store.tmp_path / "none.json"), "--app", APP), "NOT_FOUND")
    evalset = store.tmp_path / "orders.evalset.json"
    evalset.write_text(json.dumps(EVALSET), encoding="utf-8")
    assert_clean_failure(store.run("import-adk", str(evalset), "--app", f"{APP}x"), "NOT_FOUND")


def test_results_shown_outside_a_terminal_are_one_aligned_line_each() -> None:
    from convener.cli import _plain_table

    table = _plain_table([("Order status", "PASS", "1/1", "", "0.004s"),
                          ("A longer name", "FAIL", "0/12", "turn 1: expected\nthe tool", "-")])

    lines = table.splitlines()
    assert lines[0].split() == ["Evaluation", "Status", "Turns", "First", "failure", "Latency"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 4, "a reason's line break does not break its row"
    assert lines[3].startswith("A longer name  FAIL     0/12  turn 1: expected the tool")
    assert lines[2].index("PASS") == lines[3].index("FAIL") == lines[0].index("Status")
    assert lines[2].index("1/1") + 3 == lines[3].index("0/12") + 4, "counts right-aligned"
    assert lines[2].endswith("0.004s") and lines[3].endswith("-")
