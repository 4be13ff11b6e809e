"""``convener import chat`` and ``convener auth create-key --user/--scopes`` through the real CLI, on a real store.

Every count below is read off the sample exports in ``tests/data/chat`` (users files, conversation indexes
and day files), not off a previous run of the importer.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from typer.testing import CliRunner, Result

from convener.auth.keys import ApiKeys
from convener.chat.tables import links, memberships, messages, spaces, users
from convener.chat.tools import READ_MEMBERSHIPS, READ_MESSAGES, READ_SPACES, SEND_MESSAGES
from convener.cli import app
from convener.store.database import Database

SAMPLES = Path(__file__).parent / "data" / "chat"
TABLES = ("chat_users", "chat_links", "chat_spaces", "chat_memberships", "chat_messages", "chat_mentions")
SUMMARY = re.compile(
    r"(?P<users>\d+) users, (?P<conversations>\d+) conversations from (?P<source>[a-z-]+): "
    r"(?P<messages>\d+) messages imported, (?P<updated>\d+) updated, (?P<unchanged>\d+) unchanged; "
    r"(?P<failed>\d+) conversations failed, (?P<problems>\d+) problems"
)
FIRST_TIME = {"updated": 0, "unchanged": 0}
"""A first import: every message is new."""


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def store_options(database_url: str, tmp_path: Path) -> list[str]:
    return ["--data-dir", str(tmp_path / "data"), "--database-url", database_url]


def import_chat(database_url: str, tmp_path: Path, format_name: str, path: Path | str) -> Result:
    return run("import", "chat", format_name, str(path), *store_options(database_url, tmp_path))


def assert_clean_failure(result: Result, code: str) -> None:
    """Failed with ``CODE: message`` on stderr, a non-zero exit and no Python traceback."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.stderr.strip().startswith(f"{code}: "), result.stderr


def summary_of(result: Result) -> dict[str, int | str]:
    """The one summary line on stdout, as numbers."""
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    match = SUMMARY.fullmatch(lines[0].strip())
    assert match, lines[0]
    return {key: (value if key == "source" else int(value)) for key, value in match.groupdict().items()}


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    """The store the CLI writes to, opened alongside it (the CLI migrates it on first use)."""
    opened = Database(database_url)
    opened.migrate()
    yield opened
    opened.dispose()


def row_counts(database: Database) -> dict[str, int]:
    with database.reading() as connection:
        return {table: int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()) for table in TABLES}


def bodies(database: Database) -> set[str]:
    with database.reading() as connection:
        return set(connection.scalars(select(messages.c.body)))


