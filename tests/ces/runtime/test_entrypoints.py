"""Entry points named by apps, checked against the operator's allow-list, and calls under a deadline."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from convener.api.errors import InvalidArgument
from convener.ces.runtime.entrypoints import call_with_deadline, load_entry_point
from convener.ces.runtime.failures import ToolFailure

FIELD = "tool.pythonFunction.entryPoint"


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An operator's package on sys.path, with a module that fails to import; yields its (unique) name."""
    name = f"convener_test_plugin_{uuid.uuid4().hex[:8]}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(
        "from os import system\n"
        "import subprocess\n"
        "\n"
        "GREETING = 'hello'\n"
        "\n"
        "def greet(name):\n"
        "    return f'{GREETING}, {name}'\n"
        "\n"
        "class Tools:\n"
        "    @staticmethod\n"
        "    def shout(text):\n"
        "        return text.upper()\n"
        "\n"
        "def _private():\n"
        "    return 'hidden'\n"
    )
    (package / "broken.py").write_text("raise RuntimeError('missing configuration')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name


def refusal(spec: str, allowed: list[str]) -> str:
    with pytest.raises(InvalidArgument) as refused:
        load_entry_point(spec, allowed, FIELD)
    assert refused.value.message.startswith(FIELD), refused.value.message
    return refused.value.message


def test_allowed_functions_and_methods_load(plugin: str) -> None:
    assert load_entry_point(f"{plugin}:greet", [plugin], FIELD)("Ada") == "hello, Ada"
    assert load_entry_point(f"{plugin}:Tools.shout", [plugin], FIELD)("hey") == "HEY"
    assert load_entry_point("json.decoder:JSONDecoder", ["json"], FIELD) is json.decoder.JSONDecoder


def test_modules_outside_the_allow_list_are_refused(plugin: str) -> None:
    message = refusal("os:system", [plugin])
    assert '"os"' in message and "CONVENER_PYTHON_MODULES" in message

    assert "not allowed" in refusal("jsonschema:validate", ["json"]), "a prefix is not a parent package"
    assert "not allowed" in refusal(f"{plugin}:greet", [])


def test_other_modules_cannot_be_reached_through_an_allowed_one(plugin: str) -> None:
    assert "defined in module" in refusal(f"{plugin}:system", [plugin])
    assert "passes through a module" in refusal(f"{plugin}:subprocess.run", [plugin])
    assert "private" in refusal(f"{plugin}:_private", [plugin])
    assert "private" in refusal(f"{plugin}:greet.__globals__", [plugin])


def test_broken_names_are_invalid(plugin: str) -> None:
    assert "cannot import" in refusal(f"{plugin}.missing:run", [plugin])
    failed_import = refusal(f"{plugin}.broken:run", [plugin])
    assert "RuntimeError: missing configuration" in failed_import
    assert "Traceback" not in failed_import
    assert 'has no attribute "nope"' in refusal(f"{plugin}:Tools.nope", [plugin])
    assert "not a callable" in refusal(f"{plugin}:GREETING", [plugin])


@pytest.mark.parametrize(
    "spec", ["json", "json:", ":dumps", "json:dumps()", "../json:dumps", "json:dumps:x", "a b:c"]
)
def test_malformed_specs_are_invalid(spec: str) -> None:
    assert "must look like" in refusal(spec, ["json"])


def test_call_with_deadline_returns_the_result() -> None:
    assert call_with_deadline(lambda: 6 * 7, 5, "tool answer") == 42


def test_call_with_deadline_gives_up_on_a_slow_call() -> None:
    release = threading.Event()
    started = time.monotonic()

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(lambda: release.wait(10), 0.2, "tool sleepy")

    release.set()  # let the abandoned worker finish
    assert failure.value.code == "DEADLINE_EXCEEDED"
    assert failure.value.message == "tool sleepy did not finish within 0.2 s"
    assert time.monotonic() - started < 2


def test_call_with_deadline_reports_an_exception_without_a_traceback() -> None:
    def crash() -> None:
        raise KeyError("customer")

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(crash, 5, "tool lookup")

    assert failure.value.code == "INTERNAL"
    assert failure.value.message == "tool lookup failed: KeyError: 'customer'"


def test_call_with_deadline_clips_long_messages_and_passes_tool_failures_through() -> None:
    def verbose() -> None:
        raise ValueError("x" * 5000)

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(verbose, 5, "tool verbose")
    assert len(failure.value.message) == 500

    def deliberate() -> None:
        raise ToolFailure("no such order", code="NOT_FOUND")

    with pytest.raises(ToolFailure) as failure:
        call_with_deadline(deliberate, 5, "tool orders")
    assert (failure.value.code, failure.value.message) == ("NOT_FOUND", "no such order")
