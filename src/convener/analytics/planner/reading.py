"""Reading the structure of a question: comparisons, values, rankings, keys, counts and measures bound to
the mentions the catalog found."""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise

from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import (
    _common,
    _compared_forms,
    _dimension,
    _Mention,
    _single_row_noun,
    _table_words,
    _Target,
    _time_columns,
    _vocabulary,
    date_columns,
    named_as_rows,
)
from convener.analytics.planner.clock import _clock_columns, _read_clock_times, read_first_of_a_day, read_hour_of
from convener.analytics.planner.dates import _is_year, _read_dates, asked_of_each, excepting
from convener.analytics.planner.judgement import _read_judgement
from convener.analytics.planner.state import (
    _Filter,
    _find_phrase,
    _matches,
    _note_term,
    _numeric_mention,
    _Reading,
    _Scope,
    groups_set_against,
    listed_at,
)
from convener.analytics.planner.absence import read_absence, settle_presence
from convener.analytics.planner.arithmetic import read_arithmetic
from convener.analytics.planner.bounds import read_measure_of_number, read_open_bounds, settle_open_bounds
from convener.analytics.planner.contrast import OF_MEASURE, read_contrast, settle_shares_contrasted
from convener.analytics.planner.conversion import drop_restated_unit, read_measure_unit, read_stated_conversion
from convener.analytics.planner.dimensions import (
    _measured_columns,
    read_asked_measure,
    read_measure_nouns,
    read_ranking_superlative,
)
from convener.analytics.planner.grouping import passive, read_joined_key, read_keys_by_name
from convener.analytics.planner.combinations import read_combinations
from convener.analytics.planner.excluded import negated_before, read_excluded_bounds
from convener.analytics.planner.included import read_included
from convener.analytics.planner.roles import read_role_nouns
from convener.analytics.planner.joined_rows import (
    joined_name_column,
    joined_rows_key,
    name_column_of_key,
    read_which_joined_rows,
)
from convener.analytics.planner.lateness import check_condition_ends, read_how_late, read_later_measure, read_lateness
from convener.analytics.planner.ordering import read_sort_order
from convener.analytics.planner.periods import read_compared_periods
from convener.analytics.planner.ranges import read_number_ranges
from convener.analytics.planner.restated import restated_stems, said_as_described
from convener.analytics.planner.scope import _direction_of
from convener.analytics.planner.rivals import settle_rivals
from convener.analytics.planner.routes import read_routes
from convener.analytics.planner.spread import read_spread
from convener.analytics.planner.listing import (
    _identifier,
    asked_of_joined_rows,
    read_column_list,
    settle_shown_columns,
    settle_shown_value,
)
from convener.analytics.planner.sides import more_rows_at
from convener.analytics.planner.weekdays import read_weekdays
from convener.analytics.planner.yesno import read_any_row, read_exists
from convener.analytics.planner.units import UNIT_NAMES, described_in, unit_named, unit_of
from convener.analytics.planner.vocabulary import (
    CONTRACTED_DENIALS,
    LEAVE_OUT,
    LEAVE_OR_ARRIVE,
    _AGG_WORDS,
    AUXILIARIES,
    TRIP_END_WORDS,
    VALUE_NOUNS,
    _BUSY_WORDS,
    _BUCKETS,
    AVG,
    _COMPARATORS,
    _COMPARE_WORDS,
    _COUNT_PHRASES,
    _DIRECTION_PREPOSITIONS,
    _DISTINCT_WORDS,
    _FREQUENT,
    _GROUP_FILLER,
    _GROUP_MARKERS,
    _HIGH_WORDS,
    _LIST_WORDS,
    _LOW_WORDS,
    MAX,
    MEDIAN,
    MIN,
    _NEGATIONS,
    _SHARE_VERBS,
    _SHARE_WORDS,
    SUM,
    _DIMENSIONS,
    _IRREGULAR_DIMENSIONS,
    _TIE_FILLER,
    _TIE_WORDS,
    _TIME_HIGH,
    _TIME_LOW,
    _UNITS,
    _TOWARD,
    _YEAR_PREPOSITIONS,
)
from convener.analytics.shapes import BOOLEAN, NUMBER_TYPES, STRING, TIME_TYPES, TableInfo
from convener.analytics.wording import Token, parted, phrase, snake, stem


_MAGNITUDE_COMPARATIVES = frozenset({"higher", "lower", "greater", "smaller", "bigger", "larger", "worse", "better"})


def _read_compared_magnitude(reading: _Reading) -> None:
    """"Is the average departure delay worse at JFK or at LGA?", "UA vs AA: which one has the lower mean arrival
    delay?": a comparative of no particular measure, between groups set against each other, about a measure the
    question names, asks for each group's figure side by side (whoever reads them sees which)."""
    if not groups_set_against(reading) or not any(not m.is_value and reading.column(m.target.column).type
                                                  in NUMBER_TYPES for m in reading.mentions):
        return
    for index, token in enumerate(reading.tokens):
        # (a comparative with "than" after it is a contrast: "did AA have a higher average delay than UA")
        if token.norm in _MAGNITUDE_COMPARATIVES and reading.free(index) \
                and "than" not in {t.norm for t in reading.tokens[index + 1:]}:
            reading.used.add(index)
            reading.compare = True
            # "which one": which of the groups, no ranking of one row
            reading.used.update(i + 1 for i in range(index) if reading.norm(i) == "which"
                                and reading.norm(i + 1) == "one")
            return


def _read_unit_of(reading: _Reading, at: int, column: str) -> None:
    """The unit at ``at`` of a number compared with ``column``, read with the comparison; where it names the
    column too ("the average air time of flights longer than 2000 miles"), not a measure of its own."""
    reading.used.add(at)
    mention = reading.mention_at(at)
    if mention is not None and mention.end == at + 1 and not mention.is_value and mention.target.column == column \
            and mention in reading.mentions:
        reading.mentions.remove(mention)


def _read_dimensions(reading: _Reading) -> None:
    """Adjectives of measure: "bills longer than 55 mm" (a comparison on the bill's length), "the 3 longest
    bills" and "the heaviest penguin" (a ranking by length or mass). The adjective settles which column a
    word that could name several means ("bill": its length or its depth)."""
    for index, token in enumerate(reading.tokens):
        own = reading.mention_at(index)  # "fastest" said for a glossary formula's noun ("average speed")
        if index in reading.used or token.kind != "word" \
                or own is not None and (own.is_value or (own.start, own.end) != (index, index + 1)):
            continue
        found = _dimension(token.norm)
        if found is None:
            continue
        nouns, high, degree = found
        columns = _measured_columns(reading, nouns)
        if own is not None and own.target.column not in columns:
            continue
        if not columns and degree == "comparative" and reading.norm(index + 1) == "than":
            # "longer than 1,000 miles" where nothing is called a length: the column measured in miles
            unit = _column_of_unit(reading, index + 3)
            columns = [unit] if unit else []
        if not columns:
            continue
        before = reading.norm(index - 1)
        if degree == "base" and before in ("most", "least", "more", "less") and reading.free(index - 1):
            # "the most expensive orders", "less expensive than 20"
            degree = "superlative" if before in ("most", "least") else "comparative"
            high = high == (before in ("most", "more"))
            reading.used.add(index - 1)
        if degree == "comparative" and reading.norm(index + 1) == "than":
            number_at = index + 2
            number = reading.tokens[number_at] if number_at < len(reading.tokens) else None
            if number is None or number.number is None or number_at in reading.used:
                continue
            if _asks_of_aggregate(reading, index) and _column_after(reading, number_at + 1) is None:
                # "Is the average flipper length of Gentoos longer than 210 mm?": the average is what is longer
                reading.asked_bound = (">" if high else "<", number.number, number_at + 1)
                reading.used.update(range(index, number_at + 1))
                if unit_named(reading.norm(number_at + 1)) is not None:
                    reading.used.add(number_at + 1)
                continue
            column = _settle_column(reading, index, columns)
            if column is None:
                raise NoPlan(f"could not tell which of {', '.join(columns)} '{token.text}' compares")
            value = _in_column_unit(reading, column, number.number, number_at + 1)
            reading.filters.append(_Filter(column, ">" if high else "<", (value,), "number", index))
            reading.used.update(range(index, number_at + 1))
            after = number_at + 1
            while after < len(reading.tokens) and reading.tokens[after].norm in _UNITS:
                _read_unit_of(reading, after, column)
                after += 1
            continue
        if degree == "comparative" and groups_set_against(reading) and reading.norm(index + 1) != "than" \
                and reading.top is None:
            # "Biscoe or Dream: where are the penguins heavier on average?": the measure the adjective names,
            # compared between the groups (its aggregate said elsewhere)
            column = _settle_column(reading, index, columns)
            if column is not None:
                reading.mentions.append(_Mention(index, index + 1, _Target(reading.table.name, column), "dimension"))
                reading.mentions.sort(key=lambda mention: mention.start)
            continue
        if degree != "superlative":
            continue
        if reading.norm(index + 1) in ("average", "mean", "median", "total") and reading.free(index + 1):
            # "the shortest average flipper length": a ranking by the aggregate named after it, which the
            # measures read with its column, as after "lowest"
            reading.used.add(index)
            reading.direction = high
            continue
        column = _settle_column(reading, index, columns)
        if column is None:
            continue
        if _extremes_joined(reading, index, column, high):
            continue
        reading.used.add(index)
        reading.direction = high
        reading.order_measure = column
        if reading.top is None and {t.norm for t in reading.tokens} & {"which", "what", "show", "list", "who"}:
            reading.top = 1  # "which Gentoo penguins have the longest flippers": the best row (or rows, tied)
            reading.superlative_top = not {t.norm for t in reading.tokens} & {"which", "who"}


def _settle_column(reading: _Reading, index: int, columns: list[str]) -> str | None:
    """Which of ``columns`` an adjective at ``index`` measures: the one it names itself (a glossary formula's
    noun, "fastest" for "average speed") or a word beside it names (even ambiguously, "bill"), that word then
    read; else the only one."""
    for position in (index, index + 1, index - 1, index + 2, index - 2):
        mention = reading.mention_at(position)
        if mention is None or mention.is_value:
            continue
        named = [c for c in (mention.target.column, *mention.ambiguous) if c in columns]
        if len(named) == 1:
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            _note_term(reading, mention)
            return named[0]
    return columns[0] if len(columns) == 1 else None


def _read_ranked_bucket(reading: _Reading) -> None:
    """"Which month had the most flights", "the busiest month for flights out of LGA": the time bucket asked
    about, ranked."""
    if reading.direction is None:
        return
    for index, token in enumerate(reading.tokens[:-1]):
        bucket = _BUCKETS.get(reading.norm(index + 1))
        if token.norm in _BUSY_WORDS and reading.free(index) and reading.free(index + 1) and bucket is not None \
                and reading.top is None and reading.bucket in (None, bucket):
            reading.bucket = bucket
            reading.top = 1
            reading.used.update((index, index + 1))
            return
    for index, token in enumerate(reading.tokens[:-1]):
        if token.norm not in ("which", "what"):
            continue
        position = index + 1
        numbered = reading.top is not None and reading.tokens[position].number == reading.top
        if numbered:
            position += 1  # "which 2 months": the N read as the ranking's
        elif reading.top is not None:
            return
        if reading.norm(position) == "calendar" and reading.free(position):
            position += 1  # "which 2 calendar months"
        if reading.norm(position) in _BUCKETS and reading.free(position):
            reading.bucket = _BUCKETS[reading.norm(position)]
            reading.top = reading.top or 1
            reading.used.update(range(index, position + 1))
            return


def _one_row_ranked(reading: _Reading) -> bool:
    """Whether the superlative is said of one row: "the flight with the biggest departure delay", "a flight that
    had the greatest delay"."""
    words = _table_words(reading.base)
    for index, token in enumerate(reading.tokens):
        if token.stem not in words or reading.norm(index - 1) not in ("the", "a", "one"):
            continue
        after = index + 1
        if reading.norm(after) in ("that", "which") and reading.norm(after + 1) in ("had", "has"):
            after += 1
        # (an adjective of measure, "the longest delay", is read by what it measures, as a ranking of groups)
        if reading.norm(after) in ("with", "had", "has", "having") and reading.norm(after + 1) == "the" \
                and _superlative_after(reading, after + 2) and _dimension(reading.norm(after + 2)) is None:
            return True
    return False


def _read_ties(reading: _Reading) -> None:
    """"counting ties", "include ties", "if there is a tie, show all of them": a ranking keeps every row
    tied with its last."""
    for index, token in enumerate(reading.tokens):
        if token.norm not in _TIE_WORDS or index in reading.used:
            continue
        reading.ties = True
        reading.used.add(index)
        for position in range(max(0, index - 4), min(len(reading.tokens), index + 6)):
            if reading.norm(position) in _TIE_FILLER:
                reading.used.add(position)


def _read_comparisons(reading: _Reading) -> None:
    """"more than 8 cylinders", "horsepower greater than 200", "at least 30 mpg": a comparison binds the
    number after it to the numeric column named right after the number, else right before the phrase."""
    for index in range(len(reading.tokens)):
        for words, op in _COMPARATORS:
            if not _matches(reading, index, words):
                continue
            number_at = index + len(words)
            if reading.norm(number_at) == "$":
                number_at += 1
            number = reading.tokens[number_at] if number_at < len(reading.tokens) else None
            if number is None or number.number is None or number_at in reading.used:
                continue
            if _asks_of_aggregate(reading, index) and _column_after(reading, number_at + 1) is None:
                # "Is the average flipper length of Gentoos over 215 mm?": the average is what is over it
                reading.asked_bound = (op, number.number, number_at + 1)
                reading.used.update(range(index, number_at + 1))
                if unit_named(reading.norm(number_at + 1)) is not None:
                    reading.used.add(number_at + 1)  # its unit: no measure of its own
                break
            averaged_at = number_at + 1 + (unit_named(reading.norm(number_at + 1)) is not None)
            if _averaged_after(reading, averaged_at) and (column := _column_before(reading, index)
                                                          or _column_of_unit(reading, number_at + 1)) is not None:
                # "Do Gentoos weigh more than 5,000 grams on average?": the average is what is over it
                reading.asked_bound = (op, number.number, number_at + 1)
                reading.measures.append((column, "AVG"))
                reading.used.update(range(index, averaged_at + 2))
                break
            column = _column_after(reading, number_at + 1) or _column_before(reading, index) \
                or _column_of_unit(reading, number_at + 1)
            if column is not None and unit_named(reading.norm(number_at + 1)) is not None \
                    and unit_of(reading.column(column)) is None and _column_after(reading, number_at + 1) is None:
                # "departures under 1,800 miles": the unit names the column compared, not "departures" (a time)
                column = _column_of_unit(reading, number_at + 1) or column
            if column is None and _is_year(number) and _time_columns(reading.table):
                break  # "over 2005": a year, read with the dates
            if column is None and not _names_rows_at(reading, number_at + 1) and reading.bucket is not None \
                    and _rows_follow(reading, number_at + 1):
                # "which days had more than one (at least one) cancelled flight": the rows the conditions keep,
                # counted per period
                reading.group_conditions.append((op, number.number or 0))
                reading.used.update(range(index, number_at + 1))
                break
            if column is None and op == ">=" and number.number == 1 and _rows_follow(reading, number_at + 1):
                # "which carriers had at least one cancelled flight": the rows the other conditions keep
                # exist for each value listed or counted; the comparison adds nothing to them
                reading.used.update(range(index, number_at + 1))
                break
            if column is None and not _names_rows_at(reading, number_at + 1) and _rows_follow(reading, number_at + 1):
                # "on which days were at least two flights cancelled": the rows the conditions keep, counted in
                # each group (the groups asked for, or none: then declined as a condition without groups)
                reading.group_conditions.append((op, number.number or 0))
                reading.used.update(range(index, number_at + 1))
                break
            if column is None and _names_rows_at(reading, number_at + 1):
                # "among destinations with at least 50 flights": a condition on each group's rows
                reading.group_conditions.append((op, number.number or 0))
                reading.used.update(range(index, number_at + 2))
                reading.used.update(i for i in range(max(0, index - 5), index) if reading.norm(i) == "among")
                break
            if column is None:
                raise NoPlan(f"could not tell which column '{' '.join(words)} {number.text}' is about")
            value = _in_column_unit(reading, column, number.number, number_at + 1)
            reading.filters.append(_Filter(column, op, (value,), "number", index))
            reading.used.update(range(index, number_at + 1))
            if unit_named(reading.norm(number_at + 1)) is not None:
                _read_unit_of(reading, number_at + 1, column)
            break


def _asks_of_aggregate(reading: _Reading, comparison: int) -> bool:
    """Whether a yes/no question names an aggregate ("average", "total") before the comparison at
    ``comparison``, so that the number is compared with the aggregate rather than with each row."""
    return reading.norm(0) in AUXILIARIES and reading.free(0) and reading.asked_bound is None \
        and any(reading.norm(i) in _ASKED_AGGREGATES for i in range(1, comparison))


def _averaged_after(reading: _Reading, index: int) -> bool:
    """Whether a yes/no question says "on average" at ``index``, after the number it compares."""
    return reading.norm(0) in AUXILIARIES and reading.asked_bound is None \
        and reading.norm(index) == "on" and reading.norm(index + 1) == "average"


_ASKED_AGGREGATES = frozenset({"average", "mean", "median", "total"})


def _range_column(reading: _Reading, between: int, after: int) -> str | None:
    """The column of "between A and B": named after B (by name or unit), else right before "between"."""
    return _column_after(reading, after) or _column_before(reading, between) or _column_of_unit(reading, after)


