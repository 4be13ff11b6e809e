"""The console's analytics pages through Starlette's test client: data agents, SQL sources, asking a data agent
(the SQL, the rows bounded, the chart drawn as an SVG <img>, follow-up suggestions), conversations, access by
scope, CSRF, and hostile questions and values shown as text."""

from __future__ import annotations

import base64
from pathlib import Path

import duckdb
import pytest
from bs4 import BeautifulSoup

from convener.analytics.models import Context, DataAgent, DataAnalyticsAgent, DataResult, Message
from convener.analytics.service import references
from convener.auth.caller import LOCAL_USER
from convener.console import analytics as pages
from convener.services import Services
from tests.console.conftest import Keys
from tests.console.test_views import TOKEN, browser, signed_in

LOCATION = "projects/convener/locations/global"
AGENT = f"{LOCATION}/dataAgents/demo-data"
QUESTION = "What is the average horsepower by origin?"
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"


def page(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def token_of(html: str) -> str:
    found = TOKEN.search(html)
    assert found, "the page has no CSRF token"
    return found.group(1)


def install_hostile(services: Services, folder: Path) -> str:
    """A SQL source whose description, table comment and values are HTML, and a data agent over it."""
    path = folder / "hostile.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute("CREATE TABLE notes (label VARCHAR, amount INTEGER)")
    connection.execute(f"COMMENT ON TABLE notes IS '<b>notes</b>{SCRIPT}'")
    connection.execute(f"INSERT INTO notes VALUES ('{SCRIPT}', 3), ('{IMG}', 5)")
    connection.close()
    services.analytics.sources.add("hostile", str(path), f"{SCRIPT} source")
    context = Context(datasource_references=references({"hostile": ["notes"]}),
                      system_instruction=f"{SCRIPT} instructions")
    services.analytics.agents.create("hostile", DataAgent(
        display_name="<i>Hostile</i>", description=f"{SCRIPT} agent",
        data_analytics_agent=DataAnalyticsAgent(published_context=context)), LOCAL_USER)
    return f"{LOCATION}/dataAgents/hostile"


def test_the_start_page_links_to_the_analytics_location(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    links = {a["href"] for a in page(client.get("/console/").text).find_all("a")}
    assert f"/console/{LOCATION}/dataAgents" in links and f"/console/{LOCATION}/sqlSources" in links
    chat_only = signed_in(workspace, keys.chat_only)
    assert f"/console/{LOCATION}/dataAgents" not in chat_only.get("/console/").text


def test_data_agents_and_a_data_agent(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    listed = client.get(f"/console/{LOCATION}/dataAgents")
    assert listed.status_code == 200
    assert f'href="/console/{AGENT}"' in listed.text
    agent = client.get(f"/console/{AGENT}")
    assert agent.status_code == 200
    soup = page(agent.text)
    assert soup.h1.get_text(strip=True) == "Demo data agent"
    links = {a["href"] for a in soup.find_all("a")}
    assert f"/console/{AGENT}/ask" in links
    assert f"/console/{LOCATION}/sqlSources/demo#table-cars" in links
    assert f"/console/{LOCATION}/conversations?dataAgent=demo-data" in links
    assert soup.find("h2", string="Glossary") is not None
    assert any(href.startswith(f"/console/{AGENT}/ask?question=") for href in links)  # example questions


def test_sql_sources_and_a_source_with_columns_and_samples(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    listed = client.get(f"/console/{LOCATION}/sqlSources")
    assert listed.status_code == 200
    assert f'href="/console/{LOCATION}/sqlSources/demo"' in listed.text
    described = client.get(f"/console/{LOCATION}/sqlSources/demo")
    assert described.status_code == 200
    soup = page(described.text)
    sections = soup.select("section.source-table")
    assert len(sections) == 8
    cars = soup.find(id="table-cars")
    assert cars is not None
    assert "Horsepower" in cars.get_text() and "ford pinto" in cars.get_text()


def test_ask_shows_sql_rows_chart_answer_and_follow_ups(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    form = client.get(f"/console/{AGENT}/ask")
    assert form.status_code == 200
    assert page(form.text).find("textarea", id="question") is not None
    answer = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token_of(form.text), "question": QUESTION})
    assert answer.status_code == 200, answer.text
    soup = page(answer.text)
    kinds = [next(c for c in li["class"] if c.startswith("said-")) for li in soup.select("ol.answer > li")]
    assert kinds[0] == "said-question"
    assert kinds.index("said-sql") < kinds.index("said-rows") < kinds.index("said-chart") < kinds.index("said-final")
    assert kinds[-1] == "said-followups"
    assert 'AVG("Horsepower")' in soup.select_one("li.said-sql pre").get_text()
    table = soup.select_one("li.said-rows table")
    assert [th.get_text() for th in table.find_all("th")] == ["Origin", "average_horsepower"]
    assert len(table.tbody.find_all("tr")) == 3
    image = soup.select_one("li.said-chart figure img")
    prefix = "data:image/svg+xml;base64,"
    assert image["src"].startswith(prefix)
    svg = base64.b64decode(image["src"][len(prefix):]).decode()
    assert svg.lstrip().startswith("<svg") and "USA" in svg
    assert soup.find("svg") is None  # drawn in an <img>, never inlined
    suggestions = soup.select("li.said-followups form.suggestion")
    assert suggestions
    conversation = suggestions[0].find("input", attrs={"name": "conversation"})["value"]
    assert conversation.startswith(f"{LOCATION}/conversations/")
    # A suggestion asks its question in the same conversation.
    question = suggestions[0].find("button")["value"]
    follow = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token_of(answer.text), "question": question,
                                                         "conversation": conversation})
    assert follow.status_code == 200
    soup = page(follow.text)
    assert soup.select_one("li.said-question p").get_text() == question
    assert f'href="/console/{conversation}"' in follow.text
    # Both turns are in the conversation, listed and viewable.
    listed = client.get(f"/console/{LOCATION}/conversations?dataAgent=demo-data")
    assert listed.status_code == 200 and f'href="/console/{conversation}"' in listed.text
    viewed = client.get(f"/console/{conversation}")
    assert viewed.status_code == 200
    questions = [p.get_text() for p in page(viewed.text).select("li.said-question p")]
    assert questions == [QUESTION, question]
    assert page(viewed.text).select_one("li.said-chart img")["src"].startswith(prefix)


def test_the_answer_streams_each_step_as_the_agent_reports_it(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    token = token_of(client.get(f"/console/{AGENT}/ask").text)
    with client.stream("POST", f"/console/{AGENT}/ask", data={"csrf_token": token, "question": QUESTION}) as answer:
        assert answer.status_code == 200
        chunks = [chunk.decode() for chunk in answer.iter_bytes() if chunk]
    # The head leaves before any step, each step in a piece of its own, the answer last.
    assert "Working on" in chunks[0] and "said-final" not in chunks[0]
    html = "".join(chunks)
    steps = [li.get_text() for li in page(html).select("ol.steps > li.step")]
    assert steps[0] == "question received" and "data.generatedSql" in steps and "text.FINAL_RESPONSE" in steps
    assert len(chunks) >= len(steps) + 2
    assert html.index('class="steps"') < html.index("said-final")
    assert html.count("<html") == 1 and html.rstrip().endswith("</html>")
    assert "Content-Security-Policy".lower() in answer.headers


def test_rows_past_the_bound_are_counted_not_shown() -> None:
    result = DataResult.model_validate({
        "schema": {"fields": [{"name": "n", "type": "INTEGER"}]},
        "data": [{"n": str(i)} for i in range(pages.ROWS_SHOWN + 7)]})
    message = Message.model_validate({"systemMessage": {"data": {"result": result.to_json()}}})
    [shown] = pages.message_views([message], draw=lambda spec: "")
    assert len(shown.rows) == pages.ROWS_SHOWN and shown.total == pages.ROWS_SHOWN + 7 and shown.cut == 7


def test_a_chart_that_cannot_be_drawn_says_why_inline() -> None:
    message = Message.model_validate({"systemMessage": {"chart": {"result": {"vegaConfig": {
        "data": {"url": "https://evil.example/data.json"}, "mark": "bar"}}}}})
    [shown] = pages.message_views([message])
    assert shown.chart_uri == "" and shown.problem.startswith("INVALID_ARGUMENT: ")


def test_asking_without_the_csrf_token_is_refused(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    refused = client.post(f"/console/{AGENT}/ask", data={"question": QUESTION})
    assert refused.status_code == 403 and "PERMISSION_DENIED" in refused.text
    stale = client.post(f"/console/{AGENT}/ask", data={"csrf_token": "0" * 64, "question": QUESTION})
    assert stale.status_code == 403
    other_site = client.post(f"/console/{AGENT}/ask", headers={"origin": "https://evil.example"},
                             data={"csrf_token": token_of(client.get(f"/console/{AGENT}/ask").text),
                                   "question": QUESTION})
    assert other_site.status_code == 403
    assert "/conversations/" not in client.get(f"/console/{LOCATION}/conversations").text  # nothing was asked


def test_a_chat_only_key_sees_permission_denied(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.chat_only)
    for path in (f"{LOCATION}/dataAgents", AGENT, f"{AGENT}/ask", f"{LOCATION}/sqlSources",
                 f"{LOCATION}/sqlSources/demo", f"{LOCATION}/conversations"):
        answer = client.get(f"/console/{path}")
        assert answer.status_code == 403, path
        assert "PERMISSION_DENIED" in answer.text and "Horsepower" not in answer.text
    asked = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token_of(client.get("/console/").text),
                                                       "question": QUESTION})
    assert asked.status_code == 403 and "PERMISSION_DENIED" in asked.text


def test_unknown_agents_sources_conversations_and_locations_are_not_found(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    for path in (f"{LOCATION}/dataAgents/nobody", f"{LOCATION}/dataAgents/nobody/ask", f"{LOCATION}/sqlSources/nope",
                 f"{LOCATION}/conversations/0123abcd", "projects/demo/locations/global/dataAgents",
                 "projects/demo/locations/global/dataAgents/demo-data"):
        answer = client.get(f"/console/{path}")
        assert answer.status_code == 404, path
        assert "NOT_FOUND: " in page(answer.text).select_one("p.error").get_text()


def test_bad_parameters_are_invalid_argument(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    for path in (f"{LOCATION}/dataAgents?pageToken=forged", f"{LOCATION}/conversations?dataAgent=Not%20An%20Id",
                 f"{LOCATION}/dataAgents/Bad_Agent", f"{LOCATION}/conversations/NOT-AN-ID"):
        answer = client.get(f"/console/{path}")
        assert answer.status_code == 400, path
        assert "INVALID_ARGUMENT: " in answer.text and "Traceback" not in answer.text


def test_a_refused_question_is_shown_inline(workspace: Services, keys: Keys) -> None:
    client = signed_in(workspace, keys.admin)
    token = token_of(client.get(f"/console/{AGENT}/ask").text)
    empty = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token, "question": ""})
    assert empty.status_code == 400
    soup = page(empty.text)
    assert soup.select_one("form.ask p.error").get_text().startswith("INVALID_ARGUMENT: ")
    assert soup.find("textarea", id="question") is not None  # the box stays, to try again
    long = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token, "question": "x" * 10_001})
    assert long.status_code == 400 and "at most 10000" in page(long.text).select_one("form.ask p.error").get_text()
    wrong = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token, "question": QUESTION,
                                                       "conversation": "not a conversation"})
    assert wrong.status_code == 400 and "INVALID_ARGUMENT: " in wrong.text
    dropped = client.post(f"/console/{AGENT}/ask", data={"csrf_token": token, "question": "DROP TABLE cars"})
    assert dropped.status_code == 200
    error = page(dropped.text).select_one("li.said-error p.error").get_text()
    assert "only reads" in error


