"""What an export says, in one shape for every format: the importers' output and the writer's input.

A format's reader turns its files into these records and nothing else; the writer (``importing.writer``)
maps the source's IDs to Convener's, renders text to Markdown and stores each conversation in one
transaction. Readers stream: a conversation's ``messages`` is an iterator read once, so an export of
any size is read in constant memory.

Times are integer microseconds since the Unix epoch (UTC). IDs are the source's own (``external``);
the writer never shows them to callers without mapping them first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

UserType = Literal["HUMAN", "APP"]
SpaceType = Literal["SPACE", "GROUP_CHAT", "DIRECT_MESSAGE"]
TextFormat = Literal["slack", "chat", "markdown"]
"""The markup of a message's text: Slack mrkdwn, Google Chat's markup, or Markdown (Mattermost)."""


@dataclass(frozen=True)
class ImportedUser:
    external_id: str
    """The source's ID of the user (Slack ``U…``, a Mattermost username, a Google Chat user ID or email)."""
    display_name: str
    email: str | None = None
    user_type: UserType = "HUMAN"
    preferred_id: str | None = None
    """A readable Convener user ID to use if it is free (e.g. an email's local part); the external ID otherwise."""


@dataclass(frozen=True)
class ImportedAttachment:
    filename: str
    mime_type: str = "application/octet-stream"
    source: Literal["DRIVE_FILE", "UPLOADED_CONTENT"] = "UPLOADED_CONTENT"
    drive_file_id: str | None = None
    external_id: str | None = None
    """Unique within its message; the position in the message when absent."""


@dataclass(frozen=True)
class ImportedReaction:
    emoji: str
    """The Unicode emoji, or a custom emoji's name (Slack's ``:name:`` without colons when it has no Unicode form)."""
    count: int
    reactors: tuple[str, ...] = ()
    """External user IDs (or emails) of who reacted, where the export says."""


@dataclass(frozen=True)
class ImportedQuote:
    """A message this one quotes (REPLY) or forwards (FORWARD), as it was when quoted."""

    quote_type: Literal["REPLY", "FORWARD"]
    message_external_id: str | None = None
    """The quoted message's external ID; in ``conversation_external_id`` when set, else in this conversation."""
    conversation_external_id: str | None = None
    conversation_display_name: str | None = None
    text: str = ""
    sender_display_name: str | None = None
    last_update_time: int | None = None
    attachments: tuple[ImportedAttachment, ...] = ()


@dataclass(frozen=True)
class ImportedMessage:
    external_id: str
    """Unique within its conversation (Slack ``ts``, a Mattermost post's ID, a Google Chat message ID)."""
    create_time: int
    text: str
    text_format: TextFormat
    sender: str | None = None
    """External user ID (or email) of the sender; None for messages of the system."""
    sender_profile: ImportedUser | None = None
    """Who the sender is when ``users()`` does not say: a bot posting under its own name and icon."""
    thread_external_id: str | None = None
    """The external ID of the thread's root message (Slack ``thread_ts``), or of the thread itself."""
    threaded_reply: bool = False
    last_update_time: int | None = None
    delete_time: int | None = None
    system: bool = False
    """Joins, leaves, topic changes and the like: stored, never listed."""
    private_viewer: str | None = None
    """External user ID of the only user who may see this message (a private message): never listed."""
    attachments: tuple[ImportedAttachment, ...] = ()
    reactions: tuple[ImportedReaction, ...] = ()
    quote: ImportedQuote | None = None
    position: str = ""
    """Where the record is, for problem reports: "file.json[12]" or "export.jsonl:345"."""


@dataclass
class ImportedConversation:
    external_id: str
    space_type: SpaceType
    display_name: str | None
    members: tuple[str, ...]
    """External user IDs (or emails) of the members."""
    messages: Iterator[ImportedMessage] = field(default_factory=lambda: iter(()))
    create_time: int | None = None
    position: str = ""


@dataclass(frozen=True)
class ImportProblem:
    """A record that could not be read: reported with its place, and skipped."""

    position: str
    """File and place in it, e.g. ``general/2017-11-30.json[3]`` or ``export.jsonl:17``."""
    message: str

    def __str__(self) -> str:
        return f"{self.position}: {self.message}"


class MalformedConversation(Exception):
    """Raised from a conversation's ``messages`` when the rest of it cannot be read (e.g. a truncated
    file): the writer rolls the whole conversation back and reports the problem."""

    def __init__(self, problem: ImportProblem) -> None:
        super().__init__(str(problem))
        self.problem = problem

    def __reduce__(self) -> tuple[type[MalformedConversation], tuple[ImportProblem]]:
        # pickled whole (an import's second process sends it back), not rebuilt from its message
        return MalformedConversation, (self.problem,)


Report = Callable[[ImportProblem], None]


class ChatExport(Protocol):
    """One export, read lazily. ``users`` is read first and in full, then ``conversations``."""

    source: str
    """The format's name (``slack``, ``google-chat``, ``mattermost``): external IDs are unique within it."""
    @property
    def path(self) -> Path | None:
        """What was opened: ``type(export)(export.path)`` opens the same export again; None for records
        that no file holds."""
        ...

    def users(self, report: Report) -> Iterator[ImportedUser]: ...

    def conversations(self, report: Report) -> Iterator[ImportedConversation]: ...

    def conversation_count(self) -> int | None:
        """How many conversations ``conversations`` will yield, for a progress bar; None if unknown."""
        ...

    def close(self) -> None:
        """Let go of the files the export holds open."""
        ...