def _rows_follow(reading: _Reading, index: int) -> bool:
    """Whether the rows' noun follows at ``index``, past values describing them ("one cancelled flight")."""
    words = _table_words(reading.base)
    for _ in range(3):
        mention = reading.mention_at(index)
        if mention is None or mention.start != index:
            break
        if reading.tokens[mention.end - 1].stem in words or mention.is_value and reading.tokens[index].stem in words:
            # "one cancelled flight" as a glossary term, "one flight" as the column flight, "one flight
            # cancelled" as the term said the other way round
            return True
        if mention.is_value and _condition_names_rows(reading, mention):
            return True  # "at least one cancellation", "two or more late arrivals": rows a condition names
        if not mention.is_value:
            return False
        index = mention.end
    return _names_rows_at(reading, index)


def _read_bounded_row_counts(reading: _Reading) -> None:
    """"Considering only destinations with 30 or more flights" (or "30+ flights"), "days where two or more flights
    were cancelled": a number of the rows with an open bound after it ("or more", "or fewer") is a condition on
    each group's rows, as "with at least 30 flights" is."""
    for index, token in enumerate(reading.tokens):
        if token.number is None or index not in reading.bounds or not reading.free(index):
            continue
        op, said = reading.bounds[index]
        after = max(said, default=index) + 1
        if reading.norm(index - 1) not in ("with", "having", "had", "have", "has", "were", "was", "did"):
            continue
        if _names_rows_at(reading, after):
            reading.used.update(range(index - 1, after + 1))
        elif _rows_follow(reading, after):  # "on which days were two or more flights cancelled": those rows
            reading.used.update(range(index - 1, after))
        else:
            continue
        reading.group_conditions.append((op, token.number))
        reading.bounds.pop(index)


def _names_rows_at(reading: _Reading, index: int) -> bool:
    """Whether the word at ``index`` names the queried table's rows ("50 flights")."""
    return 0 <= index < len(reading.tokens) and reading.tokens[index].kind == "word" and reading.free(index) \
        and reading.tokens[index].stem in _table_words(reading.base)


def _in_column_unit(reading: _Reading, column: str, number: float, unit_at: int) -> float:
    """A number of a comparison in the column's unit: "more than 2 hours" on a column in minutes is 120. A
    unit that cannot be converted to the column's is refused rather than compared as if it were the same."""
    said = unit_named(reading.norm(unit_at))
    if said is None:
        return number
    found = reading.table.column(column)
    own = unit_of(found) if found is not None else None
    if own is None or own == said:
        return number
    factor = reading.factor(said, own)
    if factor is None:
        raise NoPlan(f"{column} is in {own}, not {said}")
    return number * factor


def _column_of_unit(reading: _Reading, index: int) -> str | None:
    """The one numeric column measured in the unit written at ``index`` ("more than 5000 grams" is the
    column whose name ends in _g or whose description says grams), the unit then read. Where no column or
    several are in that unit, None: the comparison stays unexplained and is refused."""
    if index >= len(reading.tokens):
        return None
    names = next((group for group in UNIT_NAMES if reading.norm(index) in group), None)
    if names is None:
        return None
    found = [column.name for column in reading.table.columns if column.type in NUMBER_TYPES
             and (phrase(column.name)[-1:] and phrase(column.name)[-1] in {*names, *map(stem, names)}
                  or described_in(column.description or "", names))]
    if len(found) > 1:
        # "90 minutes in the air": of the columns in minutes, the one named right after the unit
        named = [m for m in reading.mentions if not m.is_value and index < m.start <= index + 3
                 and m.target.column in found and all(reading.free(i) for i in range(index + 1, m.start))]
        if len(named) != 1:
            return None
        reading.mentions.remove(named[0])
        reading.used.update(range(index, named[0].end))
        _note_term(reading, named[0])
        return named[0].target.column
    if len(found) != 1:
        return None
    reading.used.add(index)
    return found[0]


def _column_after(reading: _Reading, index: int) -> str | None:
    """The numeric column named just after a number, past units ("30 mm of precipitation", "6 hours in the
    air" when the air names a column: air_time)."""
    start = index
    while index < len(reading.tokens) and (reading.tokens[index].norm in _UNITS or reading.norm(index) == "of"):
        reading.used.add(index)
        index += 1
    if reading.norm(index) == "in" and reading.free(index):
        past = index + 2 if reading.norm(index + 1) == "the" else index + 1
        if _numeric_mention(reading, past) is not None:
            reading.used.update(range(index, past))
            index = past
    mention = _numeric_mention(reading, index) or _condition_mention(reading, index)
    if mention is None or mention.is_value and index == start and _condition_names_rows(reading, mention):
        return None  # (with a unit between, "30 minutes late", the number is the condition's column's)
    reading.mentions.remove(mention)
    reading.used.update(range(mention.start, mention.end))
    _note_term(reading, mention)
    if reading.scope is not None and mention.target.column in reading.scope.virtual \
            and reading.column(mention.target.column).type == BOOLEAN:
        # "at least 30 minutes late": the column the glossary's "late" compares, with this number instead
        column = reading.scope.virtual[mention.target.column].find(exp.Column)
        return column.name if column is not None else None
    return mention.target.column


def _condition_names_rows(reading: _Reading, mention: _Mention) -> bool:
    """Whether a condition said after a number names the rows counted ("at least 2 large loans", "20 or more late
    arrivals", "at least one cancellation") rather than the column its number replaces ("more than 30 late")."""
    last = reading.tokens[mention.end - 1]
    return last.stem in _table_words(reading.base) \
        or reading.column(mention.target.column).type == BOOLEAN and last.norm not in ("late", "early")


def _condition_mention(reading: _Reading, index: int) -> _Mention | None:
    """The mention at ``index`` when it is a glossary condition on one numeric column ("late")."""
    mention = reading.mention_at(index)
    if mention is None or reading.scope is None or mention.target.column not in reading.scope.virtual \
            or reading.column(mention.target.column).type != BOOLEAN:
        return None
    columns = list(reading.scope.virtual[mention.target.column].find_all(exp.Column))
    if len(columns) != 1 or reading.base.column(columns[0].name) is None \
            or reading.column(columns[0].name).type not in NUMBER_TYPES:
        return None
    return mention


def _column_before(reading: _Reading, index: int) -> str | None:
    """The numeric column named just before a comparison, past a few stopwords ("the high temperature was
    above")."""
    index -= 1
    steps = 0
    nouns: list[int] = []
    while index >= 0 and steps < 4:
        mention = _numeric_mention(reading, index)
        if mention:
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            reading.used.update(nouns)
            _note_term(reading, mention)
            return mention.target.column
        if reading.norm(index) in _READING_NOUNS:
            nouns.append(index)
        if not (reading.tokens[index].is_stopword or reading.tokens[index].norm in ("was", "is", "were", "are")
                or reading.norm(index) in _READING_NOUNS and reading.free(index)):
            return None
        index -= 1
        steps += 1
    return None


_READING_NOUNS = frozenset({"reading", "readings", "measurement", "measurements", "value", "values", "level",
                            "levels", "figure", "score", "scores"})
"""Nouns for what a column holds, between it and a comparison ("a delta 15N reading above 10"): the column's."""


def _read_counted_numbers(reading: _Reading) -> None:
    """"4 cylinders", "8 cylinder cars": a number right before an integer column means equality."""
    for index, token in enumerate(reading.tokens):
        if index in reading.used or token.number is None:
            continue
        mention = _numeric_mention(reading, index + 1)
        if mention is None or reading.column(mention.target.column).type != "INTEGER" \
                or reading.column(mention.target.column) in _time_columns(reading.table):
            continue
        if reading.norm(index - 1) in ("top", "bottom", "which", "what", "first", "last"):
            continue
        op = reading.bounds.pop(index, ("=", ()))[0]  # "5,500 g or more"
        reading.filters.append(_Filter(mention.target.column, op, (token.number,), "number", index))
        reading.mentions.remove(mention)
        reading.used.update(range(index, mention.end))
        _note_term(reading, mention)


def _read_values(reading: _Reading) -> None:
    """Values named in the question filter their column; several values of one column make an IN, and a
    negation just before ("not from Japan", "excluding rain") makes it NOT. A true/false column named as a
    condition ("returned", "inactive") filters on its truth, flipped by a negation ("not returned")."""
    by_column: dict[tuple[str, bool], list[str]] = {}
    starts: dict[tuple[str, bool], int] = {}
    said: dict[tuple[str, bool], list[_Mention]] = {}
    previous: tuple[_Mention, bool] | None = None
    _check_alternatives(reading, sorted((m for m in reading.mentions if m.is_value), key=lambda m: m.start))
    for mention in sorted((m for m in reading.mentions if m.is_value), key=lambda m: m.start):
        if reading.norm(mention.start - 1) == "no":
            # "which islands have no Gentoo penguins" asks for groups without such rows, not for other rows
            raise NoPlan(f"finding what has no '{_text(reading, mention)}' is not something this planner does")
        begin = mention.start
        while begin > 0 and begin - 1 in reading.used and reading.mention_at(begin - 1) is None \
                and (reading.tokens[begin - 1].text[:1].isupper() or reading.norm(begin - 1) in ("and", "or")):
            # "didn't go to Atlanta (ATL)", "not by United or Delta (UA, DL)": the values' names, read as said
            # by them, stand between
            begin -= 1
        negations = [i for i in range(max(0, begin - 3), mention.start) if reading.norm(i) in _NEGATIONS]
        # "whose carrier is none of DL, UA or AA"
        negations += [j for i in range(max(0, begin - 2), mention.start - 1) if reading.norm(i) == "none"
                      and reading.norm(i + 1) == "of" and reading.free(i) for j in (i, i + 1)]
        negations += _all_but(reading, begin)
        # ("flights that left out of JFK" say where they left from)
        negations += [j for i in range(max(1, begin - 2), mention.start) if reading.norm(i) == "out"
                      and reading.norm(i - 1) in LEAVE_OUT and reading.norm(i + 1) != "of" and reading.free(i)
                      for j in (i - 1, i)]
        # "leaving out the ones to LAX", "ruling out those from JFK": the rows named again between
        out = next((i for i in range(begin - 1, max(0, begin - 5), -1) if reading.norm(i) == "out"), None)
        if not negations and out is not None and reading.norm(out - 1) in LEAVE_OUT and reading.free(out) \
                and reading.norm(out + 1) != "of" \
                and all(reading.norm(i) in _NAMED_AGAIN and (reading.free(i) or i == begin - 1)
                        or _rows_noun(reading, i)
                        for i in range(out + 1, begin)):  # "leave out birds from North": the rows' noun
            # ("from" may have been read already: it chose the join a name is read through)
            negations = [out - 1, out, *range(out + 1, begin)]
        denial = next((i for i in range(begin - 1, max(-1, begin - 6), -1)
                       if reading.norm(i) in ("excluding", "except", "besides", "without")), None)
        if not negations and denial is not None and reading.free(denial) \
                and all(reading.norm(i) in _NAMED_AGAIN and (reading.free(i) or i == begin - 1)
                        or reading.norm(i) in _DIRECTION_PREPOSITIONS  # (read as the way to a joined table)
                        or _rows_noun(reading, i) for i in range(denial + 1, begin)):
            # "excluding the ones from Biscoe", "except those on Dream", "excluding flights out of Newark": the
            # rows named again between
            negations = list(range(denial, begin))
        leaving = next((i for i in (begin - 1, mention.start - 1) if reading.norm(i) in LEAVE_OUT), None)
        if not negations and leaving is not None and reading.norm(mention.end) == "out" \
                and reading.free(mention.end):
            # "leaving Newark out" ("leaving" may have been read as the direction that picked the origin)
            negations = [leaving, mention.end]
        if not negations and reading.column(mention.target.column).type == BOOLEAN:
            negations = _clause_negation(reading, mention)
        if not negations:
            negations = _denied_verb_before(reading, begin)
        negated = bool(negations) or _continues_negated_list(reading, previous, mention)
        previous = (mention, negated)
        reading.used.update(negations)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
        _drop_named_column(reading, mention)
        mention = _check_direction(reading, mention)
        if reading.column(mention.target.column).type == BOOLEAN:
            truth = (mention.target.value == "true") != negated
            reading.filters.append(_Filter(mention.target.column, "=", ("true" if truth else "false",), "boolean",
                                           mention.end - 1))
            continue
        key = (mention.target.column, negated)
        by_column.setdefault(key, [])
        starts.setdefault(key, mention.end - 1)
        said[key] = [*said.get(key, []), mention]
        for value in (mention.target.value or "", *mention.target.alternatives):
            if value not in by_column[key]:
                by_column[key].append(value)
    for (column, negated), values in by_column.items():
        _check_not_a_route(reading, said[(column, negated)])
        op = ("not in" if negated else "in") if len(values) > 1 else ("<>" if negated else "=")
        # The names one word names ("Newark": two airports) are one place asked about, not places compared.
        one = said[(column, negated)]
        kind = "name" if len(one) == 1 and one[0].target.alternatives else "value"
        either = _said_as_alternatives(reading, one)
        more = _more_rows_asked(reading)
        if more is not None and len(one) > 1 and not either and not negated:
            # "Were there more flights to Orlando or to Miami?": each group's rows counted answers it
            reading.used.add(more)
            reading.compare = True
        reading.filters.append(_Filter(column, op, tuple(values), kind, starts[(column, negated)], either=either))


def _check_direction(reading: _Reading, value: _Mention) -> _Mention:
    """A value of the column of one end of a trip said with a word of the other end: the other end's column,
    where it holds the value too ("trips that went to RDK", RDK an origin and a destination); declined where it
    does not ("flights that went to JFK", JFK only ever an origin: reading it as where they came from would
    answer another question). The mention as read."""
    column = reading.column(value.target.column)
    if reading.virtual(column.name) or reading.scope is None:
        return value
    end = _direction_of(column)
    before = value.start - 1
    while reading.norm(before) in ("the", "a", "an"):
        before -= 1
    word, previous = reading.norm(before), reading.norm(before - 1)
    said = "toward" if word in ("to", "into") or word == "at" and previous in _TOWARD else \
        "away" if word == "from" or word == "of" and previous == "out" else None
    if end is not None and said is not None and said != end:
        held = reading.scope.held_by.get(value.target.value or "", frozenset())
        other = next((c for c in reading.table.columns if c.name in held and _direction_of(c) == said), None)
        if other is not None:
            return replace(value, target=replace(value.target, column=other.name))
        where = "to" if said == "toward" else "from"
        its_end = "where the rows go" if end == "toward" else "where the rows come from"
        raise NoPlan(f"'{_text(reading, value)}' is a value of {column.name} ({its_end}), but the question asks of "
                     f"rows {where} it")
    return value


def _check_not_a_route(reading: _Reading, said: list[_Mention]) -> None:
    """Two values of one column with "to" alone between them ("LaGuardia to Atlanta flights") are the ends
    of a route, each another column's: read as values of the one column, they would be alternatives."""
    for first, second in pairwise(sorted(said, key=lambda mention: mention.start)):
        if second.start == first.end + 1 and reading.norm(first.end) in ("to", "into", "toward", "towards"):
            raise NoPlan(f"'{_text(reading, first)}' and '{_text(reading, second)}' look like a route's two "
                         f"ends, but both were read as values of {first.target.column}")


def _check_alternatives(reading: _Reading, values: list[_Mention]) -> None:
    """Values of two columns joined by "or" ("to Atlanta or Miami (MIA)": an airport's name and a code) are
    either of two conditions, which the planner's conditions (all of them met) cannot say: declined rather
    than read as both."""
    for first, second in zip(values, values[1:]):
        between = [reading.norm(i) for i in range(first.end, second.start) if not _glossing(reading, i)]
        if first.target.column != second.target.column and between and set(between) <= {"or", "either"}:
            raise NoPlan(f"'{_text(reading, first)}' or '{_text(reading, second)}' are values of two columns "
                         f"({first.target.column}, {second.target.column}); either of them is not planned")


def _glossing(reading: _Reading, index: int) -> bool:
    """Whether the word at ``index`` is a name read as said by the value in parentheses after it."""
    return index in reading.used and reading.mention_at(index) is None and reading.tokens[index].text[:1].isupper()


def _said_as_alternatives(reading: _Reading, said: list[_Mention]) -> bool:
    """Whether the values were joined by "or" and nothing else that joins ("LAX or SFO", "AA, DL or UA"), in a
    question that does not ask to choose between them ("which had the longer sea time, Oslo or Bergen")."""
    between = {reading.norm(i) for first, second in zip(said, said[1:]) for i in range(first.end, second.start)}
    choosing = any(token.norm in _CHOOSING and not _relative(reading, index) or token.norm in OF_MEASURE
                   for index, token in enumerate(reading.tokens)) or _more_rows_asked(reading) is not None
    return len(said) > 1 and "or" in between and not between & {"and", "vs", "versus", "against", "with"} \
        and not choosing


_CHOOSING = frozenset({"which", "whose", "who", "whom"})


def _relative(reading: _Reading, index: int) -> bool:
    """Whether "whose" (or "who", "whom") at ``index`` opens a relative clause about the noun before it ("planes
    whose manufacturer is AIRBUS or AIRBUS INDUSTRIE"), which asks no choice."""
    return reading.norm(index) in ("whose", "who", "whom") and index > 0 \
        and reading.tokens[index - 1].kind == "word" and not parted(reading.tokens, index - 1, index)


def _more_rows_asked(reading: _Reading) -> int | None:
    """Where "more" or "fewer" before the rows' noun asks which of the groups said has more rows ("Were there
    more flights to Orlando or to Miami?"), in a question with no "than" (which would set a number or another
    side against them)."""
    if any(token.norm == "than" for token in reading.tokens):
        return None
    return more_rows_at(reading, of_conditions=False)


