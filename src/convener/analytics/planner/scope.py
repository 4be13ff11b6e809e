"""The queried table with what it can reach: tables it joins many-to-one (by the schema's relationships, or by
a key column named after the other table, ``store_id`` ↔ ``stores.store_id``/``stores.id``) and the glossary
formulas over its columns, as virtual columns the reading steps treat like any other."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from convener.analytics.planner.base import NoPlan, Relationship
from convener.analytics.planner.catalog import _Candidate, _Mention, _resolve, _table_words, _Target
from convener.analytics.planner.state import _Join, _Scope
from convener.analytics.planner.units import unit_of
from convener.analytics.planner.vocabulary import (
    ROLE_NOUNS,
    _AWAY,
    _DIRECTION_PREPOSITIONS,
    _DISTINCT_WORDS,
    _TOWARD,
    AUXILIARIES,
)
from convener.analytics.shapes import BOOLEAN, FLOAT, ColumnInfo, TableInfo
from convener.analytics.wording import Token, parted, phrase, snake, split_identifier, stem, tokenize


def _key_of(table: TableInfo, column: str) -> bool:
    """Whether ``column`` is ``table``'s own key: ``id``, or named after the table's rows (``store_id`` of
    stores), so that at most one of its rows matches a value."""
    words = split_identifier(column).lower().split()
    if words == ["id"]:
        return True
    return len(words) >= 2 and words[-1] in ("id", "key", "code") and stem(words[-2]) in _table_words(table)


def _pair(first: str, second: str) -> tuple[str, str]:
    return (first, second) if first <= second else (second, first)


def _one_side(many: TableInfo, many_column: str, one: TableInfo, one_column: str) -> bool:
    """Whether, of two tables a relationship joins, ``one`` is the side with one row per key: its column is
    its own key (``id``, ``store_id`` of stores) while the other's is not, or else (airlines.carrier,
    planes.tailnum) it is the first column of the smaller table."""
    if _key_of(one, one_column) or _key_of(many, many_column):
        return _key_of(one, one_column) and not _key_of(many, many_column)
    first = one.columns[0].name.lower() == one_column.lower() if one.columns else False
    sizes = (many.row_count, one.row_count)
    if sizes[0] is not None and sizes[1] is not None:
        return first and sizes[1] < sizes[0]
    return first and not (many.columns and many.columns[0].name.lower() == many_column.lower())


Role = Callable[[TableInfo, Sequence[tuple[str, str]]], tuple[str, str] | None]
"""Of several relationships from the queried table to one other table (flights.origin and flights.dest to
airports.faa), the one a question means, or None when it does not say."""


def _joins(table: TableInfo, tables: Sequence[TableInfo], relationships: Sequence[Relationship],
           role: Role | None = None) -> list[_Join]:
    """The tables ``table`` joins many-to-one: each of its rows meets at most one of theirs, so joining
    neither repeats nor drops its rows (the join is a LEFT JOIN) and counts and sums stay right. A table
    reached by several relationships is joined by the one ``role`` picks, and not at all when it picks none
    (without ``role``, by the first: only whether the tables join is asked)."""
    by_name = {t.name: t for t in tables}
    options: dict[str, list[tuple[str, str]]] = {}
    for relationship in relationships:
        for mine, my_columns, theirs, their_columns in (
                (relationship.left_table, relationship.left_columns, relationship.right_table,
                 relationship.right_columns),
                (relationship.right_table, relationship.right_columns, relationship.left_table,
                 relationship.left_columns)):
            other = by_name.get(theirs)
            if mine != table.name or other is None or other.name == table.name or len(my_columns) != 1 \
                    or len(my_columns) != len(their_columns) \
                    or not _one_side(table, my_columns[0], other, their_columns[0]) \
                    or table.column(my_columns[0]) is None or other.column(their_columns[0]) is None:
                continue
            pair = (my_columns[0], their_columns[0])
            if pair not in options.setdefault(other.name, []):
                options[other.name].append(pair)
    found: dict[str, _Join] = {}
    for name, pairs in options.items():
        chosen = pairs[0] if len(pairs) == 1 or role is None else role(by_name[name], pairs)
        if chosen is not None:
            found[name] = _Join(by_name[name], (chosen,), len(pairs) > 1)
    for other in tables:
        if other.name == table.name or other.name in options:
            continue
        for column in table.columns:
            if _key_of(table, column.name):
                continue
            target = other.column(column.name) if _key_of(other, column.name) else None
            words = split_identifier(column.name).lower().split()
            if target is None and len(words) >= 2 and words[-1] == "id" and stem(words[-2]) in _table_words(other):
                target = other.column("id")
            if target is not None:
                found[other.name] = _Join(other, ((column.name, target.name),))
                break
    return list(found.values())


_TOWARD_ROLE = frozenset({"dest", "destination", "arrival", "arrive", "arrived", "arrives", "target", "recipient",
                          "receiver", "to"})
_AWAY_ROLE = frozenset({"origin", "source", "departure", "depart", "left", "sender", "from"})
"""Words of a key column's name or description that make it the end a row goes to, or comes from."""


