"""Toolsets: the groups of tools a client chooses from, so its model's context holds only what it uses.

Every tool belongs to one toolset, named where the service registers it. The operator chooses the groups
``/mcp`` and stdio serve (``--toolsets``, ``CONVENER_TOOLSETS``) and may serve read-only tools alone
(``--read-only``); a client narrows or widens the groups of its own connection with the query parameters
``?toolsets=…`` and ``?read_only=true``. Read-only is a ceiling: a client cannot lift the operator's. Toolsets
are about a client's context, not about access: what a caller may do is its key's scopes, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TOOLSETS: dict[str, str] = {
    "conversations": "recorded conversations, and run_session, which talks to an app's agents and records it",
    "agents": "authoring apps: agents, tools, toolsets, guardrails, versions, export and import",
    "evaluations": "golden and scenario evaluations, datasets, expectations, personas, runs and results; the "
                   "changelogs of apps",
    "operations": "long-running operations: get, list, wait (with progress), cancel, delete",
    "chat": "the team's chat history: messages, search, conversations, memberships, send_message",
    "knowledge": "documentation: search_documents, get_documents, answer_query, data sources",
    "analytics": "data agents: ask_data_insights, ask_data_agent, their conversations, SQL sources",
    "admin": "administration: ingesting and deleting documents, data agents and SQL sources",
}
"""Every toolset, with what it holds (for ``--help``, errors and the docs)."""

DEFAULT_TOOLSETS: tuple[str, ...] = ("conversations", "evaluations", "operations", "chat", "knowledge", "analytics")
"""What ``/mcp`` serves when nobody chose: everyday work. Authoring apps and administration are one word away."""

ALL = "all"
DEFAULT = "default"


class ToolsetError(ValueError):
    """A toolset selection that names no toolset, or an unknown one (the message says which exist)."""


def parse_toolsets(words: Iterable[str]) -> frozenset[str]:
    """The toolsets named by ``words`` (``all`` and ``default`` stand for their groups)."""
    chosen: set[str] = set()
    for word in (word.strip().lower() for word in words):
        if not word:
            continue
        if word == ALL:
            chosen.update(TOOLSETS)
        elif word == DEFAULT:
            chosen.update(DEFAULT_TOOLSETS)
        elif word in TOOLSETS:
            chosen.add(word)
        else:
            raise ToolsetError(f"unknown toolset {word[:40]!r}; toolsets are {', '.join(TOOLSETS)}, "
                               f"{ALL} and {DEFAULT}")
    if not chosen:
        raise ToolsetError(f"name at least one toolset ({', '.join(TOOLSETS)}, {ALL} or {DEFAULT})")
    return frozenset(chosen)


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Selection:
    """Which tools one connection is served: its toolsets, and whether only read-only tools."""

    toolsets: frozenset[str]
    read_only: bool = False

    @classmethod
    def of(cls, toolsets: Iterable[str], read_only: bool = False) -> Selection:
        return cls(parse_toolsets(toolsets), read_only)

    def admits(self, toolset: str, read_only_tool: bool) -> bool:
        return toolset in self.toolsets and (read_only_tool or not self.read_only)

    def narrowed_by(self, query: Mapping[str, str]) -> Selection:
        """This selection as a connection's query parameters change it: ``toolsets`` replaces the groups,
        ``read_only=true`` keeps read-only tools alone (``false`` cannot lift the operator's read-only)."""
        toolsets = self.toolsets
        if "toolsets" in query:
            toolsets = parse_toolsets(query["toolsets"].split(","))
        read_only = self.read_only
        if "read_only" in query:
            value = query["read_only"].strip().lower()
            if value not in _TRUE | _FALSE:
                raise ToolsetError(f"read_only must be true or false, not {value[:20]!r}")
            read_only = read_only or value in _TRUE
        return Selection(toolsets, read_only)


EVERYTHING = Selection(frozenset(TOOLSETS))
