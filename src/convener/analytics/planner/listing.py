"""The columns a question asks to see of each row it lists or ranks: "…: date, carrier, flight, air_time",
"(ID, study, bill length)", "Give its individual ID, study and species", "with their arrival delay"."""

from __future__ import annotations

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _table_words, named_as_rows
from convener.analytics.planner.joined_rows import joined_name_column
from convener.analytics.planner.routes import route_ends
from convener.analytics.planner.scope import _direction_of
from convener.analytics.planner.state import _note_term, _Reading
from convener.analytics.planner.vocabulary import _AGG_WORDS, VALUE_NOUNS
from convener.analytics.shapes import NUMBER_TYPES, STRING, TableInfo
from convener.analytics.wording import phrase, split_identifier, stem

_GIVE = frozenset({"give", "show", "list", "include", "including", "display", "return",
                   "giving", "showing", "listing", "displaying", "returning",
                   # "I'd like the penguin ID, species and bill length": a wish names what to show, as a verb
                   "like", "want", "need"})
_WITH = frozenset({"with"})
_OWNERS = frozenset({"me", "us", "the", "its", "their", "his", "her"})
_JOINERS = frozenset({"and", "plus"})
_NUMBER_ABBREVIATIONS = frozenset({"no", "nr", "num"})
"""Short for "number" when a period follows ("flight no., arrival delay"): else "no" would end the list and
the columns after it go unshown."""


def read_column_list(reading: _Reading) -> None:
    """A list of the queried table's columns (and "ID", its identifier), joined by commas and "and", after
    a colon, a dash or an opening parenthesis, or after "give"/"show"/"with" ("with their …"): the columns
    shown of each row. After "with" the rows are shown whole, the columns beside them ("flights … with their
    arrival delay"); elsewhere they are what is shown. A single column counts after punctuation or "its"/
    "their"; after a verb alone ("list the destinations") it is left to the listing's own reading."""
    index = 0
    while index < len(reading.tokens):
        items, end = _items(reading, index)
        if not items:
            index += 1
            continue
        introducer = _introducer(reading, index)
        if introducer is None or (len(items) < 2 and introducer in ("verb", "with", "sentence")) \
                or len(items) == 1 and not _ends_there(reading, end):
            index = end  # (one column with more said of it, "(arr_delay <= 0)", is no list of columns)
            continue
        glossed = _glossed(reading, index, items)
        if glossed:
            reading.used.update(glossed)  # the words the column in parentheses names, said by its mention
            index = end
            continue
        for column, span in items:
            said = reading.mention_at(span.start) or reading.mention_at(span.start + 1)
            if column == _VALUE:
                reading.shown_value = len(reading.shown)
            elif said is not None and said.ambiguous and column == said.target.column:
                reading.shown_unsettled[len(reading.shown)] = (column, *said.ambiguous)
                reading.shown.append(column)
            elif column not in reading.shown:
                reading.shown.append(column)
            for mention in [m for m in reading.mentions if m.start in span]:
                reading.mentions.remove(mention)
                _note_term(reading, mention)
            reading.used.update(span)
        reading.used.update(i for i in range(index, end) if reading.norm(i) in _JOINERS | _OWNERS)
        reading.used.update(_introducer_words(reading, index))
        # "Which airlines flew to Denver? Give their names": the airlines' names, each once, not every flight's
        reading.shown_per_row = not asked_of_joined_rows(reading, [column for column, _ in items])
        if introducer == "and what":
            # "which ones, and what species?": each row by what tells it apart, with what was asked of it
            identifier = _identifier(reading)
            if identifier is not None and identifier not in reading.shown:
                reading.shown.insert(0, identifier)
        # "… with their arrival delay": the rows whole, the column beside them; "… with their id and the ratio":
        # the columns that tell the rows apart are among those asked, so those are what is shown
        reading.shown_whole = introducer in ("with", "with their") and not any(
            identifies_rows(reading.base, column) or named_as_rows(reading.base, column) for column in reading.shown)
        return


def _ends_there(reading: _Reading, end: int) -> bool:
    """Whether what is said ends before ``end``: the question's end, or punctuation that closes a part of it."""
    return end >= len(reading.tokens) or any(mark in reading.gap(end) for mark in ").?,;:!")


def asked_of_joined_rows(reading: _Reading, columns: list[str]) -> bool:
    """Whether ``columns`` are all of one joined table whose rows the question asks which of ("which airlines")."""
    joins = {reading.join_of(column) for column in columns}
    join = joins.pop() if len(joins) == 1 else None
    if join is None:
        return False
    words = _table_words(join.table)
    return any(token.norm in ("which", "what") and index + 1 < len(reading.tokens)
               and reading.tokens[index + 1].stem in words for index, token in enumerate(reading.tokens))


