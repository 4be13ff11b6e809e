"""A stored conversation's proto3 JSON body: its header row plus its turn rows, split on write, assembled on read.

The whole body used to be one JSON column, rewritten whole each time a session recorded a turn (so a session
of n turns wrote O(n²) bytes). Now ``ces_conversations.body`` keeps the header (every field but ``turns``) and
``ces_conversation_turns`` one row per turn; every reader of a conversation's body goes through ``bodies`` or
``body`` here, so that the assembled document is exactly the one the single column held.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import BindParameter, Connection, Select, Text, bindparam, cast, insert, select

from convener.ces.models import Conversation
from convener.ces.tables import conversation_turns
from convener.store.expressions import among_parameters, numbered

Json = dict[str, Any]

t = conversation_turns.c

TURNS = "turns"


def _aliases_before_turns() -> frozenset[str]:
    """The body's keys that ``Conversation.to_json`` writes before ``turns``, so that an assembled body keeps
    the key order of the body it was split from (SQLite stores JSON as text, in the order written)."""
    before: set[str] = set()
    for name, field in Conversation.model_fields.items():
        alias = field.serialization_alias or field.alias or name
        if alias == TURNS:
            return frozenset(before)
        before.add(alias)
    raise AssertionError("Conversation has no turns field")


_BEFORE_TURNS = _aliases_before_turns()


def split(body: Json) -> tuple[Json, list[Json]]:
    """A settled conversation's proto3 JSON as its header (without ``turns``) and its turns, in order."""
    header = {key: value for key, value in body.items() if key != TURNS}
    turns = body.get(TURNS) or []
    return header, list(turns)


def assemble(header: Json, turns: Sequence[Json]) -> Json:
    """The conversation's proto3 JSON: ``header`` with ``turns`` (omitted when there are none, as proto3 JSON
    omits an empty repeated field), keys in the order ``Conversation.to_json`` writes them."""
    if not turns:
        return dict(header)
    assembled = {key: value for key, value in header.items() if key in _BEFORE_TURNS}
    assembled[TURNS] = list(turns)
    assembled.update((key, value) for key, value in header.items() if key not in _BEFORE_TURNS)
    return assembled


_PAGE_TURNS: BindParameter[int] = bindparam("pks", expanding=True)
_TURNS = select(t.conversation_pk, t.body).where(t.conversation_pk.in_(_PAGE_TURNS)).order_by(
    t.conversation_pk, t.turn_index)
"""Built once (the row IDs bound as one expanding parameter): building and keying the statement for the cache
cost more than SQLite takes to run it, on every page of a list."""


@functools.lru_cache(maxsize=128)
def _turn_texts(count: int) -> Select[Any]:
    """The turns, as stored JSON text, of ``count`` conversations (``numbered("pk", …)``), in order. Built once
    per count (``among_parameters``): on a list's page (at most 100 conversations) rendering an expanding
    parameter cost about as much as SQLite takes to run the query."""
    return select(t.conversation_pk, cast(t.body, Text)).where(
        among_parameters(t.conversation_pk, "pk", count)).order_by(t.conversation_pk, t.turn_index)


def bodies(connection: Connection, headers: Mapping[int, Json]) -> dict[int, Json]:
    """The whole bodies of the conversations whose headers are given by row ID: one query for all their turns."""
    turns: dict[int, list[Json]] = {pk: [] for pk in headers}
    if headers:
        rows = connection.execute(_TURNS, {"pks": list(headers)})
        for row in rows:
            turns[row.conversation_pk].append(row.body)
    return {pk: assemble(header, turns[pk]) for pk, header in headers.items()}


def body_texts(connection: Connection, headers: Mapping[int, str]) -> dict[int, str]:
    """The whole bodies as JSON text, from the headers' text by row ID, in the headers' order: what a list serves
    without decoding.

    The turns are joined in as text, after the header's other keys (a JSON object's keys have no order)."""
    turns: dict[int, list[str]] = {pk: [] for pk in headers}
    if headers:
        statement = _turn_texts(len(headers))
        for pk, text in connection.execute(statement, numbered("pk", headers)).all():  # fetched at once
            turns[pk].append(text)
    return {pk: _with_turns(header, turns[pk]) for pk, header in headers.items()}


def _with_turns(header: str, turns: list[str]) -> str:
    if not turns:
        return header
    opened = header.rstrip()[:-1].rstrip()  # the object without its closing brace
    separator = "" if opened == "{" else ","
    return f'{opened}{separator}"{TURNS}":[{",".join(turns)}]}}'


def body(connection: Connection, pk: int, header: Json) -> Json:
    """The whole body of one conversation, given its row ID and header."""
    return bodies(connection, {pk: header})[pk]


_INSERT_TURNS = insert(conversation_turns)
"""Built once: every recorded turn writes a row."""


def write_turns(connection: Connection, turns: Mapping[int, Sequence[Json]], first_index: int = 0) -> None:
    """Append to each conversation of ``turns`` (by row ID) its turns, the first one at ``first_index`` (its turn
    count so far), all in one statement."""
    rows = [{"conversation_pk": pk, "turn_index": index, "body": turn}
            for pk, written in turns.items() for index, turn in enumerate(written, start=first_index)]
    if rows:
        connection.execute(_INSERT_TURNS, rows)


def turns_before(connection: Connection, pk: int, end: int, count: int) -> list[Json]:
    """Up to ``count`` turns of conversation ``pk`` that come just before turn index ``end``, in order."""
    rows = connection.execute(
        select(t.body).where(t.conversation_pk == pk, t.turn_index < end).order_by(t.turn_index.desc()).limit(count)
    ).scalars().all()
    return list(reversed(rows))
