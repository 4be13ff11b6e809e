"""The agents pages through Starlette's test client: an app's agents, tools, toolsets, guardrails, versions and
deployments (paged with the tools' tokens), each resource's page and the links between them, access by scope,
unknown names and bad parameters, and hostile text in an agent shown as text."""

from __future__ import annotations

import re

from bs4 import BeautifulSoup

from convener import __version__
from convener.auth.caller import LOCAL_USER
from convener.ces.definitions import Agent, AgentToolset, Guardrail, Toolset
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.recorded import APP, SCRIPT
from tests.console.test_evaluations_views import assert_markup_is_ours, links
from tests.console.test_views import signed_in

COLLECTIONS = ("agents", "tools", "toolsets", "guardrails", "versions", "deployments")
HOSTILE_AGENT = "hostile"
ESCAPED = "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;"


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def hostile_parts(services: Services) -> str:
    """A toolset, a guardrail and an agent using both, every text of them hostile; the agent's name."""
    runtime = services.runtime
    toolset = runtime.toolsets.create(APP, "crm", Toolset.model_validate({
        "displayName": f"CRM {SCRIPT}", "description": SCRIPT,
        "mcpToolset": {"serverAddress": "http://127.0.0.1:9/mcp"}}), LOCAL_USER)
    guardrail = runtime.guardrails.create(APP, "no-swearing", Guardrail.model_validate({
        "displayName": f"No swearing {SCRIPT}", "description": SCRIPT, "enabled": True,
        "contentFilter": {"bannedContents": [SCRIPT], "matchType": "SIMPLE_STRING_MATCH"},
        "action": {"transferAgent": {"agent": f"{APP}/agents/triage"}}}), LOCAL_USER)
    agent = runtime.agents.create(APP, HOSTILE_AGENT, Agent.model_validate({
        "displayName": SCRIPT, "description": f'<a href="javascript:alert(1)">{SCRIPT}</a>',
        "instruction": f"Be helpful.\n{SCRIPT}\n<img src=x onerror=alert(1)>",
        "tools": [f"{APP}/tools/lookup_order"], "childAgents": [f"{APP}/agents/refunds"],
        "toolsets": [{"toolset": toolset.name, "toolIds": ["find_customer"]}], "guardrails": [guardrail.name]}),
        LOCAL_USER)
    assert agent.name and isinstance(agent.toolsets, list) and isinstance(agent.toolsets[0], AgentToolset)
    return agent.name


def test_the_app_links_to_every_collection_and_each_lists_its_parts(workspace: Services, keys: Keys) -> None:
    hostile_parts(workspace)
    client = signed_in(workspace, keys.admin)
    app = client.get(f"/console/{APP}").text
    for collection in COLLECTIONS:
        assert f'href="/console/{APP}/{collection}"' in app, collection
        page = client.get(f"/console/{APP}/{collection}")
        assert page.status_code == 200, collection
        listed = links(page.text, rf"{APP}/{collection}/[\w-]+")
        assert listed, collection
        assert_markup_is_ours(page.text)
    agents = client.get(f"/console/{APP}/agents").text
    assert {f"{APP}/agents/{agent}" for agent in ("triage", "orders", "refunds", HOSTILE_AGENT)} <= set(
        links(agents, rf"{APP}/agents/[\w-]+"))
    assert "playbook agent" in agents
    tools = client.get(f"/console/{APP}/tools").text
    assert f"{APP}/tools/confirm_identity" in links(tools, rf"{APP}/tools/\w+") and "client function" in tools
    assert "Website chat" in client.get(f"/console/{APP}/deployments").text