_RECEIVED = frozenset({"got", "get", "gets", "getting"})
"""Verbs that point toward a place only said right after it ("the airport that got the most flights"; "flights
that got delayed" point nowhere)."""

_ROLE_NOUNS = frozenset(ROLE_NOUNS)
"""Nouns of direction: they point at what follows them ("destination airports"), never back at what comes
before ("From LaGuardia, which destinations …": LaGuardia is where they leave from)."""


def _formula_unit(table: TableInfo, formula: str) -> str | None:
    """The unit of a glossary formula that only adds and subtracts columns of one unit ("dep_delay - arr_delay":
    minutes), so that "how many minutes did flights gain" asks it in its own unit; None for any other."""
    tree = sqlglot.parse_one(formula)
    if any(isinstance(node, (exp.Mul, exp.Div)) for node in tree.walk()):
        return None
    columns = [table.column(column.name) for column in tree.find_all(exp.Column)]
    units = {unit_of(column) if column is not None else None for column in columns}
    return units.pop() if len(units) == 1 else None


def _direction_of(column: ColumnInfo) -> str | None:
    """"toward" for ``dest`` ("FAA code of the destination airport"), "away" for ``origin`` ("… the flight
    left from"), None when its name and description say neither or both."""
    tokens = tokenize(split_identifier(column.name) + " " + (column.description or ""))
    words = {token.norm for token in tokens} | {token.stem for token in tokens}
    toward, away = bool(words & _TOWARD_ROLE), bool(words & _AWAY_ROLE)
    return "toward" if toward and not away else "away" if away and not toward else None


def stranded_at(tokens: Sequence[Token], index: int) -> bool:
    """Whether a preposition of direction ends its clause at ``index`` ("which airports did VX fly to?")."""
    return tokens[index].norm in _DIRECTION_PREPOSITIONS - {"out"} \
        and (index + 1 == len(tokens) or parted(tokens, index, index + 1))


def stranded_direction(tokens: Sequence[Token]) -> str | None:
    """The direction a preposition ending a clause says ("… fly to?": toward), None where none does."""
    ends = {"toward" if tokens[i].norm in _TOWARD else "away" for i in range(len(tokens)) if stranded_at(tokens, i)}
    return ends.pop() if len(ends) == 1 else None


