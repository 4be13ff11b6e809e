"""Two groups set against each other by a comparative: "Is the average bill depth of male penguins greater
than that of females?" (yes or no), "By how many grams is the average Gentoo heavier than the average
Adelie?", "How many miles longer, on average, are flights from JFK than flights from LGA?" (the difference).
The groups are two values of one column, one before the comparative and one after "than"; the measure is
the column the question names, the one an adjective of measure names ("heavier": a mass) or the one its
unit names ("miles")."""

from __future__ import annotations

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _dimension, _Mention, _table_words
from convener.analytics.planner.dimensions import _measured_columns
from convener.analytics.planner.state import _Filter, _note_term, _Reading
from convener.analytics.planner.units import UNIT_NAMES, described_in
from convener.analytics.planner.vocabulary import AUXILIARIES, AVG
from convener.analytics.shapes import BOOLEAN, NUMBER_TYPES
from convener.analytics.wording import phrase, stem

_HIGHER = frozenset({"greater", "higher", "more", "larger", "bigger", "later", "longer", "heavier", "further",
                     "farther", "wider", "deeper", "taller", "faster"})
_LOWER = frozenset({"less", "lower", "fewer", "smaller", "earlier", "shorter", "lighter", "narrower", "shallower",
                    "slower"})
_OF_NUMBER = frozenset({"more", "fewer", "less"})
"""Comparatives that, before the rows' noun, compare how many rows each group has."""
COMPARATIVES = _HIGHER | _LOWER
JUDGING = frozenset({"worse", "better"})
"""Comparatives of judgement: which end they mean is the measure's (a worse delay is a longer one)."""
OF_MEASURE = COMPARATIVES - _OF_NUMBER
"""Comparatives of a measure ("longer", "later"): said of two things, they ask which one."""
_FILLER_AFTER_THAN = frozenset({"that", "those", "the", "of", "for", "one", "ones"})


def read_contrast(reading: _Reading) -> None:
    """A comparative before "than" with a value on each side, of one column, in a question asking whether
    ("is …") or by how much ("by how many grams", "how many miles longer"): ``reading.contrast``."""
    than = next((i for i, t in enumerate(reading.tokens) if t.norm == "than" and reading.free(i)), None)
    if than is None or than == 0:
        return
    # the comparative nearest before "than": "heavier than", "longer, on average, are flights from JFK than"
    comparative = next((i for i in range(than - 1, max(-1, than - 13), -1)
                        if reading.norm(i) in _HIGHER | _LOWER | JUDGING and reading.free(i)), None)
    if comparative is None:
        return
    word = reading.norm(comparative)
    form = _form(reading, comparative)
    if form is None:
        return
    kind, said = form
    after = _value_after(reading, than + 1)
    periods = _periods_around(reading, than) if after is None else None
    if after is None and periods is None:
        return
    before = next((m for m in sorted(reading.mentions, key=lambda m: -m.start)
                   if after is not None and m.is_value and m.end <= than and m.target.column == after.target.column),
                  None)
    if before is None and periods is None:
        return
    measure = _measure(reading, comparative, said)
    rows = _rows_after(reading, comparative + 1)
    if measure is None and word in _OF_NUMBER and rows is not None:
        # "Were more penguins sampled in PAL0809 than in PAL0708?", "more cancelled flights": the groups'
        # numbers of rows
        reading.count = True
        said = [*said, rows] if reading.free(rows) else said
    if periods is not None:
        # "higher in July than in December": the two periods are the groups, no longer conditions on every row
        reading.contrast = (periods[0], periods[1], word in _HIGHER, kind)
        for period in periods[2]:
            reading.filters.remove(period)
        reading.used.update(i for i in range(than + 1, periods[1].start) if reading.norm(i) in _FILLER_AFTER_THAN)
    elif before is not None and after is not None:
        _check_one_difference(reading, than, after.target.column)
        joined = _joined_values(reading, after)
        second = _side(after)
        if joined:
            # "than out of JFK and LaGuardia combined": the second group is the rows of either
            values = tuple(dict.fromkeys(value for side in (second, *map(_side, joined)) for value in side.values))
            second = _Filter(after.target.column, "in", values, "name", after.start)
            end = joined[-1].end
            reading.used.update(i for i in range(after.end, end + 1) if reading.norm(i) in _UNION)
        reading.contrast = (_side(before), second, word in _HIGHER, kind)
        # "carrier UA … than carrier DL": the column said right before its value is that value's
        named = [m for value in (before, after) if (m := reading.mention_at(value.start - 1)) is not None
                 and not m.is_value and m.end == value.start and m.target.column == value.target.column]
        for mention in (before, after, *joined, *named):
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            _note_term(reading, mention)
        reading.used.update(i for i in range(than + 1, after.start) if reading.norm(i) in _FILLER_AFTER_THAN)
    reading.used.update((comparative, than, *said))
    if word in JUDGING and reading.contrast is not None:
        reading.contrast_judged = word  # (higher or lower once the measure is read: ``_read_judgement``)
    if measure is not None:
        reading.measures.append((measure, AVG))
        # "the average Gentoo … the average Adelie", "on average": the aggregate of the measure named here
        reading.used.update(i for i, t in enumerate(reading.tokens) if reading.free(i)
                            and (t.norm in ("average", "mean") or t.norm == "on" and reading.norm(i + 1) == "average"))