_ALL_BUT = frozenset({"anything", "everything", "all", "any"})
"""Words that with "but" right before a value exclude it ("anything but Turbo-fan"); "but" alone joins clauses."""


def _all_but(reading: _Reading, begin: int) -> list[int]:
    """"anything but Turbo-fan", "all but Adelie", "any port but Tromso": "but" right before a value, after a
    word for every other value (a column's name may stand between), excludes the value: the words that say so."""
    but = begin - 1
    if but < 1 or reading.norm(but) != "but" or not reading.free(but):
        return []
    for index in range(but - 1, max(-1, but - 4), -1):
        if reading.norm(index) in _ALL_BUT and reading.free(index):
            return [index, but]
        found = reading.mention_at(index)
        if found is None or found.is_value:
            return []
    return []
_NAMED_AGAIN = frozenset({"the", "ones", "those", "one", "that", "to", "from", "at", "on", "in", "of"})
"""Words that name the rows again between "leaving out" and the value that picks them ("the ones to")."""


def _clause_negation(reading: _Reading, mention: _Mention) -> list[int]:
    """"nests not observed with a full clutch", "flights that never departed", "leaving out the ones that got
    cancelled": a negation further back than a value's own words still negates a true/false condition when only
    free words (no other mention) stand between them."""
    for index in range(mention.start - 1, max(-1, mention.start - 7), -1):
        if reading.mention_at(index) is not None or not reading.free(index):
            return []
        # ("never" right before the condition only: "airlines that never had a cancellation" is no condition of
        # a flight, but of the airlines without one)
        if reading.norm(index) in _NEGATIONS or reading.norm(index) == "never" and index == mention.start - 1:
            return [index]
        # "leaving out the ones that got cancelled"
        if reading.norm(index) == "out" and reading.norm(index - 1) in LEAVE_OUT and reading.free(index - 1):
            return [index - 1, index]
        if reading.norm(index) in _FAIL and reading.norm(index + 1) == "to":  # "nests that failed to reach a …"
            return [index, index + 1]
    return []


_FAIL = frozenset({"fail", "fails", "failed", "failing"})


def _denied_verb_before(reading: _Reading, begin: int) -> list[int]:
    """"Gentoos that were not sampled in the PAL0708 season": a denial before a participle and the small words
    that lead to a value ("in the") denies the value, however many of those words stand between."""
    for index in range(begin - 1, max(-1, begin - 7), -1):
        if reading.mention_at(index) is not None or not reading.free(index):
            return []
        word = reading.norm(index)
        if word in ("not", *CONTRACTED_DENIALS):
            return [index]
        if not (reading.tokens[index].is_stopword or passive(word) or word in _LEADING_TO_VALUE):
            return []
    return []


_LEADING_TO_VALUE = frozenset({"from", "by", "during"})
"""Prepositions, not stopwords, that may lead from a denied verb to its value ("not sampled during …")."""


_LIST_JOINERS = frozenset({",", "and", "or", "nor"})


def _rows_noun(reading: _Reading, index: int) -> bool:
    """Whether the queried table's own noun for its rows, naming no column, stands at ``index``."""
    return reading.mention_at(index) is None and reading.tokens[index].stem in _table_words(reading.base)


def _continues_negated_list(reading: _Reading, previous: tuple[_Mention, bool] | None, mention: _Mention) -> bool:
    """"other than UA, B6 and EV": a value joined to a negated value of the same column only by commas and
    "and"/"or" (and the value's own name, if said before it) is in the same negated list, not a condition of
    its own."""
    if previous is None or not previous[1] or previous[0].target.column != mention.target.column:
        return False
    begin = mention.start
    while begin > previous[0].end and begin - 1 in reading.used and reading.mention_at(begin - 1) is None \
            and reading.tokens[begin - 1].text[:1].isupper():
        begin -= 1  # "other than United (UA), Delta (DL) and American (AA)": each value said by its name too
    between = range(previous[0].end, begin)
    return all(reading.norm(i) in _LIST_JOINERS for i in between)


_TRUTH_WORDS = {"true": True, "false": False, "yes": True, "no": False}


def _read_truth_words(reading: _Reading) -> None:
    """"clutch_completion false", "whose returned is true": a true/false column named with the truth value
    it must have, which the column's mention (read as "is true") then says ("set to false"); "clutch completion
    true vs. false" sets its two values against each other: the column is a group key."""
    for mention in list(reading.mentions):
        if not mention.is_value or reading.column(mention.target.column).type != BOOLEAN:
            continue
        marked = mention.start - 1 - (reading.norm(mention.start - 1) == "as")
        if reading.norm(marked) in _MARKING and all(reading.free(i) for i in range(marked, mention.start)):
            reading.used.update(range(marked, mention.start))  # "nests flagged as clutch-completed": the condition
        at = mention.end
        # (the verb may have been read as a share's: "percentage of nests where clutch_completion is false";
        # "clutch completion marked as false")
        while reading.norm(at) in ("is", "was", "=", "equals", "set", "to", "as") or reading.norm(at) in _MARKING:
            at += 1
        if reading.norm(at) not in _TRUTH_WORDS or not reading.free(at):
            continue
        other = at + 1
        if reading.norm(other) in ("vs", "versus", "or", "and") and reading.free(other) \
                and reading.norm(other + 1) in _TRUTH_WORDS and reading.free(other + 1) \
                and _TRUTH_WORDS[reading.norm(other + 1)] != _TRUTH_WORDS[reading.norm(at)]:
            reading.mentions.remove(mention)
            reading.keys.append(mention.target.column)
            reading.used.update(range(mention.start, other + 2))
            _note_term(reading, mention)
            continue
        truth = _TRUTH_WORDS[reading.norm(at)] == (mention.target.value == "true")
        target = replace(mention.target, value="true" if truth else "false")
        start = mention.start
        while reading.norm(start - 1) in _MARKED and reading.free(start - 1):
            start -= 1  # "nests marked clutch_completion yes": the marking is the column's value
        reading.mentions[reading.mentions.index(mention)] = _Mention(start, at + 1, target, mention.source,
                                                                     mention.ambiguous)


_MARKED = frozenset({"marked", "flagged", "labelled", "labeled", "set", "as", "with"})
_MARKING = frozenset({"marked", "flagged", "labelled", "labeled", "tagged"})


def _drop_named_column(reading: _Reading, value: _Mention) -> None:
    """"Turbo-jet engines", "Dream island": the column a value belongs to, named right after it, is said by
    the value (even where the word could also name another column, as "engines" could)."""
    following = reading.mention_at(value.end)
    if following is not None and not following.is_value and following.start == value.end \
            and value.target.column in (following.target.column, *following.ambiguous):
        reading.mentions.remove(following)
        reading.used.update(range(following.start, following.end))
    before = value.start - 1  # "whose engine is not Turbo-fan", "carriers other than UA"
    while before >= 0 and reading.norm(before) in ("is", "was", "not", "are", "were", "=", "equal", "equals",
                                                   "other", "than", "except", "excluding", "besides", "but",
                                                   *_ALL_BUT):
        before -= 1
    preceding = reading.mention_at(before)
    # "per species, excluding Chinstraps": a column right after a group marker is the key asked for, and
    # the value after it a condition of its own, not the column's name said again
    # ("operated by carriers other than UA": "by" after a participle names who did it, no key)
    # ("by species and sex (males and females only)": a column joined by "and" to a key is a key too)
    keyed = preceding
    while keyed is not None and reading.norm(keyed.start - 1) == "and":
        earlier = reading.mention_at(keyed.start - 2)
        keyed = earlier if earlier is not None and not earlier.is_value else None
    # ("every flight by carrier HA": the value right after its column, nothing between, names it; no key)
    named = preceding is not None and preceding.end == value.start and reading.gap(value.start).strip() == ""
    grouped = keyed is not None and not named and any(
        tuple(reading.norm(keyed.start - len(marker) + offset) for offset in range(len(marker))) == marker
        and not (marker == ("by",) and passive(reading.norm(keyed.start - 2)))
        for marker in _GROUP_MARKERS)
    if preceding is not None and not preceding.is_value and preceding.end == before + 1 and not grouped \
            and value.target.column in (preceding.target.column, *preceding.ambiguous):
        reading.mentions.remove(preceding)
        reading.used.update(range(preceding.start, preceding.end))


def _read_top(reading: _Reading) -> None:
    """"top 5", "bottom 3", "5 heaviest", "which 3 …": an ordering with a limit. Direction comes from the
    nearest superlative ("lowest", "worst" → ascending)."""
    tokens = reading.tokens

    def in_value(index: int) -> bool:  # "Hill Top" names a place, not a ranking
        mention = reading.mention_at(index)
        return mention is not None and mention.is_value

    for index, token in enumerate(tokens):
        if index in reading.used or in_value(index):
            continue
        if token.norm in ("top", "bottom", "first", "last") and _number_at(reading, index + 1) \
                and not _pronoun_one(reading, index + 1):
            reading.top = int(tokens[index + 1].number or 0)
            reading.descending = token.norm in ("top", "first")
            reading.used.update((index, index + 1))
            if reading.norm(index + 2) in _BUSY_WORDS:
                reading.used.add(index + 2)  # "top 5 busiest routes"
            return
        if token.number is not None and token.is_integer and _superlative_after(reading, index + 1):
            reading.top = int(token.number)
            reading.used.add(index)
            if reading.norm(index + 1) in ("most", "least") and reading.norm(index + 2) in _FREQUENT:
                reading.used.add(index + 2)  # "5 most frequent destinations": ranked by their rows' number
                if reading.norm(index + 2) in ("frequently", "often") and passive(reading.norm(index + 3)) \
                        and reading.free(index + 3):
                    reading.used.add(index + 3)  # "the 3 most frequently flown routes": what the rows did
            if reading.norm(index + 1) in _BUSY_WORDS:
                reading.used.add(index + 1)  # "the 5 busiest routes": ranked by their rows' number, most first
            return
        if token.norm in ("which", "what") and _number_at(reading, index + 1):
            reading.top = int(tokens[index + 1].number or 0)
            reading.used.update((index, index + 1))
            return
        # "the 5 planes with the most seats"; "5 penguins with the longest bills", "list 3 …": a number that
        # opens the question or follows a verb of listing counts the rows as "the" would
        opening = token.number is not None and (index == 0 or reading.norm(index - 1) in _OPENING_VERBS)
        number = index if opening else index + 1
        if (token.norm == "the" and _number_at(reading, index + 1) or opening and _number_at(reading, index)) \
                and _direction(tokens[number + 1:]) is not None:
            after = number + 1
            while (value := reading.mention_at(after)) is not None and value.is_value and value.start == after:
                after = value.end  # "the 3 Adelie penguins with the longest flippers": values of the rows
            named = reading.mention_at(after)
            # "the five Adelies with the shallowest bills": the values themselves name the rows counted
            valued = after > number + 1 and reading.norm(after) in _ROWS_FOLLOWERS
            if named is not None and not named.is_value and named.start == after or valued \
                    or after < len(tokens) and reading.tokens[after].stem in _rows_words(reading):
                # "the 5 planes with the most seats"
                # "the two tail numbers with the most flights"
                reading.top = int(tokens[number].number or 0)
                reading.used.update((index, number))
                return
    for index, token in enumerate(tokens):
        if token.norm in ("top", "bottom") and index not in reading.used and not in_value(index):
            if token.norm == "top" and _names_one_number(reading, index + 1):
                return  # "the top speed of any flight": the greatest speed, an aggregate, not a list of rows
            reading.top, reading.descending = 10, token.norm == "top"
            reading.used.add(index)
            return


_ROWS_FOLLOWERS = frozenset({"with", "that", "who", "which", "whose", "having"})
"""Words after which a value named right after a ranking's N stands for the rows it counts."""

_OPENING_VERBS = frozenset({"list", "show", "give", "name", "find", "me", "get"})
"""Verbs a request for N rows opens with ("list 3 penguins with …", "show me 5 …")."""


def _rows_words(reading: _Reading) -> set[str]:
    """The words naming the queried table's rows or a joined table's ("the 3 airlines with …")."""
    words = set(_table_words(reading.base))
    for join in reading.scope.joins if reading.scope else ():
        words |= _table_words(join.table)
    return words


def _names_one_number(reading: _Reading, index: int) -> bool:
    """Whether a numeric column is named at ``index`` in the singular ("top speed", not "top delays")."""
    mention = _numeric_mention(reading, index)
    if mention is None or mention.start != index:
        return False
    last = reading.tokens[mention.end - 1].norm
    return not last.endswith("s") or last.endswith("ss")


def _number_at(reading: _Reading, index: int) -> bool:
    """Whether a small whole number, unclaimed, stands at ``index`` (a ranking's N)."""
    token = reading.tokens[index] if index < len(reading.tokens) else None
    return token is not None and token.number is not None and token.is_integer and index not in reading.used \
        and 0 < (token.number or 0) <= 1000


def _pronoun_one(reading: _Reading, index: int) -> bool:
    """Whether "one" at ``index`` stands for a thing said before rather than counting what follows: "with the
    last one (PAL0910)", "the first one" at the question's end (not "the first one hundred flights")."""
    if reading.norm(index) != "one":
        return False
    after = reading.mention_at(index + 1)
    return index + 1 >= len(reading.tokens) or after is not None and after.is_value and after.start == index + 1


def _superlative_after(reading: _Reading, index: int) -> bool:
    """Whether a superlative follows ("5 heaviest", "3 most …")."""
    if reading.norm(index) in ("most", "least"):
        return True
    token = reading.tokens[index] if index < len(reading.tokens) else None
    return token is not None and token.kind == "word" and (
        token.norm in _HIGH_WORDS or token.norm in _LOW_WORDS or token.norm.endswith("est"))


def _direction(tokens: list[Token]) -> bool | None:
    """Whether the question ranks from the top (True) or the bottom (False), from its first superlative
    ("highest", "heaviest", "top" / "lowest", "worst", "bottom"); None when it has none."""
    for token in tokens:
        if token.norm in _LOW_WORDS or token.norm == "bottom":
            return False
        if token.norm in _HIGH_WORDS or (token.kind == "word" and token.norm.endswith("est") and len(token.norm) > 5):
            return True
    return None


def _read_keys(reading: _Reading, table_words: set[str]) -> None:
    """"by origin", "per stock symbol", "for each site", "each number of cylinders": group keys; in a top
    question, "by <numeric column>" is what to rank by. A joined table's name may come before its column
    ("per plane manufacturer")."""
    if reading.scope is not None:
        table_words = table_words.union(*(_table_words(join.table) for join in reading.scope.joins))
    index = 0
    while index < len(reading.tokens):
        marker = next((words for words in _GROUP_MARKERS if _matches(reading, index, words)), None)
        if marker is None:
            index += 1
            continue
        after = index + len(marker)
        restating: list[int] = []  # "each New York airport", "per NYC origin airport": what every row is
        while after < len(reading.tokens) and (
                reading.free(after) and (reading.norm(after) in _GROUP_FILLER or reading.norm(after) in _AGG_WORDS
                                         or reading.tokens[after].stem in table_words
                                         # "for each of the three origin airports": how many groups there are
                                         or reading.tokens[after].number is not None and reading.norm(after - 1) == "the")
                or after in reading.used and reading.mention_at(after) is None
                and reading.tokens[after].stem in table_words  # "of each aircraft type": the rows, then the key
                or reading.free(after) and reading.mention_at(after) is None and said_as_described(reading, after)):
            if reading.free(after) and said_as_described(reading, after):
                restating.append(after)
            after += 1
        described = _described_key(reading, restating, after)
        if described is None and restating and restating[-1] + 1 < after:
            # "from each NYC airport" with the airports joined (a route's other end): the noun right after the
            # words of the description was passed over as a joined table's; it is the column described
            described = _described_key(reading, restating, restating[-1] + 1)
            after = restating[-1] + 1 if described is not None else after
        if described is not None:
            reading.keys.append(described)
            reading.used.update(range(index, after + 1))
            index = after + 1
            continue
        if reading.free(after) and reading.mention_at(after) is None and _names_column(reading, after + 1) \
                and reading.tokens[after].stem in _table_words(reading.base) | set(phrase(reading.base.description or "")):
            after += 1  # "each aircraft type" where the table's description calls its planes aircraft
        of = after + 2  # "per hour of scheduled departure", "by the hour of their scheduled departure"
        while reading.norm(after + 1) == "of" and reading.norm(of) in ("the", "their", "its") and reading.free(of):
            of += 1
        hour_of = reading.mention_at(of) if reading.norm(after + 1) == "of" else None
        if hour_of is not None and hour_of.start == of and not hour_of.is_value \
                and read_hour_of(reading, hour_of.target.column, after):
            reading.used.update(range(after + 1, of))  # the key, by its hour
            after = of
        elif reading.norm(after) in _GROUP_FILLER and reading.norm(after + 1) == "of" and _names_column(reading, after + 2):
            # "each type of engine": the column after "of", whatever "type" could also name
            skipped = reading.mention_at(after)
            if skipped is not None:
                reading.mentions.remove(skipped)
            reading.used.update((after, after + 1))
            after += 2
        mention = reading.mention_at(after)
        if mention and not mention.is_value and mention.start == after == mention.end - 1 \
                and reading.tokens[after].stem in _single_row_noun(reading.base.description or ""):
            # "the average number of seats per flight": each of the rows, not a group of them by a column
            # that happens to be called as they are
            reading.mentions.remove(mention)
            reading.used.update(range(index, after + 1))
            index = after + 1
            continue
        if mention and not mention.is_value and mention.start == after and marker == ("by",) \
                and "," in reading.gap(index) and "," in reading.gap(mention.end):
            # "Which airline, by full name, flew the most flights?": how to tell the rows, set off by commas
            index = after
            continue
        if mention and not mention.is_value and mention.start == after and marker == ("by",) \
                and passive(reading.norm(index - 1)) and (excepting(reading.tokens, mention.end)
                                                          or passive(reading.norm(mention.end - 1))):
            # "operated by carriers other than UA": who did it, all but some, not a group of each; "flown by
            # planes manufactured before 1990": who did it, described by a participle (no manufacturer of each)
            index = after
            continue
        if mention and not mention.is_value and mention.start == after and marker[-1] == "every" \
                and excepting(reading.tokens, mention.end) and not asked_of_each(reading.tokens, index, mention.end):
            # "the average body mass of penguins from every island except Biscoe": all of them but one, taken
            # together (each of them is "each island other than …", or "for every species except Gentoo, what's
            # …": said first, set off by a comma, what follows is asked of each)
            reading.used.update(range(index, mention.end))
            reading.mentions.remove(mention)
            index = mention.end
            continue
        if mention and not mention.is_value and mention.start == after and marker == ("by",) \
                and any(reading.norm(i) in ("number", "count") for i in range(index, after)) \
                and _events_of_rows(reading, mention):
            # "the 4 busiest days by number of departures": the rows' own events counted, no departure time
            reading.count = True
            reading.mentions.remove(mention)
            reading.used.update(range(index, mention.end))
            index = mention.end
            continue
        if mention and not mention.is_value and mention.start == after:
            reading.used.update(range(index, index + len(marker)))
            reading.used.update(i for i in range(index, after) if reading.free(i) and (
                reading.norm(i) in _GROUP_FILLER or reading.tokens[i].number is not None))
            if _is_order_measure(reading, mention, marker):
                reading.order_measure = mention.target.column  # left for _read_measures, with its aggregate
            else:
                reading.keys.append(_exact_rival(reading, mention))
                reading.mentions.remove(mention)
                reading.used.update(range(mention.start, mention.end))
                _note_term(reading, mention)
                _read_key_bucket(reading, mention)
                # "by species and island": each column joined by "and" is a key too
                while True:
                    end = _past_description(reading, mention)  # "by origin airport and carrier"
                    if reading.norm(end) != "and" or not reading.free(end):
                        break
                    following = reading.mention_at(end + 1)
                    if following is None and read_joined_key(reading, end + 1, end + 2):
                        reading.used.add(end)  # "by origin airport and airline": the column joining the airlines
                        break
                    if following is None or following.is_value or following.start != end + 1:
                        break
                    reading.keys.append(following.target.column)
                    reading.mentions.remove(following)
                    reading.used.update(range(mention.end, following.end))
                    _note_term(reading, following)
                    mention = following
            index = mention.end
            continue
        agent = marker == ("by",) and passive(reading.norm(index - 1))  # "flown by planes made in 2005"
        if mention is None and not agent and not passive(reading.norm(after)) \
                and read_joined_key(reading, index + len(marker), after):
            reading.used.update(range(index, index + len(marker)))
        index = after