def _items(reading: _Reading, index: int) -> tuple[list[tuple[str, range]], int]:
    """The columns named from ``index`` on, one after another, joined by commas or "and" (and where the list
    ends); empty when no column is named at ``index``."""
    items: list[tuple[str, range]] = []
    while True:
        item = _item(reading, index) or (_value_item(reading, index) or _place_item(reading, index) if items else None)
        if item is None and items and reading.norm(index) in ("the", "its", "their") and reading.free(index):
            item = _item(reading, index + 1)  # "carrier, flight number and the delay"
        ends = route_ends(reading) if item is None and items and reading.norm(index) == "route" \
            and reading.free(index) else None
        if ends is not None:  # "date, carrier, route and delay": where each row started and where it ended
            items.extend((end, range(index, index + 1)) for end in ends)
            item = items.pop()
        if item is None:
            break
        items.append(item)
        following = item[1].stop
        if following >= len(reading.tokens):
            break
        joined = reading.norm(following) in _JOINERS and reading.free(following)
        if "," in reading.gap(following):
            index = following + 1 if joined else following  # ", and"
        elif joined:
            index = following + 1
        else:
            break
    return items, (items[-1][1].stop if items else index)


def _item(reading: _Reading, index: int) -> tuple[str, range] | None:
    """The column named at ``index`` and the words that name it: a column's mention, with words of its
    description right after it ("flight number" for ``flight``, "Flight number"), or "ID"."""
    mention = reading.mention_at(index)
    if (mention is None or not mention.is_value and mention.end == index + 1) and reading.free(index) \
            and index + 1 < len(reading.tokens) and reading.tokens[index].possessive:
        owned = _item(reading, index + 1)
        if owned is not None:  # "the plane's year": the year (of the plane), not the plane then a year
            return owned[0], range(index, owned[1].stop)
    if mention is not None and not mention.is_value and mention.start == index and mention in reading.mentions:
        column = reading.column(mention.target.column)
        end = mention.end
        described = set(phrase(column.description or ""))
        while reading.free(end) and (reading.tokens[end].stem in described
                                     or _abbreviates_number(reading, end)
                                     # "engine count" for engines, "seat count": the column's own number
                                     or reading.norm(end) == "count" and column.type in NUMBER_TYPES) \
                and reading.norm(end) not in _JOINERS:
            end += 1
        return column.name, range(index, _past_owner(reading, column.name, end))
    # "the penguin ID": the rows' own noun right before "ID" says whose identifier it is ("penguins: ID" is a
    # list of their columns)
    named = reading.tokens[index].stem in _table_words(reading.base) and reading.free(index) \
        and reading.norm(index + 1) in ("id", "ids") and reading.gap(index + 1).isspace()
    at = index + 1 if named else index
    if reading.norm(at) in ("id", "ids") and reading.free(at):
        identifier = _identifier(reading)
        if identifier is not None:
            return identifier, range(index, at + 1)
    return _joining_item(reading, index)


def _past_owner(reading: _Reading, column: str, end: int) -> int:
    """Where a joined table's column said "of" its rows ends: "the full name of the destination airport" (the
    word before the table's noun says which way it is reached)."""
    join = reading.join_of(column)
    if join is None or reading.norm(end) != "of":
        return end
    at = end + 1
    while reading.norm(at) in ("the", "its", "their", "each"):
        at += 1
    words = _table_words(join.table)
    for noun in (at, at + 1):
        if noun < len(reading.tokens) and reading.tokens[noun].stem in words:
            return noun + 1
    return end


def _joining_item(reading: _Reading, index: int) -> tuple[str, range] | None:
    """"…: the date, airline and arrival delay": a joined table's own noun for its rows, in a list of what to
    show of each row, is the column that joins the row to one of them (``carrier`` for airlines). Only a table
    joined one way: "airport" could be either end of a flight."""
    if reading.scope is None or not reading.free(index) or reading.tokens[index].kind != "word":
        return None
    stem = reading.tokens[index].stem
    joins = [join for join in reading.scope.joins if stem in _table_words(join.table)]
    if len(joins) != 1 or len(joins[0].on) != 1 or joins[0].chosen:
        return None  # (a join ``chosen`` of several ways to its table: the words picked it for another use)
    return joins[0].on[0][0], range(index, index + 1)


_VALUE = ""
"""The item of a list that is "the value": no column's name, the column a number condition reads."""
_HOW_MUCH = frozenset({"early", "late", "long", "far", "heavy", "big", "much"})


def _value_item(reading: _Reading, index: int) -> tuple[str, range] | None:
    """"the value" (or "its value", "the reading", "how early", "how late") at ``index``, after other columns of
    a list."""
    at = index + 1 if reading.norm(index) in _OWNERS and reading.free(index) else index
    if reading.norm(at) in VALUE_NOUNS and reading.free(at):
        return _VALUE, range(index, at + 1)
    if reading.norm(index) == "how" and reading.norm(index + 1) in _HOW_MUCH and reading.free(index) \
            and reading.free(index + 1):
        return _VALUE, range(index, index + 2)  # "flight number, carrier and how early": the delay compared
    return None


