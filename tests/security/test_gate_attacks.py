"""The attacks on the outside world that were reproduced against a running server, kept in their shape.

Each one now ends with a clear google.rpc error from the gate, and leaves nothing behind (no file written,
no source registered). Loopback only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from sqlalchemy.engine import make_url
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.ces.definitions import Callback
from convener.ces.runtime import callbacks
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.openapi import parse_operation
from convener.config import Settings
from convener.services import Services
from tests.conftest import serving_asgi
from tests.e2e.conftest import call_json, error_text

pytestmark = pytest.mark.anyio

PARENT = "projects/p/locations/l"
APP = f"{PARENT}/apps/shop"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Roots that hold the data folder too, as a careless operator might set them."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url, knowledge_roots=(tmp_path,),
                    analytics_roots=(tmp_path,), knowledge_embeddings="off")


async def _app(client: Client) -> None:
    await call_json(client, "create_app", {"parent": PARENT, "appId": "shop", "app": {"displayName": "Shop"}})


# ---------------------------------------------------------------- finding 1: python entry points


async def test_a_demo_function_that_writes_files_cannot_be_named(client: Client, tmp_path: Path) -> None:
    """A playbook tool named build_demo_database with a path from the user's text replaced any file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    await _app(client)
    result = await client.call_tool("create_tool", {"parent": APP, "toolId": "build", "tool": {
        "pythonFunction": {"entryPoint": "convener.demo.analytics_data:build_demo_database"}}})
    message = error_text(result, "PERMISSION_DENIED")
    assert "not a registered callable" in message and "CONVENER_PYTHON_CALLABLES" in message
    assert victim.read_text() == "precious"
    assert "tools" not in await call_json(client, "list_tools", {"parent": APP}), "nothing was stored"


async def test_a_demo_function_that_reads_files_cannot_be_named(client: Client, tmp_path: Path) -> None:
    """personas read any file as YAML and quoted a line of it in its error."""
    secret = tmp_path / "secret.txt"
    secret.write_text("password: hunter2\n: [")
    await _app(client)
    result = await client.call_tool("create_agent", {"parent": APP, "agentId": "reader", "agent": {
        "displayName": "Reader", "pythonAgent": {"entryPoint": "convener.demo.evaluations:personas"}}})
    message = error_text(result, "PERMISSION_DENIED")
    assert "hunter2" not in message


def test_a_stored_definition_naming_an_unregistered_callable_does_not_run(settings: Settings, tmp_path: Path) -> None:
    """An app written before the gate (or by hand in the store) is refused again when it runs."""
    victim = tmp_path / "victim.duckdb"
    victim.write_text("precious")
    callback = Callback(entry_point="convener.demo.analytics_data:build_demo_database")
    with pytest.raises(ToolFailure) as refused:
        callbacks.call(settings, callback, {"path": str(victim)}, "agent.beforeAgentCallbacks[0]")
    assert refused.value.code == "PERMISSION_DENIED"
    assert victim.read_text() == "precious"


def test_the_operator_cannot_make_convener_s_writers_callable() -> None:
    with pytest.raises(ValueError, match="Convener's own callables"):
        Settings(python_callables=("convener.demo.analytics_data:build_demo_database",))


# ---------------------------------------------------------------- finding 2: the store through analytics


def _store_locations(services: Services, tmp_path: Path) -> list[str]:
    """The store's own database in the spellings the attack tried: a URL, a path, through a link, with dots."""
    if services.database.dialect != "sqlite":
        url = services.database.url
        return [url, url.replace("postgresql+psycopg://", "postgresql://"),
                url.replace("postgresql+psycopg://", "postgres://").replace("127.0.0.1", "localhost")]
    store = Path(make_url(services.database.url).database or "")
    assert store.is_file()
    link = tmp_path / "innocent.sqlite"
    link.symlink_to(store)
    dotted = f"{store.parent}/../{store.parent.name}/{store.name}"
    return [f"sqlite:///{store}", f"sqlite:////{str(store).lstrip('/')}", str(store), str(link), f"sqlite:///{link}",
            f"sqlite:///{dotted}", str(store.parent), f"sqlite:///{store}-wal", str(services.settings.data_dir)]