def _directions_asked(tokens: Sequence[Token], other: TableInfo, candidates: Sequence[_Candidate],
                      keys: set[str]) -> dict[str, set[int]]:
    """The directions in which a question reaches ``other``'s rows: a word of direction right before a
    phrase naming them ("went to San Francisco Intl", "landed at airports", "destination airport"), or a
    verb of direction right after one ("the airport that received …"); each with the words that said it
    (and a word of direction just before them: "landed at")."""
    # A value of the key it is joined on ("to HNL": an airports.faa value) is the queried table's own value;
    # a word that only abbreviates a column's name ("longest" for lon) does not name the table.
    # A word inside a longer phrase of another table reads with that phrase: "arrived late" (the glossary's late
    # arrival) does not name the airports' column lat.
    covered = {i for c in candidates if c.target.table == other.name and c.target.column not in keys
               and (c.source != "name" and c.source != "partial"
                    or all(tokens[i].stem in phrase(c.target.column) for i in range(c.start, c.end)))
               and not any(d.target.table != other.name and d.start <= c.start and c.end <= d.end
                           and d.end - d.start > c.end - c.start for d in candidates)
               for i in range(c.start, c.end)}
    words = _table_words(other)

    def names_other(index: int | None) -> bool:
        return index is not None and (index in covered or tokens[index].stem in words)

    def content(indexes: range) -> int | None:
        # ("an origin other than Newark": the words of an exclusion stand between the role and its place;
        # punctuation does not: "out of LaGuardia (departed flights only)" says no airport "departed")
        word = indexes.start - indexes.step  # the word of direction the search starts beside
        for i in indexes:
            if parted(tokens, i, word):
                return None
            if not tokens[i].is_stopword and tokens[i].kind == "word" \
                    and tokens[i].norm not in ("that", "which", "who", "other", "than", "except", "besides", "each",
                                               "every"):
                return i
        return None

    def direction_of(index: int) -> str | None:
        norm = tokens[index].norm if 0 <= index < len(tokens) else ""
        return "toward" if norm in _TOWARD else "away" if norm in _AWAY else None

    def points_forward(index: int) -> bool:
        # "which destinations did LaGuardia flights go to": a role noun asked about, before a verb, is not
        # the end of the place after the verb ("whose destination was Miami" still says it is)
        if tokens[index].norm not in _ROLE_NOUNS or index + 1 >= len(tokens) \
                or tokens[index + 1].norm not in AUXILIARIES:
            return True
        before = index - 1
        while before >= 0 and tokens[before].norm in _DISTINCT_WORDS:
            before -= 1
        return before < 0 or tokens[before].norm not in ("which", "what", "many")

    # "which airports did Virgin America fly to?", "the airports VX flew to, by name": a preposition that ends
    # its clause points at the table named before it (a place of the table said too, "which airports did
    # LaGuardia flights go to", may be either end)
    places = any(c.target.table == other.name and c.target.value is not None and c.target.column not in keys
                 for c in candidates)  # (a value of the key, "JFK", is the queried table's own)

    asked: dict[str, set[int]] = {}
    for index, token in enumerate(tokens):
        before = names_other(content(range(index - 1, max(-1, index - 4), -1)))
        if token.norm in _RECEIVED and before:
            asked.setdefault("toward", set()).add(index)  # "the airport that got the most flights"
            continue
        direction = direction_of(index)
        if direction is None:
            continue
        if token.norm == "at" and (verb := direction_of(index - 1)) is not None:
            direction = verb  # "originated at": "at" places, the verb says which end
        if points_forward(index) and names_other(content(range(index + 1, min(len(tokens), index + 4)))) \
                or token.norm not in _DIRECTION_PREPOSITIONS | _ROLE_NOUNS and before \
                or stranded_at(tokens, index) and any(tokens[i].stem in words for i in range(index)) and not places:
            said = asked.setdefault(direction, set())
            said.add(index)
            if direction_of(index - 1) == direction:
                said.add(index - 1)
    return asked


Codes = Callable[[str, str, str, str, str, Sequence[str]], Sequence[str]]
"""``codes(table, mine, other, theirs, column, names)``: the values of ``table.mine`` that are the key
``other.theirs`` of a row of ``other`` whose ``column`` is one of ``names`` (Newark's code among the origins)."""


def _role_chooser(table: TableInfo, tokens: Sequence[Token], candidates: Sequence[_Candidate],
                  said: set[int], codes: Codes | None = None) -> Role:
    """Picks, of several relationships to one table, the one whose end the question's words of direction
    point to: "flights to San Francisco Intl" reach airports by ``dest``, "flights from …" by ``origin``.
    The words that said so are added to ``said``. Where they do not pick one, the data may: "LaGuardia
    flights" reach airports by ``origin`` when only origins hold La Guardia's code (``codes``)."""
    def choose(other: TableInfo, pairs: Sequence[tuple[str, str]]) -> tuple[str, str] | None:
        keys = {theirs for _, theirs in pairs}
        ends = _values_at_other_end(table, other, pairs, tokens, candidates, codes)
        rest = [candidate for candidate in candidates if id(candidate) not in ends]
        asked = _directions_asked(tokens, other, rest, keys)
        matching = [(pair, direction) for pair in pairs if (column := table.column(pair[0])) is not None
                    and (direction := _direction_of(column)) is not None and direction in asked]
        held = _held_by_one(table, other, pairs, rest, keys, codes) if codes else None
        if len(matching) != 1:
            return held
        if held is not None and held != matching[0][0]:
            return held  # "the delay at LaGuardia": "at" may point at a destination, La Guardia's code is an origin
        said.update(asked[matching[0][1]])
        return matching[0][0]
    return choose


