"""The Google Takeout (Google Chat) reader: records from the sample exports, folder and zip alike."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from convener.chat.importing.takeout import TakeoutDates, TakeoutExport
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

DATA = Path(__file__).parent.parent / "data" / "chat"
SAMPLE = DATA / "takeout"
BROKEN = DATA / "takeout-broken"

SPACE = "AAAAx7Kq3vE"
DM = "z0bQmYAAAAE"
GROUP_DM = "p3RtKgAAAAE"
ADA, BRAM, CHEN, DALIA = "ada.okafor@example.com", "bram@example.com", "chen.wei@example.com", "dalia@example.com"


def micros(year: int, month: int, day: int, hour: int, minute: int, second: int = 0) -> int:
    return (datetime(year, month, day, hour, minute, second, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // (
        timedelta(microseconds=1)
    )


@dataclass
class Read:
    """Everything an export yields, messages materialised; a MalformedConversation ends its conversation."""

    users: list[ImportedUser]
    conversations: dict[str, ImportedConversation]
    messages: dict[str, list[ImportedMessage]]
    problems: list[ImportProblem]
    failures: dict[str, MalformedConversation] = field(default_factory=dict)

    def message(self, conversation: str, index: int) -> ImportedMessage:
        """The message read from ``messages.json[index]``."""
        return next(m for m in self.messages[conversation] if m.position.endswith(f"messages.json[{index}]"))


def read(path: Path) -> Read:
    problems: list[ImportProblem] = []
    with TakeoutExport(path) as export:
        users = list(export.users(problems.append))
        result = Read(users, {}, {}, problems)
        for conversation in export.conversations(problems.append):
            result.conversations[conversation.external_id] = conversation
            messages = result.messages[conversation.external_id] = []
            try:
                messages.extend(conversation.messages)
            except MalformedConversation as error:
                result.failures[conversation.external_id] = error
    return result


def takeout_with_group(root: Path, folder: str, messages: str, group_info: str | None = None) -> Path:
    """A small export in ``root``: one group, and (as in every real Takeout) the exporting user's info."""
    user = root / "Google Chat" / "Users" / "User 104958373626252780102"
    user.mkdir(parents=True)
    (user / "user_info.json").write_text(
        '{"user": {"name": "Ada Okafor", "email": "ada.okafor@example.com", "user_type": "Human"}}', encoding="utf-8"
    )
    group = root / "Google Chat" / "Groups" / folder
    group.mkdir(parents=True)
    (group / "messages.json").write_text(messages, encoding="utf-8")
    if group_info is not None:
        (group / "group_info.json").write_text(group_info, encoding="utf-8")
    return root


