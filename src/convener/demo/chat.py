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
in place and writes none. The demo users' keys stay the same from load to load (``demo.keys``), so a
client configured with one keeps working; ``convener demo --reissue-keys`` replaces them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from sqlalchemy import select

from convener.auth.caller import ALL_SCOPES
from convener.chat.importing import ChatImporter, ImportSummary
from convener.chat.importing.slack import SlackExport
from convener.chat.records import ImportedConversation, ImportedMessage, ImportedUser, Report
from convener.chat.tables import links
from convener.demo.keys import demo_keys
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
    path: Path | None = None
    """Records, no file."""

    def users(self, report: Report) -> Iterator[ImportedUser]:
        return iter(())  # imported from the Slack export

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        yield replace(self.conversation, messages=iter([PRIVATE_MESSAGE]))

    def conversation_count(self) -> int | None:
        return 1

    def close(self) -> None:
        """Records hold no files."""


def _checked(summary: ImportSummary) -> ImportSummary:
    if summary.problem_count or summary.failed_conversations:
        # A packaging mistake, not the caller's: say where.
        raise ValueError(f"the demo chat export convener/demo/{EXPORT} is invalid: {summary.problems[0]}")
    return summary


def import_chat(database: Database) -> tuple[int, int, int]:
    """Import the workspace and the private message: conversations, messages, and how many messages
    were not stored before."""
    importer = ChatImporter(database)
    with resources.as_file(resources.files(PACKAGE).joinpath(EXPORT)) as folder, SlackExport(folder) as export:
        workspace = _checked(importer.run(export))
        support = next(c for c in export.conversations(lambda problem: None) if c.external_id == SUPPORT_AGENT)
    private = _checked(importer.run(PrivateMessages(support)))
    return workspace.conversations, workspace.messages + private.messages, workspace.added + private.added


def principals(database: Database) -> list[str]:
    """The Convener principals the key holders were imported as (``users/ana``, ``users/ben`` in a store
    that had no other users of those names)."""
    with database.reading() as connection:
        found = dict(connection.execute(
            select(links.c.external_id, links.c.internal_id)
            .where(links.c.source == SlackExport.source, links.c.kind == "user", links.c.external_id.in_(KEY_HOLDERS))
        ).all())
    return [f"users/{found[external]}" for external in KEY_HOLDERS]


def install_chat(services: Services, reissue_keys: bool = False) -> str:
    """Import the demo's chat (idempotent) and give its demo users keys (the same as last time unless
    ``reissue_keys``); a summary line."""
    conversations, messages, new = import_chat(services.database)
    keys = demo_keys(services.database, principals(services.database), KEY_SCOPES, services.settings.data_dir,
                     reissue=reissue_keys)
    listed = " ".join(f"{key.principal} {key.secret}" for key in keys)
    state = ("new" if all(key.new for key in keys) else
             "the same as last time; convener demo --reissue-keys replaces them" if not any(key.new for key in keys)
             else "new for " + ", ".join(key.principal for key in keys if key.new))
    return f"chat: {conversations} conversations, {messages} messages ({new} new); keys: {listed} ({state})"