def _values_at_other_end(table: TableInfo, other: TableInfo, pairs: Sequence[tuple[str, str]],
                         tokens: Sequence[Token], candidates: Sequence[_Candidate],
                         codes: Codes | None) -> dict[int, _Target]:
    """"The airport that got the most flights from LaGuardia": ``other`` (the airports) reached two ways, the
    one asked of by the rest of the question (the airport that got flights: ``dest``) and a place named right
    after a word of the other direction ("from LaGuardia"): that place is the queried table's own code at its
    end (origin 'LGA'), so that the airports are joined the way the rest of the question points. By the
    candidate's id; none unless every such name keys a few rows at its end."""
    if codes is None or len(pairs) < 2:
        return {}
    keys = {theirs for _, theirs in pairs}
    named = [c for c in candidates if c.target.table == other.name and c.target.value is not None
             and c.target.column not in keys and c.target.formula is None]
    if not named:
        return {}
    asked = _directions_asked(tokens, other, [c for c in candidates if c not in named], keys)
    if len(asked) != 1:
        return {}
    ends: dict[str, list[tuple[str, str]]] = {}
    for pair in pairs:
        column = table.column(pair[0])
        direction = _direction_of(column) if column is not None else None
        if direction is not None:
            ends.setdefault(direction, []).append(pair)
    routed: dict[int, _Target] = {}
    for candidate in named:
        said = _preposition_before(tokens, candidate.start)
        if said is None or said in asked or len(ends.get(said, ())) != 1:
            return {}
        mine, theirs = ends[said][0]
        found = list(codes(table.name, mine, other.name, theirs, candidate.target.column,
                           (candidate.target.value or "", *candidate.target.alternatives)))
        if not 0 < len(found) <= _CODES_PER_NAME:
            return {}
        routed[id(candidate)] = _Target(table.name, mine, found[0], alternatives=tuple(found[1:]))
    return routed


def _preposition_before(tokens: Sequence[Token], start: int) -> str | None:
    """The end of a trip a place is said as by the preposition right before it: "from", "out of" (away), "to",
    "into" (toward); None for any other word ("at LaGuardia" may be either end)."""
    word = tokens[start - 1].norm if start > 0 else ""
    if word == "of" and start > 1 and tokens[start - 2].norm == "out" or word == "from":
        return "away"
    return "toward" if word in ("to", "into") else None


def _held_by_one(table: TableInfo, other: TableInfo, pairs: Sequence[tuple[str, str]],
                 candidates: Sequence[_Candidate], keys: set[str], codes: Codes) -> tuple[str, str] | None:
    """The one relationship whose column of ``table`` holds the keys of every row of ``other`` the question
    names by a value (not by its key, which is ``table``'s own value); None when none or several do."""
    named = [c for c in candidates if c.target.table == other.name and c.target.value is not None
             and c.target.column not in keys]
    if not named or len(named) > 4:
        return None
    holding = [pair for pair in pairs if all(
        codes(table.name, pair[0], other.name, pair[1], c.target.column,
              (c.target.value or "", *c.target.alternatives)) for c in named)]
    return holding[0] if len(holding) == 1 else None


def joins_to(tables: Sequence[TableInfo], relationships: Sequence[Relationship], *,
             question: tuple[Sequence[Token], Sequence[_Candidate]] | None = None,
             codes: Codes | None = None) -> set[tuple[str, str]]:
    """Every (many, one) pair of tables that join many-to-one; given a ``question`` (its tokens and candidate
    phrases), of those joined by several relationships only the ones its words of direction (or the data,
    ``codes``) pick."""
    return {(table.name, join.table.name) for table in tables
            for join in _joins(table, tables, relationships,
                               _role_chooser(table, question[0], question[1], set(), codes)
                               if question else None)}


_CODES_PER_NAME = 8
"""A name that keys more rows than this is a group of them (a time zone), not a place: it is not recoded."""