def zipped(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                archive.write(file, file.relative_to(folder).as_posix())
    return target


@pytest.fixture(scope="module")
def sample() -> Read:
    return read(SAMPLE)


# --- the export as a whole ----------------------------------------------------------------------------------


def test_a_zip_gives_the_same_records_as_the_folder(sample: Read, tmp_path: Path) -> None:
    from_zip = read(zipped(SAMPLE, tmp_path / "takeout-20220106T101010Z-001.zip"))
    assert from_zip.users == sample.users
    assert from_zip.messages == sample.messages
    assert from_zip.problems == sample.problems == []
    strip = [(c.external_id, c.space_type, c.display_name, c.members, c.position)
             for c in sample.conversations.values()]
    assert strip == [(c.external_id, c.space_type, c.display_name, c.members, c.position)
                     for c in from_zip.conversations.values()]


def test_the_export_counts_its_groups_and_names_its_source() -> None:
    with TakeoutExport(SAMPLE) as export:
        assert export.source == "google-chat"
        assert export.conversation_count() == 3


def test_users_come_from_user_info_members_creators_and_reactors_once_each(sample: Read) -> None:
    by_id = {user.external_id: user for user in sample.users}
    assert len(sample.users) == len(by_id) == 6
    assert by_id[CHEN] == ImportedUser(CHEN, "Chen Wei", CHEN, "HUMAN", "chen.wei")
    assert by_id[ADA] == ImportedUser(ADA, "Ada Okafor", ADA, "HUMAN", "ada.okafor")
    # Only ever seen reacting: named by the email.
    assert by_id["eve@partner.example"] == ImportedUser(
        "eve@partner.example", "eve@partner.example", "eve@partner.example", "HUMAN", "eve"
    )
    # An app has no email: its name is all the export says.
    assert by_id["Deploy Bot"] == ImportedUser("Deploy Bot", "Deploy Bot", None, "APP", None)


def test_spaces_dms_and_group_dms(sample: Read) -> None:
    space, dm, group = sample.conversations[SPACE], sample.conversations[DM], sample.conversations[GROUP_DM]
    assert (space.space_type, space.display_name, space.position) == ("SPACE", "Platform Team", f"Groups/Space {SPACE}")
    assert space.members == (ADA, BRAM, CHEN, DALIA)  # "Chen.Wei@example.com" in group_info.json
    assert (dm.space_type, dm.display_name, dm.members) == ("DIRECT_MESSAGE", None, (ADA, BRAM))
    assert (group.space_type, group.display_name, group.members) == ("GROUP_CHAT", None, (BRAM, CHEN, DALIA))


def test_a_missing_group_info_takes_its_space_name_from_membership_info(tmp_path: Path) -> None:
    left_out = f"Takeout/Google Chat/Groups/Space {SPACE}/group_info.json"
    with zipfile.ZipFile(zipped(SAMPLE, tmp_path / "all.zip")) as source, \
            zipfile.ZipFile(tmp_path / "cut.zip", "w") as target:
        for name in source.namelist():
            if name != left_out:
                target.writestr(name, source.read(name))
    result = read(tmp_path / "cut.zip")
    space = result.conversations[SPACE]
    assert (space.space_type, space.display_name) == ("SPACE", "Platform Team")
    assert space.members == (ADA, BRAM, CHEN, DALIA, "Deploy Bot")  # whoever wrote, in order of appearance
    assert result.problems == []


# --- messages -----------------------------------------------------------------------------------------------


def test_every_message_keeps_its_id_text_sender_and_position(sample: Read) -> None:
    first = sample.message(SPACE, 0)
    assert first.external_id == f"{SPACE}/Tq1aB2cD3eF/Tq1aB2cD3eF"
    assert first.text.startswith("Kickoff: we are moving the build")
    assert (first.text_format, first.sender) == ("chat", ADA)
    assert first.position == f"Groups/Space {SPACE}/messages.json[0]"
    assert sample.message(SPACE, 2).sender == CHEN  # lower-cased like the user's ID
    assert sample.message(SPACE, 8).sender == "Deploy Bot"
    assert [len(sample.messages[c]) for c in (SPACE, DM, GROUP_DM)] == [11, 3, 3]


def test_a_topic_is_a_thread_whose_first_message_is_its_root(sample: Read) -> None:
    threads = [(m.thread_external_id, m.threaded_reply) for m in sample.messages[SPACE]]
    assert threads == [
        ("Tq1aB2cD3eF", False), ("Tq1aB2cD3eF", True), ("Tq1aB2cD3eF", True), ("Tq1aB2cD3eF", True),
        ("Hs5nV0xJ2aQ", False), ("Hs5nV0xJ2aQ", True),
        ("Wc9eL4rT6yU", False),  # a root without replies still has its thread
        ("Kd2fG7hJ9kL", False),
        ("Pb3nM8vC1xZ", False),
        ("Rt6yH2jK4lM", False), ("Rt6yH2jK4lM", True),
    ]
    # Outside threaded spaces every message is a topic of its own.
    assert all(m.thread_external_id and not m.threaded_reply for m in sample.messages[DM])


def test_times_are_exact_in_english_and_german_and_other_zones(sample: Read) -> None:
    assert sample.message(SPACE, 0).create_time == micros(2022, 1, 3, 9, 0, 5)  # "9:00:05\u202fAM UTC"
    assert sample.message(SPACE, 4).create_time == micros(2022, 1, 4, 14, 30)  # "2:30:00\u202fPM UTC"
    assert sample.message(DM, 0).create_time == micros(2022, 1, 4, 18, 2, 11)  # "6:02:11 PM UTC"
    assert sample.message(DM, 2).create_time == micros(2022, 1, 5, 0, 5, 9)  # "12:05:09 AM UTC"
    assert sample.message(GROUP_DM, 1).create_time == micros(2022, 1, 5, 13, 21, 45)  # "um 13:21:45 UTC"
    assert sample.message(GROUP_DM, 2).create_time == micros(2022, 1, 5, 13, 25)  # "um 14:25:00 MEZ"


def test_an_edited_message_has_its_update_time(sample: Read) -> None:
    edited = sample.message(SPACE, 3)
    assert (edited.create_time, edited.last_update_time) == (micros(2022, 1, 3, 9, 15, 30), micros(2022, 1, 3, 9, 17, 2))
    assert sample.message(SPACE, 2).last_update_time is None


def test_reactions_count_their_reactors(sample: Read) -> None:
    assert sample.message(SPACE, 0).reactions == (
        ImportedReaction("👍", 2, (BRAM, CHEN)),  # "CHEN.WEI@example.com" in the export
        ImportedReaction("shipit", 1, ("eve@partner.example",)),  # a custom emoji, by name
    )
    assert sample.message(GROUP_DM, 1).reactions == (ImportedReaction("🎉", 2, (BRAM, CHEN)),)
    assert sample.message(SPACE, 1).reactions == ()


def test_attachments_uploaded_and_on_drive(sample: Read) -> None:
    assert sample.message(SPACE, 2).attachments == (
        ImportedAttachment("runner-plan.png", "image/png", "UPLOADED_CONTENT", None, "File-runner-plan.png"),
    )
    assert sample.message(SPACE, 4).attachments == (
        ImportedAttachment("Runner migration spec", "application/octet-stream", "DRIVE_FILE",
                           "1u3O4ravpOpkepKtqOOvgio-l0-MH_Btb", "drive:1u3O4ravpOpkepKtqOOvgio-l0-MH_Btb"),
    )


def test_quotes_reply_in_the_group_and_forward_from_another(sample: Read) -> None:
    assert sample.message(SPACE, 5).quote == ImportedQuote(
        "REPLY", f"{SPACE}/Hs5nV0xJ2aQ/Hs5nV0xJ2aQ", None, None,
        "Spec for the migration: https://docs.google.com/document/d/1u3O4ravpOpkepKtqOOvgio-l0-MH_Btb/edit",
        "Dalia Haddad",
    )
    assert sample.message(SPACE, 6).quote == ImportedQuote(
        "FORWARD", f"{DM}/Xb7uT1sLqPo/Xb7uT1sLqPo", DM, "Ada Okafor", "Runner credentials rotated", "Ada Okafor"
    )
    # Most exports say only who wrote what: a reply without a link to the quoted message.
    assert sample.message(SPACE, 9).quote == ImportedQuote(
        "REPLY", None, None, None, "Build #1423 passed on the new runners.", "Deploy Bot"
    )


def test_a_deleted_message_keeps_its_place_and_time(sample: Read) -> None:
    deleted = sample.message(SPACE, 7)
    assert deleted.delete_time == deleted.create_time == micros(2022, 1, 5, 15, 12, 40)
    assert (deleted.text, deleted.sender, deleted.thread_external_id) == ("", None, "Kd2fG7hJ9kL")
    assert all(m.delete_time is None for m in sample.messages[SPACE] if m is not deleted)


def test_an_edited_message_without_created_date_takes_its_first_versions(tmp_path: Path) -> None:
    takeout_with_group(tmp_path, "DM aBcDeFAAAAE", """{"messages": [{
        "creator": {"name": "Ada Okafor", "email": "ada.okafor@example.com", "user_type": "Human"},
        "text": "fixed typo", "topic_id": "t1", "message_id": "aBcDeFAAAAE/t1/t1",
        "updated_date": "Monday, January 3, 2022 at 9:30:00 AM UTC",
        "previous_message_versions": [{"text": "fixed tpyo", "created_date": "Monday, January 3, 2022 at 9:29:00 AM UTC"}]
    }, {
        "creator": {"name": "Ada Okafor", "email": "ada.okafor@example.com", "user_type": "Human"},
        "text": "an old export's message", "topic_id": "t2",
        "created_date": "Monday, January 3, 2022 at 9:31:00 AM UTC"
    }]}""")
    result = read(tmp_path)
    edited, unnamed = result.messages["aBcDeFAAAAE"]
    assert (edited.create_time, edited.last_update_time) == (micros(2022, 1, 3, 9, 29), micros(2022, 1, 3, 9, 30))
    assert unnamed.external_id == "t2/1"  # no message_id: its place stands in
    assert result.conversations["aBcDeFAAAAE"].members == (ADA,)  # no group_info.json: the creators


# --- problems -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zip_it", [False, True], ids=["folder", "zip"])
def test_the_broken_export_reports_bad_messages_and_fails_the_truncated_file(zip_it: bool, tmp_path: Path) -> None:
    result = read(zipped(BROKEN, tmp_path / "broken.zip") if zip_it else BROKEN)
    space = "AAAAbr0kEn1"
    assert [m.text for m in result.messages[space]] == ["First", "Last"]
    assert result.problems == [
        ImportProblem(f"Groups/Space {space}/messages.json[1]", "a message must be a JSON object, not str"),
        ImportProblem(f"Groups/Space {space}/messages.json[2]",
                      "created_date 'Someday, Smarch 45, 2022 at 9:99:00 AM UTC' is not a date this reader understands"),
    ]
    # The truncated file: what came before the break is yielded, then the conversation fails.
    assert [m.text for m in result.messages["tRuNcAAAAAE"]] == ["Are you there?"]
    failure = result.failures["tRuNcAAAAAE"].problem
    assert failure.position == "Groups/DM tRuNcAAAAAE/messages.json[1]"
    assert "not valid JSON" in failure.message
    assert result.conversations["tRuNcAAAAAE"].members == (ADA,)  # no group_info.json: the creators read
    assert list(result.failures) == ["tRuNcAAAAAE"]


def test_an_unreadable_group_info_is_reported_and_the_creators_stand_in(tmp_path: Path) -> None:
    takeout_with_group(
        tmp_path, "Space QqQqQqAAAAE", group_info="{not json",
        messages='{"messages": [{"creator": {"name": "B", "email": "b@example.com"},'
                 ' "created_date": "Monday, January 3, 2022 at 9:31:00 AM UTC",'
                 ' "topic_id": "t", "message_id": "QqQqQqAAAAE/t/t",'
                 ' "reactions": [{"emoji": {}, "reactor_emails": ["a@example.com"]}]}]}',
    )
    result = read(tmp_path)
    conversation = result.conversations["QqQqQqAAAAE"]
    assert (conversation.space_type, conversation.display_name, conversation.members) == (
        "SPACE", "Space QqQqQqAAAAE", ("b@example.com",))
    assert [p.position for p in result.problems] == [
        "Groups/Space QqQqQqAAAAE/group_info.json",
        "Groups/Space QqQqQqAAAAE/messages.json[0]",  # the reaction without an emoji; the message stays
    ]
    assert result.messages["QqQqQqAAAAE"][0].reactions == ()


def test_replies_to_a_skipped_root_stay_replies(tmp_path: Path) -> None:
    creator = '"creator": {"name": "Ada Okafor", "email": "ada.okafor@example.com", "user_type": "Human"}'
    takeout_with_group(tmp_path, "Space RrRrRrAAAAE", f"""{{"messages": [
        {{{creator}, "created_date": "not a date", "topic_id": "t", "message_id": "RrRrRrAAAAE/t/t"}},
        {{{creator}, "created_date": "Monday, January 3, 2022 at 9:31:00 AM UTC", "topic_id": "t",
          "message_id": "RrRrRrAAAAE/t/r1", "quoted_message_metadata": {{"text": "?", "message_id": "RrRrRrAAAAE/t/t"}}}}
    ]}}""")
    result = read(tmp_path)
    [reply] = result.messages["RrRrRrAAAAE"]
    assert (reply.thread_external_id, reply.threaded_reply) == ("t", True)
    assert reply.quote == ImportedQuote("REPLY", "RrRrRrAAAAE/t/t", text="?")
    assert [p.position for p in result.problems] == ["Groups/Space RrRrRrAAAAE/messages.json[0]"]


# --- dates --------------------------------------------------------------------------------------------------

JAN_5_10_15_32 = micros(2022, 1, 5, 10, 15, 32)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Wednesday, January 5, 2022 at 10:15:32\u202fAM UTC", JAN_5_10_15_32),
        ("Wednesday, January 5, 2022 at 10:15:32 AM UTC", JAN_5_10_15_32),
        ("Wednesday, January 5, 2022 at 10:15:32\u202fPM UTC", JAN_5_10_15_32 + 12 * 3_600_000_000),
        ("Wednesday, January 5, 2022 at 12:15:32 AM UTC", JAN_5_10_15_32 - 10 * 3_600_000_000),
        ("Wednesday, January 5, 2022 at 12:15:32 PM UTC", JAN_5_10_15_32 + 2 * 3_600_000_000),
        ("Wednesday, 5 January 2022 at 10:15:32 UTC", JAN_5_10_15_32),  # English (UK), 24 hours
        ("Wednesday, January 5, 2022 at 11:15:32 AM GMT+01:00", JAN_5_10_15_32),
        ("Wednesday, January 5, 2022 at 2:15:32 AM PST", JAN_5_10_15_32),
        ("Mittwoch, 5. Januar 2022 um 10:15:32 UTC", JAN_5_10_15_32),
        ("Mittwoch, 5. Januar 2022 um 11:15:32 MEZ", JAN_5_10_15_32),
        ("mercredi 5 janvier 2022 à 10:15:32 UTC", JAN_5_10_15_32),
        ("miércoles, 5 de enero de 2022, 10:15:32 UTC", JAN_5_10_15_32),
        ("2022. január 5., szerda 10:15:32 UTC", JAN_5_10_15_32),
        ("Someday, Smarch 45, 2022 at 9:99:00 AM UTC", None),
        ("Wednesday, February 30, 2022 at 10:15:32 AM UTC", None),
        ("10:15:32", None),  # no day: dateparser would make it today
        ("", None),
    ],
)
def test_dates_in_any_language(text: str, expected: int | None) -> None:
    assert TakeoutDates().micros(text) == expected


def test_a_detected_language_is_remembered() -> None:
    dates = TakeoutDates()
    assert dates.micros("Wednesday, January 5, 2022 at 10:15:32 AM UTC") == JAN_5_10_15_32
    assert not dates.detected_locales  # English needs no detection
    assert dates.micros("Mittwoch, 5. Januar 2022 um 10:15:32 UTC") == JAN_5_10_15_32
    assert dates.micros("Donnerstag, 6. Januar 2022 um 10:15:32 UTC") == JAN_5_10_15_32 + 24 * 3_600_000_000
    assert dates.detected_locales == ("de",)