_GOING = frozenset({"going", "headed", "heading", "bound", "went", "flew", "flying", "travelling", "traveling"})
_COMING = frozenset({"came", "coming", "left", "leaving", "departed", "departing", "flew", "flying"})
_PRONOUNS = frozenset({"they", "it", "he", "she"})


def _place_item(reading: _Reading, index: int) -> tuple[str, range] | None:
    """"where they were going" (or "where it went", "where they were headed to"), "where they came from", after
    other columns of a list: the one column of the queried table that says where a row goes to (or comes
    from), as its name and description tell (``dest``, "FAA code of the destination airport")."""
    if reading.norm(index) != "where" or reading.norm(index + 1) not in _PRONOUNS:
        return None
    at = index + 2 + (reading.norm(index + 2) in ("was", "were", "is", "are"))
    if reading.norm(at) in _GOING and reading.norm(at + 1) != "from":
        direction, end = "toward", at + 1 + (reading.norm(at + 1) == "to")
    elif reading.norm(at) in _COMING and reading.norm(at + 1) == "from":
        direction, end = "away", at + 2
    else:
        return None
    if not all(reading.free(i) for i in range(index, end)):
        return None
    # (a place is named, not measured: the departure delay and time are no place the flight left from)
    columns = [column.name for column in reading.base.columns
               if column.type == STRING and _direction_of(column) == direction]
    return (columns[0], range(index, end)) if len(columns) == 1 else None


def settle_shown_value(reading: _Reading) -> None:
    """"Penguins with delta 13 C above -24: give id, species and the value": "the value" is the column of
    the question's number conditions, shown where it was said. With no such condition, or conditions on
    several columns, it names nothing the plan can tell: it is left unaccounted for rather than dropped."""
    if reading.shown_value is None:
        return
    columns = list(dict.fromkeys(f.column for f in reading.filters if f.kind == "number"))
    if len(columns) != 1:
        reading.unplaced.append("the value")
    elif columns[0] not in reading.shown:
        reading.shown.insert(reading.shown_value, columns[0])


def settle_shown_columns(reading: _Reading) -> None:
    """"Flights that arrived over 5 hours late: carrier and the delay", "the 5 worst departure delays: date and
    delay": a shown column said by a word several columns share is the one of them the question names
    elsewhere (a number condition compares it, it ranks the rows or it is measured); refused when none or
    several of them is."""
    named = [f.column for f in reading.filters if f.kind == "number"] + [reading.order_measure or ""] \
        + [column for column, _ in reading.measures]
    for at, columns in reading.shown_unsettled.items():
        compared = list(dict.fromkeys(column for column in named if column in columns))
        if len(compared) != 1:
            raise NoPlan(f"'{' or '.join(columns)}' could each be the column to show; say which")
        reading.shown[at] = compared[0]
    reading.shown = list(dict.fromkeys(reading.shown))
    reading.shown_unsettled = {}


def with_joined_keys(reading: _Reading, shown: list[str]) -> list[str]:
    """"The names of the airports Southwest flew to": a joined table's names, listed once each, beside the key that
    joins them (dest before the airport's name), as "which airlines" lists them: a code says which row a name is,
    and two rows may share a name."""
    keyed: list[str] = []
    for name in shown:
        join = reading.join_of(name)
        if join is not None and len(join.on) == 1 and joined_name_column(reading, join) == name \
                and join.on[0][0] not in (*shown, *keyed):
            keyed.append(join.on[0][0])
        keyed.append(name)
    return keyed


def _abbreviates_number(reading: _Reading, index: int) -> bool:
    """Whether the word at ``index`` is "no." (or "nr.", "num."): "number" cut short, right after a column."""
    token = reading.tokens[index]
    return token.norm in _NUMBER_ABBREVIATIONS and reading.text[token.end:token.end + 1] == "."


def _identifier(reading: _Reading) -> str | None:
    """The queried table's own identifier column: ``id``, or the one column whose name ends in ``_id``."""
    columns = [c.name for c in reading.base.columns]
    if "id" in columns:
        return "id"
    ids = [name for name in columns if name.lower().endswith("_id")]
    return ids[0] if len(ids) == 1 else None


def identifies_rows(table: TableInfo, name: str) -> bool:
    """Whether column ``name`` is the identifier of ``table``'s rows: ``id``, named after them (``tree_id``
    of trees) or described as theirs ("Identifier of the penguin" for individual_id of one row per penguin).
    Its values are listed one per row: each is a row's, and a repeated one is two rows, never one."""
    column = table.column(name)
    words = split_identifier(name).lower().split()
    if column is None or not words or words[-1] != "id":
        return False
    rows = _table_words(table)
    if words == ["id"] or len(words) >= 2 and stem(words[-2]) in rows:
        return True
    said = phrase(column.description or "")[:2]
    return len(said) == 2 and said[0] in ("identifier", "id") and said[1] in rows


