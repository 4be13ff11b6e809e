"""The one YAML reader for everything a caller gives as YAML, or names a file of.

PyYAML's safe loader builds no objects of arbitrary classes, but it is not safe against size: an alias makes the
node graph a DAG, so a few hundred bytes of anchors and aliases (a "billion laughs") become a billion nodes for
whatever walks the result (validation, storage, JSON). Here the parser's events are read first, and the document
is refused (INVALID_ARGUMENT, naming the limit and the line) as soon as it goes over a limit of
``convener.outside.limits``: its bytes, its nesting, its nodes, its alias references and the nodes those
references add once expanded. An alias to an anchor that is not complete yet (a recursive structure, which no
JSON can hold and which would make every later walk endless) is refused too. Only then is the same text loaded by
the same parser, which gives the same events again. The counting pass keeps none of them (keeping half a million
events costs more in garbage collection than reading them), so refusing a document costs one quick read of it.
"""

from __future__ import annotations

from typing import Any, NoReturn

import yaml
from yaml.events import (
    AliasEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from convener.api.errors import InvalidArgument
from convener.outside.limits import LIMITS, YAML_ALIAS_NODES, YAML_ALIASES, YAML_BYTES, YAML_DEPTH, YAML_NODES

_EVENT_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it: several times faster on big documents."""


def read_yaml(source: str | bytes, field: str, *, size_limit: str = "yaml.bytes") -> Any:
    """The one YAML document in ``source`` as plain Python values (dicts, lists, scalars), or INVALID_ARGUMENT
    naming ``field``. ``size_limit`` names the limit of ``source``'s bytes where a field has its own, which
    may only be tighter than ``yaml.bytes``."""
    text = _text(source, field, size_limit)
    _count(text, field)
    loader = _EVENT_LOADER(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{field} is not valid YAML: {yaml_problem(error)}") from None
    except (ValueError, OverflowError):  # a scalar no Python value holds: a 5,000-digit integer, 2024-13-45
        raise InvalidArgument(f"{field} is not valid YAML: a value cannot be read") from None
    finally:
        loader.dispose()


def yaml_problem(error: yaml.YAMLError) -> str:
    """What went wrong and where, without PyYAML's quote of the offending line.

    A document may come from anywhere the server can read, so its text is never echoed to the caller.
    """
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = " ".join(error.problem.split())
        return (problem if len(problem) <= 120 else problem[:119] + "…") + where
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow, such as a control character
        return f"character U+{error.character:04X} at position {error.position} is not allowed in YAML"
    return "the document is malformed"


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


def _count(text: str, where: str) -> None:
    """Reads the document's events, and refuses it at the first one that takes it over a limit.

    One flat loop over locals: it runs once per event, for documents of up to ``yaml.nodes`` nodes. A node's expanded
    size is read off the running total (nodes written plus nodes added by aliases) at its start and its end.
    """
    nodes = aliases = alias_nodes = 0
    opened: list[tuple[str | None, int]] = []
    """Each open sequence or mapping: its anchor, and the running total before it."""
    complete: dict[str, int] = {}
    """Expanded size of each anchored node already complete."""
    parser = _EVENT_LOADER(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            kind = type(event)
            if kind is ScalarEvent:
                nodes += 1
                if nodes > YAML_NODES:
                    _refuse(where, "yaml.nodes", event)
                if event.anchor is not None:
                    complete[event.anchor] = 1
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                opened.append((event.anchor, nodes + alias_nodes))
                nodes += 1
                if nodes > YAML_NODES:
                    _refuse(where, "yaml.nodes", event)
                if len(opened) > YAML_DEPTH:
                    _refuse(where, "yaml.depth", event)
                if event.anchor is not None:
                    complete.pop(event.anchor, None)  # a redefined anchor names the new node from here on
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                anchor, before = opened.pop()
                if anchor is not None:
                    complete[anchor] = nodes + alias_nodes - before
            elif kind is AliasEvent:
                aliases += 1
                if aliases > YAML_ALIASES:
                    _refuse(where, "yaml.aliases", event)
                size = complete.get(event.anchor or "")
                if size is None:
                    raise InvalidArgument(
                        f"{where}: the alias at line {_line(event)} refers to no complete anchor "
                        "(an undefined or recursive alias)"
                    )
                alias_nodes += size
                if alias_nodes > YAML_ALIAS_NODES:
                    _refuse(where, "yaml.alias_nodes", event)
    except yaml.MarkedYAMLError as error:
        if "nesting depth" in (error.problem or "") and error.problem_mark is not None:
            # libyaml's scanner looks ahead through flow collections and has a nesting limit of its own (1000)
            depth = LIMITS["yaml.depth"]
            raise InvalidArgument(
                f"{where} goes over a limit at line {error.problem_mark.line + 1}: {depth.what}: "
                f"at most {depth.value} {depth.unit} (yaml.depth)"
            ) from None
        raise InvalidArgument(f"{where} is not valid YAML: {yaml_problem(error)}") from None
    except yaml.YAMLError as error:
        raise InvalidArgument(f"{where} is not valid YAML: {yaml_problem(error)}") from None
    finally:
        parser.dispose()


def _refuse(where: str, name: str, event: Event) -> NoReturn:
    declared = LIMITS[name]
    raise InvalidArgument(
        f"{where} goes over a limit at line {_line(event)}: {declared.what}: "
        f"at most {declared.value} {declared.unit} ({name})"
    )


def _line(event: Event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0
