"""Chat imports: one reader per export format, one writer for all of them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from convener.api.errors import InvalidArgument
from convener.chat.importing.mattermost import MattermostExport
from convener.chat.importing.slack import SlackExport
from convener.chat.importing.takeout import TakeoutExport
from convener.chat.importing.writer import ChatImporter, ImportProgress, ImportSummary
from convener.chat.records import ChatExport

FORMATS: dict[str, Callable[[Path], ChatExport]] = {
    "slack": SlackExport,
    "google-chat": TakeoutExport,
    "mattermost": MattermostExport,
}
"""``convener import chat FORMAT PATH``: Slack workspace exports (folder or zip), Google Takeout's Google
Chat (folder or zip), Mattermost bulk exports (JSONL, or a zip holding one)."""


def open_export(format_name: str, path: Path) -> ChatExport:
    reader = FORMATS.get(format_name)
    if reader is None:
        raise InvalidArgument(f"unknown chat export format {format_name[:40]!r}; one of {', '.join(FORMATS)}")
    return reader(path)


__all__ = ["FORMATS", "ChatImporter", "ImportProgress", "ImportSummary", "open_export"]