def _described_key(reading: _Reading, restating: list[int], index: int) -> str | None:
    """"each New York airport", "the three NYC airports": a noun no column is named by, after words the table's
    description says of every row, is the one column whose description says both ("FAA code of the New York
    airport the flight left from"): that column is the key. None when no column, or several, say so."""
    if not restating or index >= len(reading.tokens) or not reading.free(index) \
            or reading.mention_at(index) is not None or reading.tokens[index].kind != "word":
        return None
    said = {stem for at in restating for stem in restated_stems(reading, at)}
    noun = reading.tokens[index].stem
    columns = [column.name for column in reading.base.columns
               if noun in (words := set(phrase(column.description or ""))) and said & words]
    return columns[0] if len(columns) == 1 else None


def _past_description(reading: _Reading, mention: _Mention) -> int:
    """Where the words right after a column's mention that its description uses end ("origin airport", where
    origin is "FAA code of the New York airport the flight left from")."""
    described = set(phrase(reading.column(mention.target.column).description or ""))
    end = mention.end
    while reading.free(end) and reading.tokens[end].kind == "word" and reading.tokens[end].stem in described \
            and reading.mention_at(end) is None:
        end += 1
    return end


def _read_key_bucket(reading: _Reading, key: _Mention) -> None:
    """"for each egg year", "per flight month": a date column named as a key, then a time bucket word, is
    that column cut into the bucket (not grouped by its own days)."""
    if read_hour_of(reading, key.target.column, key.end):
        return  # "by scheduled departure hour": the hour of a column of HHMM times
    if reading.column(key.target.column).type not in TIME_TYPES or not reading.free(key.end) \
            or reading.norm(key.end) not in _BUCKETS or reading.bucket not in (None, _BUCKETS[reading.norm(key.end)]):
        return
    reading.bucket = _BUCKETS[reading.norm(key.end)]
    reading.used.add(key.end)


def _events_of_rows(reading: _Reading, mention: _Mention) -> bool:
    """"LGA departures", "B6 departures from JFK: count them": a plural noun that several columns abbreviate
    alike (dep_time, dep_delay, sched_dep_time), none of them by its whole word, nor followed by what would say
    which (a part of one of their names), is the rows themselves, the events they record."""
    if not mention.ambiguous or mention.source != "partial" or mention.end - mention.start != 1:
        return False
    token = reading.tokens[mention.start]
    if not token.norm.endswith("s") or len(token.norm) < 5:
        return False
    columns = (mention.target.column, *mention.ambiguous)
    parts = {part for column in columns for part in phrase(column)}
    if token.stem in parts or token.norm in parts:
        return False
    following = reading.norm(mention.end)
    return following not in parts and reading.mention_at(mention.end) is None


def _verb_before_a_period(reading: _Reading, mention: _Mention) -> bool:
    """"scheduled to depart in July 2013", "did they arrive on May 5": a verb that several columns abbreviate
    alike, right before the period the dates were read from, says what the rows did then; no measure."""
    if not mention.ambiguous or mention.source != "partial" or mention.end - mention.start != 1 \
            or reading.norm(mention.start - 1) not in ("to", "do", "does", "did"):
        return False  # ("delayed in July" is a condition of its own: which delay is not said)
    return reading.norm(mention.end) in ("in", "on", "during") and mention.end + 1 in reading.used \
        and any(f.kind in ("year", "month", "day", "date") and f.start == mention.end + 1 for f in reading.filters)


def _verb_before_a_place(reading: _Reading, mention: _Mention) -> bool:
    """"Did all of the Hawaiian Airlines flights depart from JFK?", "flights departing JFK": a verb that several
    columns abbreviate alike, right before the place read after it (past "from", "to" or "at"), says where the
    rows went; no measure."""
    if not mention.ambiguous or mention.source != "partial" or mention.end - mention.start != 1:
        return False
    if reading.norm(mention.end) in ("from", "to", "at"):
        place = mention.end + 1
    elif reading.norm(mention.start) in TRIP_END_WORDS:
        place = mention.end  # "flights departing JFK" ("delayed United flights": no place)
    else:
        return False
    return place in reading.used and any(f.kind in ("value", "name") and place <= f.start < place + 4
                                         for f in reading.filters)


def _rows_asked_for(reading: _Reading, mention: _Mention) -> bool:
    """"Which flight had the longest air time", where ``flight`` is the flight's number: the rows' own noun
    right after which/what asks for a row, when another number column is there to rank it by; the noun is
    no measure of its own to rank by (the highest flight number)."""
    if mention.end - mention.start != 1 or reading.norm(mention.start - 1) not in ("which", "what") \
            or reading.tokens[mention.start].stem not in _table_words(reading.base):
        return False
    return any(other is not mention and not other.is_value and other.start > mention.end
               and reading.column(other.target.column).type in NUMBER_TYPES for other in reading.mentions)


def _exact_rival(reading: _Reading, mention: _Mention) -> str:
    """Of the columns a phrase could name, the one named exactly as written ("engine", not "engines");
    refused when none is and it could name several."""
    written = "_".join(token.norm for token in reading.tokens[mention.start:mention.end])
    if not mention.ambiguous:
        return mention.target.column
    exact = [c for c in (mention.target.column, *mention.ambiguous) if c.lower() == written]
    if len(exact) != 1:
        names = " or ".join((mention.target.column, *mention.ambiguous))
        raise NoPlan(f"'{_text(reading, mention)}' could be {names}; say which")
    return exact[0]


def _names_column(reading: _Reading, index: int) -> bool:
    """Whether a non-value mention of a column starts at ``index``."""
    mention = reading.mention_at(index)
    return mention is not None and not mention.is_value and mention.start == index


def _is_order_measure(reading: _Reading, mention: _Mention, marker: tuple[str, ...]) -> bool:
    """In "top 5 cars by horsepower" the numeric column after "by" is what to order by, not a key."""
    column = reading.column(mention.target.column)
    return marker == ("by",) and reading.top is not None and column.type in NUMBER_TYPES


def _asks_which(reading: _Reading) -> bool:
    """Whether the question is a which/what question."""
    return any(token.norm in ("which", "what") for token in reading.tokens)


def _read_combinations(reading: _Reading) -> None:
    """Columns named together as one group ("species-island combinations") are the keys; asked which one ranks
    highest ("which species/island group has the highest average mass?"), the top one."""
    if read_combinations(reading) and reading.direction is not None and _asks_which(reading):
        reading.top = reading.top or 1


def _read_ranked_keys(reading: _Reading) -> None:
    """In a ranking question the category ranked is a group key: "which origin has the most cars",
    "top 3 varieties by total yield", "what region …"."""
    if reading.top is None and not (reading.direction is not None and _asks_which(reading)):
        return
    for mention in list(reading.mentions):
        column = reading.column(mention.target.column)
        if not mention.is_value and read_hour_of(reading, column.name, mention.end):
            chosen = column.name  # "top 3 scheduled departure hours by number of flights": each hour a group
        elif mention.is_value or column.type != STRING:
            continue
        else:
            chosen = _exact_rival(reading, mention)
            if reading.column(chosen).type != STRING:
                continue  # "the most motors": the number of motors, which "motor" could also have named
        reading.keys.append(chosen)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
        reading.top = reading.top or 1
        return
    if _read_ranked_time_key(reading):
        return
    _read_ranked_join(reading)


def _read_extreme_per_group(reading: _Reading) -> None:
    """"What's the longest flipper for each species": a superlative asked for each group is every group's
    maximum (or minimum), not a ranking that keeps only the top group."""
    if not reading.superlative_top or not reading.keys or reading.order_measure is None \
            or reading.direction is None or reading.top != 1 or _on_average(reading) is not None:
        return
    reading.measures.append((reading.order_measure, MAX if reading.direction else MIN))
    reading.order_measure = None
    reading.direction = None
    reading.top = None


def _read_ranked_on_average(reading: _Reading) -> None:
    """"Which carrier flies fastest on average", "which species is heaviest on average": groups ranked by a
    superlative said with "on average" are ranked by their average of the column it measures."""
    on_average = _on_average(reading)
    if not reading.keys or reading.order_measure is None or reading.direction is None or on_average is None:
        return
    if any(f.column in reading.keys and f.op == "in" for f in reading.filters):
        return  # ("… on average - Biscoe, Dream or Torgersen?": the groups named are answered each, not ranked)
    measure = reading.order_measure
    reading.measures.append((measure, AVG))
    reading.order_measure = None
    reading.used.update((on_average - 1, on_average))
    # the measure said again ("fastest on average (mph)") is that measure, no column to show of its own
    reading.shown = [column for column in reading.shown if column != measure]
    for mention in [m for m in reading.mentions if not m.is_value and m.target.column == measure]:
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))


def _on_average(reading: _Reading) -> int | None:
    """Where "average" of a free "on average" stands."""
    return next((i for i, token in enumerate(reading.tokens) if token.norm == "average" and reading.free(i)
                 and reading.norm(i - 1) == "on" and reading.free(i - 1)), None)


def _read_ranked_time_key(reading: _Reading) -> bool:
    """"Which date had the highest average delay": a date column named right after which/what in a ranking
    is the group ranked, each of its values one group (never the whole table's aggregate). Where the
    superlative is said of one row ("on what date did the flight with the biggest delay leave") it is that
    row's date, shown beside the row ranked."""
    one_row = _one_row_ranked(reading)
    for index, token in enumerate(reading.tokens[:-1]):
        # ("top 5 dates by number of cancelled flights", "which 3 dates …": past the ranking's number)
        at = index + 2 if reading.top is not None and reading.tokens[index + 1].number == reading.top else index + 1
        mention = reading.mention_at(at)
        if token.norm not in ("which", "what", "top", "bottom") or mention is None or mention.is_value \
                or mention.start != at or mention not in reading.mentions \
                or reading.column(mention.target.column).type not in TIME_TYPES:
            continue
        (reading.shown if one_row else reading.keys).append(mention.target.column)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
        reading.top = reading.top or 1
        return True
    return False


def _read_ranked_join(reading: _Reading) -> None:
    """"Which 3 airports received the most flights from JFK": the rows of a table joined by the relationship
    the question's words picked, ranked, are the values of the queried table's column it joins on (dest);
    so are those of a table asked about by which/what ("which airline had the most flights")."""
    if reading.scope is None:
        return
    for join in reading.scope.joins:
        # "which airline (by name) had the most cancellations": the groups already told by the table's names
        by_name = reading.keys == [joined_name_column(reading, join)]
        if reading.keys and not by_name:
            return
        words = _table_words(join.table)
        named = [i for i, token in enumerate(reading.tokens) if reading.free(i) and token.stem in words]
        # "which airline", "which 3 airlines", "the three airlines with the highest …" (its N read as the top)
        asked = [i for i in named if reading.norm(i - 1) in ("which", "what") or reading.norm(i - 2) in ("which", "what")
                 and _number_at(reading, i - 1) or reading.norm(i - 2) in ("the", "which", "what", "top", "bottom")
                 and reading.top is not None and reading.tokens[i - 1].number == reading.top]
        if not named or not join.chosen and not asked or by_name and not asked:
            continue
        if by_name:
            reading.used.update(named)
            reading.top = reading.top or 1
            return
        reading.keys.append(join.on[0][0])
        name = joined_name_column(reading, join) if not join.chosen else None
        if name is not None and name not in reading.keys:
            # "which airline had the most flights": the airline by its key, and by its name where it has one
            reading.keys.append(name)
        reading.used.update(named)
        reading.top = reading.top or 1
        return


def _read_ranked_rows(reading: _Reading, table_words: set[str]) -> None:
    """"Which car has the highest horsepower", "what was the hottest day": the single best row. Asked
    within groups ("which car … in each region") it is a ranking per group, which is not planned."""
    if reading.top is not None or reading.direction is None:
        return
    if not _asks_for_row(reading, table_words):
        return
    if reading.keys:
        raise NoPlan(f"ranking rows within each {' and '.join(reading.keys)} is not something this planner does")
    reading.top = 1


def _read_which_column(reading: _Reading) -> None:
    """"Which carriers had cancelled flights out of LGA": the values of a text column named right after
    which/what, where nothing is ranked, are what the question lists; with a condition on each group's rows
    ("which carriers have more than 300 flights") they are the groups."""
    if reading.top is not None or reading.direction is not None or reading.keys or reading.shown:
        return
    at = listed_at(reading)
    asked = reading.norm(at - 1) in ("which", "what")
    if asked and read_which_joined_rows(reading, at - 1):
        return
    mention = reading.mention_at(at)
    if mention is None or mention.is_value or mention.start != at or mention not in reading.mentions \
            or reading.column(mention.target.column).type != STRING:
        return
    last = reading.tokens[mention.end - 1]
    if not asked and (last.norm == last.stem or not reading.absent):
        return  # ("destinations served from JFK but not from LGA": the values, said as a plural, that lack some)
    (reading.keys if reading.group_conditions or reading.absent else reading.shown).append(mention.target.column)
    reading.mentions.remove(mention)
    reading.used.update(range(at - 1 if asked else at, mention.end))
    _note_term(reading, mention)


def _asks_for_row(reading: _Reading, table_words: set[str]) -> bool:
    """"which car …" or "… the hottest day": a row noun right after which/what or right after a
    superlative, and not a modifier of a column ("lowest stock price")."""
    for index, token in enumerate(reading.tokens[:-1]):
        if token.norm in ("which", "what") and _values_then_rows(reading, index + 1, table_words):
            return True  # "which Chinstrap (penguin) has the biggest bill ratio"
        following = reading.tokens[index + 1]
        if following.stem not in table_words or reading.mention_at(index + 2) is not None:
            continue
        superlative = token.norm in _HIGH_WORDS or token.norm in _LOW_WORDS or token.norm.endswith("est")
        if token.norm in ("which", "what") or superlative:
            return True
    return False


def _values_then_rows(reading: _Reading, index: int, table_words: set[str]) -> bool:
    """Whether values said right at ``index`` name rows: followed by the rows' noun ("Chinstrap penguin") or by a
    verb of having or being ("Chinstrap has", "Gentoo is"), as a row's kind stands for the row."""
    # (the values are read already: conditions ending a few words on, every word up to there read)
    after = index
    while (read := next((f.start + 1 for f in reading.filters if f.kind in ("value", "name", "boolean")
                         and after <= f.start < after + 4
                         and all(i in reading.used for i in range(after, f.start + 1))), None)) is not None:
        after = read  # "which male Chinstrap"
    if after == index or after >= len(reading.tokens):
        return False
    return reading.tokens[after].stem in table_words and reading.mention_at(after) is None \
        or reading.norm(after) in ("has", "had", "is", "was")