def test_each_kind_of_part_has_its_page_and_the_links_between_them_resolve(workspace: Services,
                                                                          keys: Keys) -> None:
    agent = hostile_parts(workspace)
    client = signed_in(workspace, keys.admin)
    page = client.get(f"/console/{agent}").text
    linked = set(links(page, rf"{APP}/(?:tools|toolsets|agents|guardrails)/[\w-]+"))
    assert linked >= {f"{APP}/tools/lookup_order", f"{APP}/toolsets/crm", f"{APP}/agents/refunds",
                      f"{APP}/guardrails/no-swearing"}
    for target in linked:
        assert client.get(f"/console/{target}").status_code == 200, target
    # The instruction reads as written, in a <pre>.
    instruction = [pre.get_text() for pre in soup(page).select("pre")]
    assert f"Be helpful.\n{SCRIPT}\n<img src=x onerror=alert(1)>" in instruction

    tool = soup(client.get(f"/console/{APP}/tools/confirm_identity").text)
    assert "client function" in tool.get_text() and "fingerprint" in tool.get_text()
    schemas = [pre.get_text() for pre in tool.select("pre.json")]
    assert any('"order_id"' in schema and '"required"' in schema for schema in schemas)
    python = client.get(f"/console/{APP}/tools/check_refund_eligibility").text
    assert "convener.demo.tools:check_refund_eligibility" in python and "python function" in python

    guardrail = client.get(f"/console/{APP}/guardrails/no-swearing").text
    assert f'href="/console/{APP}/agents/triage"' in guardrail and "content filter" in guardrail
    assert "http://127.0.0.1:9/mcp" in client.get(f"/console/{APP}/toolsets/crm").text

    deployment = client.get(f"/console/{APP}/deployments/web").text
    version = links(deployment, rf"{APP}/versions/[\w-]+")
    assert version == [f"{APP}/versions/v1"]
    shown = soup(client.get(f"/console/{version[0]}").text)
    assert "first published" in shown.get_text() and "Created" in shown.get_text()
    assert "Agents in this version" in shown.get_text() and "Triage" in shown.get_text()
    assert f"Convener {__version__} " in shown.select_one("footer").get_text()  # the page's names shadow no global
    triage = client.get(f"/console/{APP}/agents/triage").text
    assert links(triage, rf"{APP}/agents/\w+")  # its child agents


def test_collections_page_with_the_tools_tokens(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    first = client.get(f"/console/{APP}/tools", params={"pageSize": "2"}).text
    found = re.search(r'href="([^"]+)" rel="next"', first)
    assert found
    second = client.get(found.group(1).replace("&amp;", "&")).text
    ids = set(links(first, rf"{APP}/tools/\w+"))
    assert len(ids) == 2 and not ids & set(links(second, rf"{APP}/tools/\w+"))
    assert "« First page" in second


def test_a_chat_only_key_sees_no_part(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.chat_only)
    for path in [f"/console/{APP}/{collection}" for collection in COLLECTIONS] + [
            f"/console/{APP}/agents/triage", f"/console/{APP}/tools/lookup_order", f"/console/{APP}/toolsets/x",
            f"/console/{APP}/guardrails/x", f"/console/{APP}/versions/v1", f"/console/{APP}/deployments/web"]:
        answer = client.get(path)
        assert answer.status_code == 403, path
        assert "PERMISSION_DENIED" in answer.text and "Triage" not in answer.text, path


def test_unknown_names_and_bad_parameters(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    for path in (f"/console/{APP}/agents/nope", f"/console/{APP}/tools/nope", f"/console/{APP}/toolsets/nope",
                 f"/console/{APP}/guardrails/nope", f"/console/{APP}/versions/nope",
                 f"/console/{APP}/deployments/nope", "/console/projects/demo/locations/global/apps/nope/agents"):
        answer = client.get(path)
        assert answer.status_code == 404 and "NOT_FOUND" in answer.text, path
    for collection in COLLECTIONS:
        for params in ({"pageSize": "many"}, {"pageSize": "-1"}, {"pageToken": "forged"}):
            answer = client.get(f"/console/{APP}/{collection}", params=params)
            assert answer.status_code == 400 and "INVALID_ARGUMENT" in answer.text, (collection, params)
    answer = client.get(f"/console/{APP}/agents/<script>")
    assert answer.status_code in (400, 404) and "<script>" not in answer.text


def test_hostile_text_in_an_agent_stays_text(workspace: Services, keys: Keys) -> None:
    agent = hostile_parts(workspace)
    client = signed_in(workspace, keys.admin)
    for path in (f"/console/{APP}/agents", f"/console/{agent}", f"/console/{APP}/toolsets",
                 f"/console/{APP}/toolsets/crm", f"/console/{APP}/guardrails", f"/console/{APP}/guardrails/no-swearing"):
        page = client.get(path)
        assert page.status_code == 200, path
        assert ESCAPED in page.text, path
        assert_markup_is_ours(page.text)
        assert "javascript:" not in "".join(tag.get("href", "") for tag in soup(page.text).find_all("a")), path
    text = soup(client.get(f"/console/{agent}").text).get_text()
    assert SCRIPT in text and 'href="javascript:alert(1)"' in text