def _glossing_name_words(table: TableInfo, joins: Sequence[_Join], candidates: Sequence[_Candidate],
                         mentions: Sequence[_Mention], codes: Codes | None) -> list[_Mention]:
    """The mentions of a word read as the few names that hold it ("Houston": West Houston) where no row of the
    queried table refers to any of them, said beside another value of the same place that some row does ("Houston
    IAH", "Boston Logan"): the word only glosses that value, and the caller drops its mention (its word read).
    Alone, such a word stays: the answer then says what it read it as, and that no row has it."""
    if codes is None:
        return []
    read = {(m.start, m.end, m.target.value): m for m in mentions}
    unkeyed: dict[int, tuple[_Mention, list[str]]] = {}
    for candidate in candidates:
        target = candidate.target
        mention = read.get((candidate.start, candidate.end, target.value))
        if not candidate.name_word or mention is None:
            continue
        names = (target.value or "", *target.alternatives)
        ways = [join.on[0] for join in joins if join.table.name == target.table and len(join.on) == 1]
        if ways and not any(codes(table.name, mine, target.table, theirs, target.column, names)
                            for mine, theirs in ways):
            unkeyed[id(mention)] = (mention, [mine for mine, _ in ways])
    glossing: list[_Mention] = []
    for mention, columns in unkeyed.values():
        # (a value keying rows itself: two words that both key none gloss nothing)
        beside = [other for other in mentions if id(other) not in unkeyed and other.target.value is not None
                  and (other.start == mention.end or other.end == mention.start)
                  and other.target.column in (mention.target.column, *columns)]
        if beside:
            glossing.append(mention)
    return glossing


def _naming_a_list(mentions: Sequence[_Mention], tokens: Sequence[Token],
                   tables: Sequence[TableInfo]) -> list[_Mention]:
    """"The Florida airports MCO, FLL, MIA or TPA": a value said before a plural noun of some table's rows and
    the values of the same column that follow it describes them, as a heading does; it is no value of its own
    (one airport has "Florida" in its name, and it is not in the list)."""
    describing: list[_Mention] = []
    for mention, after in zip(mentions, mentions[1:]):
        noun = mention.end
        if mention.is_value and after.is_value and after.start == noun + 1 \
                and after.target.column == mention.target.column and tokens[noun].norm != tokens[noun].stem \
                and _names_a_table(tokens[noun], tables):
            describing.append(mention)
    return describing


def _said_with_codes(table: TableInfo, joins: Sequence[_Join], candidates: Sequence[_Candidate],
                     codes: Codes | None) -> dict[int, _Target]:
    """Names of a joined table said beside codes of the column that joins it ("JFK versus LaGuardia",
    "Atlanta or Miami (MIA)"), as the queried table's own codes that key the rows so named (origin 'LGA'),
    so that codes and names are values of one column: by the candidate's id. Only where every name said of
    that column keys some row of the queried table (else they are all read through the join, as alone)."""
    if codes is None:
        return {}
    own = {c.target.column for c in candidates if c.target.table == table.name and c.target.value is not None}
    coded: dict[int, _Target] = {}
    for join in joins:
        if len(join.on) != 1 or join.on[0][0] not in own:
            continue
        mine, theirs = join.on[0]
        named = [c for c in candidates if c.target.table == join.table.name and c.target.value is not None
                 and c.target.column != theirs and c.target.formula is None]
        found = {id(c): list(codes(table.name, mine, join.table.name, theirs, c.target.column,
                                   (c.target.value or "", *c.target.alternatives))) for c in named}
        if named and all(0 < len(keys) <= _CODES_PER_NAME for keys in found.values()):
            coded.update({key: _Target(table.name, mine, keys[0], alternatives=tuple(keys[1:]))
                          for key, keys in found.items()})
    return coded


