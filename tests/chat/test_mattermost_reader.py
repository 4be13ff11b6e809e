"""The Mattermost reader: a hand-written bulk export (JSONL, or a zip holding it) read into the records."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from convener.api.errors import InvalidArgument
from convener.chat.importing.mattermost import MattermostExport, post_id
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedReaction,
    ImportedUser,
    ImportProblem,
)

DATA = Path(__file__).resolve().parent.parent / "data" / "chat" / "mattermost"
SAMPLE = DATA / "export.jsonl"
BROKEN = DATA / "broken.jsonl"

TOWN_SQUARE = "acme/town-square"
LEADS = "acme/leads"
DM = "direct:alice,bob"
GROUP = "direct:alice,bob,carol"


class Read:
    """Everything an export yields in order, each conversation with the messages it yielded."""

    def __init__(self, export: MattermostExport) -> None:
        self.problems: list[ImportProblem] = []
        self.users = list(export.users(self.problems.append))
        self.conversations: list[tuple[ImportedConversation, list[ImportedMessage]]] = [
            (conversation, list(conversation.messages)) for conversation in export.conversations(self.problems.append)
        ]

    def messages(self, external_id: str) -> list[ImportedMessage]:
        """Every message of a conversation, over all the runs it was yielded in."""
        return [m for c, messages in self.conversations if c.external_id == external_id for m in messages]

    def message(self, external_id: str, text: str) -> ImportedMessage:
        return next(m for m in self.messages(external_id) if m.text == text)

    def snapshot(self) -> list[Any]:
        return [self.users, self.problems] + [
            (c.external_id, c.space_type, c.display_name, c.members, c.create_time, c.position, messages)
            for c, messages in self.conversations
        ]


def read(path: Path) -> Read:
    with MattermostExport(path) as export:
        return Read(export)


def write_lines(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


VERSION = {"type": "version", "version": 1}


@pytest.fixture(scope="module")
def sample() -> Read:
    return read(SAMPLE)


# ---------------------------------------------------------------------------------------------- users


def test_users_are_named_by_full_name_nickname_or_username(sample: Read) -> None:
    assert sample.users == [
        ImportedUser("alice", "Alice Archer", "alice@example.com", "HUMAN", "alice"),
        ImportedUser("bob", "Bobby", "bob@example.com", "HUMAN", "bob"),
        ImportedUser("carol", "carol", "carol@example.com", "HUMAN", "carol"),
    ]
    assert sample.problems == []


def test_bots_are_app_users(tmp_path: Path) -> None:
    export = write_lines(tmp_path / "bots.jsonl", VERSION,
                         {"type": "bot", "bot": {"username": "jira", "display_name": "Jira", "owner": "alice"}})
    assert read(export).users == [ImportedUser("jira", "Jira", None, "APP", "jira")]


# ---------------------------------------------------------------------------------------------- conversations


def test_channels_and_direct_channels_with_their_members(sample: Read) -> None:
    assert [(c.external_id, c.space_type, c.display_name, c.members, c.position, len(messages))
            for c, messages in sample.conversations] == [
        (TOWN_SQUARE, "SPACE", "Town Square", ("alice", "bob", "carol"), "export.jsonl:4", 4),
        (LEADS, "SPACE", "Leads", ("alice", "carol"), "export.jsonl:5", 2),
        # Town square's posts resume after leads': a second run of the same conversation.
        (TOWN_SQUARE, "SPACE", "Town Square", ("alice", "bob", "carol"), "export.jsonl:4", 1),
        (DM, "DIRECT_MESSAGE", None, ("alice", "bob"), "export.jsonl:14", 3),
        (GROUP, "GROUP_CHAT", None, ("alice", "bob", "carol"), "export.jsonl:15", 2),
    ]
    assert MattermostExport(SAMPLE).conversation_count() is None  # known only at the end of the file


def test_channels_without_posts_are_yielded_last_with_their_members(tmp_path: Path) -> None:
    export = write_lines(
        tmp_path / "quiet.jsonl", VERSION,
        {"type": "channel", "channel": {"team": "acme", "name": "quiet", "display_name": "Quiet", "type": "O"}},
        {"type": "user", "user": {"username": "alice", "teams": [{"name": "acme", "channels": [{"name": "quiet"}]}]}},
        {"type": "direct_channel", "direct_channel": {"participants": [{"username": "bob"}, {"username": "alice"}]}},
        {"type": "direct_channel", "direct_channel": {"members": ["alice"]}},
    )
    result = read(export)
    assert [(c.external_id, c.space_type, c.display_name, c.members, messages)
            for c, messages in result.conversations] == [
        ("acme/quiet", "SPACE", "Quiet", ("alice",), []),
        (DM, "DIRECT_MESSAGE", None, ("alice", "bob"), []),
        ("direct:alice", "DIRECT_MESSAGE", None, ("alice",), []),  # a note to self
    ]
    assert result.problems == []


# ---------------------------------------------------------------------------------------------- messages


def test_posts_then_their_replies_with_exact_times(sample: Read) -> None:
    town_square = sample.messages(TOWN_SQUARE)
    assert [(m.sender, m.create_time, m.position) for m in town_square] == [
        ("carol", 1709542700000_000, "export.jsonl:9"),
        ("alice", 1709542800000_000, "export.jsonl:10"),
        ("bob", 1709542860000_000, "export.jsonl:10.replies[0]"),
        ("carol", 1709542920000_000, "export.jsonl:10.replies[1]"),
        ("carol", 1709550000000_000, "export.jsonl:13"),
    ]
    assert all(m.text_format == "markdown" and m.delete_time is None for m in town_square)
    assert town_square[1].text == "Welcome to **Town Square**! Say hi to @bob and @carol, and see ~leads."
    edited = sample.message(LEADS, "Budget review on *Friday*, numbers attached")
    assert edited.last_update_time == 1709546460000_000


def test_replies_thread_under_their_post(sample: Read) -> None:
    root, first, second = sample.messages(TOWN_SQUARE)[1:4]
    assert (root.thread_external_id, root.threaded_reply) == (root.external_id, False)
    assert [(m.thread_external_id, m.threaded_reply) for m in (first, second)] == [(root.external_id, True)] * 2
    lunch = sample.message(TOWN_SQUARE, "Lunch at noon?")
    assert (lunch.thread_external_id, lunch.threaded_reply) == (None, False)
    call, answer = sample.messages(DM)[1:]
    assert (answer.thread_external_id, answer.threaded_reply) == (call.external_id, True)


def test_system_posts_are_flagged(sample: Read) -> None:
    flagged = [m.text for _, messages in sample.conversations for m in messages if m.system]
    assert flagged == ["carol joined the channel."]


def test_reactions_are_grouped_by_emoji_in_unicode_custom_ones_by_name(sample: Read) -> None:
    welcome, hello = sample.messages(TOWN_SQUARE)[1:3]
    assert welcome.reactions == (
        ImportedReaction("\U0001f44d", 2, ("bob", "carol")),
        # The export defines its own "parrot": it wins over the Unicode parrot of the same name.
        ImportedReaction("parrot", 1, ("carol",)),
        ImportedReaction("\U0001f64c\U0001f3fb", 1, ("bob",)),
    )
    assert hello.reactions == (ImportedReaction("\u2764\ufe0f", 1, ("alice",)),)
    assert sample.messages(DM)[0].reactions == (ImportedReaction("\u2705", 1, ("bob",)),)


def test_attachments_are_named_by_their_file(sample: Read) -> None:
    assert sample.message(LEADS, "Budget review on *Friday*, numbers attached").attachments == (
        ImportedAttachment("budget.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                           external_id="data/uploads/budget.xlsx"),
        ImportedAttachment("chart.png", "image/png", external_id="data/uploads/chart.png"),
    )
    assert sample.message(GROUP, "Team dinner tonight? Menu attached").attachments == (
        ImportedAttachment("menu.pdf", "application/pdf", external_id="data/uploads/menu.pdf"),
    )


def test_external_ids_are_stable_and_tell_same_millisecond_posts_apart(sample: Read) -> None:
    assert read(SAMPLE).snapshot() == sample.snapshot()
    budget, slides = sample.messages(LEADS)
    assert budget.create_time == slides.create_time and budget.sender == slides.sender
    assert budget.external_id != slides.external_id
    assert budget.external_id == post_id(1709546400000, "alice", budget.text)
    assert budget.external_id.startswith("1709546400000-alice-")
    ids = [m.external_id for _, messages in sample.conversations for m in messages]
    assert len(ids) == len(set(ids))


# ---------------------------------------------------------------------------------------------- zip, streaming


def test_a_zip_holding_the_export_reads_like_the_file(tmp_path: Path, sample: Read) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as writer:
        writer.write(SAMPLE, "export.jsonl")
        writer.writestr("data/uploads/agenda.pdf", b"%PDF-1.4")
    assert read(archive).snapshot() == sample.snapshot()


@pytest.mark.parametrize("members", [[], ["a.jsonl", "b.jsonl"]])
def test_a_zip_must_hold_exactly_one_jsonl_file(tmp_path: Path, members: list[str]) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as writer:
        writer.writestr("README.txt", "no export here")
        for name in members:
            writer.write(SAMPLE, name)
    with pytest.raises(InvalidArgument):
        MattermostExport(archive)


def test_lines_are_read_as_conversations_are_drawn(tmp_path: Path) -> None:
    """The reader streams: nothing past the current run is read (its problems are not reported yet), and
    a run the consumer leaves unread is skipped, not mistaken for the next conversation."""
    export = MattermostExport(BROKEN)
    problems: list[ImportProblem] = []
    conversations = export.conversations(problems.append)
    first = next(conversations)
    assert [p.position for p in problems] == []  # the header is fine; posts not read yet
    assert next(first.messages).text == "the line after this one is cut off"
    assert [p.position for p in problems] == []
    second = next(conversations)
    assert second.external_id == TOWN_SQUARE
    # Lines 9 and 10, the rest of the first run, were skipped unread: their problems go unreported.
    assert [p.position for p in problems] == ["broken.jsonl:7", "broken.jsonl:8", "broken.jsonl:11",
                                              "broken.jsonl:12"]
    assert [m.text for m in second.messages] == ["really last"]
    export.close()


# ---------------------------------------------------------------------------------------------- broken exports


def test_malformed_lines_are_reported_with_their_line_and_skipped() -> None:
    result = read(BROKEN)
    assert [u.external_id for u in result.users] == ["alice"]
    assert [(c.external_id, [m.text for m in messages]) for c, messages in result.conversations] == [
        (TOWN_SQUARE, ["the line after this one is cut off", "kept, with a bad reply and a bad reaction",
                       "good reply"]),
        (TOWN_SQUARE, ["really last"]),  # the post without a channel broke the run
    ]
    kept = result.message(TOWN_SQUARE, "kept, with a bad reply and a bad reaction")
    assert kept.reactions == (ImportedReaction("\U0001f440", 1, ("alice",)),)
    assert [(p.position, p.message.split(":")[0]) for p in result.problems] == [
        ("broken.jsonl:5", "a user needs a username"),
        ("broken.jsonl:7", "not valid JSON"),
        ("broken.jsonl:8", "unknown record type 'poll'"),
        ("broken.jsonl:9", "no create_at (its replies are skipped too)"),
        ("broken.jsonl:10.reactions[0]", "a reaction needs an emoji_name"),
        ("broken.jsonl:10.replies[0]", "no create_at"),
        ("broken.jsonl:11", "not a JSON object"),
        ("broken.jsonl:12", "a post needs a team and a channel"),
        ("broken.jsonl:13", "create_at is not an integer"),
    ]


def test_a_file_not_starting_with_its_version_is_reported_and_still_read(tmp_path: Path) -> None:
    export = write_lines(
        tmp_path / "export.jsonl",
        {"type": "post", "post": {"team": "acme", "channel": "dev", "user": "alice", "message": "hi",
                                  "create_at": 1709542800000}},
    )
    result = read(export)
    assert [str(p) for p in result.problems] == ["export.jsonl:1: the first line should be the version record"]
    assert [(c.external_id, c.display_name, [m.text for m in messages])
            for c, messages in result.conversations] == [("acme/dev", "dev", ["hi"])]