def _glossed(reading: _Reading, index: int, items: list[tuple[str, range]]) -> list[int]:
    """"a nitrogen isotope (delta 15N) reading": one column in parentheses right after words its name or
    description uses restates them, as a gloss; it is no list of columns to show. Returns those words."""
    if len(items) != 1 or "(" not in reading.gap(index) or not _ends_there(reading, items[0][1].stop):
        return []  # (a column in parentheses with more after it, "(arr_delay <= 0)", is a condition, no gloss)
    column = reading.table.column(items[0][0])
    if column is None:
        return []
    words = set(phrase(column.name)) | set(phrase(column.description or ""))
    before = []
    at = index - 1
    # (an aggregate word is never the gloss's: "fastest on average (mph)", with a column called average_speed)
    while at >= 0 and reading.free(at) and reading.tokens[at].kind == "word" and reading.tokens[at].stem in words \
            and reading.norm(at) not in _AGG_WORDS:
        before.append(at)
        at -= 1
    join = reading.join_of(column.name)
    if join is not None and any(reading.tokens[at].stem in _table_words(join.table) for at in before):
        return []  # "which airlines (full names) …": the joined rows named, then how to show them
    return before


def _introducer(reading: _Reading, index: int) -> str | None:
    """What opens a list of columns at ``index``: punctuation (a colon, a dash, a parenthesis), "with their",
    "with" or a verb of showing ("give its", "give"); None when nothing does."""
    gap = reading.gap(index)
    if _punctuation(gap):
        return "punctuation"
    if index > 0 and any(mark in gap for mark in ("?", ".")):
        return "sentence"  # "Which JFK flights were cancelled? Date, carrier and flight please."
    before = index - 1
    owners = []
    while before >= 0 and reading.norm(before) in _OWNERS and reading.free(before):
        owners.append(reading.norm(before))
        if _punctuation(reading.gap(before)):
            return "punctuation"  # "…: their ID, sex and body mass"
        before -= 1
    if before >= 1 and reading.norm(before - 1) in ("which", "what") and "," in reading.gap(index) \
            and reading.tokens[before].stem in _table_words(reading.base) and _punctuation(reading.gap(before - 1)):
        return "punctuation"  # "the 5 worst delays - which flights, carrier, date and delay"
    if before < 0 or not reading.free(before):
        return None
    word = reading.norm(before)
    owned = any(owner in ("its", "their") for owner in owners)
    if word in ("what", "which") and reading.norm(before - 1) == "and" and reading.free(before - 1):
        return "and what"  # "… bills longer than 50 mm — which ones, and what species?"
    if word in _WITH:
        # ("top 5 heaviest penguins, with species": set off by a comma, the column shown beside the rows;
        # "…, along with the dates" too)
        opening = before - 1 if _along(reading, before) else before
        return "with their" if owned or "," in reading.gap(opening) else "with"
    if word in _GIVE:
        return "punctuation" if owned else "verb"
    if word in ("just", "only") and before > 0 and any(mark in reading.gap(before) for mark in ("?", ".")):
        return "sentence"  # "Which Torgersen penguins …? Just the IDs and study."
    if word in ("just", "only") and before > 0 and _punctuation(reading.gap(before)):
        return "punctuation"  # "the cancelled UA flights: just the date and flight number"
    return None


def _along(reading: _Reading, with_at: int) -> bool:
    """Whether "along" or "together" stands free before the "with" at ``with_at`` ("along with the dates")."""
    return reading.norm(with_at) in _WITH and reading.norm(with_at - 1) in ("along", "together") \
        and reading.free(with_at - 1)


def _punctuation(gap: str) -> bool:
    """Whether the characters between two words open a list: a colon, a parenthesis or a dash."""
    return any(mark in gap for mark in (":", "(", " - ", " – ", " — ", "--"))


def _introducer_words(reading: _Reading, index: int) -> list[int]:
    """The words that open the list ("give its", "with their"), read with it."""
    said = []
    before = index - 1
    while before >= 0 and reading.norm(before) in _OWNERS and reading.free(before):
        said.append(before)
        before -= 1
    if before >= 0 and reading.norm(before) in _GIVE | _WITH | {"just", "only"} and reading.free(before):
        said.append(before)
        if _along(reading, before):
            said.append(before - 1)
    elif before >= 1 and reading.norm(before) in ("what", "which") and reading.norm(before - 1) == "and":
        said.extend((before, before - 1))  # "…, and what species"
    return said
