"""start_export_app and start_import_app through the MCP tools: long-running operations with progress and
cancellation, content inline or as files inside CONVENER_APP_ROOTS, and hostile archives and paths."""

from __future__ import annotations

import base64
import io
import os
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client

from convener.ces.bundles import Step
from convener.ces.transfers import Stopped
from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services
from tests.ces.session_helpers import APP, agent, make_app, run, runtime_settings, set_root, texts
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio
WHERE = {"projectId": "acme", "locationId": "global"}
COPY = "projects/acme/locations/global/apps/copy"


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    folder = tmp_path / "apps"
    folder.mkdir()
    return folder


@pytest.fixture
def settings(database_url: str, tmp_path: Path, roots: Path) -> Settings:
    return runtime_settings(database_url, tmp_path, app_roots=(roots,))


async def _app(client: Client, agents: int = 3) -> None:
    await make_app(client)
    for index in range(agents):
        await agent(client, f"a{index}", playbookAgent={"fallback": [{"reply": f"hello from a{index}"}]})
    await set_root(client, "a0")


async def _done(client: Client, operation: dict[str, Any]) -> dict[str, Any]:
    return await call_json(client, "wait_operation", {"name": operation["name"], "timeout": "60s"})


def _zip(files: dict[str, bytes]) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return base64.b64encode(buffer.getvalue()).decode()


async def test_export_then_import_round_trip_inline(client: Client) -> None:
    await _app(client)
    started = await call_json(client, "start_export_app", {**WHERE, "appId": "shop"})
    assert started["name"].startswith("projects/acme/locations/global/operations/")
    done = await _done(client, started)
    assert done["done"] is True and "error" not in done
    assert done["metadata"]["progress"] == {"totalCount": 4, "completedCount": 4}
    content = done["response"]["appContent"]
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(content))) as archive:
        assert archive.namelist() == ["shop/app.yaml"]
        text = archive.read("shop/app.yaml").decode()
    assert text == (await call_json(client, "export_app", {"name": APP}))["appContent"]
    imported = await call_json(client, "start_import_app", {**WHERE, "appId": "copy", "content": content})
    finished = await _done(client, imported)
    assert finished["response"] == {"@type": "type.googleapis.com/google.cloud.ces.v1.ImportAppResponse",
                                    "name": COPY}
    assert (await call_json(client, "get_app", {"name": COPY}))["rootAgent"] == f"{COPY}/agents/a0"
    again = (await call_json(client, "export_app", {"name": COPY}))["appContent"]
    assert yaml.safe_load(again) == yaml.safe_load(text)
    # The plain YAML imports too, and the tools' own view of a finished operation has Google's fields.
    plain = base64.b64encode(text.encode()).decode()
    view = await call_json(client, "start_import_app", {**WHERE, "appId": "copy", "content": plain, "replace": True},)
    assert set(view) <= {"name", "done", "status"}
    assert (await _done(client, view)).get("error") is None


async def test_progress_is_reported_while_waiting_for_the_operation(client: Client) -> None:
    await _app(client, agents=5)
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    operation = await call_json(client, "start_export_app", {**WHERE, "appId": "shop"})
    waited = await client.call_tool("wait_operation", {"name": operation["name"]}, progress_callback=on_progress)
    body = waited.structured_content
    assert body is not None and body["done"] is True and body["response"]["appContent"]
    assert seen and seen[-1] == (6.0, 6.0)
    assert [p for p, _ in seen] == sorted(p for p, _ in seen), "progress only goes forward"
    seen.clear()
    operation = await call_json(client, "start_import_app", {**WHERE, "appId": "copy",
                                                             "content": body["response"]["appContent"]})
    waited = await client.call_tool("wait_operation", {"name": operation["name"]}, progress_callback=on_progress)
    assert waited.structured_content and waited.structured_content["done"] is True
    assert seen and seen[-1] == (6.0, 6.0)
    view = await call_json(client, "get_operation", {"name": operation["name"]})
    assert view["response"]["name"] == COPY


@pytest.fixture
async def idle(settings: Settings) -> AsyncIterator[tuple[Services, Client]]:
    """Services whose worker runs nothing until started: operations can be cancelled before their job runs."""
    services = Services.open(settings.model_copy(update={"worker": False}))
    try:
        async with Client(mcp_servers(services)["/mcp"]) as client:
            yield services, client
    finally:
        services.close()