def zipped(folder: Path, target: Path, wrapper: str | None = None) -> Path:
    """``folder`` as a zip: its files at the root, or inside one top folder named ``wrapper``."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                name = path.relative_to(folder).as_posix()
                archive.write(path, f"{wrapper}/{name}" if wrapper else name)
    return target


# --- the good samples ------------------------------------------------------------------------------

# What each sample holds, counted by hand from its files.
SLACK = {"users": 5, "conversations": 6, "messages": 25}
"""users.json: 5 people and bots. Conversations: general and random (channels.json), leadership (groups.json),
the alice/bob/dave group DM (mpims.json), the alice/bob DM (dms.json) and the archived-ideas folder that no
index lists. Messages: 25 records over the day files, system ones (joins, topic, pins) included."""
TAKEOUT = {"users": 6, "conversations": 3, "messages": 17}
"""Two DMs and the Platform Team space; 3 + 3 + 11 messages."""
MATTERMOST = {"users": 3, "conversations": 4, "messages": 12}
"""alice, bob and carol. Conversations: town-square and leads, the alice/bob DM and the alice/bob/carol group
message (town-square's posts are interleaved with leads' in the file: it is still one conversation).
Messages: 9 posts and 3 replies."""


def _sample(kind: str, tmp_path: Path) -> tuple[str, Path, dict[str, int]]:
    if kind == "slack-folder":
        return "slack", SAMPLES / "slack", SLACK
    if kind == "slack-zip":
        return "slack", zipped(SAMPLES / "slack", tmp_path / "slack.zip"), SLACK
    if kind == "slack-zip-in-a-folder":
        return "slack", zipped(SAMPLES / "slack", tmp_path / "export.zip", "Acme Slack export Nov 29 2017"), SLACK
    if kind == "takeout-folder":
        return "google-chat", SAMPLES / "takeout", TAKEOUT
    if kind == "takeout-zip":
        return "google-chat", zipped(SAMPLES / "takeout", tmp_path / "takeout-20240301.zip"), TAKEOUT
    if kind == "mattermost-jsonl":
        return "mattermost", SAMPLES / "mattermost" / "export.jsonl", MATTERMOST
    if kind == "mattermost-zip":
        target = tmp_path / "mattermost.zip"
        with zipfile.ZipFile(target, "w") as archive:
            archive.write(SAMPLES / "mattermost" / "export.jsonl", "export.jsonl")
        return "mattermost", target, MATTERMOST
    raise AssertionError(kind)


SAMPLE_KINDS = ["slack-folder", "slack-zip", "slack-zip-in-a-folder", "takeout-folder", "takeout-zip",
                "mattermost-jsonl", "mattermost-zip"]


@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_a_sample_export_imports_cleanly_and_stores_what_it_holds(
    database_url: str, tmp_path: Path, database: Database, kind: str
) -> None:
    format_name, path, expected = _sample(kind, tmp_path)

    result = import_chat(database_url, tmp_path, format_name, path)

    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert "Traceback" not in result.output
    counts = row_counts(database)
    assert counts["chat_messages"] == expected["messages"]
    assert counts["chat_spaces"] == expected["conversations"]
    with database.reading() as connection:
        linked = connection.scalar(select(func.count()).select_from(links).where(links.c.kind == "space"))
    assert linked == expected["conversations"]
    # The summary last: it is what the user reads, and must say what the store now holds.
    assert summary_of(result) == {**expected, **FIRST_TIME, "source": format_name, "failed": 0, "problems": 0}


@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_a_reimport_counts_every_message_unchanged_and_changes_no_row(
    database_url: str, tmp_path: Path, database: Database, kind: str
) -> None:
    format_name, path, expected = _sample(kind, tmp_path)
    first = import_chat(database_url, tmp_path, format_name, path)
    assert first.exit_code == 0, first.output
    counts = row_counts(database)
    stored = bodies(database)
    with database.reading() as connection:
        row_ids = sorted(connection.execute(select(messages.c.message_id, messages.c.row_id)).all())

    again = import_chat(database_url, tmp_path, format_name, path)

    assert again.exit_code == 0, again.output
    assert summary_of(again) == {**summary_of(first), "messages": 0, "unchanged": expected["messages"]}
    assert row_counts(database) == counts
    assert bodies(database) == stored
    with database.reading() as connection:
        assert sorted(connection.execute(select(messages.c.message_id, messages.c.row_id)).all()) == row_ids


def test_a_reimport_counts_the_messages_the_export_changed(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    export = tmp_path / "slack"
    shutil.copytree(SAMPLES / "slack", export)
    first = summary_of(import_chat(database_url, tmp_path, "slack", export))
    day = export / "general" / "2017-11-29.json"
    records = json.loads(day.read_text(encoding="utf-8"))
    edited = next(record for record in records if record.get("subtype") is None and record.get("text"))
    edited["text"] = "Edited after the first import"
    records.append({"type": "message", "ts": "1511990000.000900", "user": "U02BOB", "text": "A new message"})
    day.write_text(json.dumps(records), encoding="utf-8")

    again = summary_of(import_chat(database_url, tmp_path, "slack", export))

    assert (again["messages"], again["updated"], again["unchanged"]) == (1, 1, int(first["messages"]) - 1)
    assert {"Edited after the first import", "A new message"} <= bodies(database)


@pytest.mark.parametrize(("format_name", "folder"), [("slack", "slack"), ("google-chat", "takeout")])
def test_the_zip_and_the_folder_are_the_same_export(
    database_url: str, tmp_path: Path, database: Database, format_name: str, folder: str
) -> None:
    first = import_chat(database_url, tmp_path, format_name, SAMPLES / folder)
    assert first.exit_code == 0, first.output
    counts = row_counts(database)

    from_zip = import_chat(database_url, tmp_path, format_name, zipped(SAMPLES / folder, tmp_path / "export.zip"))

    assert from_zip.exit_code == 0, from_zip.output
    assert summary_of(from_zip) == {**summary_of(first), "messages": 0, "unchanged": summary_of(first)["messages"]}
    assert row_counts(database) == counts


def test_a_slack_import_keeps_threads_system_messages_and_members(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = import_chat(database_url, tmp_path, "slack", SAMPLES / "slack")
    assert result.exit_code == 0, result.output
    with database.reading() as connection:
        by_space = dict(connection.execute(
            select(spaces.c.display_name, select(func.count()).where(memberships.c.space_id == spaces.c.space_id)
                   .scalar_subquery()).where(spaces.c.display_name.is_not(None))).all())
        kinds = dict(connection.execute(select(spaces.c.space_id, spaces.c.space_type)).all())
        emails = set(connection.scalars(select(users.c.email).where(users.c.email.is_not(None))))
    assert by_space["general"] == 4 and by_space["random"] == 2 and by_space["leadership"] == 2
    assert sorted(kinds.values()) == ["DIRECT_MESSAGE", "GROUP_CHAT", "SPACE", "SPACE", "SPACE", "SPACE"]
    assert {"alice@example.com", "bob@example.com", "carol@example.com", "dave@example.com"} <= emails


# --- broken samples --------------------------------------------------------------------------------


def problem_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def assert_problems_have_their_place(result: Result, expected_positions: list[str]) -> None:
    """Each problem on its own stderr line, as ``file[position]: what is wrong``, in the export's order."""
    lines = problem_lines(result)
    positions = [line.split(": ", 1)[0] for line in lines]
    assert positions == expected_positions, result.stderr
    for line in lines:
        assert len(line.split(": ", 1)) == 2 and line.split(": ", 1)[1].strip(), line
    assert "Traceback" not in result.output


