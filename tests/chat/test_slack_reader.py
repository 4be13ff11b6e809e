"""The Slack reader: a hand-written workspace export (folder or zip) read into the format-neutral records."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from convener.chat.emoji_names import unicode_emoji
from convener.chat.importing.slack import SlackExport, ts_micros
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedQuote,
    ImportedReaction,
    ImportedUser,
    ImportProblem,
    MalformedConversation,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "chat"
SAMPLE = DATA / "slack"
BROKEN = DATA / "slack-broken"


class Read:
    """Everything an export yields, with each conversation's messages drawn."""

    def __init__(self, export: SlackExport) -> None:
        self.problems: list[ImportProblem] = []
        self.users = list(export.users(self.problems.append))
        self.conversations: dict[str, ImportedConversation] = {}
        self.messages: dict[str, list[ImportedMessage]] = {}
        for conversation in export.conversations(self.problems.append):
            self.conversations[conversation.external_id] = conversation
            self.messages[conversation.external_id] = list(conversation.messages)

    def message(self, conversation: str, ts: str) -> ImportedMessage:
        return next(m for m in self.messages[conversation] if m.external_id == ts)

    def snapshot(self) -> list[Any]:
        """Comparable records: a conversation's lazy ``messages`` replaced by what it yielded."""
        return [self.users, self.problems] + [
            (c.external_id, c.space_type, c.display_name, c.members, c.create_time, c.position,
             self.messages[c.external_id])
            for c in self.conversations.values()
        ]


def read(path: Path) -> Read:
    with SlackExport(path) as export:
        return Read(export)


def zip_folder(folder: Path, target: Path, top: str = "Acme Slack export Nov 29 2017 - Dec 2 2017") -> Path:
    """The export as Slack hands it out: one zip, everything under one top folder."""
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{top}/{path.relative_to(folder).as_posix()}")
    return target