def test_hostile_questions_and_values_are_text(workspace: Services, keys: Keys, tmp_path: Path) -> None:
    hostile = install_hostile(workspace, tmp_path)
    client = signed_in(workspace, keys.admin)
    agent = client.get(f"/console/{hostile}")
    assert agent.status_code == 200
    soup = page(agent.text)
    assert soup.find("script", string=lambda s: bool(s and "alert" in s)) is None
    assert soup.h1.get_text(strip=True) == "<i>Hostile</i>" and soup.find("i") is None
    assert f"{SCRIPT} agent" in soup.get_text() and f"{SCRIPT} instructions" in soup.get_text()
    source = client.get(f"/console/{LOCATION}/sqlSources/hostile")
    soup = page(source.text)
    assert soup.find("script", string=lambda s: bool(s and "alert" in s)) is None and soup.find("b") is None
    assert SCRIPT in soup.get_text() and IMG in soup.get_text() and f"<b>notes</b>{SCRIPT}" in soup.get_text()
    listed = page(client.get(f"/console/{LOCATION}/sqlSources").text)
    assert f"{SCRIPT} source" in listed.get_text()

    token = token_of(agent.text)
    asked = client.post(f"/console/{hostile}/ask", data={"csrf_token": token,
                                                         "question": "What is the total amount by label?"})
    assert asked.status_code == 200
    soup = page(asked.text)
    assert soup.find("script", string=lambda s: bool(s and "alert" in s)) is None
    assert soup.find("img", attrs={"onerror": True}) is None
    cells = [td.get_text() for td in soup.select("li.said-rows td")]
    assert SCRIPT in cells and IMG in cells
    images = soup.find_all("img")
    assert [img["src"][:26] for img in images] == ["data:image/svg+xml;base64,"]  # the chart, and nothing else
    svg = base64.b64decode(images[0]["src"].split(",", 1)[1]).decode()
    assert "<script" not in svg and "&lt;script&gt;" in svg  # the label is SVG text, in an <img> at that

    # A hostile question asked as a follow-up suggestion's value stays text too.
    conversation = soup.select_one("form.suggestion input[name=conversation]")["value"]
    again = client.post(f"/console/{hostile}/ask", data={"csrf_token": token, "question": SCRIPT,
                                                         "conversation": conversation})
    assert again.status_code == 200
    assert page(again.text).select_one("li.said-question p").get_text() == SCRIPT
    viewed = page(client.get(f"/console/{conversation}").text)
    assert viewed.find("script", string=lambda s: bool(s and "alert" in s)) is None
    assert SCRIPT in [p.get_text() for p in viewed.select("li.said-question p")]
    # The bad question's text stays in the box as text when the tool refuses it.
    refused = client.post(f"/console/{hostile}/ask", data={"csrf_token": token, "question": SCRIPT,
                                                           "conversation": "NOT-AN-ID"})
    assert refused.status_code == 400
    assert page(refused.text).find("textarea", id="question").get_text() == SCRIPT


def test_the_demo_ask_page_is_reachable_by_bearer_key(workspace: Services, keys: Keys) -> None:
    client = browser(workspace)
    answer = client.get(f"/console/{AGENT}/ask", headers={"authorization": f"Bearer {keys.admin}"})
    assert answer.status_code == 200


@pytest.mark.parametrize("path", [f"{AGENT}/ask?question=%3Cscript%3Ealert(1)%3C/script%3E"])
def test_a_prefilled_question_is_text_in_the_box(workspace: Services, keys: Keys, path: str) -> None:
    client = signed_in(workspace, keys.admin)
    soup = page(client.get(f"/console/{path}").text)
    assert soup.find("textarea", id="question").get_text() == SCRIPT
    assert soup.find("script", string=lambda s: bool(s and "alert" in s)) is None