async def test_cancelled_transfers_end_cancelled_and_an_import_keeps_nothing(
        idle: tuple[Services, Client]) -> None:
    services, client = idle
    await _app(client)
    exported = await call_json(client, "start_export_app", {**WHERE, "appId": "shop"})
    content = base64.b64encode((await call_json(client, "export_app", {"name": APP}))["appContent"].encode()).decode()
    imported = await call_json(client, "start_import_app", {**WHERE, "appId": "copy", "content": content})
    assert exported["done"] is False and imported["done"] is False
    for operation in (exported, imported):
        await call_json(client, "cancel_operation", {"name": operation["name"]})
    services.jobs.start()
    for operation in (exported, imported):
        done = await _done(client, operation)
        assert done["error"]["code"] == 1 and done["metadata"]["cancelRequested"] is True
        assert "response" not in done
    error_text(await client.call_tool("get_app", {"name": COPY}), "NOT_FOUND")
    # A transfer that already ended stays as it ended.
    await call_json(client, "cancel_operation", {"name": exported["name"]})
    assert (await _done(client, exported))["error"]["code"] == 1


async def test_an_import_stopped_part_way_rolls_back(client: Client, services: Services,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped while its parts are written (as a cancellation stops it): no part of the app is kept."""
    await _app(client, agents=4)
    text = (await call_json(client, "export_app", {"name": APP}))["appContent"]
    bundles = services.runtime.transfers.bundles
    original = bundles.import_

    def import_stopped_midway(*args: Any) -> Any:
        *given, step = args
        def stopping(done: int, total: int) -> None:
            assert step is not None
            step(done, total)
            if done == 2:
                raise Stopped

        return original(*given, stopping)

    monkeypatch.setattr(bundles, "import_", import_stopped_midway)
    content = base64.b64encode(text.encode()).decode()
    done = await _done(client, await call_json(client, "start_import_app",
                                               {**WHERE, "appId": "copy", "content": content}))
    assert done["error"]["code"] == 1
    assert done["metadata"]["progress"] == {"totalCount": 5, "completedCount": 2}
    error_text(await client.call_tool("get_app", {"name": COPY}), "NOT_FOUND")


async def test_files_inside_the_roots_are_written_and_read(client: Client, roots: Path) -> None:
    await _app(client)
    target = roots / "shop.zip"
    done = await _done(client, await call_json(client, "start_export_app", {**WHERE, "appId": "shop",
                                                                            "path": str(target)}))
    assert done["response"]["appUri"] == target.as_uri() and "appContent" not in done["response"]
    assert zipfile.ZipFile(target).namelist() == ["shop/app.yaml"]
    error_text(await client.call_tool("start_export_app", {**WHERE, "appId": "shop", "path": str(target)}),
               "ALREADY_EXISTS")
    finished = await _done(client, await call_json(client, "start_import_app", {**WHERE, "appId": "copy",
                                                                                "path": str(target)}))
    assert finished["response"]["name"] == COPY
    run_result = await call_json(client, "run_session", {"config": {"session": f"{COPY}/sessions/s"},
                                                         "inputs": [{"text": "hi"}]})
    assert texts(run_result) == ["hello from a0"]


async def test_paths_outside_the_roots_are_refused(client: Client, roots: Path, tmp_path: Path,
                                                  settings: Settings) -> None:
    await _app(client)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "app.yaml").write_text("format: convener.app/v1\napp: {displayName: X}\n")
    (roots / "link").symlink_to(outside)
    store = settings.data_dir / "convener.db"
    for path in (str(outside / "out.zip"), str(roots / "link" / "out.zip"), str(roots / ".." / "out.zip"),
                 "/etc/passwd", str(store), "", "\x00", "x" * 5000):
        result = await client.call_tool("start_export_app", {**WHERE, "appId": "shop", "path": path})
        assert error_text(result).split(":")[0] in ("PERMISSION_DENIED", "INVALID_ARGUMENT", "ALREADY_EXISTS")
    for path in (str(outside / "app.yaml"), str(roots / "link" / "app.yaml"), "/etc/passwd", "/proc/self/environ"):
        error_text(await client.call_tool("start_import_app", {**WHERE, "appId": "copy", "path": path}),
                   "PERMISSION_DENIED")
    assert not (outside / "out.zip").exists() and os.listdir(roots) == ["link"]
    error_text(await client.call_tool("start_export_app", {**WHERE, "appId": "shop",
                                                           "path": str(roots / "no-folder" / "x.zip")}),
               "FAILED_PRECONDITION")


async def test_no_roots_means_no_paths(database_url: str, tmp_path: Path) -> None:
    services = Services.open(runtime_settings(database_url, tmp_path))
    try:
        async with Client(mcp_servers(services)["/mcp"]) as client:
            await _app(client, agents=1)
            error_text(await client.call_tool("start_export_app", {**WHERE, "appId": "shop",
                                                                   "path": str(tmp_path / "x.zip")}),
                       "PERMISSION_DENIED")
    finally:
        services.close()


BOMB = _zip({"app.yaml": b"format: convener.app/v1\n" + b"#" * 6_000_000})


@pytest.mark.parametrize(("arguments", "message"), [
    ({"appId": "copy"}, "exactly one of content and path"),
    ({"appId": "copy", "content": "aGk=", "path": "/tmp/x"}, "exactly one of content and path"),
    ({"appId": "copy", "content": "not base64!"}, "content"),
    ({"appId": "../x", "content": "aGk="}, "appId"),
    ({"appId": "copy", "projectId": "a/b", "content": "aGk="}, "projectId"),
    ({"appId": "copy", "content": _zip({"a.yaml": b"x: 1", "b.yaml": b"y: 2"})}, "exactly one .yaml"),
    ({"appId": "copy", "content": _zip({"readme.txt": b"hi"})}, "exactly one .yaml"),
    ({"appId": "copy", "content": _zip({f"f{i}.txt": b"" for i in range(101)} | {"app.yaml": b"a: 1"})},
     "more than 100 entries"),
    ({"appId": "copy", "content": BOMB}, "ces.app_content"),
    ({"appId": "copy", "content": base64.b64encode(b"PK\x03\x04garbage").decode()}, "not a readable zip"),
    ({"appId": "copy", "content": base64.b64encode(b"\xff\xfe\x00bad").decode()}, "UTF-8"),
])
async def test_hostile_imports_are_refused_before_anything_starts(client: Client, arguments: dict[str, Any],
                                                                  message: str) -> None:
    result = await client.call_tool("start_import_app", {**WHERE, **arguments})
    assert message in error_text(result, "INVALID_ARGUMENT")
    assert (await call_json(client, "list_operations", {"name": "projects/acme/locations/global"})) == {}


@pytest.mark.parametrize(("document", "code"), [
    ("app: [unclosed", 3),
    ("a: &a [*a, *a]\n" + "".join(f"b{i}: &b{i} [*a, *a, *a]\n" for i in range(200)), 3),
    ("format: convener.app/v1\napp: {rootAgent: ghost}\n", 3),
    ("format: convener.app/v1\nagents: {x: {displayName: X, childAgents: [y]}, y: {displayName: Y, "
     "childAgents: [x]}}\napp: {rootAgent: x}\n", 3),  # a cycle of child agents
    ("format: convener.app/v1\nagents: {x: {displayName: X, childAgents: [x]}}\n", 3),  # one naming itself
    ("format: convener.app/v1\nagents: {x: {displayName: X}}\napp: {rootAgent: x}\n", 0),
    ("format: convener.app/v1\nagents: {x: {displayName: X, tools: [missing]}}\n", 3),
])
async def test_bad_documents_end_the_operation_with_their_error_and_keep_nothing(
        client: Client, document: str, code: int) -> None:
    content = base64.b64encode(document.encode()).decode()
    done = await _done(client, await call_json(client, "start_import_app", {**WHERE, "appId": "copy",
                                                                           "content": content}))
    assert done["done"] is True
    if code:
        assert done["error"]["code"] == code and "Traceback" not in done["error"]["message"]
        error_text(await client.call_tool("get_app", {"name": COPY}), "NOT_FOUND")
    else:
        assert "error" not in done


async def test_an_existing_app_is_replaced_only_when_asked(client: Client) -> None:
    await _app(client)
    content = base64.b64encode((await call_json(client, "export_app", {"name": APP}))["appContent"].encode()).decode()
    done = await _done(client, await call_json(client, "start_import_app", {**WHERE, "appId": "shop",
                                                                           "content": content}))
    assert done["error"]["code"] == 6
    error_text(await client.call_tool("start_export_app", {**WHERE, "appId": "missing"}), "NOT_FOUND")
    assert texts(await run(client, "s", {"text": "hi"})) == ["hello from a0"]