def _total_of_rows(reading: _Reading, table_words: set[str]) -> int | None:
    """Where "total" counts rows: before the rows' plural noun ("total flights") or a true/false condition said as
    its rows ("total late arrivals", a glossary term), which have nothing to add up but their number. Never
    where the question names a number column ("total penguins body mass": that column is what is added up)."""
    if any(not mention.is_value and reading.column(mention.target.column).type in NUMBER_TYPES
           for mention in reading.mentions):
        return None
    for index, token in enumerate(reading.tokens[:-1]):
        if token.norm != "total" or not reading.free(index):
            continue
        if reading.tokens[index + 1].stem in table_words and reading.norm(index + 1).endswith("s"):
            return index
        # the condition read already: its filter ends where its words do, right after "total"
        if any(f.kind == "boolean" and index < f.start <= index + 3 and reading.norm(f.start).endswith("s")
               and all(i in reading.used for i in range(index + 1, f.start + 1)) for f in reading.filters):
            return index
    return None


def _count_values_of_rows(reading: _Reading, at: int, table_words: set[str]) -> bool:
    """"How many carriers operated flights?", "how many destinations did JFK flights go to": a text column
    named by its plural right after the count, the rows' noun said after it, and no condition on each group's
    rows ("how many carriers had more than 100 flights" counts groups that meet it): the distinct values of
    that column among the rows. Whether it was read so."""
    mention = reading.mention_at(at)
    if mention is None or mention.is_value or mention.start != at or mention not in reading.mentions \
            or reading.group_conditions or reading.column(mention.target.column).type != STRING:
        return False
    last = reading.tokens[mention.end - 1]
    if last.norm == last.stem or not any(token.stem in table_words for token in reading.tokens[mention.end:]):
        return False
    reading.distinct = mention.target.column
    reading.mentions.remove(mention)
    reading.used.update(range(mention.start, mention.end))
    return True


def _read_counts(reading: _Reading, table_words: set[str]) -> None:
    """"how many …", "number of …", "count …": a count; "how many different X" counts distinct X."""
    found = _find_phrase(reading, _COUNT_PHRASES)
    if found is None:
        total = _total_of_rows(reading, table_words)
        if total is not None:  # "total flights in 2013", "total late arrivals"
            reading.count = True
            reading.used.add(total)
        return
    index, words = found
    reading.count = True
    reading.used.update(range(index, index + len(words)))
    noun = reading.mention_at(index - 1)
    if words in (("count",), ("counts",)) and noun is not None and not noun.is_value and noun.end == index \
            and noun.end - noun.start == 1 and reading.tokens[index - 1].stem in table_words:
        # "monthly flight count": the rows' noun before "count" names the rows counted (here also a column's)
        reading.mentions.remove(noun)
        reading.used.add(index - 1)
    after = index + len(words)
    while after < len(reading.tokens) and reading.norm(after) in ("the", "of", "a", "an", "all"):
        after += 1
    if reading.norm(after) in _DISTINCT_WORDS:
        reading.used.add(after)
        if _count_joined_rows(reading, after + 1):
            return
        for mention in reading.mentions:
            if mention.start > after and not mention.is_value:
                reading.distinct = mention.target.column
                reading.mentions.remove(mention)
                reading.used.update(range(mention.start, mention.end))
                return
    elif words in (("how", "many"), ("number", "of")) and after < len(reading.tokens) \
            and reading.tokens[after].stem not in table_words and _count_joined_rows(reading, after):
        return  # "how many airlines flew out of Newark" on flights: the airlines, told apart by their code
    elif _count_values_of_rows(reading, after, table_words):
        return
    while after < len(reading.tokens) and after in reading.used and reading.mention_at(after) is None:
        after += 1
    named = reading.mention_at(after)
    if named is not None and _numeric_mention(reading, after) is not None:
        column = named.target.column
        unit = unit_named(reading.norm(after))
        if unit is not None and unit == unit_of(reading.column(column)):
            reading.amount = column  # "how many grams would every penguin weigh": an amount, not a number of rows
        else:
            reading.counted_measure = column
            # "how many departures were delayed", read whole as the departure delay: a verb in it says something
            # of the rows counted, unless an aggregate makes it an amount ("how many jobs were added in total")
            if any(reading.norm(i) in _SHARE_VERBS for i in range(named.start + 1, named.end)):
                reading.counted_with_verb = _text(reading, named)
    if words != ("how", "many") and named is None and after < len(reading.tokens) \
            and reading.tokens[after].stem in table_words \
            and (reading.norm(after + 1) == "and" or _comma_before(reading, after + 1)
                 or reading.norm(_before_articles(reading, index - 1)) == "and"):
        reading.rows_counted = True  # "the number of flights and the maximum delay": two things asked
    if words == ("how", "many") and named is None and after < len(reading.tokens) \
            and reading.tokens[after].stem in table_words and _and_an_aggregate(reading, after + 1):
        reading.rows_counted = True  # "how many flights were there and what was the average distance"
    rows_said, rows_end = _count_phrase_rows(reading, index + len(words), table_words)
    _read_listed_counts(reading, rows_end, table_words)
    _read_count_conditions(reading, index, rows_said, rows_end)
    if reading.norm(after) in ("ended", "end", "turned", "wound") and reading.norm(after + 1) in ("up", "out"):
        reading.used.update((after, after + 1))  # "how many ended up cancelled": the rows, then their condition
        return
    counted = reading.tokens[after] if after < len(reading.tokens) else None
    if counted is not None and counted.kind == "word" and named is None \
            and counted.stem not in table_words and counted.stem not in _vocabulary(reading.table) \
            and not _common(counted.norm) and not counted.is_stopword and not said_as_described(reading, after) \
            and counted.norm not in _YEAR_PREPOSITIONS:  # ("weekly count of cancelled flights during January")
        raise NoPlan(f"the data has nothing called '{counted.text}' to count")


def _count_phrase_rows(reading: _Reading, after: int, table_words: set[str]) -> tuple[int, int]:
    """Where the words naming the rows a count phrase (ending at ``after``) counts begin and end: read already,
    past articles, up to "and" or a comma ("cancelled flights", "late arrivals")."""
    while reading.norm(after) in ("the", "a", "an", "all"):
        after += 1
    end = after
    while end < len(reading.tokens) and (end in reading.used or reading.tokens[end].stem in table_words) \
            and reading.norm(end) != "and" and end - after < 4 and not (end > after and _comma_before(reading, end)):
        end += 1
    return after, end


def _read_count_conditions(reading: _Reading, phrase: int, after: int, end: int) -> None:
    """"The number of cancelled flights and the mean departure delay": the count phrase (at ``phrase``) names its
    rows (``after`` to ``end``) with true/false conditions read already, and something else is asked beside it
    ("and" before the phrase or right after its rows' noun). The count counts the rows meeting them
    (``count_conditions``); the other figures are of all the rows."""
    named = frozenset(f.start for f in reading.filters if f.kind == "boolean" and after <= f.start < end)
    if not named or not (reading.norm(_before_articles(reading, phrase - 1)) == "and" or reading.norm(end) == "and"):
        return
    reading.rows_counted = True
    reading.count_conditions = named


def _comma_before(reading: _Reading, index: int) -> bool:
    """Whether a comma stands between the word at ``index`` and the one before it."""
    if not 0 < index < len(reading.tokens):
        return False
    return "," in reading.text[reading.tokens[index - 1].end:reading.tokens[index].start]


def _read_listed_counts(reading: _Reading, end: int, table_words: set[str]) -> None:
    """"Number of flights, cancellations and average delay": after a count of the rows (its words ending at
    ``end``), items of a list that are each a true/false condition alone ("cancellations", "late arrivals") are
    figures of their own, the number of rows meeting each (``listed_counts``); the count stays of all the rows."""
    if not (reading.norm(end) == "and" or _comma_before(reading, end)):
        return
    listed: set[int] = set()
    start = end
    while start < len(reading.tokens):
        start += reading.norm(start) == "and"
        stop = start
        while stop < len(reading.tokens) and reading.norm(stop) != "and" \
                and not (stop > start and _comma_before(reading, stop)):
            stop += 1
        conditions = [f.start for f in reading.filters if f.kind == "boolean" and start <= f.start < stop]
        if len(conditions) != 1 or not all(i in reading.used or reading.tokens[i].stem in table_words
                                           for i in range(start, stop)):
            break
        listed.update(conditions)
        start = stop
    if listed:
        reading.rows_counted = True
        reading.listed_counts = frozenset(listed)


def _and_an_aggregate(reading: _Reading, index: int) -> bool:
    """Whether "and", within a few words of ``index``, is followed closely by an aggregate word ("… were there and
    what was the average …", "… and their average …"): a second thing asked beside the count."""
    joiner = next((i for i in range(index, min(index + 4, len(reading.tokens))) if reading.norm(i) == "and"), None)
    return joiner is not None and any(reading.norm(i) in _AGG_WORDS and _AGG_WORDS[reading.norm(i)] in (AVG, SUM,
                                                                                                           MEDIAN)
                                      for i in range(joiner + 1, min(joiner + 5, len(reading.tokens))))


def _count_joined_rows(reading: _Reading, index: int) -> bool:
    """"how many different planes flew …" on flights: the rows of a table the queried one joins by a key
    column are told apart by that column, so the count is of its distinct values (the tail numbers). A key
    "by" that same column ("different aircraft (by tail number)") says how they are told apart: grouping by
    it would count one in every group."""
    column = joined_rows_key(reading, index)
    if column is None:
        return False
    reading.distinct = column
    reading.used.add(index)
    if column in reading.keys:
        reading.keys.remove(column)
    return True


def _read_measures(reading: _Reading) -> None:
    """The numeric columns left are measures; each takes the aggregate word nearest before it ("average
    horsepower", "horsepower on average", "warmest temperature")."""
    global_agg: list[str | None] = []
    _merge_adjacent_measures(reading)
    for mention in list(reading.mentions):
        if mention.is_value:
            continue
        column = reading.column(mention.target.column)
        if column.type not in NUMBER_TYPES:
            continue
        events = _events_of_rows(reading, mention)
        if events or _verb_before_a_period(reading, mention) or _verb_before_a_place(reading, mention):
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            if events and reading.norm(mention.start - 1) in ("most", "fewest") and reading.direction is not None:
                reading.count = True  # "which week had the most departures": the rows counted, ranked
            continue
        if _rows_asked_for(reading, mention):
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            continue
        # Only a number can be averaged or totalled: a rival that is not one ("engine", the engine's type,
        # beside "engines", their number) is not what a measure means.
        if any(reading.column(rival).type in NUMBER_TYPES for rival in mention.ambiguous):
            names = " or ".join((column.name, *mention.ambiguous))
            raise NoPlan(f"'{_text(reading, mention)}' could be {names}; say which")
        # A formula named with its aggregate ("the highest average speed") is that aggregate; a superlative
        # before it then ranks the groups rather than replacing the aggregate it names.
        agg = (_aggregate_named(reading, mention) if reading.virtual(column.name) else None) \
            or _aggregate_before(reading, mention.start) or _aggregate_inside(reading, mention)
        if agg is None and not reading.keys and reading.bucket is None and mention.end - mention.start == 1 \
                and reading.tokens[mention.start].stem in _table_words(reading.base) \
                and named_as_rows(reading.base, column.name):
            # "the most recent flight from Newark, what date was it": the rows' noun, not their mean number
            reading.mentions.remove(mention)
            reading.used.add(mention.start)
            continue
        if agg is None and reading.measures and column in _time_columns(reading.table):
            # "the first cancelled flight of the year" beside the date asked for: a year is never averaged
            # unasked; said so rather than computed
            reading.unplaced.append(_text(reading, mention))
            reading.mentions.remove(mention)
            reading.used.update(range(mention.start, mention.end))
            continue
        if agg is None:
            global_agg = global_agg or [_global_aggregate(reading)]
            agg = global_agg[0]
        said_as_unit = reading.norm(mention.start - 1) in ("in", "as") \
            and any(name == column.name for name, _ in reading.measures)
        expression = reading.scope.virtual.get(column.name) if reading.scope is not None else None
        converted = {c.name for c in expression.find_all(exp.Column)} if expression is not None else set()
        if reading.norm(mention.start - 1) in ("in", "as") and any(name in converted for name, _ in reading.measures):
            # "body mass in kg" where the glossary's kilograms are body_mass_g / 1000: the measure in that unit
            reading.measures = [(column.name if name in converted else name, agg) for name, agg in reading.measures]
            said_as_unit = True
        if not said_as_unit:  # "speed in mph": the unit names the measure already read, not a second one
            # "minimum and maximum flipper length": each aggregate joined to the one read, of the same column
            for other in (*_joined_aggregates(reading, mention.start), agg):
                if (column.name, other) not in reading.measures:
                    reading.measures.append((column.name, other))
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)


def _settle_by_other_words(reading: _Reading) -> None:
    """"The longest time any flight spent in the air", "were July departures more delayed", "is the Chinstrap
    bill longer": a word several columns share ("time", "delayed", "bill") names the one whose other words the
    question says elsewhere ("air": air_time; "departures": dep_delay, "Departure delay in minutes"), when only
    one's are all there, those words then read with it; else the one an adjective of measure in the question
    measures ("longer": bill_length_mm)."""
    for mention in [m for m in reading.mentions if m.ambiguous and not m.is_value]:
        if mention not in reading.mentions:
            continue  # read already, as another's other word
        said = {form for token in reading.tokens[mention.start:mention.end] for form in (token.norm, token.stem)}
        columns = (mention.target.column, *mention.ambiguous)
        fits: list[tuple[str, list[int]]] = []
        for column in columns:
            for words in (phrase(column), _head_of(reading.column(column).description or "")):
                others = [word for word in words if word not in said]
                # ("number of planes …" counts: its "number" is no word of "Number of engines")
                at = [next((i for i, t in enumerate(reading.tokens) if word in (t.norm, t.stem) and _free_or_of(
                    reading, i, column) and not mention.start <= i < mention.end
                    and not (t.norm == "number" and reading.norm(i + 1) == "of")), -1) for word in others]
                if others and -1 not in at:
                    fits.append((column, at))
                    break
        if len(fits) != 1:
            measured = {column for token in reading.tokens if (found := _dimension(token.norm)) is not None
                        for column in _measured_columns(reading, found[0]) if column in columns}
            fits = [(measured.pop(), [])] if len(measured) == 1 else []
        if not fits:
            continue
        column, at = fits[0]
        # a word read as any of several columns ("departures"), or as part of this one's name ("air"), is read
        # here, with this one; a whole other mention of this column ("by scheduled departure time", then "the
        # scheduled time") keeps its own part
        absorbed = [m for m in reading.mentions if m is not mention and m.start in at
                    and (m.ambiguous or m.source == "partial")]  # ("air" of air_time, read alone)
        kept = {i for m in reading.mentions if m is not mention and m not in absorbed for i in range(m.start, m.end)}
        for other in absorbed:
            reading.mentions.remove(other)
        reading.mentions[reading.mentions.index(mention)] = replace(
            mention, target=replace(mention.target, column=column), ambiguous=())
        reading.used.update(i for i in at if i not in kept)


def _head_of(description: str) -> tuple[str, ...]:
    """The words a column's description begins with, up to its first comma, parenthesis or "in"/"as" ("Departure
    delay in minutes": departure delay): what it is."""
    return phrase(re.split(r"[,;(]| in | as ", description, maxsplit=1)[0])


def _free_or_of(reading: _Reading, index: int, column: str) -> bool:
    """Whether the word at ``index`` is unread, or read only as naming ``column`` (among others: "departures",
    of dep_time, dep_delay, …)."""
    mention = reading.mention_at(index)
    if mention is not None:
        return not mention.is_value and column in (mention.target.column, *mention.ambiguous)
    return reading.free(index)


_NAMED_AGGREGATES = frozenset({"average", "avg", "mean", "median", "total", "sum", "minimum", "min", "maximum",
                               "max"})


def _extremes_joined(reading: _Reading, index: int, column: str, high: bool) -> bool:
    """"The lightest and heaviest body mass", "the shortest and longest flippers": two superlatives of one
    measure joined by "and" are its least and greatest values (read here as both), not a ranking by the last of
    them. Said of the rows ("the heaviest and lightest penguin"), they ask for two rankings at once: refused."""
    for other in (index + 2, index - 2):
        joiner = min(index, other) + 1
        found = _dimension(reading.norm(other)) if reading.norm(joiner) in ("and", "or") else None
        if found is None or not reading.free(other) or found[2] != "superlative" or found[1] == high \
                or column not in _measured_columns(reading, found[0]):
            continue
        first, last = sorted((index, other))
        if reading.tokens[last + 1:last + 2] and reading.tokens[last + 1].stem in _table_words(reading.base):
            raise NoPlan(f"'{reading.tokens[first].text} and {reading.tokens[last].text}' asks for two rankings "
                         "of the rows at once; ask for one at a time")
        said = {index: high, other: found[1]}
        reading.measures += [(column, MAX if said[at] else MIN) for at in (first, last)]
        reading.used.update(range(first, last + 1))
        measured = reading.mention_at(last + 1)
        if measured is not None and not measured.is_value and measured.target.column == column:
            reading.mentions.remove(measured)  # the measure the superlatives are of, read with them
            reading.used.update(range(measured.start, measured.end))
            _note_term(reading, measured)
        return True
    return False


def _joined_aggregates(reading: _Reading, index: int) -> list[str]:
    """The aggregate words joined by "and"/"or" before the one right before a measure ("minimum and
    maximum …", "the average, minimum and maximum …", "the mean and the maximum …", "the shortest and longest
    …"), read here; those joined are of the same measure."""
    found: list[str] = []
    position = _before_articles(reading, index - 1)
    if _aggregate_word(reading, index) is not None:
        position = index - 1  # the measure's own first word is its aggregate: "heaviest body mass"
    elif _aggregate_word(reading, position) is None:
        return found
    else:
        position -= 1
    while position >= 0:
        position = _before_articles(reading, position)  # "the average and the maximum"
        joiner = reading.norm(position) in ("and", "or") and reading.free(position)
        if not joiner and not found:
            break  # "the highest average delay" is one measure, ranked
        word = position - 1 if joiner else position  # (a comma is no token: "average, minimum and …")
        aggregate = _aggregate_word(reading, word) if word >= 0 and reading.free(word) else None
        if aggregate is None:
            break
        found.insert(0, aggregate)
        reading.used.update(range(word, position + 1))
        position = word - 1
    return found