def test_a_broken_slack_export_imports_the_good_and_drops_the_truncated_conversation_whole(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = import_chat(database_url, tmp_path, "slack", SAMPLES / "slack-broken")

    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert_problems_have_their_place(result, [
        "channels.json[2]",
        "general/2017-11-29.json[1]",
        "general/2017-11-29.json[2]",
        "general/2017-11-29.json[3]",
        "general/2017-11-29.json[4]",
        "general/2017-11-29.json[5]",
        "general/2017-11-29.json[6].reactions[0]",
        "incidents/2017-11-30.json",
    ])
    truncated = problem_lines(result)[-1]
    assert "line 2" in truncated  # where in the file it breaks
    # general: the three good messages; incidents (its second day file is cut off): nothing at all,
    # not even its good first day, its link, its space or its memberships.
    assert bodies(database) == {"first", "last of the day", "next day"}
    with database.reading() as connection:
        assert list(connection.scalars(select(spaces.c.display_name))) == ["general"]
        assert set(connection.scalars(select(links.c.external_id).where(links.c.kind == "space"))) == {"C01GENERAL"}
        assert connection.scalar(select(func.count()).select_from(memberships)) == 2
    assert summary_of(result) == {"users": 2, "conversations": 1, "messages": 3, **FIRST_TIME, "source": "slack",
                                  "failed": 1, "problems": 8}


def test_a_broken_takeout_imports_the_good_and_drops_the_truncated_conversation_whole(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = import_chat(database_url, tmp_path, "google-chat", SAMPLES / "takeout-broken")

    assert result.exit_code == 1, result.output
    assert_problems_have_their_place(result, [
        "Groups/DM tRuNcAAAAAE/messages.json[1]",
        "Groups/Space AAAAbr0kEn1/messages.json[1]",
        "Groups/Space AAAAbr0kEn1/messages.json[2]",
    ])
    assert bodies(database) == {"First", "Last"}
    with database.reading() as connection:
        assert list(connection.scalars(select(spaces.c.display_name))) == ["Broken Space"]
        assert connection.scalar(select(func.count()).select_from(links).where(links.c.kind == "space")) == 1
        assert not [e for e in connection.scalars(select(links.c.external_id)) if "tRuNc" in e]
        # Bram appears only in the truncated DM: the user made for him went with it.
        assert list(connection.scalars(select(users.c.email))) == ["ada.okafor@example.com"]
        assert connection.scalar(select(func.count()).select_from(memberships)) == 1
    assert summary_of(result) == {"users": 1, "conversations": 1, "messages": 2, **FIRST_TIME, "source": "google-chat",
                                  "failed": 1, "problems": 3}


def test_a_broken_mattermost_export_reports_every_bad_line_and_keeps_the_good_posts(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = import_chat(database_url, tmp_path, "mattermost", SAMPLES / "mattermost" / "broken.jsonl")

    assert result.exit_code == 1, result.output
    assert_problems_have_their_place(result, [
        "broken.jsonl:5", "broken.jsonl:7", "broken.jsonl:8", "broken.jsonl:9",
        "broken.jsonl:10.reactions[0]", "broken.jsonl:10.replies[0]",
        "broken.jsonl:11", "broken.jsonl:12", "broken.jsonl:13",
    ])
    assert bodies(database) == {"the line after this one is cut off", "kept, with a bad reply and a bad reaction",
                                "good reply", "really last"}
    assert row_counts(database)["chat_spaces"] == 1
    assert summary_of(result) == {"users": 1, "conversations": 1, "messages": 4, **FIRST_TIME, "source": "mattermost",
                                  "failed": 0, "problems": 9}


@pytest.mark.parametrize(("format_name", "folder"), [("slack", "slack-broken"), ("google-chat", "takeout-broken")])
def test_reimporting_a_broken_export_reports_the_same_and_changes_no_row(
    database_url: str, tmp_path: Path, database: Database, format_name: str, folder: str
) -> None:
    first = import_chat(database_url, tmp_path, format_name, SAMPLES / folder)
    counts = row_counts(database)

    again = import_chat(database_url, tmp_path, format_name, SAMPLES / folder)

    assert again.exit_code == first.exit_code == 1
    assert summary_of(again) == {**summary_of(first), "messages": 0, "unchanged": summary_of(first)["messages"]}
    assert again.stderr == first.stderr
    assert row_counts(database) == counts


def test_fixing_the_truncated_file_imports_the_conversation_on_the_next_run(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    export = tmp_path / "slack-broken"
    shutil.copytree(SAMPLES / "slack-broken", export)
    import_chat(database_url, tmp_path, "slack", export)
    (export / "incidents" / "2017-11-30.json").write_text(
        '[{"type": "message", "ts": "1512000300.000100", "user": "U02BOB", "text": "Back up after a restart"}]',
        encoding="utf-8")

    result = import_chat(database_url, tmp_path, "slack", export)

    assert summary_of(result)["failed"] == 0
    assert {"Database is down", "Back up after a restart"} <= bodies(database)
    assert row_counts(database)["chat_spaces"] == 2


# --- refused imports -------------------------------------------------------------------------------


@pytest.mark.parametrize("format_name", ["slak", "SLACK", "google_chat", "", "teams", "../slack"])
def test_an_unknown_format_is_invalid_argument(
    database_url: str, tmp_path: Path, database: Database, format_name: str
) -> None:
    result = import_chat(database_url, tmp_path, format_name, SAMPLES / "slack")

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "slack" in result.stderr and "google-chat" in result.stderr and "mattermost" in result.stderr
    assert result.stdout == ""
    assert row_counts(database)["chat_messages"] == 0


@pytest.mark.parametrize("format_name", ["slack", "google-chat", "mattermost"])
def test_a_missing_path_is_a_clear_error(database_url: str, tmp_path: Path, database: Database,
                                         format_name: str) -> None:
    missing = tmp_path / "no-such-export.zip"

    result = import_chat(database_url, tmp_path, format_name, missing)

    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert re.match(r"(INVALID_ARGUMENT|NOT_FOUND): ", result.stderr.strip()), result.stderr
    assert str(missing) in result.stderr
    assert "does not exist" in result.stderr or "no such" in result.stderr.lower()
    assert result.stdout == ""


@pytest.mark.parametrize("format_name", ["slack", "google-chat"])
def test_a_file_that_is_neither_a_folder_nor_a_zip_is_refused(
    database_url: str, tmp_path: Path, format_name: str
) -> None:
    result = import_chat(database_url, tmp_path, format_name, SAMPLES / "mattermost" / "export.jsonl")

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "neither a folder nor a zip" in result.stderr


def test_a_zip_that_is_not_a_zip_is_refused(database_url: str, tmp_path: Path) -> None:
    fake = tmp_path / "export.zip"
    fake.write_bytes(b"PK\x03\x04 this is not really a zip archive")

    result = import_chat(database_url, tmp_path, "slack", fake)

    assert_clean_failure(result, "INVALID_ARGUMENT")


@pytest.mark.parametrize(
    ("format_name", "folder"),
    [("slack", None), ("slack", "takeout"), ("google-chat", None), ("google-chat", "slack")],
    ids=["slack-empty-folder", "slack-given-a-takeout", "google-chat-empty-folder", "google-chat-given-a-slack-export"],
)
def test_a_folder_that_is_no_export_of_the_format_is_refused(
    database_url: str, tmp_path: Path, database: Database, format_name: str, folder: str | None
) -> None:
    # The mattermost reader refuses a folder without its .jsonl; the others should not report
    # "0 users, 0 conversations, 0 messages imported" with exit 0 when given the wrong folder.
    path = SAMPLES / folder if folder else tmp_path / "empty"
    path.mkdir(exist_ok=True)

    result = import_chat(database_url, tmp_path, format_name, path)

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert row_counts(database)["chat_spaces"] == 0


# --- API keys for chat users -----------------------------------------------------------------------


def create_key(database_url: str, tmp_path: Path, *args: str) -> Result:
    return run("auth", "create-key", *args, *store_options(database_url, tmp_path))


def test_a_user_key_with_chat_scopes_has_exactly_those_scopes(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = create_key(database_url, tmp_path, "--user", "users/ana@example.com",
                        "--scopes", "chat.messages.readonly,chat.spaces.readonly")

    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert secret.startswith("cnv_") and "\n" not in secret
    assert secret not in result.stderr
    assert "users/ana@example.com" in result.stderr
    assert "chat.messages.readonly" in result.stderr and "chat.spaces.readonly" in result.stderr
    caller = ApiKeys(database).caller(secret)
    assert caller is not None
    assert caller.principal == "users/ana@example.com"
    assert caller.scopes == frozenset({"chat.messages.readonly", "chat.spaces.readonly"})
    assert caller.may_use("chat")
    assert not caller.may_use("ces")
    assert caller.has_any("chat", READ_MESSAGES)
    assert caller.has_any("chat", READ_SPACES)
    assert not caller.has_any("chat", SEND_MESSAGES)
    assert not caller.has_any("chat", READ_MEMBERSHIPS)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--scope", "https://www.googleapis.com/auth/chat.messages"], {"chat.messages"}),
        (["--scopes", ("https://www.googleapis.com/auth/chat.messages.readonly,"
                       "https://www.googleapis.com/auth/chat.memberships.readonly")],
         {"chat.messages.readonly", "chat.memberships.readonly"}),
        (["--scope", "chat.spaces", "--scope", "https://www.googleapis.com/auth/chat.messages.create"],
         {"chat.spaces", "chat.messages.create"}),
        (["--scope", "chat.messages", "--scopes", "https://www.googleapis.com/auth/chat.messages,chat.spaces"],
         {"chat.messages", "chat.spaces"}),
        (["--scopes", " chat.messages.readonly , chat.spaces.readonly "],
         {"chat.messages.readonly", "chat.spaces.readonly"}),
        (["--scope", "chat"], {"chat"}),
    ],
    ids=["full-url", "full-urls-comma-separated", "mixed", "duplicates", "spaces-around", "service"],
)
def test_full_url_scopes_are_normalised(
    database_url: str, tmp_path: Path, database: Database, options: list[str], expected: set[str]
) -> None:
    result = create_key(database_url, tmp_path, "--user", "users/ana", *options)

    assert result.exit_code == 0, result.output
    caller = ApiKeys(database).caller(result.stdout.strip())
    assert caller is not None
    assert caller.scopes == frozenset(expected)
    [stored] = ApiKeys(database).list()
    assert sorted(stored.scopes) == sorted(expected)  # each once, without its URL prefix
    assert "https://" not in result.stderr


@pytest.mark.parametrize(
    "scope",
    ["chat.bogus", "https://www.googleapis.com/auth/drive", "https://www.googleapis.com/auth/chat.bogus",
     "https://evil.example/auth/chat.messages", "CHAT.MESSAGES", "chat.messages.readonly.extra", "chat.*", "ces.x"],
)
def test_an_unknown_scope_is_refused_and_no_key_is_made(
    database_url: str, tmp_path: Path, database: Database, scope: str
) -> None:
    result = create_key(database_url, tmp_path, "--user", "users/ana", "--scopes", f"chat.messages.readonly,{scope}")

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "scope" in result.stderr
    assert result.stdout == ""
    assert ApiKeys(database).list() == []


@pytest.mark.parametrize("scopes", ["", ",", " , "], ids=["empty", "comma", "blank"])
def test_an_empty_scope_list_is_refused_rather_than_widened_to_every_scope(
    database_url: str, tmp_path: Path, database: Database, scopes: str
) -> None:
    # Asking for a key with no scopes must not silently mint a key with every scope ("*").
    result = create_key(database_url, tmp_path, "--user", "users/ana", "--scopes", scopes)

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert ApiKeys(database).list() == []


@pytest.mark.parametrize(
    "arguments",
    [["users/ana", "--user", "users/ana"], ["users/ana", "--user", "users/ben"], []],
    ids=["both-same", "both-different", "neither"],
)
def test_the_key_s_user_must_be_named_exactly_once(
    database_url: str, tmp_path: Path, database: Database, arguments: list[str]
) -> None:
    result = create_key(database_url, tmp_path, *arguments, "--scopes", "chat.messages.readonly")

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "--user" in result.stderr
    assert result.stdout == ""
    assert ApiKeys(database).list() == []


@pytest.mark.parametrize("user", ["ana@example.com", "users/", "users/ana/keys", "users/ana bob"])
def test_a_malformed_user_is_refused(database_url: str, tmp_path: Path, database: Database, user: str) -> None:
    result = create_key(database_url, tmp_path, "--user", user, "--scope", "chat")

    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert ApiKeys(database).list() == []
