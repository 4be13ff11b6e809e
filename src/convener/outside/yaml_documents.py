"""The one YAML reader for everything a caller gives as YAML, or names a file of.

PyYAML's safe loader builds no objects of arbitrary classes, but it is not safe against size: an alias makes the
node graph a DAG, so a few hundred bytes of anchors and aliases (a "billion laughs") become a billion nodes for
whatever walks the result (validation, storage, JSON). Here the parser's events are read first, and the document
is refused (INVALID_ARGUMENT, naming the limit and the line) as soon as it goes over a limit of
``convener.outside.limits``: its bytes, its nesting, its nodes, its alias references and the nodes those
references add once expanded. Only then are the very same events composed and constructed, so what was counted
is exactly what is built. An alias to an anchor that is not complete yet (a recursive structure, which no JSON
can hold and which would make every later walk endless) is refused too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    NodeEvent,
    ScalarEvent,
)
from yaml.resolver import Resolver

from convener.api.errors import InvalidArgument
from convener.outside.limits import LIMITS, YAML_ALIAS_NODES, YAML_ALIASES, YAML_BYTES, YAML_DEPTH, YAML_NODES

_EVENT_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it: several times faster on big documents."""


def read_yaml(source: str | bytes, field: str, *, size_limit: str = "yaml.bytes") -> Any:
    """The one YAML document in ``source`` as plain Python values (dicts, lists, scalars), or INVALID_ARGUMENT
    naming ``field``. ``size_limit`` names the limit of ``source``'s bytes where a field has its own, which
    may only be tighter than ``yaml.bytes``."""
    text = _text(source, field, size_limit)
    events = _counted_events(text, field)
    loader = _EventReplay(events)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{field} is not valid YAML: {yaml_problem(error)}") from None
    except (ValueError, OverflowError):  # a scalar no Python value holds: a 5,000-digit integer, 2024-13-45
        raise InvalidArgument(f"{field} is not valid YAML: a value cannot be read") from None


def yaml_problem(error: yaml.YAMLError) -> str:
    """What went wrong and where, without PyYAML's quote of the offending line.

    A document may come from anywhere the server can read, so its text is never echoed to the caller.
    """
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(error.problem.split())
        return (problem if len(problem) <= 120 else problem[:119] + "…") + where
    return type(error).__name__


def _text(source: str | bytes, field: str, size_limit: str) -> str:
    max_bytes = min(int(LIMITS[size_limit].value), YAML_BYTES)
    size = len(source) if isinstance(source, bytes) else _utf8_size(source, max_bytes)
    if size > max_bytes:
        raise InvalidArgument(f"{field} is larger than {max_bytes} bytes ({size_limit})")
    if isinstance(source, str):
        return source
    try:
        return source.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{field}: the document is not UTF-8 text") from None


def _utf8_size(text: str, bound: int) -> int:
    """The UTF-8 size of ``text``, without encoding a text that is too long whatever its characters are."""
    if len(text) > bound:
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass
class _Open:
    """A sequence or mapping whose end event has not come yet."""

    anchor: str | None
    nodes: int = 1
    """Nodes in it so far, aliases expanded."""


@dataclass
class _Tally:
    where: str
    nodes: int = 0
    aliases: int = 0
    alias_nodes: int = 0
    open: list[_Open] = field(default_factory=list)
    complete: dict[str, int] = field(default_factory=dict)
    """Expanded node count of each anchor whose node is complete."""

    def take(self, event: Event) -> None:
        if isinstance(event, AliasEvent):
            self._alias(event)
        elif isinstance(event, ScalarEvent):
            self._node(event)
            self._finished(event.anchor, 1)
        elif isinstance(event, CollectionStartEvent):
            self._node(event)
            self._check(len(self.open) + 1, YAML_DEPTH, "yaml.depth", event)
            if event.anchor is not None:
                self.complete.pop(event.anchor, None)  # a redefined anchor means the new node from here on
            self.open.append(_Open(event.anchor))
        elif isinstance(event, CollectionEndEvent) and self.open:
            closed = self.open.pop()
            self._finished(closed.anchor, closed.nodes)

    def _node(self, event: NodeEvent) -> None:
        self.nodes += 1
        self._check(self.nodes, YAML_NODES, "yaml.nodes", event)

    def _alias(self, event: AliasEvent) -> None:
        self.aliases += 1
        self._check(self.aliases, YAML_ALIASES, "yaml.aliases", event)
        size = self.complete.get(event.anchor or "")
        if size is None:
            raise InvalidArgument(
                f"{self.where}: the alias at line {_line(event)} refers to no complete anchor "
                "(an undefined or recursive alias)"
            )
        self.alias_nodes += size
        self._check(self.alias_nodes, YAML_ALIAS_NODES, "yaml.alias_nodes", event)
        if self.open:
            self.open[-1].nodes += size

    def _finished(self, anchor: str | None, nodes: int) -> None:
        if anchor is not None:
            self.complete[anchor] = nodes
        if self.open:
            self.open[-1].nodes += nodes

    def _check(self, count: int, maximum: int, name: str, event: Event) -> None:
        if count > maximum:
            declared = LIMITS[name]
            raise InvalidArgument(
                f"{self.where} goes over a limit at line {_line(event)}: {declared.what}: "
                f"at most {maximum} {declared.unit} ({name})"
            )


def _line(event: Event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0


def _counted_events(text: str, field: str) -> list[Event]:
    tally = _Tally(field)
    events: list[Event] = []
    try:
        for event in _parsed(text):
            tally.take(event)
            events.append(event)
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{field} is not valid YAML: {yaml_problem(error)}") from None
    return events


def _parsed(text: str) -> Iterator[Event]:
    parser = _EVENT_LOADER(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


class _EventReplay(Composer, SafeConstructor, Resolver):
    """PyYAML's safe composer and constructor, fed the events already read and counted."""

    def __init__(self, events: list[Event]) -> None:
        self._events = deque(events)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    def check_event(self, *choices: type[Event]) -> bool:
        if not self._events:
            return False
        return not choices or isinstance(self._events[0], choices)

    def peek_event(self) -> Event | None:
        return self._events[0] if self._events else None

    def get_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def dispose(self) -> None:
        self._events.clear()