def _before_articles(reading: _Reading, position: int) -> int:
    while position >= 0 and reading.norm(position) in ("the", "a"):
        position -= 1
    return position


def _aggregate_word(reading: _Reading, position: int) -> str | None:
    """The aggregate a word names: "average", "maximum", or a superlative of size ("shortest", "longest")."""
    norm = reading.norm(position)
    if norm in _NAMED_AGGREGATES or norm in _AGG_WORDS and norm not in ("most", "top", "best", "least", "record"):
        return _AGG_WORDS[norm]
    token = reading.tokens[position] if 0 <= position < len(reading.tokens) else None
    if token is not None and token.kind == "word" and norm not in _TIME_HIGH | _TIME_LOW \
            and (norm in _LOW_WORDS or norm.endswith("est") and len(norm) > 5):
        return MIN if norm in _LOW_WORDS else MAX
    return None


def _read_extreme(reading: _Reading) -> None:
    """"Longest flipper in each study", "heaviest body mass recorded for a penguin on Torgersen": a
    superlative of measure that ranks nothing (no top N, no row asked for) is the greatest or least value,
    per group when grouped."""
    if reading.top is not None or reading.order_measure is None or reading.direction is None \
            or reading.count or reading.distinct or reading.measures:
        return
    reading.measures.append((reading.order_measure, MAX if reading.direction else MIN))
    reading.order_measure = None


def _merge_adjacent_measures(reading: _Reading) -> None:
    """Two column phrases side by side name one measure: "manufacturing jobs" is the manufacturing column
    (not also the jobs total), "warmest temperature" is one column. The column's own name wins over a
    glossary word, and of two names the last, the head noun; it takes the span of both."""
    mentions = sorted((m for m in reading.mentions if _numeric_mention(reading, m.start) is m),
                      key=lambda m: m.start)
    for first, second in pairwise(mentions):
        if second.start != first.end or first not in reading.mentions or second not in reading.mentions:
            continue
        # Of two column names the last is the head of the compound ("flight distance" is a distance); a glossary
        # formula over the other ("body mass in kilograms": body_mass_g / 1000) is the more precise of the two.
        keep = second if second.source == "name" else first
        for formula, other in ((first, second), (second, first)):
            expression = reading.scope.virtual.get(formula.target.column) if reading.scope is not None else None
            if expression is not None and any(c.name == other.target.column for c in expression.find_all(exp.Column)):
                keep = formula
        if (first if keep is second else second).ambiguous:
            continue  # "average delay year": "delay" names a column of its own (which, unsaid), no modifier
        merged = _Mention(first.start, second.end, keep.target, keep.source, keep.ambiguous)
        reading.mentions.remove(first)
        reading.mentions.remove(second)
        reading.mentions.append(merged)
        for mention in (first, second):
            if mention.target.column == keep.target.column:
                _note_term(reading, mention)


def _text(reading: _Reading, mention: _Mention) -> str:
    """The question's words a mention covers, as written."""
    return " ".join(token.text for token in reading.tokens[mention.start:mention.end])


def _aggregate_before(reading: _Reading, index: int) -> str | None:
    """An aggregate word among the few words before a measure ("the average horsepower", "max price of")."""
    for position in range(index - 1, max(-1, index - 4), -1):
        token = reading.tokens[position]
        if position in reading.used and reading.mention_at(position) is None:
            continue
        if reading.mention_at(position) is not None:
            return None
        if token.norm in _AGG_WORDS and token.norm not in ("most", "top", "best", "least", "record"):
            reading.used.add(position)
            return _AGG_WORDS[token.norm]
        if token.kind == "word" and (token.norm in _LOW_WORDS or token.norm.endswith("est") and len(token.norm) > 5) \
                and token.norm not in _TIME_HIGH | _TIME_LOW and reading.top is None:
            # "the shortest air time", "the heaviest body mass": the least or greatest of the column
            reading.used.add(position)
            return MIN if token.norm in _LOW_WORDS else MAX
        if not (token.is_stopword or token.norm in ("per", "all", "overall")):
            return None
    return None


def _aggregate_inside(reading: _Reading, mention: _Mention) -> str | None:
    """A superlative that is itself the column's name ("warmest", "heaviest") implies its maximum."""
    for token in reading.tokens[mention.start:mention.end]:
        if token.norm in _LOW_WORDS:
            return MIN
        if token.norm.endswith("est") and len(token.norm) > 5:
            return MAX
    return None


def _aggregate_named(reading: _Reading, mention: _Mention) -> str | None:
    """A glossary formula named with its aggregate ("average speed") is that aggregate of the formula."""
    for token in reading.tokens[mention.start:mention.end]:
        if token.norm in _AGG_WORDS and _AGG_WORDS[token.norm] in (AVG, SUM, MEDIAN):
            return _AGG_WORDS[token.norm]
    return None


def _global_aggregate(reading: _Reading) -> str | None:
    """An aggregate word anywhere: "on average", "in total", "add up", "how much", or a free aggregate word."""
    tokens = reading.tokens
    for index, token in enumerate(tokens):
        if not reading.free(index):
            continue
        if token.norm == "average" and reading.norm(index - 1) == "on":
            reading.used.update((index - 1, index))
            return AVG
        if token.norm == "total" and reading.norm(index - 1) == "in":
            reading.used.update((index - 1, index))
            return SUM
        if token.norm in ("add", "sum", "total") and reading.norm(index + 1) == "up" and reading.free(index + 1):
            reading.used.update((index, index + 1))  # "add up the distance"
            return SUM
    for index, token in enumerate(tokens):
        if reading.free(index) and token.norm in _AGG_WORDS and (reading.top is None or
                                                                  token.norm not in _HIGH_WORDS | _LOW_WORDS):
            reading.used.add(index)
            return _AGG_WORDS[token.norm]
    if any(reading.norm(i) == "how" and reading.norm(i + 1) == "much" for i in range(len(tokens))):
        return SUM
    return None


def _read_flags(reading: _Reading) -> None:
    """Whether the question asks to list rows ("show", "which") or to compare ("vs", "compare")."""
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        if token.norm in _LIST_WORDS:
            reading.listing = True
        if token.norm in _COMPARE_WORDS or (token.norm == "difference" and reading.norm(index + 1) == "between"):
            reading.compare = True
        if token.norm == "side" and reading.norm(index + 1) in ("by", "to") and reading.norm(index + 2) == "side" \
                and reading.free(index + 1) and reading.free(index + 2):
            reading.compare = True  # "the average delay of AA and of DL side by side"
            reading.used.update(range(index, index + 3))


def _read_share(reading: _Reading) -> None:
    """"What share of orders were returned", "what percentage of Electronics orders were returned": a share
    of rows. Conditions said after the verb ("were returned") are what the share counts; the others (and
    dates) pick the rows it is a share of. Without such a verb ("the percentage of returned orders") every
    condition after the share word is counted."""
    for index, token in enumerate(reading.tokens):
        if (token.norm == "rate" or token.norm in _SHARE_WORDS and reading.norm(index + 1) != "of") \
                and reading.free(index) and _read_rate(reading, index):
            return  # "the cancellation rate", "cancellation percentage for each carrier"
        if token.norm not in _SHARE_WORDS or not reading.free(index):
            continue
        # (a unit in parentheses may stand after the share word: "what proportion (percent) departed …", "what
        # proportion (as a percentage) of …")
        after = _past_parenthesised_unit(reading, index + 1)
        if reading.norm(after) != "of":
            # "Of the flights from JFK, what percentage went to LAX": the verb right after the share word
            # (the verb may have been read already: with its condition, "what percentage left more than 30 minutes
            # late", or as picking the way to a joined table, "what percentage departed from Newark")
            asked = reading.norm(index - 1) in ("what", "which") \
                or reading.norm(index - 1) == "many" and reading.norm(index - 2) == "how"  # "how many percent"
            if token.norm != "ratio" and reading.norm(after) in _SHARE_VERBS and asked:
                reading.used.update(range(index, after + 1))
                if reading.norm(index - 1) == "many":
                    reading.used.update((index - 2, index - 1))
                reading.share_split = after
                _read_share_unit(reading)
            continue
        reading.used.update(range(index, after + 1))
        if token.norm == "ratio":
            _read_ratio(reading, index)
            return
        # a verb read already still splits the share: one that picked the way to a joined table ("departed from
        # Newark"), one read with its condition ("flights arriving more than 15 min late", "left … late")
        verb = next((i for i in range(after + 1, len(reading.tokens)) if reading.norm(i) in _SHARE_VERBS), None)
        verb = verb if verb is not None else _verb_after_valued_rows(reading, after + 1)
        if verb is not None and reading.norm(verb) == "with":
            # "what percentage of the penguins with a known sex are female": "with" says which rows the share is
            # of; a verb after it, what it counts
            verb = next((i for i in range(verb + 2, len(reading.tokens)) if reading.norm(i) in _FINITE_SHARE_VERBS),
                        verb)
        reading.share_split = index if verb is None else verb
        if verb is not None:
            reading.used.add(verb)
        owner = reading.mention_at(index - 1)
        if verb is None and owner is not None and owner.is_value \
                and reading.tokens[index - 1].possessive:
            # "Delta's share of all flights": the value that owns the share is what it counts
            reading.share_span = (owner.start, index)
        _read_share_unit(reading)
        return


_FINITE_SHARE_VERBS = frozenset(verb for verb in _SHARE_VERBS if not verb.endswith("ing")) \
    - {"with", "that", "which", "who"}


def _verb_after_valued_rows(reading: _Reading, index: int) -> int | None:
    """"what proportion of the Adelie penguins nest on Torgersen": the rows a value names right after the
    share's "of" ("the Adelie penguins") are what it is a share of, and the word after them that no column
    or value reads ("nest") is the verb of what it counts, a value said after it ("on Torgersen"). Any verb
    would do: the rows named, a word, then a value."""
    while reading.norm(index) in ("the", "all", "those"):
        index += 1
    mention = reading.mention_at(index)
    if mention is None or not mention.is_value or mention.start != index or mention.end >= len(reading.tokens) \
            or reading.tokens[mention.end].stem not in _table_words(reading.base):
        return None
    verb = mention.end + 1
    if verb >= len(reading.tokens) or reading.tokens[verb].kind != "word" or reading.tokens[verb].is_stopword \
            or not reading.free(verb) or reading.mention_at(verb) is not None:
        return None
    if not any(other.is_value and other.start > verb for other in reading.mentions):
        return None
    return verb


def _read_rate(reading: _Reading, index: int) -> bool:
    """"the cancellation rate at LGA", "late arrival rate per carrier", "cancellation percentage": a condition named
    right before "rate" (or a share word) is what the share counts (in percent); the other conditions pick the rows
    it is a share of."""
    mention = reading.mention_at(index - 1)
    if mention is None or not mention.is_value or mention.end != index \
            or reading.column(mention.target.column).type != BOOLEAN:
        return False
    reading.used.add(index)
    reading.share_split = index
    reading.share_span = (mention.start, mention.end)
    _read_share_unit(reading)
    return True


def _past_parenthesised_unit(reading: _Reading, start: int) -> int:
    """Where the words after a share's unit in parentheses at ``start`` ("(percent)", "(as a percentage)", "(in
    %)") begin, or ``start`` when none is there."""
    if "(" not in reading.gap(start):
        return start
    at = start + (reading.norm(start) in ("as", "in"))
    at += reading.norm(at) == "a"
    return at + 1 if reading.norm(at) in ("percent", "percentage", "%") else start


def _read_share_unit(reading: _Reading) -> None:
    """"…, in percent", "as a percentage": how a share read already is to be written, which it is (in
    percent) — the words ask for no second computation."""
    for index, token in enumerate(reading.tokens):
        if token.norm not in ("percent", "percentage", "percentages", "%") or not reading.free(index):
            continue
        start = index - 2 if reading.norm(index - 1) == "a" else index - 1
        if reading.norm(start) in ("in", "as") and all(reading.free(i) for i in range(start, index)):
            reading.used.update(range(start, index + 1))
        elif "(" in reading.gap(index) and (index + 1 == len(reading.tokens) or ")" in reading.gap(index + 1)):
            reading.used.add(index)  # "what proportion (percent) departed …", "cancellation rate (percent)"
        elif index == len(reading.tokens) - 1 and index > 0 and reading.tokens[index - 1].kind == "word":
            reading.used.add(index)  # the last word: "… are Chinstrap (percent)?"
        else:
            # a request at the end for the share read: "… ? Give the percentage for each.", "… ? percent please",
            # "… ? show both percentages"
            first = index
            while first > 0 and reading.norm(first - 1) in _ASKING_FOR and reading.free(first - 1):
                first -= 1
            if all(reading.norm(i) in _FOR_EACH and reading.free(i) for i in range(index + 1, len(reading.tokens))):
                reading.used.update(range(first, len(reading.tokens)))


_ASKING_FOR = frozenset({"give", "show", "me", "us", "the", "a", "as", "in", "and", "both"})
_FOR_EACH = frozenset({"for", "each", "both", "of", "them", "please", "too", "also"})


def _read_ratio(reading: _Reading, index: int) -> None:
    """"the ratio of male to female penguins": two values of one column, the first's rows over the
    second's. Any other ratio is refused."""
    start = _past_row_count(reading, index + 2)
    first = reading.mention_at(start)
    to = _past_row_count(reading, first.end) if first is not None else start  # "Adelie penguins to …"
    second = reading.mention_at(_past_row_count(reading, to + 1)) if first is not None else None
    if first is None or second is None or not first.is_value or not second.is_value \
            or reading.norm(to) != "to" or first.target.column != second.target.column:
        raise NoPlan("a ratio is planned only as 'the ratio of <value> to <value>' of one column")
    # "the ratio of the number of flights from EWR to the number of flights from LGA": the rows counted
    reading.used.update(i for i in range(index + 2, second.start) if reading.mention_at(i) is None)
    column = first.target.column
    reading.ratio = (_Filter(column, "=", (first.target.value or "",), "value", first.start),
                     _Filter(column, "=", (second.target.value or "",), "value", second.start))
    reading.share_split = index
    for mention in (first, second):
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
    reading.used.add(to)
    reading.used.update(i for i in range(second.end, _past_row_count(reading, second.end))
                        if reading.tokens[i].stem in _table_words(reading.base))


_COUNTED_ROWS = frozenset({"the", "number", "count", "of", "from", "in", "on", "at", "with", "for", "by"})


def _past_row_count(reading: _Reading, index: int) -> int:
    """Past "the number of flights from" before a value in a ratio: the rows of the value are what is counted."""
    words = _table_words(reading.base)
    while index < len(reading.tokens) and reading.mention_at(index) is None \
            and (reading.norm(index) in _COUNTED_ROWS or reading.tokens[index].stem in words):
        index += 1
    return index


def _read_missing(reading: _Reading) -> None:
    """"an unknown sex", "missing prices", "no recorded delay": a column left empty (NULL); "a known sex" is
    one that is not, as is "a recorded delay" or "an arrival delay recorded"."""
    for index, token in enumerate(reading.tokens):
        if token.norm not in _MISSING_WORDS or not reading.free(index):
            continue
        on_record = token.norm == "record"  # "flights with an arrival delay on record" (else "a record delay")
        if on_record and (reading.norm(index - 1) != "on" or not reading.free(index - 1)):
            continue
        after = index + 1  # "missing a delta 15 N measurement": past an article
        while reading.norm(after) in ("a", "an", "any", "the", "its", "their") and reading.free(after):
            after += 1
        mention = None if on_record else reading.mention_at(after)
        if mention is not None and (mention.is_value or mention.start != after):
            mention = None
        elif mention is not None and reading.norm(mention.end) in _RECORD_NOUNS and reading.free(mention.end):
            reading.used.add(mention.end)  # "… measurement", "… value": the column's own record of it
        excluded: range | None = None
        between = index - 2 if on_record else index - 1
        while reading.norm(between) in _BETWEEN_COLUMN_AND_STATE and reading.free(between):
            between -= 1
        if mention is None:
            # the word after the column: "flights with an arrival delay recorded", "a delay not recorded"
            mention = reading.mention_at(between)
            if mention is None or mention.is_value or mention.end != between + 1 or mention not in reading.mentions \
                    or not _had_before(reading, mention.start) and not _asked_of_column(reading, mention.start, index):
                continue  # "the earliest egg date recorded for …" describes the date, it sets no condition
            if token.norm in _RECORD_NOUNS and mention.ambiguous:
                continue  # "no bill measurements": of which bill column is not said
            said = range(mention.end, index)
            # "without a delay recorded", "no body mass recorded": empty
            lacking = _had_before(reading, mention.start) in ("without", "no")
            excluded = None if lacking else negated_before(reading, mention.start)
            if excluded is not None:
                # "excluding penguins whose sex is unknown": the rows that are not so
                said = range(excluded.start, index)
            elif lacking:
                before = mention.start - 1
                while reading.norm(before) in ("a", "an", "the", "their", "its"):
                    before -= 1
                reading.used.add(before)  # the "no" that says the column is empty is read with it
        else:
            said = range(index - 1, index) if reading.free(index - 1) else range(0)
            lacking = False
            # "excluding those with unknown sex", "leaving out penguins of unknown sex": a negation a few small
            # words before denies it too
            excluded = negated_before(reading, index)
            if excluded is not None:
                said = excluded
        group = _own_group(reading, mention.end)
        if group and index < mention.start:
            # "with unknown sex as its own group": the empty ones are kept, a group beside the others
            # (the column stays a mention: it must still be read as the grouping, or the question is declined)
            column = range(mention.start, mention.end)
            reading.used.update(i for i in range(index, group.stop) if i not in column)
            if reading.norm(index - 1) in ("with", "and") and reading.free(index - 1):
                reading.used.add(index - 1)
            reading.empty_grouped.add(mention.target.column)
            continue
        # each denial turns it around: "excluding the ones whose sex isn't known" keeps the known ones
        denials = sum(reading.norm(i) in _DENIALS for i in said)
        if excluded is not None and reading.norm(excluded.start) not in _DENIALS:
            denials += 1  # "leaving out …"
        negated = denials % 2 == 1
        denied = negated != lacking
        if denials:
            reading.used.update(said)  # "no recorded delay", "a delay not recorded": left empty
        op = "not null" if _MISSING_WORDS[token.norm] != denied else "null"
        reading.filters.append(_Filter(mention.target.column, op, (), "missing", min(index, mention.start)))
        reading.mentions.remove(mention)
        reading.used.update(range(min(index, mention.start), max(index + 1, mention.end)))
        _note_term(reading, mention)