def _route_codes(table: TableInfo, relationships: Sequence[Relationship], candidates: Sequence[_Candidate],
                 tokens: Sequence[Token], codes: Codes | None) -> dict[int, _Target]:
    """"LaGuardia to Atlanta": two names of one other table with "to" alone between them are a route's ends,
    the first reached by the relationship that points away (``origin``), the second by the one that points
    toward (``dest``): each as the queried table's own codes of that end, keyed by the rows so named (origin
    'LGA', dest 'ATL'), so that the two ends need no two joins of the one table. By the candidate's id; only
    where both names key some row of the queried table at their end."""
    if codes is None:
        return {}
    ends: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for relationship in relationships:
        if relationship.left_table != table.name or len(relationship.left_columns) != 1:
            continue
        column = table.column(relationship.left_columns[0])
        direction = _direction_of(column) if column is not None else None
        if direction is not None:
            ends.setdefault((relationship.right_table, direction), []).append(
                (relationship.left_columns[0], relationship.right_columns[0]))
    named = sorted((c for c in candidates if c.target.value is not None and c.target.table != table.name
                    and c.target.formula is None), key=lambda c: (c.start, -(c.end - c.start)))
    routed: dict[int, _Target] = {}
    for first in named:
        for second in named:
            if second.start != first.end + 1 or tokens[first.end].norm not in ("to", "into") \
                    or (first.target.table, first.target.column) != (second.target.table, second.target.column):
                continue
            away, toward = ends.get((first.target.table, "away"), []), ends.get((first.target.table, "toward"), [])
            if len(away) != 1 or len(toward) != 1:
                continue
            found = [list(codes(table.name, mine, first.target.table, theirs, said.target.column,
                                (said.target.value or "", *said.target.alternatives)))
                     for said, (mine, theirs) in ((first, away[0]), (second, toward[0]))]
            if all(0 < len(keys) <= _CODES_PER_NAME for keys in found):
                for said, (mine, _), keys in zip((first, second), (away[0], toward[0]), found, strict=True):
                    routed[id(said)] = _Target(table.name, mine, keys[0], alternatives=tuple(keys[1:]))
    return routed


def _settle_by_table(mention: _Mention, tokens: Sequence[Token], renamed: dict[tuple[str, str], str],
                     tables: Sequence[TableInfo]) -> _Mention:
    """"The name of the airport": of columns of one name in several joined tables (airlines.name,
    airports.name), the one whose table is named beside the phrase; else the mention stays ambiguous."""
    if not mention.ambiguous or mention.is_value:
        return mention
    source = {name: table for (table, _), name in renamed.items()}
    # "the name of the destination airport": the table's noun may come four words after its column
    near = {token.stem for token in tokens[max(0, mention.start - 3):mention.end + 4] if token.kind == "word"}
    by_name = {table.name: table for table in tables}
    options = [column for column in (mention.target.column, *mention.ambiguous)
               if column in source and near & _table_words(by_name[source[column]])]
    if len(options) != 1:
        return mention
    return _Mention(mention.start, mention.end, replace(mention.target, column=options[0]), mention.source)


def _check_owner(mention: _Mention, tokens: Sequence[Token], virtual: dict[str, exp.Expr],
                 renamed: dict[tuple[str, str], str], tables: Sequence[TableInfo], queried: TableInfo) -> _Mention:
    """"The name of the airport that got the most flights" where the airlines, not the airports, are joined for
    "name" (the airports are two ways from a flight, and no word picked one): a joined table's column said "of"
    another table's rows is that table's, which the question does not reach; refused rather than answered with
    the airline's. Where that table is joined too, its column of the same name is the one said ("the full name
    of the airport", "the airport's full name": "full name" describes the airlines' names, but it is the
    airport's that is asked). (Of several joined tables named beside the phrase, ``_settle_by_table`` picks the
    one named.)"""
    expression = virtual.get(mention.target.column)
    if mention.is_value or not isinstance(expression, exp.Column):
        return mention
    said_of = mention.end < len(tokens) and tokens[mention.end].norm == "of"
    at = mention.end + 1 if said_of else mention.start - 1
    while said_of and at < len(tokens) and tokens[at].norm in ("the", "a", "an", "each", "its", "their"):
        at += 1
    if said_of and at + 1 < len(tokens) and not _names_a_table(tokens[at], tables) \
            and _names_a_table(tokens[at + 1], tables):
        at += 1  # "the full name of the destination airport": the airport's, by the word that says which
    owner = next((table for table in tables if _alias(table) == expression.table), None)
    if not 0 <= at < len(tokens) or owner is None or tokens[at].stem in _table_words(owner):
        return mention
    others = [table.name for table in tables if table is not owner and tokens[at].stem in _table_words(table)]
    moved = renamed.get((others[0], expression.name)) if others else None
    if moved is not None:
        return _Mention(mention.start, mention.end, replace(mention.target, column=moved), mention.source)
    # ("the airport names" where only the airlines' names are reached: the word before is a table that has
    # the column too)
    said_before = any(table.name == others[0] and table.column(expression.name) is not None
                      for table in tables) if others else False
    if (said_of or said_before) and others and others[0] != queried.name:
        raise NoPlan(f"'{' '.join(t.text for t in tokens[mention.start:at + 1])}' is of {others[0]}, which the "
                     f"question does not say how to reach from {queried.name}")
    return mention


