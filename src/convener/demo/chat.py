"""The demo's chat: the Acme Support team's Slack workspace, its one private message, and keys to try it.

``slack_export/`` (beside this module) is a Slack workspace export as Slack writes one: the team that builds
and runs the demo app (releases, evaluation runs, incidents, escalations from the support floor) over
two weeks in October 2026, in #general, #support-agent, #incidents (a private channel Ana is not in), a
DM between Ana and Ben and a group DM of Ana, Ben and Cy. It is imported by the reader and writer of
``convener import chat slack``, so the demo shows what importing a real export gives.

Slack exports cannot hold private messages (an app's message only one user sees), so the one private
message of the demo, deploybot telling Ana how her evaluation run went, is written through the same
importer from records, into #support-agent. ``list_messages`` never returns it, to Ana or anyone.

Importing is idempotent (the writer upserts by the export's IDs): loading again finds every message
in place and writes no new one. The keys are not: every load revokes the keys of the demo users and
issues new ones, printed once, since only their hashes are stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib import resources

from sqlalchemy import func, select

from convener.api.errors import NotFound
from convener.auth.caller import ALL_SCOPES
from convener.auth.keys import ApiKeys
from convener.chat.importing import ChatImporter, ImportSummary
from convener.chat.importing.slack import SlackExport
from convener.chat.records import ImportedConversation, ImportedMessage, ImportedUser, Report
from convener.chat.tables import links, messages
from convener.services import Services
from convener.store.database import Database

PACKAGE = "convener.demo"
EXPORT = "slack_export"
"""The folder of the Slack export, in the package."""

SUPPORT_AGENT = "C06SUPPORT"
"""Slack's ID of #support-agent, where the private message is."""
ANA, BEN, DEPLOYBOT = "U06ANALIMA", "U06BENOKFR", "U06DEPLOYB"
KEY_HOLDERS = (ANA, BEN)
"""The demo users who get keys (Slack IDs; the keys name the Convener users they were imported as)."""
KEY_SCOPES = (ALL_SCOPES,)
"""Every service: the same key tries chat as the user and the ces tools."""

PRIVATE_MESSAGE = ImportedMessage(
    external_id="1793114712.004200",  # Tue 27 Oct 2026, 11:25:12 ET: Ana ran the suite on v2.4.1-rc1
    create_time=1793114712_004200,
    text="Only visible to you: your evaluation run `r-1027a` of `regression` on `v2.4.1-rc1` finished.\n"
         "• ✅ 4 passed\n"
         "• ❌ 3 failed: `cancelled-order-status`, `gift-card-refund`, `refund-amount-wrong`\n"
         "<https://convener.acme.test/evaluations/runs/r-1027a|Open run r-1027a>",
    text_format="slack",
    sender=DEPLOYBOT,
    private_viewer=ANA,
    position="convener.demo.chat:PRIVATE_MESSAGE",
)


@dataclass
class PrivateMessages:
    """An export of records holding the private message: the conversation is #support-agent as the Slack
    export describes it (so writing it again changes nothing of the space), with only that message."""

    conversation: ImportedConversation
    source: str = SlackExport.source
    """Slack's: external IDs are the Slack export's, so they map to the same users and space."""

    def users(self, report: Report) -> Iterator[ImportedUser]:
        return iter(())  # imported from the Slack export

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        yield replace(self.conversation, messages=iter([PRIVATE_MESSAGE]))

    def conversation_count(self) -> int | None:
        return 1

    def close(self) -> None:
        """Records hold no files."""


def _message_count(database: Database) -> int:
    with database.reading() as connection:
        return int(connection.scalar(select(func.count()).select_from(messages)) or 0)


def _checked(summary: ImportSummary) -> ImportSummary:
    if summary.problem_count or summary.failed_conversations:
        # A packaging mistake, not the caller's: say where.
        raise ValueError(f"the demo chat export convener/demo/{EXPORT} is invalid: {summary.problems[0]}")
    return summary


def import_chat(database: Database) -> tuple[int, int, int]:
    """Import the workspace and the private message: conversations, messages, and how many messages
    were not stored before."""
    before = _message_count(database)
    importer = ChatImporter(database)
    with resources.as_file(resources.files(PACKAGE).joinpath(EXPORT)) as folder, SlackExport(folder) as export:
        workspace = _checked(importer.run(export))
        support = next(c for c in export.conversations(lambda problem: None) if c.external_id == SUPPORT_AGENT)
    private = _checked(importer.run(PrivateMessages(support)))
    return workspace.conversations, workspace.messages + private.messages, _message_count(database) - before


def principals(database: Database) -> list[str]:
    """The Convener principals the key holders were imported as (``users/ana``, ``users/ben`` in a store
    that had no other users of those names)."""
    with database.reading() as connection:
        found = dict(connection.execute(
            select(links.c.external_id, links.c.internal_id)
            .where(links.c.source == SlackExport.source, links.c.kind == "user", links.c.external_id.in_(KEY_HOLDERS))
        ).all())
    return [f"users/{found[external]}" for external in KEY_HOLDERS]


def issue_keys(database: Database, holders: list[str]) -> list[tuple[str, str]]:
    """Revoke every key of ``holders`` (the keys earlier demo loads printed), then issue one each: the
    principals with their secrets."""
    keys = ApiKeys(database)
    for key in keys.list():
        if key.principal in holders:
            try:
                keys.revoke(key.key_id)
            except NotFound:
                pass  # revoked meanwhile
    return [(principal, keys.create(principal, KEY_SCOPES)[1]) for principal in holders]


def install_chat(services: Services) -> str:
    """Import the demo's chat (idempotent) and issue fresh keys for its demo users; a summary line."""
    conversations, written, new = import_chat(services.database)
    issued = issue_keys(services.database, principals(services.database))
    keys = " ".join(f"{principal} {secret}" for principal, secret in issued)
    return f"chat: {conversations} conversations, {written} messages ({new} new); keys: {keys}"