_DENIALS = frozenset({"no", "not", "without", "never"} | _NEGATIONS)

_BETWEEN_COLUMN_AND_STATE = frozenset({"not", "is", "was", "were", "been", "be", *CONTRACTED_DENIALS})
"""Words between a column and the word saying it is empty or filled ("sex isn't known", "a delay not recorded")."""




_OWN_GROUP_NOUNS = frozenset({"group", "category", "bucket", "row"})
_OWN_GROUP_FILLER = frozenset({"its", "their", "a", "an", "own", "separate"})


def _own_group(reading: _Reading, index: int) -> range | None:
    """"as its own group", "as a separate category", "as a group of its own" from ``index``: their indexes,
    or None."""
    if reading.norm(index) != "as" or not reading.free(index):
        return None
    end = index + 1
    while end < index + 4 and reading.free(end) and reading.norm(end) in _OWN_GROUP_FILLER:
        end += 1
    if end == index + 1 or reading.norm(end) not in _OWN_GROUP_NOUNS or not reading.free(end):
        return None
    end += 1
    if [reading.norm(i) for i in range(end, end + 3)] in (["of", "its", "own"], ["of", "their", "own"]):
        end += 3
    return range(index, end)


def _had_before(reading: _Reading, index: int) -> str | None:
    """The word before ``index``, past an article, when it says the rows have (or lack) something ("with",
    "had", "without", "no"); else None."""
    index -= 1
    while reading.norm(index) in ("a", "an", "the", "their", "its"):
        index -= 1
    word = reading.norm(index)
    # "whose sex is recorded": the rows' own column said to hold a value
    return word if word in ("with", "had", "has", "have", "having", "without", "no", "whose") else None


def _asked_of_column(reading: _Reading, start: int, index: int) -> bool:
    """"For how many penguins is the sex not recorded?": an auxiliary before the column and the word saying
    it holds a value (or not) closing the question ask about the column's being filled in."""
    before = start - 1
    while reading.norm(before) in ("a", "an", "the", "their", "its"):
        before -= 1
    return reading.norm(before) in ("is", "was", "are", "were") and index == len(reading.tokens) - 1


_RECORD_NOUNS = VALUE_NOUNS | {"entry", "entries", "record", "records"}
"""Nouns after a column said to be missing that name its value itself ("a delta 15 N measurement")."""

# whether each word says the column holds a value (True) or is left empty (False)
_MISSING_WORDS = {"unknown": False, "missing": False, "null": False, "blank": False, "empty": False,
                  "undetermined": False, "unrecorded": False,
                  "known": True, "recorded": True, "record": True, "determined": True,
                  # after the column, had: "penguins that have a delta 15 N measurement"
                  "measurement": True, "measurements": True, "reading": True, "readings": True}


def _read_signs(reading: _Reading) -> None:
    """"a negative departure delay", "positive gains": the numeric column below or above zero."""
    for index, token in enumerate(reading.tokens):
        if token.norm not in ("negative", "positive") or not reading.free(index):
            continue
        mention = _numeric_mention(reading, index + 1)
        if mention is None or mention.start != index + 1:
            continue
        if mention.ambiguous:
            # ("a negative delay": which delay, the departure's or the arrival's?)
            columns = " or ".join((mention.target.column, *mention.ambiguous))
            raise NoPlan(f"'{_text(reading, mention)}' could be {columns}; say which")
        reading.filters.append(_Filter(mention.target.column, "<" if token.norm == "negative" else ">", (0,),
                                       "number", index))
        reading.mentions.remove(mention)
        reading.used.update(range(index, mention.end))
        _note_term(reading, mention)


def _read_shown(reading: _Reading) -> None:
    """"List the destinations of …", "show the names of …": the columns named right after the verb of a
    listing are what it shows."""
    if reading.norm(0) == "name" and reading.norm(1) in ("the", "all", "every", "each", "any") \
            and reading.tokens[0].text[:1].isupper():
        # "Name the airports higher than 7000 feet": the verb, asking for the rows' names
        listed = reading.mention_at(0)
        if listed is not None and not listed.is_value and listed.end == 1:
            reading.shown.append(listed.target.column)
            reading.mentions.remove(listed)
        reading.used.add(0)
        reading.listing = True
        return
    if _read_their(reading):
        return
    start = 1 if reading.norm(0) == "the" else 0
    named = reading.mention_at(start)
    if named is not None and not named.is_value and named.start == start and reading.norm(named.end) == "of" \
            and reading.column(named.target.column).type not in NUMBER_TYPES and named in reading.mentions:
        # "names of the destination airports for …", "the full names of …": a question said as what it lists
        reading.shown.append(named.target.column)
        reading.mentions.remove(named)
        reading.used.update(range(0, named.end))
        _note_term(reading, named)
        return
    for index, token in enumerate(reading.tokens):
        if token.norm not in ("list", "show", "display", "give") or index in reading.used:
            continue
        after = index + 1
        while reading.norm(after) in ("the", "me", "all", "us", "distinct", "different", "unique"):
            after += 1
        mention = reading.mention_at(after)
        if mention is None or mention.is_value or mention.start != after \
                or reading.column(mention.target.column).type in NUMBER_TYPES:
            return
        reading.shown.append(mention.target.column)
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))
        _note_term(reading, mention)
        return


def _read_their(reading: _Reading) -> bool:
    """"Penguins heavier than 6000 g: their ids and species": the columns listed after "their" are what the
    rows show; "ids" is the table's own identifier column. ("The hour of their scheduled departure": a noun's
    own, said after "of", is no list.)"""
    start = next((i for i, token in enumerate(reading.tokens)
                  if token.norm == "their" and reading.free(i) and reading.norm(i - 1) != "of"), None)
    if start is None:
        return False
    shown: list[tuple[str, range]] = []
    index = start + 1
    while index < len(reading.tokens):
        mention = reading.mention_at(index)
        if mention is not None and not mention.is_value and mention.start == index:
            shown.append((mention.target.column, range(mention.start, mention.end)))
            index = mention.end
        elif reading.norm(index) in ("id", "ids") and reading.free(index) and _identifier(reading) is not None:
            shown.append((_identifier(reading) or "", range(index, index + 1)))
            index += 1
        else:
            break
        if "," in reading.gap(index) and index < len(reading.tokens):
            continue  # "their destinations, distances and arrival delays"
        if reading.norm(index) != "and" or not reading.free(index):
            break
        index += 1
    if not shown:
        return False
    for column, span in shown:
        reading.shown.append(column)
        for mention in [m for m in reading.mentions if m.start in span]:
            reading.mentions.remove(mention)
            _note_term(reading, mention)
        reading.used.update(span)
    reading.used.add(start)
    reading.used.update(i for i in range(start, index) if reading.norm(i) == "and")
    # "Which airlines flew to Denver? Give their names": the airlines' names, each once, not every flight's
    reading.shown_per_row = not asked_of_joined_rows(reading, [column for column, _ in shown])
    dates = date_columns(reading.base)
    if reading.norm(0) == "when" and reading.free(0) and len(dates) == 1 and dates[0] not in reading.shown:
        # "When did the HA flights fly, and what were their arrival delays?": the rows' dates, beside the rest
        reading.shown.insert(0, dates[0])
        reading.used.add(0)
    return True


def _read_time_superlative(reading: _Reading, table_words: set[str]) -> None:
    """"the most recent order date", "when was the earliest order" (the greatest or least date), "which
    store is the oldest", "the 3 most recent orders", "the latest order" (the rows latest or earliest in
    time): a superlative of time applies to the time column the question names, else the table's first."""
    if read_first_of_a_day(reading):
        return
    found: tuple[list[int], bool] | None = None
    the_date = False
    several = False  # "the last flights of the year": every row of the last date, not one of them
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        word, before = token.norm, reading.norm(index - 1)
        if word in ("recent", "recently") and before in ("most", "least") and reading.free(index - 1):
            found = ([index - 1, index], before == "most")
        elif word in _TIME_HIGH - {"recent", "recently", "last"} or word in _TIME_LOW - {"first"}:
            found = ([index], word in _TIME_HIGH)
        elif word in ("first", "last") \
                and (before == "the" or index == 0 or before == "very" and reading.norm(index - 2) == "the") \
                and reading.tokens[index + 1:index + 2] \
                and (_rows_named_after(reading, index + 1, table_words) is not None or _names_time(reading, index + 1)
                     or _condition_of_rows_at(reading, index + 1)) \
                or word in ("first", "last") and before in ("its", "their") \
                and (_rows_named_after(reading, index + 1, table_words) is not None
                     or _condition_of_rows_at(reading, index + 1)):
            # ("for each airport, … its first cancelled flight": each group's; "its first egg" names a date column)
            found = ([index, index - 1] if before == "very" else [index], word == "last")  # "the very first"
            noun = _rows_named_after(reading, index + 1, table_words)
            several = noun is not None and reading.tokens[noun].norm.endswith("s") \
                and reading.tokens[noun].stem != reading.tokens[noun].norm
            mention = reading.mention_at(noun) if noun is not None else None
            if mention is not None and not mention.is_value and mention.start == noun and mention.end == noun + 1:
                reading.mentions.remove(mention)  # "the first cancelled flight": the rows, not a column "flight"
                found[0].append(noun)
        elif word in ("first", "last", "final") and (before == "the" or index == 0) \
                and reading.norm(index + 1) in ("day", "date") \
                and (reading.free(index + 1) or reading.bucket == "day") and _time_columns(reading.table) \
                and reading.mention_at(index + 1) is None:
            # "the flights on the last day in the data": the rows of the latest date, all of them (ties);
            # "the last day of the year with an EWR to SFO flight": that date
            found = ([index - 1, index, index + 1], word != "first")
            if reading.bucket == "day":
                reading.bucket = None
            the_date = reading.norm(index - 2) != "on"
        elif word in ("first", "last") and before not in ("the", "very") \
                and (any(t.norm == "when" for t in reading.tokens) or _asks_which_date(reading, index + 1)) \
                and index + 1 < len(reading.tokens) and reading.tokens[index + 1].kind == "word" \
                and reading.mention_at(index + 1) is None \
                and (reading.free(index + 1) or reading.norm(index + 1) in LEAVE_OR_ARRIVE):
            # "when did Alaska Airlines last fly": the latest date of the rows; "on what date did a flight first
            # leave more than 5 hours late": the earliest (the verb read with its condition)
            found = ([index], word == "last")
            the_date = True
        if found:
            break
    if found is None:
        return
    span, latest = found
    if _read_extreme_time_of_day(reading, span, latest):
        return
    times = _time_columns(reading.table)
    named = next((m for m in reading.mentions if not m.is_value
                  and any(c.name == m.target.column for c in times)), None)
    # "the oldest plane" (or "which plane … is the oldest") of flights joined to the planes: the planes' time
    # column (their year), not the flights'
    asked = [max(span) + 1, *(i + 1 for i, t in enumerate(reading.tokens) if t.norm in ("which", "what"))]
    owned = [c for c in times if any(_joined_rows_named(reading, at, c.name) for at in asked)]
    candidates = owned or times
    column = reading.column(named.target.column) if named else (candidates[0] if candidates else None)
    if column is None:
        return
    reading.used.update(span)
    if named is not None:
        reading.mentions.remove(named)
        reading.used.update(range(named.start, named.end))
        _note_term(reading, named)
    reading.direction = latest
    words = {token.norm for token in reading.tokens}
    # ("newest aircraft - tail number and manufacture year": columns asked of it make it rows)
    rows = reading.top is not None or bool(words & {"which", "show", "list", "display"}) or bool(reading.shown)
    if the_date or not rows and ("when" in words or named is not None):
        reading.measures.append((column.name, MAX if latest else MIN))
        reading.direction = None  # the superlative is this extreme, not a ranking of rows
        return
    reading.top = reading.top or 1
    reading.order_measure = column.name
    reading.descending = latest
    if named is not None and reading.norm(named.start - 1) in ("which", "what") and not several:
        reading.ties = False  # "on which date was the earliest egg": the date itself, once


def _joined_rows_named(reading: _Reading, index: int, column: str) -> bool:
    """Whether the word at ``index`` names the rows of the joined table ``column`` is of ("plane" of planes)."""
    join = reading.join_of(column)
    return join is not None and index < len(reading.tokens) and reading.tokens[index].stem in _table_words(join.table)


def _read_extreme_time_of_day(reading: _Reading, span: list[int], latest: bool) -> bool:
    """"The earliest scheduled departure time of any flight", "latest actual departure time at LaGuardia": a
    superlative of time said of a column of times of day (HHMM numbers) right after it is that column's extreme,
    not the rows of the first or last date."""
    after = max(span) + 1
    clocks = {column.name: column for column in _clock_columns(reading)}
    for start in (after, after + 1):  # (past a word of the column's description: "latest actual departure time")
        named = reading.mention_at(start)
        if named is None or named.is_value or named.start != start or named.target.column not in clocks:
            continue
        if start > after and reading.tokens[after].stem not in phrase(clocks[named.target.column].description or ""):
            continue
        reading.measures.append((named.target.column, MAX if latest else MIN))
        reading.mentions.remove(named)
        reading.used.update((*span, *range(after, named.end)))
        return True
    return False


def _asks_which_date(reading: _Reading, verb: int) -> bool:
    """Whether the question asks "what date" or "which day" a row first or last did something, said by the
    active verb at ``verb`` ("first leave", not "first observed with an egg", which names a date column), of
    no ranking ("the most nests")."""
    return any(first.norm in ("what", "which") and second.norm in ("date", "day")
               for first, second in pairwise(reading.tokens)) \
        and not reading.norm(verb).endswith(("ed", "en")) \
        and not any(token.norm in ("most", "fewest", "least") for token in reading.tokens)


def _condition_of_rows_at(reading: _Reading, index: int) -> bool:
    """Whether a glossary term that stands for a condition on the rows is said at ``index`` ("the first
    cancellation", "the last late arrival"): the rows it keeps, named by it."""
    mention = reading.mention_at(index)
    if mention is not None and mention.start == index and mention.is_value and mention.target.term is not None:
        return True
    # read already (a term of two words may be read from its second: "late arrival")
    return any(f.start in (index, index + 1) and reading.virtual(f.column) and index in reading.used
               for f in reading.filters)


def _rows_named_after(reading: _Reading, index: int, table_words: set[str]) -> int | None:
    """Where the rows' noun is, at ``index`` or past words already read as their conditions ("the first
    cancelled flight", "the last Chinstrap nest"); None when it is not there."""
    for position in range(index, min(index + 4, len(reading.tokens))):
        if reading.tokens[position].stem in table_words:
            return position
        mention = reading.mention_at(position)
        if position not in reading.used and (mention is None or not mention.is_value):
            return None
    return None


def _names_time(reading: _Reading, index: int) -> bool:
    """Whether a time column is named at ``index`` ("the last egg date")."""
    mention = reading.mention_at(index)
    times = {column.name for column in _time_columns(reading.table)}
    return mention is not None and not mention.is_value and mention.target.column in times