def _names_a_table(token: Token, tables: Sequence[TableInfo]) -> bool:
    return any(token.stem in _table_words(table) for table in tables)


def _alias(table: TableInfo) -> str:
    return table.name.split(".")[-1]


def _scope(table: TableInfo, tables: Sequence[TableInfo], relationships: Sequence[Relationship],
           candidates: Sequence[_Candidate], tokens: Sequence[Token] = (),
           codes: Codes | None = None) -> tuple[_Scope, list[_Mention]]:
    """The scope of a question on ``table``, and its mentions: the table's own phrases first, then phrases
    of joined tables where none of the table's own phrases is (they name the joined table's columns)."""
    columns = list(table.columns)
    virtual: dict[str, exp.Expr] = {}
    renamed: dict[tuple[str, str], str] = {}
    said: set[int] = set()
    joins = _joins(table, tables, relationships, _role_chooser(table, tokens, candidates, said, codes))
    for join in joins:
        keys = {theirs for _, theirs in join.on}
        prefix = snake(split_identifier(_alias(join.table)))
        for column in join.table.columns:
            if column.name in keys:
                continue
            name = column.name
            if table.column(name) is not None or name in virtual:
                name = f"{prefix}_{column.name}"
            columns.append(replace(column, name=name))
            virtual[name] = exp.column(column.name, table=_alias(join.table), quoted=True)
            renamed[(join.table.name, column.name)] = name
    sums: set[str] = set()
    own: list[_Candidate] = []
    coded = _said_with_codes(table, joins, candidates, codes)
    routed = _route_codes(table, relationships, candidates, tokens, codes)
    for other in tables:
        pairs = [(r.left_columns[0], r.right_columns[0]) for r in relationships if r.left_table == table.name
                 and r.right_table == other.name and len(r.left_columns) == 1 == len(r.right_columns)]
        routed.update(_values_at_other_end(table, other, pairs, tokens, candidates, codes))
    for candidate in candidates:
        target = candidate.target
        if id(candidate) in routed:
            own.append(_Candidate(candidate.start, candidate.end, routed[id(candidate)], candidate.strength,
                                  candidate.source))
        elif target.table == table.name and target.formula is not None:
            if target.column not in virtual:
                kind = BOOLEAN if target.value is not None else FLOAT
                unit = _formula_unit(table, target.formula) if kind == FLOAT else None
                columns.append(ColumnInfo(target.column, kind, f"glossary term: {target.formula}"
                                          + (f", in {unit}" if unit else "")))
                virtual[target.column] = exp.Paren(this=sqlglot.parse_one(target.formula))
                if kind == FLOAT:
                    sums.add(target.column)
            own.append(candidate)
        elif target.table == table.name:
            own.append(candidate)
        elif (target.table, target.column) in renamed and target.formula is None:
            moved = coded.get(id(candidate)) \
                or replace(target, table=table.name, column=renamed[(target.table, target.column)])
            own.append(_Candidate(candidate.start, candidate.end, moved, candidate.strength - 0.05,
                                  candidate.source))
    effective = replace(table, columns=tuple(columns))
    mentions = [_settle_by_table(m, tokens, renamed, tables) for m in _resolve(own, tokens)]
    for glossing in (*_glossing_name_words(table, joins, candidates, mentions, codes),
                     *_naming_a_list(mentions, tokens, tables)):
        mentions.remove(glossing)
        said.update(range(glossing.start, glossing.end))
    mentions = [_check_owner(mention, tokens, virtual, renamed, tables, table) for mention in mentions]
    # A word that picked a relationship and names a column ("origin" in "by origin airport") stays a mention:
    # it may be the key asked for.
    named = {i for m in mentions for i in range(m.start, m.end)}
    held_by: dict[str, set[str]] = {}
    for candidate in candidates:
        if candidate.target.table == table.name and candidate.target.value is not None:
            held_by.setdefault(candidate.target.value, set()).add(candidate.target.column)
    scope = _Scope(table, effective, virtual, tuple(joins), frozenset(sums), frozenset(said - named),
                   {value: frozenset(columns) for value, columns in held_by.items()})
    return scope, mentions
