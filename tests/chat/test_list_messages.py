"""list_messages, seed 002: newest first, Markdown, filtered to what the caller may see, paged to the end."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.chat.conftest import LISTED_GENERAL, Workspace, at
from tests.e2e.conftest import MESSAGES_VALIDATOR, assert_matches, error_text, rfc3339, structured

pytestmark = pytest.mark.anyio


async def page(client: Client, **arguments: Any) -> dict[str, Any]:
    body = structured(await client.call_tool("list_messages", arguments))
    assert_matches(MESSAGES_VALIDATOR, body)
    return body


async def every_page(client: Client, page_size: int | None = None, **arguments: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    token = None
    for _ in range(100):
        extra = {"pageSize": page_size} if page_size is not None else {}
        body = await page(client, **arguments, **extra, **({"pageToken": token} if token else {}))
        found.extend(body.get("messages", []))
        token = body.get("nextPageToken")
        if not token:
            return found
    raise AssertionError("list_messages kept returning pages")


async def test_the_first_page_holds_the_twenty_newest_messages(ana: Client, chat_workspace: Workspace) -> None:
    body = await page(ana, conversationId=chat_workspace.general)

    messages = body["messages"]
    assert len(messages) == 20
    times = [message["createTime"] for message in messages]
    assert times == sorted(times, reverse=True)
    assert body["nextPageToken"]


async def test_paging_to_the_end_returns_every_listed_message_once(ana: Client, chat_workspace: Workspace) -> None:
    found = await every_page(ana, 7, conversationId=chat_workspace.general)

    assert len(found) == LISTED_GENERAL
    assert len({message["messageId"] for message in found}) == LISTED_GENERAL
    bodies = " ".join(message["plaintextBody"] for message in found)
    for hidden in ("has joined", "deleted words", "only ana sees this"):
        assert hidden not in bodies


async def test_a_page_size_above_fifty_becomes_fifty(ana: Client, chat_workspace: Workspace) -> None:
    body = await page(ana, conversationId=chat_workspace.general, pageSize=10_000)

    assert len(body["messages"]) == 50


async def test_a_message_is_the_seed_s_shape_with_markdown_sender_and_thread(ana: Client, chat_workspace: Workspace) -> None:
    found = {message["plaintextBody"]: message for message in await every_page(ana, 50, conversationId=chat_workspace.general)}

    root = found["status update 5 **bold 5**"]
    assert root["threadedReply"] is False
    assert root["threadId"].startswith(f"{chat_workspace.general}/threads/")
    assert root["sender"] == {"userId": "users/ben", "displayName": "Ben Okafor", "email": "ben@example.com",
                              "userType": "HUMAN"}
    reply = found["reply 0 to 5"]
    assert reply["threadedReply"] is True and reply["threadId"] == root["threadId"]
    unthreaded = found["status update 6 **bold 6**"]
    assert "threadId" not in unthreaded
    bot = found["status update 3 **bold 3**"]
    assert bot["sender"] == {"userId": "users/deploybot", "displayName": "deploybot", "userType": "APP"}
    assert bot["reactionSummaries"] == [{"emoji": "👍", "count": 2}, {"emoji": "tada", "count": 1}]


async def test_links_mentions_attachments_and_quotes(ana: Client, chat_workspace: Workspace) -> None:
    found = {message["messageId"].rsplit("/", 1)[1]: message
             for message in await every_page(ana, 50, conversationId=chat_workspace.general)}

    assert found["g007"]["plaintextBody"] == "see [the runbook](https://example.com/runbook) and ping @Cy Park"
    assert found["g004"]["attachments"] == [
        {"attachmentId": f"{chat_workspace.general}/messages/g004/attachments/F1", "filename": "plan.pdf",
         "mimeType": "application/pdf", "source": "UPLOADED_CONTENT"},
        {"attachmentId": f"{chat_workspace.general}/messages/g004/attachments/1", "filename": "Roadmap",
         "mimeType": "application/vnd.google-apps.document", "source": "DRIVE_FILE", "driveFileId": "1AbC"},
    ]
    assert found["g009"]["quotedMessageMetadata"] == {
        "messageId": f"{chat_workspace.general}/messages/g001", "lastUpdateTime": rfc3339(at(2)),
        "quoteType": "REPLY", "plaintextBody": "status update 1", "sender": "Ben Okafor",
    }


async def test_a_thread_lists_its_root_and_replies_only(ana: Client, chat_workspace: Workspace) -> None:
    root = next(message for message in await every_page(ana, 50, conversationId=chat_workspace.general)
                if message["plaintextBody"] == "status update 10 **bold 10**")

    thread = await every_page(ana, conversationId=chat_workspace.general, threadId=root["threadId"])

    assert [message["plaintextBody"] for message in thread] == ["reply 1 to 10", "reply 0 to 10",
                                                               "status update 10 **bold 10**"]


async def test_the_time_window_is_strictly_after_start_and_strictly_before_end(ana: Client, chat_workspace: Workspace) -> None:
    # Roots are at minute 2i, so minute 10 is root 5 exactly and minute 20 is root 10 exactly.
    found = await every_page(ana, conversationId=chat_workspace.general,
                             startTime=rfc3339(at(10)), endTime=rfc3339(at(20)))

    bodies = [message["plaintextBody"] for message in found]
    assert "status update 5 **bold 5**" not in bodies and "status update 10 **bold 10**" not in bodies
    assert bodies[0] == "status update 9 **bold 9**"
    assert bodies[-1] == "reply 0 to 5"
    assert len(found) == 4 + 2  # roots 6-9 and the two replies to 5


async def test_timestamps_with_offsets_and_nanoseconds_are_exact(ana: Client, chat_workspace: Workspace) -> None:
    # at(10) in another zone, and one nanosecond after it: root 5 is excluded by the first, not by "end".
    found = await every_page(ana, conversationId=chat_workspace.general,
                             startTime="2026-03-02T11:09:59.999999999+02:00", endTime="2026-03-02T09:10:00.000000001Z")

    assert [message["plaintextBody"] for message in found] == ["status update 5 **bold 5**"]


async def test_a_space_the_caller_is_not_in_answers_as_one_that_does_not_exist(ana: Client, chat_workspace: Workspace) -> None:
    hidden = error_text(await ana.call_tool("list_messages", {"conversationId": chat_workspace.secret}), "NOT_FOUND")
    missing = error_text(await ana.call_tool("list_messages", {"conversationId": "spaces/nope"}), "NOT_FOUND")

    assert hidden.replace(chat_workspace.secret, "X") == missing.replace("spaces/nope", "X")


async def test_a_member_reads_a_space_others_cannot(ben: Client, chat_workspace: Workspace) -> None:
    found = await every_page(ben, conversationId=chat_workspace.secret)

    assert found[0]["plaintextBody"] == "launch codes 4 are 0000"


@pytest.mark.parametrize(("arguments", "code", "needle"), [
    ({}, "INVALID_ARGUMENT", "conversationId"),
    ({"conversationId": "general"}, "INVALID_ARGUMENT", "spaces/{space}"),
    ({"conversationId": "spaces/a/b"}, "INVALID_ARGUMENT", "conversationId"),
    ({"conversationId": "spaces/" + "x" * 2000}, "INVALID_ARGUMENT", "conversationId"),
    ({"conversationId": "spaces/ok", "threadId": "threads/1"}, "INVALID_ARGUMENT", "threadId"),
    ({"conversationId": "spaces/ok", "threadId": "spaces/other/threads/1"}, "INVALID_ARGUMENT", "threadId"),
    ({"conversationId": "spaces/ok", "pageSize": -1}, "INVALID_ARGUMENT", "pageSize"),
    ({"conversationId": "spaces/ok", "pageSize": "many"}, "INVALID_ARGUMENT", "pageSize"),
    ({"conversationId": "spaces/ok", "startTime": "yesterday"}, "INVALID_ARGUMENT", "startTime"),
    ({"conversationId": "spaces/ok", "endTime": "2026-13-01T00:00:00Z"}, "INVALID_ARGUMENT", "endTime"),
    ({"conversationId": "spaces/ok", "pageToken": "forged"}, "INVALID_ARGUMENT", "pageToken"),
    ({"conversationId": "spaces/ok", "extra": 1}, "INVALID_ARGUMENT", "extra"),
    ({"conversationId": "spaces/\u0000"}, "INVALID_ARGUMENT", "NUL"),
])
async def test_hostile_arguments_are_refused_clearly(ana: Client, arguments: dict[str, Any], code: str, needle: str) -> None:
    text = error_text(await ana.call_tool("list_messages", arguments), code)

    assert needle in text


async def test_a_page_token_is_bound_to_the_query_and_the_caller(ana: Client, ben: Client, chat_workspace: Workspace) -> None:
    token = (await page(ana, conversationId=chat_workspace.general, pageSize=5))["nextPageToken"]

    other_query = await ana.call_tool("list_messages", {"conversationId": chat_workspace.general, "pageToken": token,
                                                        "startTime": rfc3339(at(0))})
    other_space = await ana.call_tool("list_messages", {"conversationId": chat_workspace.dm, "pageToken": token})
    other_caller = await ben.call_tool("list_messages", {"conversationId": chat_workspace.general, "pageToken": token})
    tampered = await ana.call_tool("list_messages", {"conversationId": chat_workspace.general,
                                                     "pageToken": token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]})

    for result in (other_query, other_space, other_caller, tampered):
        assert "pageToken" in error_text(result, "INVALID_ARGUMENT")
    # pageSize may change between pages.
    assert (await page(ana, conversationId=chat_workspace.general, pageSize=9, pageToken=token))["messages"]



def test_message_select_has_the_columns_message_reads_by_position() -> None:
    """``_message`` unpacks a row by position: the SELECT must keep the order it expects."""
    from convener.chat.service import _MESSAGE_FIELDS, ChatService

    assert tuple(column.name for column in ChatService._message_select().selected_columns) == _MESSAGE_FIELDS


def test_a_threads_listing_reads_the_thread_index_which_holds_threaded_messages_only(
        chat_workspace: Workspace) -> None:
    """The thread index leaves out messages outside threads (most of an export's), and a thread's listing can
    still use it: its condition on the thread implies the index's."""
    from sqlalchemy import text

    from convener.chat.service import _listing

    database = chat_workspace.services.database
    query = _listing(True, False, False, False).params(space=chat_workspace.general.rsplit("/", 1)[-1],
                                                       thread="t", limit=20)
    compiled = query.compile(database.engine)
    sql, values = str(compiled), compiled.params
    # The driver's own parameters: positional on SQLite, named on PostgreSQL.
    parameters = tuple(values[name] for name in compiled.positiontup or ()) if compiled.positional else values
    with database.engine.connect() as connection:
        if database.dialect == "sqlite":
            definition = connection.execute(text(
                "SELECT sql FROM sqlite_master WHERE name = 'ix_chat_messages_thread'")).scalar_one()
            plan = " ".join(row[-1] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}",
                                                                                   parameters))
        else:
            definition = connection.execute(text(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_chat_messages_thread'")).scalar_one()
            connection.execute(text("SET LOCAL enable_seqscan = off"))  # the test's tables are tiny
            plan = " ".join(row[0] for row in connection.exec_driver_sql(f"EXPLAIN {sql}", parameters))
    assert "thread_id IS NOT NULL" in definition
    assert "ix_chat_messages_thread" in plan