def _check_one_difference(reading: _Reading, than: int, column: str) -> None:
    """Two groups that differ in more than the one column compared ("male Chinstraps … than female Gentoos":
    sex and species) are refused: the groups are each one value of one column, the rest shared by both."""
    for other in {m.target.column for m in reading.mentions if m.is_value and m.target.column != column}:
        sides = {m.start < than: m.target.value for m in reading.mentions
                 if m.is_value and m.target.column == other}
        if len(sides) == 2 and sides[True] != sides[False]:
            raise NoPlan(f"the two groups compared differ in {column} and in {other}; compare one thing at a time")


def _rows_after(reading: _Reading, index: int) -> int | None:
    """Where the rows' noun stands at ``index``, past a condition said of them ("more cancelled flights",
    the condition's words ending with the noun or before it), or a condition said as a plural of the rows that meet
    it ("more cancellations"); None where it does not."""
    words = _table_words(reading.base)
    mention = reading.mention_at(index)
    if mention is not None and mention.is_value and mention.start == index:
        last = reading.tokens[mention.end - 1]
        if last.stem in words:
            return mention.end - 1
        if reading.column(mention.target.column).type == BOOLEAN and last.norm != last.stem and last.kind == "word":
            return mention.end - 1  # "more cancellations", "fewer late arrivals": a condition's rows, as a plural
        index = mention.end
    if index < len(reading.tokens) and reading.free(index) and reading.tokens[index].stem in words:
        return index
    return None


def _form(reading: _Reading, comparative: int) -> tuple[str, list[int]] | None:
    """Whether the question asks whether ("is the average … greater than …": ``whether``) or by how much
    ("by how many grams …", "how many miles longer …", "how much …": ``difference``), with the words that
    ask it; None for any other comparative ("more than 300", "compare …")."""
    # "On average, are male Adelies heavier than …": the auxiliary after a leading "on average"
    opening = 2 if (reading.norm(0), reading.norm(1)) == ("on", "average") else 0
    if reading.norm(opening) in AUXILIARIES and reading.free(opening):
        return "whether", [opening]
    for index in range(comparative):
        if reading.norm(index) == "how" and reading.norm(index + 1) in ("many", "much") and reading.free(index):
            said = [index, index + 1]
            if reading.norm(index - 1) == "by":
                said.append(index - 1)
            if reading.norm(index + 1) == "much" and reading.norm(index + 2) in ("more", "less"):
                said.append(index + 2)
            return "difference", said
    if reading.yes_no:
        return "whether", [comparative]  # "More trips from SKY than from HAR — true or false?": a statement
    return None


def _value_after(reading: _Reading, index: int) -> _Mention | None:
    """The value named after "than", past "that of", "the average", the rows' noun and the like."""
    for position in range(index, min(len(reading.tokens), index + 6)):
        mention = reading.mention_at(position)
        if mention is not None and mention.is_value and mention.start == position:
            return mention
    return None


_PERIOD_KINDS = frozenset({"month", "year"})
"""Conditions that name one period of a date column each ("in July", "in 2012"): two of them, either side
of "than", are the two groups compared; so are two months of a year ("in July 2013"), each read as a range."""


def _periods_around(reading: _Reading, than: int) -> tuple[_Filter, _Filter, list[_Filter]] | None:
    """The period named before "than" and the one of the same column and kind named just after it, each as
    one condition, with the conditions they were read as."""
    periods = _periods(reading)
    after = next((start for start in periods if than < start <= than + 4), None)
    if after is None:
        return None
    side = periods[after][0]
    before = next((start for start in sorted(periods, reverse=True) if start < than
                   and (periods[start][0].column, periods[start][0].kind) == (side.column, side.kind)), None)
    if before is None:
        return None
    return periods[before][0], side, [*periods[before][1], *periods[after][1]]


