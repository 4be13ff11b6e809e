"""A chat workspace whose every message is known by construction, imported through the real writer.

People: ana, ben and cy (humans with emails) and deploybot (an app). Conversations:
- ``general`` (SPACE; everyone): ``GENERAL`` messages a minute apart, every fifth the root of a thread
  with two replies, plus a system message, a deleted one and one private to ana (none of them listed);
- ``secret`` (SPACE; ben and cy only), whose words must never reach ana;
- ``dm-ana-ben`` (DIRECT_MESSAGE) and ``group-abc`` (GROUP_CHAT, ana, ben and cy).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mcp import Client

from convener.auth.caller import Caller
from convener.chat.importing.writer import ChatImporter
from convener.chat.records import (
    ImportedAttachment,
    ImportedConversation,
    ImportedMessage,
    ImportedQuote,
    ImportedReaction,
    ImportedUser,
    Report,
)
from convener.config import Settings
from convener.server import mcp_servers
from convener.services import Services
from tests.conftest import BACKENDS, private_database

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GENERAL_ROOTS = 40
"""Top-level messages in general; every fifth has two replies."""


def micros(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def at(minute: int, second: int = 0) -> datetime:
    return START + timedelta(minutes=minute, seconds=second)


@dataclass
class RecordsExport:
    """An export given as records: the writer's input without a file format in between."""

    people: list[ImportedUser]
    talks: list[ImportedConversation]
    source: str = "records"
    path: Path | None = None

    def users(self, report: Report) -> Iterator[ImportedUser]:
        return iter(self.people)

    def conversations(self, report: Report) -> Iterator[ImportedConversation]:
        return iter(self.talks)

    def conversation_count(self) -> int | None:
        return len(self.talks)

    def close(self) -> None:
        pass


PEOPLE = [
    ImportedUser("U-ANA", "Ana Lima", "ana@example.com", preferred_id="ana"),
    ImportedUser("U-BEN", "Ben Okafor", "Ben@Example.com", preferred_id="ben"),
    ImportedUser("U-CY", "Cy Park", "cy@example.com", preferred_id="cy"),
    ImportedUser("B-DEPLOY", "deploybot", None, "APP", preferred_id="deploybot"),
]


def general_messages() -> list[ImportedMessage]:
    found: list[ImportedMessage] = []
    for index in range(GENERAL_ROOTS):
        sender = ["U-ANA", "U-BEN", "U-CY", "B-DEPLOY"][index % 4]
        threaded = index % 5 == 0
        root_id = f"g{index:03d}"
        text = f"status update {index} *bold {index}*"
        if index == 7:
            text = "see <https://example.com/runbook|the runbook> and ping <@U-CY>"
        found.append(ImportedMessage(
            external_id=root_id, create_time=micros(at(index * 2)), text=text, text_format="slack", sender=sender,
            thread_external_id=root_id if threaded else None,
            reactions=(ImportedReaction("👍", 2, ("U-ANA", "U-BEN")), ImportedReaction("tada", 1)) if index == 3 else (),
            attachments=(ImportedAttachment("plan.pdf", "application/pdf", external_id="F1"),
                         ImportedAttachment("Roadmap", "application/vnd.google-apps.document", "DRIVE_FILE",
                                            drive_file_id="1AbC")) if index == 4 else (),
            quote=ImportedQuote("REPLY", "g001", text="status update 1", sender_display_name="Ben Okafor",
                                last_update_time=micros(at(2))) if index == 9 else None,
        ))
        if threaded:
            for reply in range(2):
                found.append(ImportedMessage(
                    external_id=f"{root_id}-r{reply}", create_time=micros(at(index * 2 + 1, 10 + reply)),
                    text=f"reply {reply} to {index}", text_format="slack", sender=["U-BEN", "U-CY"][reply],
                    thread_external_id=root_id, threaded_reply=True,
                ))
    found.append(ImportedMessage("sys", micros(at(90)), "<@U-CY> has joined the channel", "slack", "U-CY",
                                 system=True))
    found.append(ImportedMessage("gone", micros(at(91)), "deleted words", "slack", "U-ANA",
                                 delete_time=micros(at(92))))
    found.append(ImportedMessage("whisper", micros(at(93)), "only ana sees this", "slack", "B-DEPLOY",
                                 private_viewer="U-ANA"))
    return sorted(found, key=lambda message: message.create_time)


LISTED_GENERAL = GENERAL_ROOTS + 2 * len(range(0, GENERAL_ROOTS, 5))


def workspace() -> RecordsExport:
    return RecordsExport(PEOPLE, [
        ImportedConversation("C-GENERAL", "SPACE", "general", ("U-ANA", "U-BEN", "U-CY", "B-DEPLOY"),
                             iter(general_messages()), micros(START)),
        ImportedConversation("C-SECRET", "SPACE", "secret", ("U-BEN", "U-CY"), iter([
            ImportedMessage(f"s{index}", micros(at(index)), f"launch codes {index} are 0000", "slack", "U-BEN")
            for index in range(5)
        ]), micros(START)),
        ImportedConversation("D-ANA-BEN", "DIRECT_MESSAGE", None, ("U-ANA", "U-BEN"), iter([
            ImportedMessage("d1", micros(at(3)), "lunch at noon?", "slack", "U-BEN"),
            ImportedMessage("d2", micros(at(4)), "yes, status update after", "slack", "U-ANA"),
        ])),
        ImportedConversation("G-ABC", "GROUP_CHAT", None, ("U-ANA", "U-BEN", "U-CY"), iter([
            ImportedMessage("m1", micros(at(5)), "group hello", "slack", "U-CY"),
        ])),
    ])


def space_of(services: Services, external: str) -> str:
    from sqlalchemy import select

    from convener.chat.tables import links

    with services.database.reading() as connection:
        return f"spaces/{connection.scalar(select(links.c.internal_id).where(links.c.external_id == external))}"


@dataclass(frozen=True)
class Workspace:
    services: Services
    general: str
    secret: str
    dm: str
    group: str


@pytest.fixture(scope="module", params=BACKENDS)
def chat_workspace(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """The workspace imported once per backend for a module's read-only tests."""
    directory: Path = tmp_path_factory.mktemp("chat")
    with private_database(request.param, directory) as url:
        services = Services.open(Settings(data_dir=directory / "data", database_url=url, allow_anonymous=False))
        try:
            ChatImporter(services.database).run(workspace())
            yield Workspace(services, space_of(services, "C-GENERAL"), space_of(services, "C-SECRET"),
                            space_of(services, "D-ANA-BEN"), space_of(services, "G-ABC"))
        finally:
            services.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _client(services: Services, principal: str) -> AsyncIterator[Client]:
    async with Client(mcp_servers(services, default_caller=Caller(principal))["/mcp"]) as client:
        yield client


@pytest.fixture
async def ana(chat_workspace: Workspace) -> AsyncIterator[Client]:
    async for client in _client(chat_workspace.services, "users/ana"):
        yield client


@pytest.fixture
async def ben(chat_workspace: Workspace) -> AsyncIterator[Client]:
    async for client in _client(chat_workspace.services, "users/ben@example.com"):
        yield client
