"""``convener chat``: the demo app in the terminal, its client tool answered at the prompt, and names that
do not exist refused before the first prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from convener.auth.caller import LOCAL_USER
from convener.ces.client_answers import shape
from convener.ces.definitions import AppVersion
from convener.cli import app as cli
from convener.config import Settings
from convener.demo import APP
from convener.demo.loader import install_app
from convener.services import Services


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def store(settings: Settings) -> list[str]:
    """The demo app alone (no recorded conversations) and its version v1 in a store; the CLI options that
    name the store."""
    opened = Services.open(settings)
    try:
        install_app(opened)
        opened.runtime.versions.create(str(APP), "v1", AppVersion(), LOCAL_USER)
    finally:
        opened.close()
    return ["--data-dir", str(settings.data_dir), "--database-url", settings.resolved_database_url]


def chat(store: list[str], *lines: str, app: str = str(APP), options: tuple[str, ...] = ()) -> Result:
    return CliRunner().invoke(cli, ["chat", app, *options, *store], input="".join(f"{line}\n" for line in lines))


REFUND = "My order AC-1001 arrived broken, I'd like a refund."


@pytest.mark.parametrize("options", [(), ("--version", "v1")], ids=["draft", "version"])
def test_the_client_tool_prompt_shows_and_takes_the_declared_response_shape(
        store: list[str], options: tuple[str, ...]) -> None:
    result = chat(store, REFUND, '{"verified": true, "method": "fingerprint"}', "/quit", options=options)

    assert result.exit_code == 0, result.output
    assert 'confirm_identity answers {"method"?: "fingerprint" | "face" | "code", "verified"?: boolean}' \
        in result.output
    assert "answer for confirm_identity (JSON; empty for {})" in result.output
    assert "· create_refund(" in result.output, "the refund went ahead: the agent read verified from the answer"


def test_the_ces_envelope_is_still_taken_as_it_is(store: list[str]) -> None:
    result = chat(store, REFUND, '{"output": {"verified": false, "method": "code"}}', "/quit")

    assert result.exit_code == 0, result.output
    assert "create_refund(" not in result.output


def test_an_answer_of_another_shape_is_refused_with_what_is_expected(store: list[str]) -> None:
    result = chat(store, REFUND, "not json", '{"verified": "yes"}', '{"verified": true, "method": "face"}', "/quit")

    assert result.exit_code == 0, result.output
    assert "that is not JSON" in result.output
    assert "that is not what confirm_identity answers (verified: 'yes' is not of type 'boolean'); expected {" \
        in result.output
    assert result.output.count("answer for confirm_identity") == 3
    assert "· create_refund(" in result.output


@pytest.mark.parametrize(("arguments", "message"), [
    ({"app": "projects/demo/locations/global/apps/nowhere"}, "NOT_FOUND: app projects/demo/locations/global/apps/nowhere"),
    ({"options": ("--agent", "nobody")}, "NOT_FOUND: "),
    ({"options": ("--version", "v9")}, "NOT_FOUND: "),
    ({"app": "apps/support"}, "INVALID_ARGUMENT: "),
])
def test_what_does_not_exist_fails_before_the_first_prompt_with_exit_2(
        store: list[str], arguments: dict[str, object], message: str) -> None:
    result = chat(store, "hello", "/quit", **arguments)  # type: ignore[arg-type]

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message), result.stderr
    assert "you>" not in result.output and "session " not in result.stdout


def test_shapes_read_like_the_values_they_ask_for() -> None:
    assert shape({"type": "object", "properties": {"n": {"type": "integer"}, "tags": {
        "type": "array", "items": {"type": "string"}}}, "required": ["n"]}) == '{"n": integer, "tags"?: [string, …]}'
    assert shape({"type": ["string", "null"]}) == "string"
    assert shape({}) == "any JSON"