def _periods(reading: _Reading) -> dict[int, tuple[_Filter, list[_Filter]]]:
    """Each period the question names, by where it was said: a month or a year ("in July"), or a range of
    dates said at one place ("in July 2013": from its first day to the next month's), as one condition."""
    found: dict[int, tuple[_Filter, list[_Filter]]] = {}
    said: dict[int, list[_Filter]] = {}
    for item in reading.filters:
        said.setdefault(item.start, []).append(item)
    for start, items in said.items():
        if len(items) == 1 and items[0].kind in _PERIOD_KINDS and items[0].op == "=":
            found[start] = (items[0], items)
        elif sorted(item.op for item in items) == ["<", ">="] and all(item.kind == "date" for item in items) \
                and items[0].column == items[1].column:
            low, high = sorted(items, key=lambda item: item.op != ">=")
            period = _Filter(low.column, "any of", (low.values[0], high.values[0]), "periods", start)
            found[start] = (period, items)
    return found


_UNION = frozenset({"and", "or", "combined", "together", "put"})


def _joined_values(reading: _Reading, first: _Mention) -> list[_Mention]:
    """Values of ``first``'s column said right after it, joined by "and", "or" or commas ("JFK and LaGuardia")."""
    joined: list[_Mention] = []
    end = first.end
    while end < len(reading.tokens):
        at = end + 1 if reading.norm(end) in ("and", "or") else end if "," in reading.gap(end) else None
        following = reading.mention_at(at) if at is not None else None
        if following is None or not following.is_value or following.start != at \
                or following.target.column != first.target.column:
            break
        joined.append(following)
        end = following.end
    return joined


def _side(mention: _Mention) -> _Filter:
    """The condition of one group: its value (the values one name names, "Newark": two airports)."""
    values = (mention.target.value or "", *mention.target.alternatives)
    return _Filter(mention.target.column, "in" if len(values) > 1 else "=", values,
                   "name" if len(values) > 1 else "value", mention.start)


_WEIGH = frozenset({"weigh", "weighs", "weighed"})


def _measure(reading: _Reading, comparative: int, said: list[int]) -> str | None:
    """The column compared when no mention names it: the one a unit among the words that ask by how much
    names ("miles"), else the one the comparative measures ("heavier": a mass). None leaves it to a
    mention ("the average bill depth … greater than …")."""
    if any(m for m in reading.mentions if not m.is_value and reading.column(m.target.column).type in NUMBER_TYPES):
        return None
    for index in range(min(said), comparative):
        names = next((group for group in UNIT_NAMES if reading.norm(index) in group), None)
        if names is None or not reading.free(index):
            continue
        found = [c.name for c in reading.table.columns if c.type in NUMBER_TYPES
                 and (phrase(c.name)[-1:] and phrase(c.name)[-1] in {*names, *map(stem, names)}
                      or described_in(c.description or "", names))]
        if len(found) == 1:
            reading.used.add(index)
            return found[0]
    word = reading.norm(comparative)
    if reading.norm(comparative - 1) in _WEIGH and word in ("more", "less"):
        word = "heavier"  # "do males weigh more than females": a mass, as "heavier" measures
    dimension = _dimension(word)
    if dimension is not None:
        columns = _measured_columns(reading, dimension[0])
        if len(columns) == 1:
            return columns[0]
    return None


def settle_shares_contrasted(reading: _Reading) -> None:
    """"Is the cancellation rate higher at LGA than at EWR?": a share set against another by a comparative is
    each group's share, side by side, as "higher at LGA or at EWR" asks (the groups, one value each of one
    column, kept by their condition) where both figures are asked for ("… ? show both percentages"); else the
    shares are set against each other as asked. Settled once the share and the measures are read."""
    if reading.contrast is None or reading.share_split is None or reading.measures or reading.count:
        return
    first, second, _, _ = reading.contrast
    if first.column != second.column or first.kind != "value" or second.kind != "value":
        return
    if not any(token.norm in ("both", "each") for token in reading.tokens):
        return  # "is JFK's cancellation rate lower than Newark's?": yes or no (or by how much), each side's share
    reading.filters.append(_Filter(first.column, "in", (*first.values, *second.values), "value", first.start))
    reading.contrast = None
    reading.compare = True
