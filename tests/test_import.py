"""``convener import conversations``: JSON Lines in, every line judged on its own, re-runs change nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.ces.models import App, Conversation
from convener.ces.requests import (
    CreateAppRequest,
    GetAppRequest,
    GetConversationRequest,
    ListConversationsRequest,
)
from convener.cli import app
from convener.services import Services

APP = "projects/p/locations/l/apps/imported"
OTHER_APP = "projects/p/locations/l/apps/other"
GENERATED_ID = re.compile(rf"^{APP}/conversations/[0-9a-f]{{32}}$")


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


# --- helpers ------------------------------------------------------------------------------------


def run_import(database_url: str, tmp_path: Path, file: str, *, app_name: str = APP, input: str | None = None) -> Result:
    return CliRunner().invoke(
        app,
        ["import", "conversations", file, "--app", app_name,
         "--data-dir", str(tmp_path / "data"), "--database-url", database_url],
        input=input,
    )


def write(tmp_path: Path, lines: list[str], name: str = "conversations.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def line(data: dict[str, Any]) -> str:
    return json.dumps(data)


def reported(result: Result) -> dict[int, str]:
    """The per-line reports on stderr, by line number."""
    found: dict[int, str] = {}
    for text in result.stderr.splitlines():
        match = re.fullmatch(r"line (\d+): (.*)", text)
        if match:
            assert int(match[1]) not in found, f"line {match[1]} reported twice"
            found[int(match[1])] = match[2]
    return found


def summary(result: Result) -> str:
    return result.stdout.strip()


def assert_no_crash(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output


def list_all(services: Services, app_name: str = APP) -> list[dict[str, Any]]:
    """Every stored conversation of the app, as list_conversations returns them, page after page."""
    found: list[dict[str, Any]] = []
    token = None
    while True:
        page = services.conversations.list(
            ListConversationsRequest(parent=app_name, page_size=2, page_token=token), LOCAL_USER
        )
        found.extend(conversation.to_json() for conversation in page.conversations or ())
        token = page.next_page_token
        if not token:
            return found


def get(services: Services, name: str) -> Conversation:
    return services.conversations.get(GetConversationRequest(name=name), LOCAL_USER)


def user(*chunks: dict[str, Any], at: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "chunks": list(chunks)}
    if at:
        message["eventTime"] = at
    return message


def agent(*chunks: dict[str, Any], at: str | None = None) -> dict[str, Any]:
    return {**user(*chunks, at=at), "role": "agent"}


GOOD = [
    {
        "name": f"{APP}/conversations/named-1",
        "source": "EVAL",
        "languageCode": "en-US",
        "entryAgent": f"{APP}/agents/greeter",
        "turns": [
            {
                "messages": [
                    user({"text": "Hello"}, at="2024-03-01T10:00:00Z"),
                    agent({"toolCall": {"id": "t1", "tool": f"{APP}/tools/lookup", "args": {"q": [], "o": {}}}},
                          at="2024-03-01T10:00:01Z"),
                    agent({"text": "Hi! How can I help?"}, at="2024-03-01T10:00:02.5Z"),
                ],
                "rootSpan": {
                    "name": "turn",
                    "startTime": "2024-03-01T10:00:00Z",
                    "endTime": "2024-03-01T10:00:03Z",
                    "attributes": {"model": "m", "empty": []},
                    "childSpans": [{"name": "llm", "startTime": "2024-03-01T10:00:00.5Z",
                                    "endTime": "2024-03-01T10:00:02Z"}],
                },
            },
            {"messages": [user({"updatedVariables": {"plan": "gold"}}, at="2024-03-01T10:01:00Z")]},
        ],
    },
    {
        "turns": [
            {"messages": [user({"transcript": "book a table"}, {"blob": {"mimeType": "audio/wav", "data": "UklGRg=="}},
                               at="2024-03-02T09:00:00Z"),
                          agent({"text": "For how many?"}, at="2024-03-02T09:00:04Z")]},
        ],
    },
    {
        "name": f"{APP}/conversations/named-2",
        "startTime": "2024-03-03T08:00:00+01:00",
        "endTime": "2024-03-03T08:30:00+01:00",
        "turns": [{"messages": [user({"image": {"mimeType": "image/png", "data": "iVBORw0KGgo=", "altText": "receipt"}})]}],
    },
    {
        "turns": [{"messages": [user({"payload": {"event": "welcome"}}), agent({"text": "Welcome!"})]}],
    },
]


# --- a good file ----------------------------------------------------------------------------------


def test_a_good_file_is_imported_whole_into_a_new_app(database_url: str, tmp_path: Path, services: Services) -> None:
    with pytest.raises(NotFound):
        services.apps.get(GetAppRequest(name=APP), LOCAL_USER)

    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(c) for c in GOOD])))

    assert result.exit_code == 0, result.output
    assert summary(result) == "4 imported, 0 already present, 0 failed"
    assert reported(result) == {}
    assert services.apps.get(GetAppRequest(name=APP), LOCAL_USER).name == APP

    stored = list_all(services)
    assert len(stored) == 4
    names = [c["name"] for c in stored]
    assert f"{APP}/conversations/named-1" in names
    assert f"{APP}/conversations/named-2" in names
    assert len([n for n in names if GENERATED_ID.match(n)]) == 2

    named = get(services, f"{APP}/conversations/named-1").to_json()
    assert named["source"] == "EVAL"
    assert named["languageCode"] == "en-US"
    assert named["entryAgent"] == f"{APP}/agents/greeter"
    assert named["turnCount"] == 2
    assert named["inputTypes"] == ["INPUT_TYPE_TEXT", "INPUT_TYPE_VARIABLES"]
    assert named["channelType"] == "TEXT"
    assert named["startTime"] == "2024-03-01T10:00:00Z"
    assert named["endTime"] == "2024-03-01T10:01:00Z"
    assert [m["chunks"] for m in named["turns"][0]["messages"]] == [m["chunks"] for m in GOOD[0]["turns"][0]["messages"]]
    assert named["turns"][0]["rootSpan"]["duration"] == "3s"
    assert named["turns"][0]["rootSpan"]["attributes"] == {"model": "m", "empty": []}
    assert named["turns"][0]["rootSpan"]["childSpans"][0]["duration"] == "1.500s"

    second = get(services, f"{APP}/conversations/named-2").to_json()
    assert (second["startTime"], second["endTime"]) == ("2024-03-03T07:00:00Z", "2024-03-03T07:30:00Z")
    assert second["inputTypes"] == ["INPUT_TYPE_IMAGE"]
    assert second["channelType"] == "MULTIMODAL"
    assert second["source"] == "LIVE"

    by_channel = {c["channelType"]: c for c in stored if GENERATED_ID.match(c["name"])}
    assert by_channel["AUDIO"]["inputTypes"] == ["INPUT_TYPE_AUDIO"]
    assert by_channel["AUDIO"]["startTime"] == "2024-03-02T09:00:00Z"
    assert by_channel["TEXT"]["inputTypes"] == ["INPUT_TYPE_EVENT"]
    assert "endTime" not in by_channel["TEXT"]


def test_conversations_are_listed_newest_first(database_url: str, tmp_path: Path, services: Services) -> None:
    run_import(database_url, tmp_path, str(write(tmp_path, [line(c) for c in GOOD[:3]])))
    starts = [c["startTime"] for c in list_all(services)]
    assert starts == ["2024-03-03T07:00:00Z", "2024-03-02T09:00:00Z", "2024-03-01T10:00:00Z"]


def test_importing_into_an_existing_app_keeps_the_app(database_url: str, tmp_path: Path, services: Services) -> None:
    created = services.apps.create(
        CreateAppRequest(parent="projects/p/locations/l", app_id="imported", app=App(display_name="Mine")), LOCAL_USER
    )
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0])])))
    assert result.exit_code == 0, result.output
    assert services.apps.get(GetAppRequest(name=APP), LOCAL_USER) == created


def test_identical_unnamed_conversations_in_one_file_are_stored_once(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[1]), line(GOOD[1])])))
    assert result.exit_code == 0, result.output
    assert summary(result) == "1 imported, 1 already present, 0 failed"
    assert len(list_all(services)) == 1


# --- a bad file -----------------------------------------------------------------------------------


def nested_spans(depth: int) -> dict[str, Any]:
    span: dict[str, Any] = {"name": f"s{depth}"}
    for level in range(depth - 1, 0, -1):
        span = {"name": f"s{level}", "childSpans": [span]}
    return span


DEEP_JSON = '{"turns": [{"rootSpan": ' + '{"childSpans": [' * 10_000 + "{}" + "]}" * 10_000 + "}]}"

BAD: list[tuple[str, str]] = [
    ("this is not JSON", "not JSON"),
    ('{"turns": [', "not JSON"),
    ('[{"turns": []}]', "a line must be one JSON object"),
    ('"a string"', "a line must be one JSON object"),
    ("42", "a line must be one JSON object"),
    ("null", "a line must be one JSON object"),
    (line({"turns": "many"}), "turns: Input should be a valid list"),
    (line({"turnCount": "many"}), "turnCount"),
    (line({"turns": [{"messages": [{"role": 7}]}]}), "turns[0].messages[0].role"),
    (line({"startTime": 1709280000}), "startTime"),
    (line({"startTime": "2024-02-30T00:00:00Z"}), "startTime"),
    (line({"source": "TELEPATHY"}), "source"),
    (line({"turns": [], "colour": "red"}), "colour"),
    (line({"turns": [{"messages": [{"chunks": [{"text": "hi", "sparkle": True}]}]}]}), "sparkle"),
    (line({"turns": [{"messages": [user({"text": "a", "transcript": "b"})]}]}), "only one field of the union data"),
    (line({"turns": [{"messages": [user({"text": "a", "image": {"data": ""}})]}]}), "only one field of the union data"),
    (line({"turns": [{"messages": [user({"blob": {"mimeType": "audio/wav", "data": "not base64!"}})]}]}), "base64"),
    (line({"turns": [{"messages": [user({"image": {"mimeType": "image/png", "data": "@@@@"}})]}]}), "base64"),
    (line({"name": f"{OTHER_APP}/conversations/c1"}), "is not under the app"),
    (line({"name": "projects/p/locations/l/apps/imported"}), "does not match the format"),
    (line({"name": f"{APP}/conversations/has space"}), "must be 1 to 128 letters"),
    (line({"name": f"{APP}/sessions/c1"}), "does not match the format"),
    (line({"entryAgent": f"{OTHER_APP}/agents/a"}), "entryAgent"),
    (line({"deployment": f"{APP}/versions/v1"}), "deployment"),
    (line({"startTime": "2024-01-02T00:00:00Z", "endTime": "2024-01-01T00:00:00Z"}), "endTime is before startTime"),
    (line({"turns": [{"rootSpan": {"startTime": "2024-01-02T00:00:00Z", "endTime": "2024-01-01T00:00:00Z"}}]}),
     "turns[0].rootSpan: endTime is before startTime"),
    (line({"languageCode": "not a language"}), "languageCode"),
    (line({"turns": [{"rootSpan": nested_spans(100)}]}), "spans are nested deeper than 64 levels"),
    (DEEP_JSON, "nested too deeply"),
]


def test_every_bad_line_is_reported_with_its_number_and_nothing_is_stored(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    lines: list[str] = []
    expected: dict[int, str] = {}
    for index, (text, fragment) in enumerate(BAD):
        if index % 4 == 0:
            lines.append("")  # blank lines count for numbering but are not imported
        lines.append(text)
        expected[len(lines)] = fragment

    result = run_import(database_url, tmp_path, str(write(tmp_path, lines)))

    assert_no_crash(result)
    assert result.exit_code == 1
    assert summary(result) == f"0 imported, 0 already present, {len(BAD)} failed"
    found = reported(result)
    assert set(found) == set(expected)
    for number, fragment in expected.items():
        assert found[number].startswith("INVALID_ARGUMENT: "), (number, found[number])
        assert fragment in found[number], (number, found[number])
        assert len(found[number]) < 2_000
    assert list_all(services) == []
    with pytest.raises(NotFound):
        services.conversations.get(GetConversationRequest(name=f"{OTHER_APP}/conversations/c1"), LOCAL_USER)


def test_reports_do_not_echo_the_bad_input(database_url: str, tmp_path: Path) -> None:
    secret = "s3cr3t-" + "x" * 50
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line({"turns": [{"messages": [{"role": [secret]}]}]})])))
    assert result.exit_code == 1
    assert secret not in result.output


def test_a_mixed_file_stores_the_good_lines_and_reports_the_bad(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    lines = [
        line(GOOD[0]),                                               # 1
        "not json",                                                  # 2
        line(GOOD[1]),                                               # 3
        "",                                                          # 4
        line({"name": f"{APP}/conversations/bad", "bogus": 1}),      # 5
        line(GOOD[2]),                                               # 6
        line({"name": f"{APP}/conversations/late", "endTime": "2024-01-01T00:00:00Z",
              "startTime": "2024-01-01T00:00:01Z"}),                 # 7
    ]
    result = run_import(database_url, tmp_path, str(write(tmp_path, lines)))

    assert_no_crash(result)
    assert result.exit_code == 1
    assert summary(result) == "3 imported, 0 already present, 3 failed"
    assert sorted(reported(result)) == [2, 5, 7]
    assert all(reason.startswith("INVALID_ARGUMENT: ") for reason in reported(result).values())
    names = {c["name"] for c in list_all(services)}
    assert len(names) == 3
    assert {f"{APP}/conversations/named-1", f"{APP}/conversations/named-2"} < names
    for missing in ("bad", "late"):
        with pytest.raises(NotFound):
            get(services, f"{APP}/conversations/{missing}")


def test_blank_lines_are_skipped_but_counted(database_url: str, tmp_path: Path, services: Services) -> None:
    lines = ["", "   ", "\t", line(GOOD[0]), "", "oops", " "]
    result = run_import(database_url, tmp_path, str(write(tmp_path, lines)))
    assert summary(result) == "1 imported, 0 already present, 1 failed"
    assert list(reported(result)) == [6]
    assert len(list_all(services)) == 1


def test_an_empty_file_imports_nothing_and_succeeds(database_url: str, tmp_path: Path, services: Services) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    result = run_import(database_url, tmp_path, str(path))
    assert result.exit_code == 0, result.output
    assert summary(result) == "0 imported, 0 already present, 0 failed"
    assert list_all(services) == []


def test_a_last_line_without_a_newline_is_imported(database_url: str, tmp_path: Path, services: Services) -> None:
    path = tmp_path / "no-newline.jsonl"
    path.write_text(line(GOOD[0]) + "\n" + line(GOOD[2]))
    result = run_import(database_url, tmp_path, str(path))
    assert summary(result) == "2 imported, 0 already present, 0 failed"


def test_windows_line_endings_are_accepted(database_url: str, tmp_path: Path, services: Services) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes((line(GOOD[0]) + "\r\n\r\n" + line(GOOD[2]) + "\r\n").encode())
    result = run_import(database_url, tmp_path, str(path))
    assert summary(result) == "2 imported, 0 already present, 0 failed"


# --- re-imports -----------------------------------------------------------------------------------


def test_importing_the_same_file_again_changes_nothing(database_url: str, tmp_path: Path, services: Services) -> None:
    path = write(tmp_path, [line(c) for c in GOOD])
    first = run_import(database_url, tmp_path, str(path))
    assert first.exit_code == 0, first.output
    before = list_all(services)

    again = run_import(database_url, tmp_path, str(path))

    assert again.exit_code == 0, again.output
    assert summary(again) == f"0 imported, {len(GOOD)} already present, 0 failed"
    assert reported(again) == {}
    assert list_all(services) == before

    third = run_import(database_url, tmp_path, str(path))
    assert summary(third) == f"0 imported, {len(GOOD)} already present, 0 failed"
    assert list_all(services) == before


def test_a_re_import_of_a_mixed_file_adds_nothing_and_reports_the_same_lines(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    path = write(tmp_path, [line(GOOD[0]), "bad", line(GOOD[3])])
    run_import(database_url, tmp_path, str(path))
    before = list_all(services)
    again = run_import(database_url, tmp_path, str(path))
    assert summary(again) == "0 imported, 2 already present, 1 failed"
    assert list(reported(again)) == [2]
    assert list_all(services) == before


def test_a_changed_conversation_under_an_existing_name_is_already_exists(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0])])))
    original = get(services, f"{APP}/conversations/named-1").to_json()

    changed = json.loads(json.dumps(GOOD[0]))
    changed["turns"][0]["messages"][0]["chunks"][0]["text"] = "Hello, changed"
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[2]), line(changed)], "changed.jsonl")))

    assert_no_crash(result)
    assert result.exit_code == 1
    assert summary(result) == "1 imported, 0 already present, 1 failed"
    assert reported(result) == {
        2: f"ALREADY_EXISTS: conversation {APP}/conversations/named-1 already exists with different content"
    }
    assert get(services, f"{APP}/conversations/named-1").to_json() == original


def test_claims_about_output_only_fields_do_not_make_a_conversation_different(
    database_url: str, tmp_path: Path, services: Services
) -> None:
    run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0])])))
    before = list_all(services)
    claimed = {**GOOD[0], "turnCount": 99, "inputTypes": ["INPUT_TYPE_AUDIO"], "channelType": "AUDIO"}
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(claimed)], "claimed.jsonl")))
    assert result.exit_code == 0, result.output
    assert summary(result) == "0 imported, 1 already present, 0 failed"
    assert list_all(services) == before


def test_output_only_fields_in_the_input_are_recomputed(database_url: str, tmp_path: Path, services: Services) -> None:
    claimed = {
        "name": f"{APP}/conversations/claims",
        "turnCount": 99,
        "inputTypes": ["INPUT_TYPE_IMAGE", "INPUT_TYPE_AUDIO", "INPUT_TYPE_BLOB"],
        "channelType": "MULTIMODAL",
        "turns": [
            {
                "messages": [user({"text": "hi"}, at="2024-05-01T00:00:00Z")],
                "rootSpan": {
                    "name": "root", "startTime": "2024-05-01T00:00:00Z", "endTime": "2024-05-01T00:00:02Z",
                    "duration": "999s",
                    "childSpans": [{"name": "open", "startTime": "2024-05-01T00:00:01Z", "duration": "999s"}],
                },
            }
        ],
    }
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(claimed)])))
    assert result.exit_code == 0, result.output
    stored = get(services, f"{APP}/conversations/claims").to_json()
    assert stored["turnCount"] == 1
    assert stored["inputTypes"] == ["INPUT_TYPE_TEXT"]
    assert stored["channelType"] == "TEXT"
    assert stored["turns"][0]["rootSpan"]["duration"] == "2s"
    assert "duration" not in stored["turns"][0]["rootSpan"]["childSpans"][0]
    listed = services.conversations.list(
        ListConversationsRequest(parent=APP, filter="turnCount = 1 AND channelType = TEXT"), LOCAL_USER
    )
    assert [c.to_json()["name"] for c in listed.conversations or ()] == [f"{APP}/conversations/claims"]


# --- files, stdin and the app ---------------------------------------------------------------------


def test_a_missing_file_is_not_found(database_url: str, tmp_path: Path, services: Services) -> None:
    result = run_import(database_url, tmp_path, str(tmp_path / "nowhere.jsonl"))
    assert_no_crash(result)
    assert result.exit_code == 1
    assert "NOT_FOUND: no such file" in result.stderr
    assert str(tmp_path / "nowhere.jsonl") in result.stderr
    assert list_all_or_none(services) is None


def list_all_or_none(services: Services) -> list[dict[str, Any]] | None:
    try:
        return list_all(services)
    except NotFound:
        return None


def test_a_directory_is_not_a_file(database_url: str, tmp_path: Path) -> None:
    result = run_import(database_url, tmp_path, str(tmp_path))
    assert_no_crash(result)
    assert result.exit_code == 1
    assert "NOT_FOUND" in result.stderr


def test_dash_reads_standard_input(database_url: str, tmp_path: Path, services: Services) -> None:
    text = "".join(f"{line(c)}\n" for c in GOOD[:2]) + "\nnot json\n"
    result = run_import(database_url, tmp_path, "-", input=text)
    assert_no_crash(result)
    assert result.exit_code == 1
    assert summary(result) == "2 imported, 0 already present, 1 failed"
    assert list(reported(result)) == [4]
    assert len(list_all(services)) == 2
    again = run_import(database_url, tmp_path, "-", input=text)
    assert summary(again) == "0 imported, 2 already present, 1 failed"


@pytest.mark.parametrize(
    "app_name",
    ["imported", "projects/p/locations/l", f"{APP}/conversations/c", "projects/p/locations/l/apps/-x", ""],
)
def test_a_malformed_app_is_invalid_argument(database_url: str, tmp_path: Path, app_name: str) -> None:
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0])])), app_name=app_name)
    assert_no_crash(result)
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("INVALID_ARGUMENT: --app")


def test_a_malformed_app_that_looks_like_markup_is_invalid_argument(database_url: str, tmp_path: Path) -> None:
    result = run_import(
        database_url, tmp_path, str(write(tmp_path, [line(GOOD[0])])), app_name="projects/p/locations/l/apps/[/x]"
    )
    assert_no_crash(result)
    assert result.stderr.strip().startswith("INVALID_ARGUMENT: --app")


def test_reasons_that_look_like_markup_are_printed_as_they_are(database_url: str, tmp_path: Path) -> None:
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line({"[/b]": 1, "[red]": 2})])))
    assert_no_crash(result)
    assert "[/b]" in reported(result)[1]


# --- content the stores must keep exactly ---------------------------------------------------------


def test_text_with_a_nul_character_is_stored_or_rejected_but_never_crashes_the_import(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, services: Services
) -> None:
    nul = {"name": f"{APP}/conversations/nul", "turns": [{"messages": [user({"text": "a\u0000b"})]}]}
    lines = [line(GOOD[0]), line(nul), line(GOOD[2])]
    result = run_import(database_url, tmp_path, str(write(tmp_path, lines)))
    assert_no_crash(result)
    names = {c["name"] for c in list_all(services)}
    assert {f"{APP}/conversations/named-1", f"{APP}/conversations/named-2"} <= names
    if f"{APP}/conversations/nul" in names:
        assert get(services, f"{APP}/conversations/nul").turns[0].messages[0].chunks[0].text == "a\u0000b"  # type: ignore[index]
        assert summary(result) == "3 imported, 0 already present, 0 failed"
    else:
        assert reported(result)[2].startswith("INVALID_ARGUMENT: ")


def test_a_lone_surrogate_is_invalid_argument(database_url: str, tmp_path: Path, services: Services) -> None:
    bad = '{"name": "' + APP + '/conversations/s", "turns": [{"messages": [{"role": "user", "chunks": [{"text": "\\ud800"}]}]}]}'
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0]), bad])))
    assert_no_crash(result)
    assert reported(result)[2].startswith("INVALID_ARGUMENT: ")
    assert [c["name"] for c in list_all(services)] == [f"{APP}/conversations/named-1"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_numbers_json_cannot_hold_are_invalid_argument(
    database_url: str, tmp_path: Path, services: Services, number: str
) -> None:
    # Python's json module reads these words; a Struct number must not be one, and PostgreSQL refuses them.
    bad = '{"name": "' + APP + '/conversations/n", "turns": [{"messages": [{"role": "user", "chunks": [{"payload": {"x": ' + number + "}}]}]}]}"
    result = run_import(database_url, tmp_path, str(write(tmp_path, [line(GOOD[0]), bad, line(GOOD[2])])))
    assert_no_crash(result)
    assert reported(result)[2].startswith("INVALID_ARGUMENT: conversation.turns[0].messages[0].chunks[0].payload.x")
    assert {c["name"] for c in list_all(services)} == {f"{APP}/conversations/named-1", f"{APP}/conversations/named-2"}


def test_re_importing_large_and_fractional_numbers_changes_nothing(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path, services: Services
) -> None:
    payload = {"big": 1e23, "tiny": 1.5e-7, "half": 0.5, "max": 1.7976931348623157e308, "negative": -2.5e30}
    conversation = {"name": f"{APP}/conversations/numbers", "turns": [{"messages": [user({"payload": payload})]}]}
    path = write(tmp_path, [line(conversation)])
    assert summary(run_import(database_url, tmp_path, str(path))) == "1 imported, 0 already present, 0 failed"
    stored = get(services, f"{APP}/conversations/numbers").turns[0].messages[0].chunks[0].payload  # type: ignore[index]
    assert stored == payload
    assert all(type(stored[key]) is float for key in payload)  # type: ignore[index]

    again = run_import(database_url, tmp_path, str(path))
    assert summary(again) == "0 imported, 1 already present, 0 failed", again.stderr
