"""Groups that lack something: "Which carriers never had a flight cancelled?", "Which islands have no
Gentoo penguins?", "Which destinations had flights from JFK but never from LaGuardia?". Each group of the
column asked about is kept when none of its rows meets the condition (and, for a value of the same column
said without the negation, when some of its rows meet that one): conditions on the groups, not on the rows,
which a WHERE would turn into their opposite ("carriers with a flight not cancelled")."""

from __future__ import annotations

from convener.analytics.planner.catalog import _common, _Mention, _table_words
from convener.analytics.planner.joined_rows import joined_rows_key
from convener.analytics.planner.state import _Filter, _note_term, _Reading, listed_at
from convener.analytics.planner.vocabulary import DONE_NOT
from convener.analytics.shapes import BOOLEAN, STRING

_ABSENT = frozenset({"never", "no"})
_AUXILIARIES = frozenset({"did", "do", "does", "has", "have", "had"})
_BETWEEN = frozenset({"had", "have", "has", "a", "an", "any", "single", "one", "from", "to", "at", "on", "in",
                      "out", "of", "with", "been", "was", "were", "flown", "seen", "all"})


def read_absence(reading: _Reading) -> None:
    """"which <text column> … never|no|did not <condition>": the condition (values or a true/false condition right
    after the negation, past a few small words and the rows' noun) is one no row of a group may meet."""
    if not _asks_which_column(reading):
        return
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        if token.norm in _ABSENT or token.norm in DONE_NOT:  # "never", "no", "didn't have a single …"
            said = [index]
        elif token.norm == "not" and reading.norm(index - 1) in _AUXILIARIES and reading.free(index - 1):
            said = [index - 1, index]  # "did not have any cancelled flights"
        elif token.norm == "not" and reading.norm(index - 1) == "but" and reading.free(index - 1):
            said = [index - 1, index]  # "served from Newark but not from LaGuardia" (when Newark is said: below)
        else:
            continue
        position = index + 1
        found: list[_Filter] = []
        read: list[_Mention] = []  # mentions read as the condition, or as the rows' noun: taken out once kept
        while position < len(reading.tokens) and len(said) < 8:
            mention = reading.mention_at(position)
            if mention is not None and mention.is_value and mention.start == position:
                truth = mention.target.value or ""
                if reading.column(mention.target.column).type == BOOLEAN:
                    found.append(_Filter(mention.target.column, "=", (truth,), "boolean", position))
                else:
                    values = (truth, *mention.target.alternatives)
                    found.append(_Filter(mention.target.column, "in" if len(values) > 1 else "=", values,
                                         "name" if len(values) > 1 else "value", position))
                read.append(mention)
                said.extend(range(mention.start, mention.end))
                position = mention.end
                continue
            word = reading.tokens[position]
            if mention is None and position in reading.used and word.text[:1].isupper() and not found \
                    and position > index + 1:
                position += 1  # "no flights to Boston (BOS)": the value's name, read as glossing its code
                continue
            # the word right after the negation, a column's, may name the rows ("no departures at all from
            # LaGuardia"): it is, when a value follows (else nothing is found, and the negation is left unread)
            rows_noun = position == index + 1 and mention is not None and not mention.is_value \
                and mention.end == position + 1
            if word.norm in _BETWEEN or word.stem in _table_words(reading.base) or rows_noun \
                    or mention is None and _common(word.norm):  # "never flew to Atlanta"
                if mention is not None and not mention.is_value and mention.end == position + 1:
                    read.append(mention)  # "a flight": the rows, not the column called flight
                said.append(position)
                position += 1
                continue
            break
        if not found:
            return
        if said[0] < index and reading.norm(said[0]) == "but" and not _said_positively(reading, found, index):
            return  # "but not" denies a value of the rows ("flights from JFK but not cancelled"), no group's
        for mention in read:
            reading.mentions.remove(mention)
            if mention.is_value:
                _note_term(reading, mention)
        reading.absent.extend(found)
        reading.used.update(said)
        if not reading.keys and len(reading.shown) == 1:
            reading.keys, reading.shown = reading.shown, []  # the values listed are groups, each lacking it
        return


def _said_positively(reading: _Reading, denied: list[_Filter], before: int) -> bool:
    """Whether a value of the column (or of the column joined by the same key) of ``denied`` is said before
    ``before`` without the negation: "from Newark but not from LaGuardia" asks for groups that have the one
    and lack the other; a row cannot have both, so as conditions on rows the negation would say nothing."""
    keys = {_key_of(reading, item.column) for item in denied}
    return any(mention.is_value and mention.end <= before and _key_of(reading, mention.target.column) in keys
               for mention in reading.mentions) \
        or any(_key_of(reading, item.column) in keys and item.op in ("=", "in") and item.start < before
               for item in reading.filters)


def _asks_which_column(reading: _Reading) -> bool:
    """Whether the question asks which values of a text column ("which carriers", "what islands", "list the
    destinations", or a question that is the values alone: "destinations served from JFK but not from LGA")."""
    index = listed_at(reading)
    mention = reading.mention_at(index)
    if mention is None and joined_rows_key(reading, index) is not None:
        return True  # "which airlines never …" of flights: the airlines, by the flights' key to them
    if mention is None and index in reading.used and len(reading.shown) == 1 \
            and reading.column(reading.shown[0]).type == STRING:
        return True  # "list the destinations served from …": read as the one column shown
    return mention is not None and not mention.is_value and mention.start == index \
        and reading.column(mention.target.column).type == STRING


def _key_of(reading: _Reading, column: str) -> str:
    """The queried table's column that ``column`` is about: itself, or for a joined table's column
    ("La Guardia" of airports' names, joined by origin), the column it is joined by."""
    join = reading.join_of(column)
    return join.on[0][0] if join is not None else column


def settle_presence(reading: _Reading) -> None:
    """A value of a column a group must lack, said also without the negation ("flights from JFK but never
    from LaGuardia"), is one some row of the group must have: it moves from the rows' conditions to the
    groups'."""
    columns = {_key_of(reading, item.column) for item in reading.absent}
    present = [item for item in reading.filters
               if _key_of(reading, item.column) in columns and item.op in ("=", "in") and item.kind in ("value", "name")]
    reading.present.extend(present)
    reading.filters = [item for item in reading.filters if item not in present]