def _read(table: TableInfo, tokens: list[Token], mentions: list[_Mention], used: set[int],
          bucket: str | None, scope: _Scope | None = None, text: str = "") -> _Reading:
    """Bind the structure words to the mentions, in an order where each step leaves for the next only what
    it did not consume: rankings, comparisons and dates claim their numbers first, values become filters,
    then keys, counts and finally measures with their aggregates."""
    reading = _Reading(table, tokens, list(mentions), set(used), text=text, bucket=bucket, scope=scope)
    read_stated_conversion(reading)
    _read_data_as_a_whole(reading)
    _read_sea_level(reading)
    _read_period_of_the_data(reading)
    _read_participles_of_rows(reading)
    read_role_nouns(reading)
    read_measure_nouns(reading)
    read_included(reading)
    settle_rivals(reading)
    drop_restated_unit(reading)
    read_arithmetic(reading)
    read_spread(reading)
    read_exists(reading, text)
    read_any_row(reading)
    read_column_list(reading)
    _read_clock_times(reading)
    read_sort_order(reading, text)
    read_open_bounds(reading)
    read_measure_of_number(reading, _in_column_unit)
    read_routes(reading, text)
    _read_compared_magnitude(reading)
    _read_top(reading)
    read_lateness(reading)
    check_condition_ends(reading)
    read_number_ranges(reading, _range_column, _in_column_unit)
    _read_comparisons(reading)
    _read_bounded_row_counts(reading)
    _read_dates(reading)
    read_weekdays(reading)
    _read_participles_of_conditions(reading)
    _read_relation_verbs(reading)
    read_contrast(reading)
    # (a value is no superlative, whatever it ends with: "Southwest", "Key West")
    # (a ranking read already keeps its direction: "furthest ahead of schedule", the lateness's)
    if reading.direction is None:
        reading.direction = _direction([t for i, t in enumerate(tokens) if (i not in reading.used
                                                                            or reading.mention_at(i))
                                        and not _in_value(reading, i)])
    _read_dimensions(reading)
    read_asked_measure(reading)
    read_later_measure(reading)
    read_how_late(reading)
    _read_ties(reading)
    _read_ranked_bucket(reading)
    _read_counted_numbers(reading)
    _read_share(reading)
    _read_signs(reading)
    _read_missing(reading)
    read_excluded_bounds(reading)
    _settle_by_other_words(reading)  # (before the columns to show are read: "… and the delay")
    _read_shown(reading)
    _read_truth_words(reading)
    read_absence(reading)
    _read_values(reading)
    _read_time_superlative(reading, _table_words(table))
    _read_combinations(reading)
    _read_keys(reading, _table_words(table))
    _read_compared_groups(reading)
    _read_extreme_per_group(reading)
    _read_ranked_keys(reading)
    _read_ranked_on_average(reading)
    _read_ranked_rows(reading, _table_words(table))
    _read_which_column(reading)
    _read_each_of_those_named(reading)
    _read_each_of_those_said(reading)
    _read_counts(reading, _table_words(table))
    _read_measures(reading)
    read_measure_unit(reading)
    _read_extreme(reading)
    _read_flags(reading)
    _read_judgement(reading)
    settle_shown_value(reading)
    settle_shown_columns(reading)
    read_keys_by_name(reading)
    _read_leftover_columns(reading)
    settle_presence(reading)
    read_compared_periods(reading)
    settle_open_bounds(reading)
    _settle_asked_bound(reading)
    read_ranking_superlative(reading)
    _read_named_again(reading)
    _read_extreme_row_shown(reading)
    settle_shares_contrasted(reading)
    return reading


def _said_single(reading: _Reading) -> bool:
    """Whether "single" stressed a superlative: "the single biggest departure delay", one row's."""
    return any(token.stressed_by == "single" for token in reading.tokens)


def _read_extreme_row_shown(reading: _Reading) -> None:
    """"When did the single worst departure delay happen? Give the date, carrier, flight number and the delay":
    the greatest (or least) of a column, said of a single row whose columns are asked for, is that row, first,
    with the columns asked (its date first where the question asks when, or on what date)."""
    extremes = [(column, aggregate) for column, aggregate in reading.measures if aggregate in (MAX, MIN)]
    dates = date_columns(reading.base)
    asked_date = reading.keys == dates[:1] and len(dates) == 1
    if len(extremes) != 1 or len(reading.measures) != 1 or not _said_single(reading) \
            or reading.keys and not asked_date or reading.bucket not in (None, "day") or reading.top not in (None, 1):
        return
    column, aggregate = extremes[0]
    besides = [name for name in reading.shown if name != column]
    when = asked_date or reading.bucket == "day" or reading.norm(0) == "when"
    # One column alone may not tell the row apart (a flight number is shared by carriers). Asked only when it
    # happened ("On what date did the single worst departure delay happen?"), the row is shown with the columns
    # that tell it apart, its date among them: the day's greatest delay alone did not say which flight had it.
    if len(besides) < 2 and (besides or not when):
        return
    if besides and when:
        reading.shown = [*dates[:1], *(name for name in reading.shown if name not in dates[:1])]
    reading.keys, reading.bucket, reading.measures = [], None, []
    reading.order_measure, reading.direction, reading.top = column, aggregate == MAX, 1
    if not besides:
        reading.shown = []
    elif column not in reading.shown:
        reading.shown.append(column)
    reading.used.update(i for i, token in enumerate(reading.tokens) if token.norm == "when")


def _settle_asked_bound(reading: _Reading) -> None:
    """The number an aggregate is compared with, in the unit of the one column it aggregates ("over 5 kg"
    of a mass in grams is over 5,000)."""
    if reading.asked_bound is None:
        return
    op, number, unit_at = reading.asked_bound
    columns = {column for column, _ in reading.measures}
    # "Is the average UA flight longer than 1,000 miles?": the rows' own noun (``flight``, each flight's number)
    # measures nothing; the aggregate said with it is the other column's
    own = {column for column in columns if named_as_rows(reading.base, column)}
    if len(columns - own) == 1 and own:
        aggregate = next((aggregate for _, aggregate in reading.measures if aggregate), None)
        columns -= own
        reading.measures = [(column, aggregate) for column in columns]
    if len(columns) != 1:
        raise NoPlan("a yes/no question compares one aggregate with a number")
    # the column said twice ("the total body mass … 200,000 g", its unit naming it again) is one measure
    reading.measures = sorted(reading.measures, key=lambda measure: measure[1] is None)[:1]
    reading.asked_bound = (op, _in_column_unit(reading, columns.pop(), number, unit_at), unit_at)


def _in_value(reading: _Reading, index: int) -> bool:
    """Whether the word at ``index`` is part of a value the question names."""
    mention = reading.mention_at(index)
    return mention is not None and mention.is_value


def _read_each_of_those_named(reading: _Reading) -> None:
    """"On islands other than Dream, how many penguins are there on each?": "each" closing the question, with no
    noun of its own, is each value of the column whose values a condition before it left (values listed are
    groups of their own already)."""
    if reading.keys or reading.bucket is not None:
        return
    last = len(reading.tokens) - 1
    if last < 1 or reading.norm(last) not in ("each", "every") or reading.mention_at(last) is not None:
        return
    named = [f for f in reading.filters if f.kind in ("value", "name") and f.op in ("<>", "not in")
             and 0 <= f.start < last]
    if named:
        reading.keys.append(max(named, key=lambda f: f.start).column)
        reading.used.add(last)


_EACH_ONE_VERBS = frozenset({"have", "has", "had", "get", "got", "see", "saw", "record", "log", "make", "count",
                             "receive", "received"})
"""Verbs that may close a question after "each" or "each one" ("… did each one have?")."""


def _read_each_of_those_said(reading: _Reading) -> None:
    """"For the carriers that had any cancellations, how many cancelled flights did each one have?": "each" (or
    "each one") with no noun of its own, near the end, groups by the one column the question named before it
    by its plural (the rows' owners); without it the count was of every row, the groups said but not used."""
    if reading.keys or reading.bucket is not None:
        return
    for index, token in enumerate(reading.tokens):
        if token.norm not in ("each", "every") or not reading.free(index):
            continue
        after = index + 2 if reading.norm(index + 1) == "one" else index + 1
        if any(not reading.free(i) or reading.norm(i) not in _EACH_ONE_VERBS
               for i in range(after, len(reading.tokens))):
            continue
        owners = [m for m in reading.mentions if not m.is_value and m.end <= index and m.end - m.start == 1
                  and reading.tokens[m.start].norm != reading.tokens[m.start].stem
                  and reading.column(m.target.column).type == STRING]
        if not owners and _find_phrase(reading, _COUNT_PHRASES) is not None and len(reading.shown) == 1 \
                and reading.column(reading.shown[0]).type == STRING:
            # "which destinations …, and how many flights went to each?": the values listed are the groups, by
            # their name too where the question reaches a table that names them (a code alone says little)
            key = reading.shown.pop()
            name = name_column_of_key(reading, key)
            reading.keys.extend([key] if name is None else [key, name])
            reading.used.update(range(index, len(reading.tokens)))
            return
        if len(owners) != 1:
            return
        reading.keys.append(owners[0].target.column)
        reading.mentions.remove(owners[0])
        reading.used.update((*range(owners[0].start, owners[0].end), *range(index, len(reading.tokens))))
        _note_term(reading, owners[0])
        return


def _read_compared_groups(reading: _Reading) -> None:
    """"compare the three species on body mass", "how do the 3 species compare on average bill length": the text
    column compared is the groups, each one's figure side by side (its count after "the" says how many)."""
    if reading.keys or reading.bucket is not None or reading.top is not None \
            or not any(token.norm in ("compare", "compared") for token in reading.tokens):
        return
    for mention in list(reading.mentions):
        if mention.is_value or reading.column(mention.target.column).type != STRING:
            continue
        before = mention.start - 1
        counted = reading.tokens[before].number is not None if before >= 0 else False
        if counted:
            before -= 1
        if reading.norm(before) != "the":
            continue
        reading.keys.append(mention.target.column)
        reading.mentions.remove(mention)
        reading.used.update(range(before, mention.end))
        _note_term(reading, mention)
        return


def _read_leftover_columns(reading: _Reading) -> None:
    """Columns named but neither key, filter nor measure ("the city of Houston", "airports by name" once
    "name" was no key) only describe the rows; the glossary terms they came through still count as used."""
    for mention in list(reading.mentions):
        _note_term(reading, mention)
        if not _describes_rows(reading, mention):
            reading.unplaced.append(_text(reading, mention))
        reading.mentions.remove(mention)
        reading.used.update(range(mention.start, mention.end))


_WHOLE_DATA_NOUNS = frozenset({"study", "survey", "sample", "census", "registry"})


def _read_data_as_a_whole(reading: _Reading) -> None:
    """"Is there any penguin in the study with …": "in the study" (or "in this sample", "across the survey") names
    the data as a whole, whose rows the table's description says were studied, sampled or surveyed, even where
    a column is named by the word (``study``, the season each penguin was sampled in); followed by one of its
    values ("in the study PAL0708") it is that column's."""
    stems = set(phrase(reading.base.description or ""))
    for mention in list(reading.mentions):
        at = mention.start
        if mention.is_value or mention.end - at != 1 or reading.norm(at) not in _WHOLE_DATA_NOUNS \
                or reading.norm(at - 1) not in ("the", "this") or reading.norm(at - 2) not in ("in", "across", "of") \
                or not any(word.startswith(reading.tokens[at].stem[:-1]) for word in stems):
            continue  # ("studied" for "study": a stem cut before its last letter)
        following = reading.mention_at(at + 1)
        if following is not None and following.is_value:
            continue
        reading.mentions.remove(mention)
        reading.used.update(range(at - 2, at + 1))


def _read_sea_level(reading: _Reading) -> None:
    """"Airports more than 5,000 feet above sea level": the level heights are measured from, no value of a
    column, though "sea" is an airport's code. After a unit of length ("feet", "ft", "metres", "m") or a
    number, "above"/"below"/"over" sea level says only what the height is measured from."""
    for at in range(1, len(reading.tokens) - 1):
        if (reading.norm(at), reading.norm(at + 1)) != ("sea", "level") or reading.tokens[at].text != "sea":
            continue
        start = at - 1 if reading.norm(at - 1) in ("above", "below", "over", "under") else at
        previous = reading.tokens[start - 1] if start > 0 else None
        if previous is None or not (unit_named(previous.norm) in ("feet", "metres") or previous.number is not None):
            continue
        mention = reading.mention_at(at)
        if mention is not None:
            if mention.end != at + 1:
                continue
            reading.mentions.remove(mention)
        reading.used.update(range(start, at + 2))


def _read_named_again(reading: _Reading) -> None:
    """"Which penguin has the highest bill ratio? Give its ID and the ratio": a word of a glossary term the
    question used, said again after "the", "its" or "their", is that term again (shown as it is computed), not
    a word of its own ("ratio" alone would ask for a computation)."""
    heads = {word: term for term in reading.terms for word in phrase(term)}
    for index, token in enumerate(reading.tokens):
        if token.stem in heads and reading.free(index) and reading.mention_at(index) is None \
                and reading.norm(index - 1) in ("the", "its", "their"):
            reading.used.add(index)
            column = snake(heads[token.stem])
            if reading.shown and reading.virtual(column) and column not in reading.shown \
                    and reading.column(column).type in NUMBER_TYPES:
                reading.shown.append(column)  # "… with their id and the ratio": shown beside the others


def _read_period_of_the_data(reading: _Reading) -> None:
    """"The first cancelled flight of the year", "the 3 busiest days of the year": "of the year" (or month)
    after rows that have dates names the period the data covers, not a joined table's column of that name
    (a plane's year of manufacture)."""
    if not _time_columns(reading.base):
        return
    for mention in list(reading.mentions):
        at = mention.start
        if mention.is_value or mention.end - at != 1 or reading.norm(at) not in _BUCKETS \
                or reading.norm(at - 1) not in ("the", "this") or reading.norm(at - 2) not in ("of", "in", "during") \
                or reading.base.column(mention.target.column) is not None:
            continue
        reading.mentions.remove(mention)
        reading.used.update(range(at - 2, at + 1))


def _read_participles_of_rows(reading: _Reading) -> None:
    """"the average departure delay of delayed flights": a number column's name said as one participle right
    before the rows' noun says which rows (some condition on the column), not the column again, nor a measure
    of its own. No condition is read from it: it is said to be left unused."""
    rows = _table_words(reading.base)
    for mention in list(reading.mentions):
        token = reading.tokens[mention.start]
        if mention.is_value or mention.end - mention.start != 1 or not token.norm.endswith("ed") \
                or mention.end >= len(reading.tokens) or reading.tokens[mention.end].stem not in rows:
            continue
        columns = [reading.column(column) for column in (mention.target.column, *mention.ambiguous)]
        if all(column.type in NUMBER_TYPES for column in columns):
            reading.mentions.remove(mention)
            reading.used.add(mention.start)
            reading.unplaced.append(token.text)


_SAME_DEED = (frozenset({"manufactured", "built", "made", "constructed", "produced"}),
              frozenset({"bought", "purchased", "acquired"}))
"""Participles that say the same deed: a column's description says one, a question another."""


def _read_participles_of_conditions(reading: _Reading) -> None:
    """"planes manufactured before 1990", "built before 1990": a participle right before a condition says
    what the condition's column records when that column's description says it (or a participle of the same
    deed: the plane's year is when it "was manufactured"), not another column its word names (manufacturer)."""
    for index, token in enumerate(reading.tokens):
        if not token.norm.endswith(("ed", "lt", "de")) or token.kind != "word":
            continue
        mention = reading.mention_at(index)
        if mention is not None and (mention.is_value or mention.end - mention.start != 1):
            continue
        if mention is None and not reading.free(index):
            continue
        said = {stem(word) for word in (token.norm, *(w for deed in _SAME_DEED if token.norm in deed for w in deed))}
        for condition in reading.filters:
            if index < condition.start <= index + 3 \
                    and said & set(phrase(reading.column(condition.column).description or "")):
                if mention is not None:
                    reading.mentions.remove(mention)
                reading.used.add(index)
                break


def _read_relation_verbs(reading: _Reading) -> None:
    """"flights assigned to planes built before 1990": a participle then "to" and the rows of a table the
    queried one joins to says the join, which the plan makes, not a condition of its own."""
    joined = set().union(*(_table_words(join.table) for join in reading.scope.joins)) if reading.scope else set()
    for index, token in enumerate(reading.tokens):
        if token.norm.endswith("ed") and reading.free(index) and reading.mention_at(index) is None \
                and reading.norm(index + 1) == "to" and index + 2 < len(reading.tokens) \
                and reading.tokens[index + 2].stem in joined:
            reading.used.update((index, index + 1))


def _names_used_join(reading: _Reading, column: str, used: set[str]) -> bool:
    """Whether ``column`` is the queried table's side of a join picked among several whose table the plan
    reads (a column of it is a key, filter, measure or shown)."""
    assert reading.scope is not None
    for join in reading.scope.joins:
        if not join.chosen or column not in (mine for mine, _ in join.on):
            continue
        if any(reading.join_of(name) is join for name in used):
            return True
    return False


_SHOWING = frozenset({"show", "list", "give", "display", "include", "including"})
"""Verbs asking to see a column."""


def _said_aside_by(reading: _Reading, start: int) -> bool:
    """"Which destination airport, by name, …", "… by its name": how to tell the rows asked for, set aside."""
    by = start - 2 if reading.norm(start - 1) in ("its", "their") else start - 1
    if by < 1 or reading.norm(by) != "by":
        return False
    return by != start - 1 or _comma_before(reading, by)


def _describes_rows(reading: _Reading, mention: _Mention) -> bool:
    """Whether a column named but not placed in the plan only describes the rows the plan reads anyway: a
    column the plan uses elsewhere ("species except Gentoo"), the time column a bucket or date condition
    reads ("per year of the egg date"), a phrase the catalog matched by a glossary or part of a name, or
    the whole data at the end of the question ("… in the study"). Any other named column was asked about
    and left out: the plan must say so rather than answer as if it had been used."""
    column = mention.target.column
    shown = {*reading.keys, *(name for name, _ in reading.measures), *reading.shown,
             *(name for name in (reading.order_measure, reading.distinct) if name)}
    used = {*shown, *(f.column for f in reading.filters)}
    # "… from Newark — show the airport names": a column asked to be shown is not shown by being filtered on
    # (Newark's airport name picks the rows; the names asked for are the destinations')
    asked = any(reading.norm(at) in _SHOWING for at in range(max(0, mention.start - 3), mention.start)) \
        or _said_aside_by(reading, mention.start)
    if asked and column not in shown:
        return False
    if column in used or mention.source != "name":
        return True
    if reading.scope is not None and _names_used_join(reading, column, used):
        return True  # "destination" in "flights whose destination airport is …": the join it picked is read
    times = {info.name for info in _time_columns(reading.table)}
    if column in times and (reading.bucket is not None or any(f.column in times for f in reading.filters)
                            or any(name in times for name, _ in reading.measures)):
        return True
    return mention.end == len(reading.tokens) and reading.norm(mention.start - 1) == "the" \
        and reading.norm(mention.start - 2) in ("in", "of")
