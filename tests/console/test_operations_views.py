"""The operations pages through Starlette's test client: a location's operations (paged, filtered, only the
caller's), an operation's page with progress from its metadata, and the Cancel form (CSRF, scope, read-only)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from bs4 import BeautifulSoup

from convener.api.names import LocationName
from convener.auth.caller import Caller
from convener.longrunning.models import Status
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.test_chat_views import key
from tests.console.test_views import TOKEN, browser, signed_in

LOCATION = "projects/demo/locations/global"
RUN_METADATA = "type.googleapis.com/google.cloud.ces.v1beta.EvaluationRunMetadata"


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def start(workspace: Services, principal: str, metadata: dict[str, Any], *, done: bool = False,
          error: Status | None = None) -> str:
    """An operation of ``principal`` in the demo location, as the services that do work start one; its name."""
    operations = workspace.operations
    with workspace.database.transaction() as connection:
        operation = operations.start(connection, LocationName.parse(LOCATION), Caller(principal, frozenset({"*"})),
                                     metadata)
        assert operation.name
        if done:
            operations.record(connection, operation.name, done=True, **({"error": error} if error else {}))
    return operation.name


def progress(completed: int, total: int, errors: int = 0) -> dict[str, Any]:
    return {"@type": RUN_METADATA, "evaluationRun": f"{LOCATION}/apps/support/evaluationRuns/r1",
            "progress": {"totalCount": total, "completedCount": completed, "errorCount": errors}}


def test_the_operations_of_a_location_are_the_callers_own_with_their_progress(workspace: Services,
                                                                             keys: Keys) -> None:
    running = start(workspace, "users/alice", progress(3, 7, errors=1))
    finished = start(workspace, "users/alice", progress(7, 7), done=True)
    cancelled = start(workspace, "users/alice", {"@type": RUN_METADATA}, done=True,
                      error=Status(code=1, message="cancelled"))
    someone_elses = start(workspace, "users/bob", progress(1, 2))
    alice = signed_in(workspace, keys.admin)
    assert f'href="/console/{LOCATION}/operations"' in alice.get("/console/").text
    assert f'href="/console/{LOCATION}/operations"' in alice.get(f"/console/{LOCATION}/apps/support").text
    page = alice.get(f"/console/{LOCATION}/operations")
    assert page.status_code == 200
    rows = {row.select_one("a")["href"]: row for row in soup(page.text).select("table.operations tbody tr")}
    assert set(rows) == {f"/console/{name}" for name in (running, finished, cancelled)}
    assert f"/console/{someone_elses}" not in page.text
    row = rows[f"/console/{running}"]
    assert row.select_one(".chip").text == "running" and "4 of 7 finished, 1 failed" in row.text
    assert row.select_one("progress")["value"] == "4" and row.select_one("progress")["max"] == "7"
    assert rows[f"/console/{finished}"].select_one(".chip").text == "succeeded"
    assert rows[f"/console/{cancelled}"].select_one(".chip").text == "cancelled"
    done_only = soup(alice.get(f"/console/{LOCATION}/operations", params={"filter": "done=true"}).text)
    assert {a["href"] for a in done_only.select("table.operations tbody a")} == \
        {f"/console/{finished}", f"/console/{cancelled}"}
    paged = soup(alice.get(f"/console/{LOCATION}/operations", params={"pageSize": "2"}).text)
    assert len(paged.select("table.operations tbody tr")) == 2
    following = paged.select_one("nav.pager a[rel=next]")
    assert following is not None
    rest = soup(alice.get(str(following["href"])).text).select("table.operations tbody tr")
    assert len(rest) == 1
    # Another user's operation answers as one that does not exist.
    assert alice.get(f"/console/{someone_elses}").status_code == 404


def test_an_operation_and_its_cancel_button(workspace: Services, keys: Keys) -> None:
    name = start(workspace, "users/alice", progress(0, 5))
    alice = signed_in(workspace, keys.admin)
    page = alice.get(f"/console/{name}")
    assert page.status_code == 200
    html = soup(page.text)
    assert "0 of 5 finished" in html.select_one(".facts").text
    assert "EvaluationRunMetadata" in html.text and "evaluationRuns/r1" in html.select_one("pre.json").text
    form = html.select_one("form.cancel")
    assert form is not None and form["action"] == f"/console/{name}:cancel" and form["method"] == "post"
    token = form.select_one("input[name=csrf_token]")["value"]
    answer = alice.post(f"/console/{name}:cancel", data={"csrf_token": token})
    assert answer.status_code == 303 and answer.headers["location"] == f"/console/{name}"
    after = soup(alice.get(f"/console/{name}").text)
    assert after.select_one(".facts .chip").text == "cancelling"
    assert workspace.operations.is_cancelled(name)
    assert after.select_one("form.cancel button")["disabled"] is not None


def test_cancel_without_the_csrf_token_or_from_another_site_is_refused(workspace: Services, keys: Keys) -> None:
    name = start(workspace, "users/alice", progress(0, 5))
    alice = signed_in(workspace, keys.admin)
    token = TOKEN.search(alice.get(f"/console/{name}").text)
    assert token
    for data, headers in (({}, {}), ({"csrf_token": "0" * 64}, {}),
                          ({"csrf_token": token.group(1)}, {"origin": "https://evil.example"})):
        refused = alice.post(f"/console/{name}:cancel", data=data, headers=headers)
        assert refused.status_code == 403 and "PERMISSION_DENIED" in refused.text
    assert alice.get(f"/console/{name}:cancel").status_code == 400  # no GET cancels: it reads a bad name
    assert not workspace.operations.is_cancelled(name)


def test_a_chat_only_key_and_a_read_only_server_are_refused(workspace: Services, keys: Keys) -> None:
    name = start(workspace, "users/ben", progress(0, 5))
    ben = signed_in(workspace, keys.chat_only)
    for path in (f"/console/{LOCATION}/operations", f"/console/{name}"):
        page = ben.get(path)
        assert page.status_code == 403 and "PERMISSION_DENIED" in page.text, path
    token = TOKEN.search(ben.get("/console/").text)
    assert token
    assert ben.post(f"/console/{name}:cancel", data={"csrf_token": token.group(1)}).status_code == 403
    assert not workspace.operations.is_cancelled(name)
    read_only = replace(workspace, settings=workspace.settings.model_copy(update={"read_only": True}))
    client = browser(read_only)
    client.headers["authorization"] = f"Bearer {key(workspace, 'users/ben')}"
    page = client.get(f"/console/{name}")
    assert page.status_code == 200
    cookie_token = TOKEN.search(page.text)
    assert cookie_token
    refused = client.post(f"/console/{name}:cancel", data={"csrf_token": cookie_token.group(1)})
    assert refused.status_code == 403 and "read-only" in refused.text
    assert not workspace.operations.is_cancelled(name)


@pytest.mark.parametrize("params", [{"filter": "state = RUNNING"}, {"pageSize": "ten"}, {"pageToken": "forged"}])
def test_bad_parameters_are_invalid_arguments(workspace: Services, keys: Keys, params: dict[str, str]) -> None:
    alice = signed_in(workspace, keys.admin)
    page = alice.get(f"/console/{LOCATION}/operations", params=params)
    assert page.status_code == 400 and "INVALID_ARGUMENT" in page.text, params
    assert re.search(r"Traceback", page.text) is None