def tiny_export(tmp_path: Path, days: dict[str, Any], channels: list[Any] | None = None) -> Path:
    """An export of a few day files (``{"general/2017-11-29.json": [...]}``). A real export always has
    ``users.json`` at its top: without it, a zip's or folder's single folder would pass for the top."""
    export = tmp_path / "export"
    export.mkdir()
    (export / "users.json").write_text("[]")
    if channels is not None:
        (export / "channels.json").write_text(json.dumps(channels))
    for name, content in days.items():
        (export / name).parent.mkdir(exist_ok=True)
        (export / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return export


def copy_export(tmp_path: Path, source: Path = SAMPLE) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


@pytest.fixture(scope="module")
def sample() -> Read:
    return read(SAMPLE)


# ---------------------------------------------------------------------------------------------- users


def test_users_take_the_best_display_name_their_handle_and_whether_they_are_apps(sample: Read) -> None:
    assert sample.users == [
        ImportedUser("U01ALICE", "Ali", "alice@example.com", "HUMAN", "alice"),  # profile.display_name
        ImportedUser("U02BOB", "Bob Baker", "bob@example.com", "HUMAN", "bob"),  # profile.real_name
        ImportedUser("U03CAROL", "Carol Chen", "carol@example.com", "HUMAN", "carol"),  # deleted: still a user
        ImportedUser("U04DAVE", "Dave Dunn", "dave@example.com", "HUMAN", "dave"),  # top-level real_name
        ImportedUser("U05DEPLOY", "Deploy Bot", None, "APP", "deploy"),
    ]
    assert sample.problems == []


def test_slackbot_and_app_users_are_apps_and_a_user_without_id_is_reported(tmp_path: Path) -> None:
    export = tmp_path / "export"
    export.mkdir()
    (export / "users.json").write_text(json.dumps([
        {"id": "USLACKBOT", "name": "slackbot", "profile": {"real_name": "Slackbot"}},
        {"id": "U09APP", "name": "standup", "is_app_user": True, "profile": {}},
        {"name": "nobody"},
        "not a user",
    ]))
    result = read(export)
    assert [(u.external_id, u.display_name, u.user_type) for u in result.users] == [
        ("USLACKBOT", "Slackbot", "APP"), ("U09APP", "standup", "APP"),
    ]
    assert [str(p) for p in result.problems] == [
        "users.json[2]: a user needs a string id", "users.json[3]: not an object",
    ]


def test_an_unreadable_users_file_is_reported_and_messages_still_import(tmp_path: Path) -> None:
    export = copy_export(tmp_path)
    (export / "users.json").write_text('[{"id": "U01ALICE", "name": ')
    result = read(export)
    assert result.users == []
    assert [p.position for p in result.problems] == ["users.json"]
    assert "not valid JSON" in result.problems[0].message
    assert len(result.messages["C01GENERAL"]) == 14
    # Without users.json nobody says which user the deploy bot posts as: its bot ID stands in.
    assert result.message("C01GENERAL", "1511952000.000500").sender == "B05DEPLOY"


# ---------------------------------------------------------------------------------------------- conversations


def test_every_index_and_every_unlisted_folder_is_a_conversation(sample: Read) -> None:
    found = [(c.external_id, c.space_type, c.display_name, c.members, c.create_time, c.position)
             for c in sample.conversations.values()]
    assert found == [
        ("C01GENERAL", "SPACE", "general", ("U01ALICE", "U02BOB", "U03CAROL", "U04DAVE"),
         1511900000_000000, "channels.json[0]"),
        ("C02RANDOM", "SPACE", "random", ("U01ALICE", "U02BOB"), 1511900010_000000, "channels.json[1]"),
        ("G01LEADS", "SPACE", "leadership", ("U01ALICE", "U03CAROL"), 1512089000_000000, "groups.json[0]"),
        ("G02DINNER", "GROUP_CHAT", None, ("U01ALICE", "U02BOB", "U04DAVE"), 1512201000_000000, "mpims.json[0]"),
        ("D01ALICEBOB", "DIRECT_MESSAGE", None, ("U01ALICE", "U02BOB"), 1512115000_000000, "dms.json[0]"),
        ("archived-ideas", "SPACE", "archived-ideas", (), None, "archived-ideas/"),
    ]
    with SlackExport(SAMPLE) as export:
        assert export.conversation_count() == 6
    assert {key: len(messages) for key, messages in sample.messages.items()} == {
        "C01GENERAL": 14, "C02RANDOM": 4, "G01LEADS": 2, "G02DINNER": 2, "D01ALICEBOB": 2, "archived-ideas": 1,
    }


def test_older_exports_with_only_channels_json_import_the_other_folders_as_spaces(tmp_path: Path) -> None:
    export = copy_export(tmp_path)
    for name in ("groups.json", "mpims.json", "dms.json"):
        (export / name).unlink()
    result = read(export)
    assert [(c.external_id, c.space_type, c.display_name) for c in result.conversations.values()] == [
        ("C01GENERAL", "SPACE", "general"),
        ("C02RANDOM", "SPACE", "random"),
        ("D01ALICEBOB", "SPACE", "D01ALICEBOB"),
        ("archived-ideas", "SPACE", "archived-ideas"),
        ("leadership", "SPACE", "leadership"),
        ("mpdm-alice--bob--dave-1", "SPACE", "mpdm-alice--bob--dave-1"),
    ]
    assert result.problems == []


def test_a_listed_conversation_without_a_folder_has_no_messages(tmp_path: Path) -> None:
    export = copy_export(tmp_path)
    shutil.rmtree(export / "random")
    result = read(export)
    assert result.conversations["C02RANDOM"].members == ("U01ALICE", "U02BOB")
    assert result.messages["C02RANDOM"] == []


# ---------------------------------------------------------------------------------------------- messages


def test_messages_come_day_by_day_in_ts_order_with_exact_times(sample: Read) -> None:
    general = sample.messages["C01GENERAL"]
    assert [m.external_id for m in general] == [
        "1511946000.000100", "1511950000.000200", "1511950100.000300", "1511950200.000400",
        "1511952000.000500", "1511953000.000600", "1511954000.000700",
        "1512000900.000100", "1512003600.000200", "1512007200.000300", "1512007300.000400",
        "1512010800.000500", "1512014400.000600", "1512085950.000216",
    ]
    # The file lists Carol's reply before the root: sorting by ts puts it after Bob's.
    assert general[3].position == "general/2017-11-29.json[1]"
    edited = general[-1]
    assert edited.create_time == 1512085950_000216
    assert edited.last_update_time == 1512086010_000001
    assert edited.text == "Standup moves to *10:30* tomorrow ~10:00~"
    assert all(m.text_format == "slack" and m.private_viewer is None for m in general)


def test_text_stays_mrkdwn_with_mentions_links_and_channel_links(sample: Read) -> None:
    assert sample.message("C01GENERAL", "1511954000.000700").text == (
        "Onboarding docs are at <https://wiki.example.com/onboarding|the wiki>, questions to <!here> or "
        "<mailto:help@example.com|help@example.com> _please_"
    )
    assert sample.message("C01GENERAL", "1511950000.000200").text == (
        "Welcome everyone to <#C01GENERAL|general>! Say hi to <@U02BOB> and <@U03CAROL>."
    )


def test_threads_roots_replies_and_broadcasts(sample: Read) -> None:
    def thread(ts: str) -> tuple[str | None, bool]:
        message = sample.message("C01GENERAL", ts)
        return message.thread_external_id, message.threaded_reply

    root = "1511950000.000200"
    assert thread(root) == (root, False)
    assert thread("1511950100.000300") == (root, True)
    assert thread("1511950200.000400") == (root, True)  # thread_broadcast: a reply, also in the channel
    assert thread("1511954000.000700") == (None, False)  # no replies: no thread
    assert sample.message("C02RANDOM", "1511960060.000600").thread_external_id == "1511960000.000500"


def test_system_messages_are_flagged(sample: Read) -> None:
    system = {(key, m.external_id) for key, messages in sample.messages.items() for m in messages if m.system}
    assert system == {
        ("C01GENERAL", "1511946000.000100"),  # channel_join
        ("C01GENERAL", "1512000900.000100"),  # channel_topic
        ("C02RANDOM", "1511960120.000700"),  # pinned_item
        ("G01LEADS", "1512090000.000100"),  # channel_join
    }


def test_a_tombstone_is_a_deleted_root_its_replies_still_hang_on(sample: Read) -> None:
    tombstone = sample.message("C01GENERAL", "1512007200.000300")
    assert tombstone.delete_time == tombstone.create_time == 1512007200_000300
    assert tombstone.text == ""
    assert tombstone.thread_external_id == "1512007200.000300"
    reply = sample.message("C01GENERAL", "1512007300.000400")
    assert (reply.thread_external_id, reply.threaded_reply, reply.delete_time) == ("1512007200.000300", True, None)
    others = [m for messages in sample.messages.values() for m in messages if m is not tombstone]
    assert all(m.delete_time is None for m in others)


def test_bots_post_as_their_app_user_or_else_by_bot_id(sample: Read) -> None:
    assert sample.message("C01GENERAL", "1511952000.000500").sender == "U05DEPLOY"  # profile.bot_id
    assert sample.message("C01GENERAL", "1511953000.000600").sender == "B09WEBHOOK"  # legacy webhook


def test_reactions_are_unicode_with_skin_tones_or_the_custom_name(sample: Read) -> None:
    assert sample.message("C01GENERAL", "1511950000.000200").reactions == (
        ImportedReaction("\U0001f44d\U0001f3fb", 1, ("U02BOB",)),
        ImportedReaction("\U0001f389", 2, ("U03CAROL", "U04DAVE")),
        ImportedReaction("partyparrot", 1, ("U04DAVE",)),
    )
    assert sample.message("D01ALICEBOB", "1512115260.000200").reactions == (
        ImportedReaction("\U0001f926\U0001f3fc\u200d\u2642\ufe0f", 1, ("U01ALICE",)),
    )


def test_files_become_attachments_drive_files_by_id_deleted_ones_dropped(sample: Read) -> None:
    assert sample.message("C01GENERAL", "1512003600.000200").attachments == (
        ImportedAttachment("roadmap.pdf", "application/pdf", "UPLOADED_CONTENT", None, "F01ROADMAP"),
        ImportedAttachment("Q4 plan", "application/vnd.google-apps.document", "DRIVE_FILE",
                           "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "F03QPLAN"),
    )


def test_shares_are_forwards_and_unfurls_of_the_same_timeline_are_replies(sample: Read) -> None:
    assert sample.message("C01GENERAL", "1512010800.000500").quote == ImportedQuote(
        "FORWARD", message_external_id="1511960000.000500", conversation_external_id="C02RANDOM",
        conversation_display_name="random", text="Lunch at noon?", sender_display_name="Bob Baker",
    )
    assert sample.message("C01GENERAL", "1512014400.000600").quote == ImportedQuote(
        "REPLY", message_external_id="1511950000.000200",
        text="Welcome everyone to <#C01GENERAL|general>! Say hi to <@U02BOB> and <@U03CAROL>.",
        sender_display_name="Alice Archer",
    )


def test_quotes_in_another_thread_are_forwards_and_a_link_alone_places_the_quote(tmp_path: Path) -> None:
    link = "https://acme.slack.com/archives/C01GENERAL/p1511950100000300?thread_ts=1511950000.000200&cid=C01GENERAL"
    export = tiny_export(tmp_path, {"general/2017-11-29.json": [
        # In the main timeline, quoting a reply of a thread: not where the quote is.
        {"ts": "1511960000.000100", "user": "U01ALICE", "text": "see",
         "attachments": [{"is_msg_unfurl": True, "from_url": link, "text": "Thanks!"}]},
        # In that thread, quoting that reply: a reply.
        {"ts": "1511960100.000200", "thread_ts": "1511950000.000200", "user": "U01ALICE", "text": "see",
         "attachments": [{"is_msg_unfurl": True, "from_url": link, "text": "Thanks!"}]},
    ]}, channels=[{"id": "C01GENERAL", "name": "general", "members": []}])
    outside, inside = read(export).messages["C01GENERAL"]
    assert outside.quote == ImportedQuote("FORWARD", "1511950100.000300", "C01GENERAL", text="Thanks!")
    assert inside.quote == ImportedQuote("REPLY", "1511950100.000300", text="Thanks!")


def test_deletion_notices_delete_the_message_they_name_and_edit_notices_are_skipped(tmp_path: Path) -> None:
    export = tiny_export(tmp_path, {"general/2017-11-29.json": [
        {"ts": "1511950000.000100", "user": "U01ALICE", "text": "oops"},
        {"ts": "1511950060.000200", "subtype": "message_deleted", "hidden": True, "deleted_ts": "1511950000.000100"},
        {"ts": "1511950120.000300", "subtype": "message_changed", "hidden": True,
         "message": {"ts": "1511950000.000100", "text": "oops!"}},
        {"ts": "1511950180.000400", "subtype": "message_deleted", "hidden": True},
    ]})
    result = read(export)
    original, deleted = result.messages["general"]
    assert (original.external_id, original.delete_time) == ("1511950000.000100", None)
    assert (deleted.external_id, deleted.create_time, deleted.delete_time) == (
        "1511950000.000100", 1511950000_000100, 1511950060_000200)
    assert result.problems == []


# ---------------------------------------------------------------------------------------------- zip, streaming


def test_a_zip_reads_exactly_like_the_folder(tmp_path: Path, sample: Read) -> None:
    zipped = read(zip_folder(SAMPLE, tmp_path / "export.zip"))
    assert zipped.snapshot() == sample.snapshot()
    broken_zip = zip_folder(BROKEN, tmp_path / "broken.zip", top="broken")
    with SlackExport(BROKEN) as folder, SlackExport(broken_zip) as archive:
        assert folder.conversation_count() == archive.conversation_count() == 2


def test_day_files_are_opened_one_at_a_time_in_date_order_only_as_messages_are_drawn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    export = SlackExport(SAMPLE)
    archive = export._archive
    real_open = archive.open
    opened: list[str] = []
    open_now = [0]
    most_open = [0]

    @contextmanager
    def counting_open(name: str) -> Iterator[IO[bytes]]:
        opened.append(name)
        open_now[0] += 1
        most_open[0] = max(most_open[0], open_now[0])
        try:
            with real_open(name) as stream:
                yield stream
        finally:
            open_now[0] -= 1

    monkeypatch.setattr(archive, "open", counting_open)
    conversations = export.conversations(lambda problem: None)
    general = next(conversations)
    assert not any(name.startswith("general/") for name in opened)  # nothing read before it is asked for
    first = next(general.messages)
    assert first.external_id == "1511946000.000100"
    assert [name for name in opened if name.startswith("general/")] == ["general/2017-11-29.json"]
    for _ in general.messages:
        pass
    for conversation in conversations:
        for _ in conversation.messages:
            pass
    day_files = [name for name in opened if "/" in name]
    assert day_files == [
        "general/2017-11-29.json", "general/2017-11-30.json", "random/2017-11-29.json",
        "random/2017-12-01.json", "leadership/2017-12-01.json", "mpdm-alice--bob--dave-1/2017-12-02.json",
        "D01ALICEBOB/2017-12-01.json", "archived-ideas/2017-01-05.json",
    ]
    assert most_open[0] == 1
    export.close()


# ---------------------------------------------------------------------------------------------- broken exports


def test_malformed_records_are_reported_with_their_position_and_skipped() -> None:
    with SlackExport(BROKEN) as export:
        problems: list[ImportProblem] = []
        assert [u.external_id for u in export.users(problems.append)] == ["U01ALICE", "U02BOB"]
        conversations = list(export.conversations(problems.append))
        assert [c.external_id for c in conversations] == ["C01GENERAL", "C03INCIDENTS"]
        general = list(conversations[0].messages)
    assert [m.text for m in general] == ["first", "last of the day", "next day"]
    assert general[1].reactions == (ImportedReaction("\U0001f440", 1, ("U01ALICE",)),)
    assert [str(p) for p in problems] == [
        "channels.json[2]: a conversation needs a string id (and a name unless a DM)",
        "general/2017-11-29.json[1]: no ts",
        "general/2017-11-29.json[2]: not an object",
        "general/2017-11-29.json[3]: bad ts 'yesterday'",
        "general/2017-11-29.json[4]: ts is not a string",
        "general/2017-11-29.json[5]: user is not of type str",
        "general/2017-11-29.json[6].reactions[0]: a reaction needs a name",
    ]


def test_a_day_file_that_is_not_json_fails_its_conversation_after_the_days_before() -> None:
    with SlackExport(BROKEN) as export:
        incidents = next(c for c in export.conversations(lambda problem: None) if c.external_id == "C03INCIDENTS")
        assert next(incidents.messages).text == "Database is down"
        with pytest.raises(MalformedConversation) as raised:
            next(incidents.messages)
    assert raised.value.problem.position == "incidents/2017-11-30.json"
    assert raised.value.problem.message.startswith("not valid JSON")


def test_a_day_file_that_is_no_array_is_reported_and_skipped(tmp_path: Path) -> None:
    export = tiny_export(tmp_path, {
        "general/2017-11-29.json": '{"ts": "1511950000.000100"}',
        "general/2017-11-30.json": [{"ts": "1512000000.000100", "text": "hi"}],
    })
    result = read(export)
    assert [m.text for m in result.messages["general"]] == ["hi"]
    assert [str(p) for p in result.problems] == ["general/2017-11-29.json: not a JSON array of messages"]


# ---------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize(("ts", "micros"), [
    ("1512085950.000216", 1512085950_000216),
    ("1512085950.999999", 1512085950_999999),  # a float would round this one
    ("1512085950.5", 1512085950_500000),
    ("1512085950", 1512085950_000000),
    ("1512085950.0000001", None),
    ("-1.000001", None),
    ("", None),
])
def test_ts_is_read_as_decimal_digits(ts: str, micros: int | None) -> None:
    assert ts_micros(ts) == micros


@pytest.mark.parametrize(("name", "glyph"), [
    ("+1", "\U0001f44d"),
    ("thumbsup", "\U0001f44d"),
    ("+1::skin-tone-6", "\U0001f44d\U0001f3ff"),
    ("+1_medium_dark_skin_tone", "\U0001f44d\U0001f3fe"),
    ("raised_hand_with_fingers_splayed::skin-tone-2", "\U0001f590\U0001f3fb"),
    ("heart::skin-tone-3", "\u2764\ufe0f"),  # takes no skin tone
    ("simple_smile", "\U0001f642"),
    ("man-facepalming", "\U0001f926\u200d\u2642\ufe0f"),
    ("flag-fr", "\U0001f1eb\U0001f1f7"),
    ("partyparrot", "partyparrot"),
    ("partyparrot::skin-tone-2", "partyparrot::skin-tone-2"),
])
def test_emoji_names_become_unicode(name: str, glyph: str) -> None:
    assert unicode_emoji(name) == glyph
