"""Callables an app may name: registered ones only (decorator, entry-point group, the operator's list)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from convener.api.errors import ApiError, InvalidArgument, PermissionDenied
from convener.config import Settings
from convener.demo import tools as demo_tools
from convener.outside import callables
from convener.outside.callables import load_callable, registered, registered_specs

FIELD = "tool.pythonFunction.entryPoint"


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An operator's package on sys.path, with a module that fails to import; yields its (unique) name."""
    name = f"convener_test_plugin_{uuid.uuid4().hex[:8]}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(
        "from os import system\n"
        "\n"
        "GREETING = 'hello'\n"
        "IMPORTED = []\n"
        "IMPORTED.append(1)\n"
        "\n"
        "def greet(name):\n"
        "    return f'{GREETING}, {name}'\n"
        "\n"
        "class Tools:\n"
        "    @staticmethod\n"
        "    def shout(text):\n"
        "        return text.upper()\n"
    )
    (package / "broken.py").write_text("raise RuntimeError('missing configuration')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def refusal(spec: str, listed: list[str], kind: type[ApiError] = PermissionDenied) -> str:
    with pytest.raises(kind) as refused:
        load_callable(spec, listed, FIELD)
    assert refused.value.message.startswith(FIELD), refused.value.message
    return refused.value.message


def test_the_operators_callables_load(plugin: str) -> None:
    listed = [f"{plugin}:greet", f"{plugin}:Tools.shout"]
    assert load_callable(f"{plugin}:greet", listed, FIELD)("Ada") == "hello, Ada"
    assert load_callable(f"{plugin}:Tools.shout", listed, FIELD)("hey") == "HEY"


def test_an_unregistered_callable_is_refused_before_its_module_is_imported(plugin: str) -> None:
    message = refusal(f"{plugin}:greet", [f"{plugin}:Tools.shout"])
    assert "not a registered callable" in message and "CONVENER_PYTHON_CALLABLES" in message
    assert plugin not in sys.modules, "the module of an unregistered callable was imported"
    assert "CONVENER_PYTHON_CALLABLES" in refusal("os:system", [f"{plugin}:greet"])
    assert "not a registered" in refusal(f"{plugin}:system", [f"{plugin}:greet"])
    assert "not a registered" in refusal("json:dumps", [])


def test_the_demo_registers_its_pure_tools_and_nothing_else() -> None:
    demo = {spec for spec in registered_specs() if spec.startswith("convener.")}
    assert demo == {f"convener.demo.tools:{name}" for name in (
        "lookup_order", "list_customer_orders", "check_refund_eligibility", "create_refund",
        "update_delivery_address")}
    assert load_callable("convener.demo.tools:lookup_order", [], FIELD) is demo_tools.lookup_order
    for spec in ("convener.demo.analytics_data:build_demo_database", "convener.demo.evaluations:personas",
                 "convener.demo.tools:dataset", "convener.demo.loader:load_demo"):
        assert "not a registered callable" in refusal(spec, [])


def test_the_operator_cannot_list_convener_s_own_code() -> None:
    with pytest.raises(ValueError, match="Convener's own callables"):
        Settings(python_callables=("convener.demo.analytics_data:build_demo_database",))
    # and, should a list get past the settings, loading refuses it all the same
    assert "not a registered" in refusal("convener.demo.analytics_data:build_demo_database",
                                         ["convener.demo.analytics_data:build_demo_database"])


def test_callables_of_the_entry_point_group_are_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package lists a module (whose decorators register) or one callable in the group."""
    name = f"convener_test_ep_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "from convener.outside.callables import registered\n\n"
        "@registered\ndef decorated(x):\n    return x + 1\n\n"
        "def named(x):\n    return x * 2\n\n"
        "def unlisted(x):\n    return x\n")
    info = tmp_path / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[convener.callables]\nmodule = {name}\none = {name}:named\n"
                                           "writer = convener.demo.analytics_data:build_demo_database\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(callables, "_loaded", False)
    try:
        assert load_callable(f"{name}:decorated", [], FIELD)(1) == 2
        assert load_callable(f"{name}:named", [], FIELD)(2) == 4
        assert "not a registered" in refusal(f"{name}:unlisted", [])
        assert "not a registered" in refusal("convener.demo.analytics_data:build_demo_database", [])
    finally:
        for spec in (f"{name}:decorated", f"{name}:named"):
            callables._registry.pop(spec, None)
        sys.modules.pop(name, None)


def test_only_module_level_functions_can_be_registered() -> None:
    def local() -> None: ...

    with pytest.raises(TypeError, match="module level"):
        registered(local)


def test_broken_listed_callables_are_invalid(plugin: str) -> None:
    def invalid(spec: str) -> str:
        return refusal(spec, [spec], InvalidArgument)

    assert "cannot import" in invalid(f"{plugin}.missing:run")
    failed_import = invalid(f"{plugin}.broken:run")
    assert "RuntimeError" in failed_import and "Traceback" not in failed_import
    assert 'has no attribute "Tools.nope"' in invalid(f"{plugin}:Tools.nope")
    assert "not a callable" in invalid(f"{plugin}:GREETING")


@pytest.mark.parametrize(
    "spec", ["json", "json:", ":dumps", "json:dumps()", "../json:dumps", "json:dumps:x", "a b:c", "x" * 400 + ":f"]
)
def test_malformed_specs_are_invalid(spec: str) -> None:
    assert "must look like" in refusal(spec, [spec], InvalidArgument)