async def test_the_store_is_never_a_data_source(client: Client, services: Services, tmp_path: Path) -> None:
    for index, location in enumerate(_store_locations(services, tmp_path)):
        result = await client.call_tool("add_sql_source", {"name": f"store{index}", "location": location})
        message = error_text(result, "PERMISSION_DENIED")
        assert "own store" in message, (location, message)
    listed = await call_json(client, "list_sql_sources", {})
    assert [source["name"] for source in listed.get("sqlSources", listed.get("sources", []))] == ["convener"]


async def test_a_file_url_is_held_to_the_same_roots_as_a_path(client: Client, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"  # beside the roots, not holding the store
    outside.mkdir()
    for location in (f"sqlite:///{outside}/x.sqlite", f"duckdb:///{outside}/x.duckdb", str(outside)):
        result = await client.call_tool("add_sql_source", {"name": "out", "location": location})
        assert "CONVENER_ANALYTICS_ROOTS" in error_text(result, "PERMISSION_DENIED"), location
    for location in ("sqlite://", "sqlite:///:memory:", "duckdb:///x.duckdb?access_mode=read_write",
                     "oracle://scott@127.0.0.1/db", "postgresql://127.0.0.1/db?sslkey=/etc/shadow", "not a url://"):
        result = await client.call_tool("add_sql_source", {"name": "bad", "location": location})
        error_text(result, "INVALID_ARGUMENT")


async def test_the_data_folder_is_not_readable_even_inside_the_roots(client: Client, services: Services) -> None:
    data = services.settings.data_dir
    (data / "notes").mkdir(parents=True, exist_ok=True)
    (data / "notes" / "secret.md").write_text("# secret\n")
    for path in (str(data), str(data / "notes"), str(data.parent)):
        result = await client.call_tool("ingest_documents", {"path": path})
        assert "own store" in error_text(result, "PERMISSION_DENIED"), path


# ---------------------------------------------------------------- finding 6: links out of a folder source


async def test_a_folder_source_does_not_follow_links_out_of_the_folder(client: Client, tmp_path: Path) -> None:
    folder = tmp_path / "sales"
    folder.mkdir()
    (folder / "orders.csv").write_text("id,total\n1,10\n")
    secret = tmp_path.parent / f"{tmp_path.name}-secret.csv"
    secret.write_text("key,value\napi,hunter2\n")
    (folder / "leak.csv").symlink_to(secret)
    (folder / "again.csv").symlink_to(folder / "orders.csv")  # a link that stays inside is read
    try:
        await call_json(client, "add_sql_source", {"name": "sales", "location": str(folder)})
        described = await call_json(client, "describe_sql_source", {"name": "sales"})
    finally:
        secret.unlink()
    text = str(described)
    assert "orders" in text and "again" in text
    assert "leak" not in text and "hunter2" not in text


# ---------------------------------------------------------------- URLs


def test_urls_carry_no_credentials_and_stay_on_listed_hosts() -> None:
    from convener.outside.urls import check_url

    with pytest.raises(InvalidArgument, match="user name or password"):
        check_url("http://user:pw@127.0.0.1:9/x", (), "url")
    with pytest.raises(InvalidArgument, match="http:// or https://"):
        check_url("file:///etc/passwd", (), "url")
    with pytest.raises(PermissionDenied, match="CONVENER_URL_HOSTS"):
        check_url("http://127.0.0.1:9/x", ("localhost",), "url")
    assert check_url("http://127.0.0.1:9/x", ("127.0.0.0/8",), "url")
    assert check_url("https://api.example.test/x", ("*.example.test",), "url")


def test_a_listed_host_cannot_redirect_the_server_elsewhere() -> None:
    """The OpenAPI document is fetched from an allowed host, which redirects to one that is not."""
    async def redirect(request: Request) -> Response:
        port = request.url.port
        return RedirectResponse(f"http://localhost:{port}/openapi.json")

    with serving_asgi(Starlette(routes=[Route("/openapi.json", redirect)])) as base_url:
        with pytest.raises(PermissionDenied, match="CONVENER_URL_HOSTS"):
            parse_operation(f"{base_url}/openapi.json", name=None, url=None, field="openApiSchema",
                            allowed_hosts=("127.0.0.1",))
