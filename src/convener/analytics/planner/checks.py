"""Guards before reading, and the checks after it that refuse a question the planner did not understand."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from dataclasses import replace

from convener.analytics.planner.base import MAX_QUESTION_CHARACTERS, NoPlan, Relationship
from convener.analytics.planner.catalog import (
    _common,
    _named_vocabulary,
    _table_words,
    _time_columns,
    named_as_rows,
)
from convener.analytics.planner.grouping import passive
from convener.analytics.planner.restated import restated_stems, said_as_described
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.planner.units import unit_named, unit_of
from convener.analytics.planner.vocabulary import (
    ROLE_NOUNS,
    _DISTINCT_WORDS,
    said_otherwise,
    _AGG_WORDS,
    CONTRACTED_DENIALS,
    AVG,
    _DDL_OBJECTS,
    _FUTURE_WORDS,
    _MEANINGFUL_LOCAL,
    MEDIAN,
    _COMPARE_WORDS,
    _MODIFY_VERBS,
    SUM,
    _TREND_WORDS,
    _UNSUPPORTED,
    _BUCKETS,
    _HIGH_WORDS,
    _LOW_WORDS,
    MAX,
    MIN,
    _TIME_HIGH,
    _TIME_LOW,
    _UNITS,
)
from convener.analytics.shapes import TableInfo
from convener.analytics.wording import Token, parted, phrase, stem, tokenize

_COMPARISON_WORDS = frozenset({"more", "less", "fewer", "than", "above", "below"})
_ORDER_WORDS = (_HIGH_WORDS | _LOW_WORDS | _TIME_HIGH | _TIME_LOW | {"longest", "heaviest", "biggest"}) \
    - {"top", "bottom", "recent"}


# --- Guards and the unknown-word check ---------------------------------------------------------------------


def _guard(question: str) -> list[Token]:
    """Refuse before reading: empty or oversized questions, instructions to change data, questions about
    the future. Returns the question's tokens."""
    if not question or not question.strip():
        raise NoPlan("the question is empty")
    if len(question) > MAX_QUESTION_CHARACTERS:
        raise NoPlan(f"the question is longer than {MAX_QUESTION_CHARACTERS} characters")
    tokens = tokenize(question)
    words = [token.norm for token in tokens]
    if not words:
        raise NoPlan("the question has no words")
    for index, word in enumerate(words):
        if word in _MODIFY_VERBS and _commands(words, index):
            raise NoPlan(f"the question asks to {word} data; a data agent only reads it")
    # ("next month" is ahead; "next to each other" is beside)
    if any(word in _FUTURE_WORDS or word == "next" and words[index + 1:index + 2] != ["to"]
           for index, word in enumerate(words)):
        raise NoPlan("the question asks about the future; the data only records the past")
    if words[0] == "why" or words[:2] == ["how", "come"]:
        raise NoPlan("the question asks why; the data records what happened, not its causes")
    return tokens


_INTENSIFIERS = frozenset({"single", "very", "absolute"})


def without_intensifiers(tokens: list[Token]) -> list[Token]:
    """The question's words without those that only stress the superlative after them ("the single longest
    delay", "the absolute highest"): it ranks the same, and every reading of a superlative looks right before it
    for "the"; the superlative keeps the word as a mark ("single" says one row's), as it does "single" right after
    it ("the busiest single day"). Nor "single" after "which" or "every" ("which single day", "every single
    nest"), nor "away" after a word of distance ("the farthest away")."""
    tokens, kept = list(tokens), []
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if index > 0 and token.norm == "away" and tokens[index - 1].norm in _FAR:
            continue
        if following is None or index == 0:
            kept.append(token)
        elif token.norm in _INTENSIFIERS and _superlative(following.norm) and tokens[index - 1].norm == "the":
            tokens[index + 1] = replace(following, stressed_by=token.norm)
        elif token.norm == "single" and index >= 2 and _superlative(tokens[index - 1].norm) \
                and tokens[index - 2].norm == "the" and kept[-1] is tokens[index - 1] and following.kind == "word":
            kept[-1] = replace(kept[-1], stressed_by=token.norm)  # "the busiest single day"
        # "which single day had the most flights", "every single nest": one, each, as said without it
        elif not (token.norm == "single" and tokens[index - 1].norm in ("which", "what", "every")
                  and following.kind == "word"):
            kept.append(token)
    return kept


_FAR = frozenset({"far", "farther", "farthest", "further", "furthest"})
"""Words of distance that "away" after them only repeats ("the farthest away")."""

_SHORT_UNITS = {"min": "minutes", "mins": "minutes", "hr": "hours", "hrs": "hours"}
"""Units written short that are also other words ("min" is the least of something) when no number is before them."""


def with_short_words_spelled_out(tokens: list[Token], text: str) -> list[Token]:
    """The question's words with a unit written short right after a number spelled out ("more than 15 min
    late": fifteen minutes, not a minimum), and "no" after a noun, in a list, read as "number" ("flight no,
    carrier, destination", "date, carrier, flight no": the flight number, not a denial; "scrapped no?" stays the
    value no)."""
    def spelled(index: int, token: Token) -> str | None:
        if token.norm in _SHORT_UNITS and index > 0 and tokens[index - 1].kind == "number":
            return _SHORT_UNITS[token.norm]
        if token.norm == "no" and index > 0 and tokens[index - 1].kind == "word" \
                and tokens[index - 1].norm not in _NOT_A_NOUN \
                and (index + 1 < len(tokens) and set(text[token.end:tokens[index + 1].start]) & set(",;:)\u2014")
                     # the last item of a list: "date, carrier, flight no"
                     or index + 1 == len(tokens) and "," in text[tokens[max(0, index - 3)].start:token.start]):
            return "number"
        return None

    spelled_out: list[Token] = []
    for index, token in enumerate(tokens):
        if token.norm == "half" and [t.norm for t in tokens[index + 1:index + 2]] in (["an"], ["a"]) \
                and index + 2 < len(tokens) and unit_named(tokens[index + 2].norm) is not None:
            # "under half an hour": 0.5 hours (its "an" dropped, read as the number)
            spelled_out.append(replace(token, text="0.5", norm="0.5", stem="0.5", kind="number", number=0.5,
                                       end=tokens[index + 1].end))
        elif not (token.norm in ("an", "a") and index > 0 and tokens[index - 1].norm == "half"
                  and spelled_out and spelled_out[-1].number == 0.5):
            word = spelled(index, token)
            spelled_out.append(replace(token, norm=word, stem=stem(word)) if word is not None else token)
    return spelled_out


_NOT_A_NOUN = frozenset({"have", "has", "had", "with", "are", "were", "is", "was", "and", "or", "but", "say", "said",
                         "answer", "yes", "of", "at", "there", "by", "for"})
"""Words after which "no" denies ("had no cancellations", "yes or no")."""


def _superlative(word: str) -> bool:
    return word in _HIGH_WORDS or word in _LOW_WORDS or word.endswith("est") and len(word) > 4


def _commands(words: list[str], index: int) -> bool:
    """Whether the verb at ``index`` is an instruction ("delete all cars", "… and run DELETE FROM cars")
    rather than a word of a question ("the biggest drop in price"). CREATE and REPLACE count only before
    a database object."""
    following = words[index + 1] if index + 1 < len(words) else ""
    if words[index] in ("create", "replace"):
        return following in _DDL_OBJECTS
    if words[index] == "set" and _COMPARE_WORDS.intersection(words):
        return False  # "set flights before noon against those after 6 pm": groups set side by side
    previous = words[index - 1] if index > 0 else ""
    return index == 0 or following in ("from", "into", "table", "all", "the", "every", "each") \
        or previous in ("run", "execute", "please", "and", "then", "to", "now")


def _unsupported(reading: _Reading) -> str | None:
    """A word asking for a computation the planner does not make ("percentage", "correlation"); a word of
    change over time ("changed") is fine beside a time bucket, which shows the change."""
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        if token.norm in _UNSUPPORTED or (token.norm in _TREND_WORDS and reading.bucket is None):
            return token.text
    return None


def _unknown_words(reading: _Reading) -> list[str]:
    """Words that name nothing in the chosen table and are not structure or filler: what the planner did
    not understand."""
    vocabulary = _named_vocabulary(reading.table)
    if reading.scope is not None:
        for join in reading.scope.joins:  # "Hawaiian Airlines flights": the joined table's rows
            vocabulary = vocabulary | _table_words(join.table)
    # The description of a column the plan uses tells what the column is ("wind speed" for wind): its words
    # are accounted for by that column.
    for name in _read_columns(reading):
        column = reading.table.column(name)
        if column is not None and column.description:
            vocabulary = vocabulary | said_otherwise(set(phrase(column.description)))
    unknown = [*reading.unplaced]
    structure = _unaccounted_structure(reading)
    for index, token in enumerate(reading.tokens):
        if index in structure:
            unknown.append(token.text)
            continue
        if index in reading.used or token.kind != "word" or token.is_stopword:
            continue
        if token.norm in _TREND_WORDS and reading.bucket is not None:
            continue  # "how did … vary from month to month": the periods side by side show it
        if token.norm == "place" and reading.norm(index - 1) in ("take", "takes", "took", "taking", "taken"):
            continue  # "dives that took place in July": that happened
        if token.norm in _MEASURE_VERBS and not _measured_after(reading, index):
            unknown.append(token.text)  # "penguins that were weighed": which rows, not how much they weighed
            continue
        if token.stem in vocabulary or token.norm in vocabulary or _IRREGULAR.get(token.norm) in vocabulary \
                or _common(token.norm) or token.norm in _MEANINGFUL_LOCAL \
                or token.norm in ("how", "was", "is", "are", "were", "did", "does", "do"):
            continue
        if said_as_described(reading, index):
            if _against_the_description(reading, index):
                unknown.append(token.text)  # "flights that went to NYC" of flights that left New York City
            continue
        if token.number is not None:
            continue
        if token.norm in _AGGREGATE_NOUNS and _AGGREGATE_NOUNS[token.norm] in {agg for _, agg in reading.measures}:
            continue  # "… and what were the two averages?": the averages computed, asked to be shown
        unknown.append(token.text)
    return unknown


def _against_the_description(reading: _Reading, index: int) -> bool:
    """Whether a word that restates the table's description is said the other way round: after "to" where the
    description says the rows left it ("Flights that departed New York City": "flights that went to NYC"),
    after "from" where they reached it. It says something no row is, not nothing."""
    words = re.findall(r"[a-z]+", (reading.base.description or "").lower())
    stems = set(restated_stems(reading, index))
    at = next((i for i, word in enumerate(words) if stem(word) in stems), None)
    if at is None:
        return False
    said = set(words[max(0, at - 5):at])  # how the description comes to the name ("sent from the two … of")
    before = index - 1
    while before >= 0 and reading.norm(before) in ("the", "a", "an"):
        before -= 1
    if said & _AWAY_WORDS:
        return reading.norm(before) in ("to", "into", "toward", "towards")
    if said & _TOWARD_WORDS:
        return reading.norm(before) in ("from", "out")
    return False


_AWAY_WORDS = frozenset({"departed", "left", "leaving", "from", "out"})
_TOWARD_WORDS = frozenset({"arrived", "arriving", "landed", "to", "into", "reached"})


_MEASURE_VERBS = frozenset({"weigh", "weighs", "weighed", "cover", "covers", "covered"})
"""Verbs that carry the measure said after them ("weighed over 6,000 grams", "covered 500 miles"): filler
then, and a condition of their own without one."""


def _measured_after(reading: _Reading, index: int) -> bool:
    """Whether a number follows the word at ``index`` in its clause (before any punctuation)."""
    for at in range(index + 1, len(reading.tokens)):
        if parted(reading.tokens, at - 1, at):
            return False
        if reading.tokens[at].number is not None:
            return True
    return False


_AGGREGATE_NOUNS = {"averages": AVG, "means": AVG, "totals": SUM, "sums": SUM, "medians": MEDIAN}
"""Plural nouns of an aggregate: asking to see the values of the one the plan computes."""


_SAMENESS = frozenset({"same", "identical"})
"""Words that set rows against each other ("on the same day as …"): no reading step plans that."""

_IRREGULAR = {"spend": "spent", "spends": "spent", "spending": "spent", "fly": "flown", "flies": "flown",
              "flew": "flown", "go": "gone", "goes": "gone", "went": "gone", "leave": "left", "leaves": "left",
              "make": "made", "makes": "made", "take": "taken", "takes": "taken", "took": "taken"}
"""Forms of irregular verbs and the participle a column's description may say them by ("spend in the air" of
"Time spent in the air")."""

_DENIALS = frozenset({"no", "not", "never", "none", "nothing", "nobody", "neither", "nor", *CONTRACTED_DENIALS})
"""Words that deny what follows them: one no reading step read turns the answer into its opposite's."""


def _names_after(reading: _Reading, index: int) -> bool:
    """Whether a noun of rows or columns follows within a few words ("each of the three airports")."""
    for at in range(index + 1, min(len(reading.tokens), index + 5)):
        token = reading.tokens[at]
        if token.kind == "word" and not token.is_stopword and token.number is None:
            return not _common(token.norm) or token.norm.endswith("s")
    return False


def _unaccounted_structure(reading: _Reading) -> set[int]:
    """Where a word that changes the answer was left free by every reading step: a comparison ("more than
    an hour late" with no number read), a superlative or ordinal with no ranking behind it ("the first
    cancelled flight" listed unordered), a time bucket other than the one grouped by ("day of the week"
    grouped by day; without a bucket "days" may just name the rows), an average of nothing, a unit with no
    number, "the same". Such words are not filler: ignored, the plan would answer a broader question than the
    one asked."""
    # A direction alone ranks only groups, which it orders: without a key, a limit or a column to rank by,
    # "the three airlines with the highest average delay" would be answered by the table's one average.
    ranked = reading.top is not None or reading.order_measure is not None \
        or reading.direction is not None and (reading.keys or reading.bucket is not None) \
        or any(aggregate in (MIN, MAX) for _, aggregate in reading.measures)
    found: set[int] = set()
    described = _described_words(reading)
    stems = {stem(word) for word in described}
    for index, token in enumerate(reading.tokens):
        if not reading.free(index):
            continue
        word, before = token.norm, reading.norm(index - 1)
        following = reading.tokens[index + 1] if index + 1 < len(reading.tokens) else None
        if word in described and following is not None and (passive(following.norm) or following.stem in stems
                                                             and following.kind == "word"):
            # "nests first seen with an egg", "first-egg observations" of a date "the nest was first observed with
            # one egg"
            continue
        if word in _COMPARISON_WORDS and not (word == "than" and before in ("other", "rather")):
            found.add(index)
        elif word in _ORDER_WORDS and not ranked:
            found.add(index)
        elif word in _BUCKETS and reading.bucket is not None and _BUCKETS[word] != reading.bucket:
            found.add(index)
        elif word in ("average", "mean", "median", "avg"):
            found.add(index)
        elif word in _SAMENESS:
            found.add(index)  # "penguins sampled on the same day": rows set against each other, never read
        elif word in ("distinct", "unique") and not reading.shown and not any(
                token.stem in _table_words(reading.base) for token in reading.tokens[index + 1:index + 3]):
            # "the average seats across the distinct planes" of flights: each plane once, never read (a listing of
            # columns reads it when it is built, "the distinct destinations"; the rows themselves are distinct,
            # "across distinct planes" of the planes)
            found.add(index)
        elif word in _DENIALS and before != "or" or word == "other" and reading.norm(index + 1) == "than" \
                and reading.free(index + 1):  # (not "whether or not")
            found.add(index)  # "carriers that had no departures at all from LaGuardia": those that had some
        elif word == "each" and reading.norm(index + 1) == "of" and not reading.keys and reading.bucket is None \
                and _names_after(reading, index + 1):
            found.add(index)  # "total distance flown from each of the three airports": groups never read
        elif word in _UNITS and len(word) > 2 and before != "in" and not _after_number(reading, index) \
                and not _amount_asked(reading, index):
            found.add(index)
    return found


def _described_words(reading: _Reading) -> set[str]:
    """The words of the descriptions of the columns the plan reads, the time column of a bucket among them."""
    words: set[str] = set()
    for name in _read_columns(reading):
        column = reading.table.column(name)
        if column is not None and column.description:
            words |= {word.lower() for word in column.description.split()}
    return words


def _read_columns(reading: _Reading) -> set[str]:
    """The columns the plan reads, with the time column a bucket cuts."""
    names = _used_columns(reading)
    if reading.bucket is not None:
        names |= {column.name for column in _time_columns(reading.table)[:1]}
    return names


def _amount_asked(reading: _Reading, index: int) -> bool:
    """Whether the unit at ``index`` follows "how many" and is the unit of the column the plan aggregates ("on
    average, how many minutes do flights spend in the air": the air time, in minutes)."""
    said = unit_named(reading.norm(index))
    return reading.norm(index - 1) == "many" and reading.norm(index - 2) == "how" and said is not None \
        and any(unit_of(reading.column(column)) == said for column, agg in reading.measures if agg)


def _after_number(reading: _Reading, index: int) -> bool:
    """Whether a unit follows a number ("5,000 feet"), which a comparison or a ranking has read."""
    return index > 0 and reading.tokens[index - 1].kind in ("number", "date")


def _used_columns(reading: _Reading) -> set[str]:
    """The columns the plan reads: keys, measures, filters (those of groups set against each other too), the
    ranking's and listing's columns."""
    used = {*reading.keys, *(column for column, _ in reading.measures), *(f.column for f in reading.filters),
            *(f.column for side in reading.sides or () for f in side),
            *(f.column for f in (reading.contrast or ())[:2] if isinstance(f, _Filter)), *reading.shown}
    for name in (reading.order_measure, reading.distinct):
        if name:
            used.add(name)
    return used


def _looks_like_name(reading: _Reading, word: str) -> bool:
    """A capitalised word inside the sentence ("sold by Tesla") names something; since a filter value
    must exist in the data, an unknown name makes the question unanswerable rather than ignorable."""
    for index, token in enumerate(reading.tokens):
        if token.text == word and index > 0 and word[:1].isupper() and reading.tokens[index - 1].text not in ".!?":
            return True
    return False



_BE = frozenset({"were", "was", "are", "is", "been", "being", "be", "got", "get", "gets"})
_PRESENTED = frozenset({"listed", "included", "recorded", "observed", "measured", "counted", "tracked",
                        "stored", "logged", "shown", "named", "called", "sampled", "contained"})
"""Participles that say how the data holds the rows, not which rows: "how many airlines are listed"."""


def _unknown_condition(reading: _Reading, unknown: list[str]) -> str | None:
    """An unknown participle that is itself the condition on the rows asked about: said of them ("how many
    penguins were vaccinated", "flights that were refunded") or before their noun ("the injured penguins").
    The rows without it are another population, so the answer would only restate the question's base: the
    question is refused. An unknown word of any other kind ("premium", "built in 2013") is named instead."""
    table_words = _table_words(reading.table)
    for index, token in enumerate(reading.tokens):
        if token.text not in unknown or not reading.free(index) or token.kind != "word":
            continue
        word = token.norm
        if len(word) < 5 or not word.endswith("ed") or word in _PRESENTED:
            continue
        following = reading.tokens[index + 1] if index + 1 < len(reading.tokens) else None
        before_rows = following is not None and (following.norm in table_words or following.stem in table_words)
        if reading.norm(index - 1) in _BE or before_rows:
            return token.text
    return None


def _asked_unknown(reading: _Reading, unknown: list[str]) -> str | None:
    """An unknown word right after which/what ("which pilot flew the most hours"): what the question asks
    for is not in the data, so whatever the rest computes answers another question."""
    for index, token in enumerate(reading.tokens[1:], start=1):
        if token.text in unknown and reading.free(index) and reading.norm(index - 1) in ("which", "what"):
            return token.text
    return None


def _leftover_numbers(reading: _Reading) -> list[str]:
    """Numbers and dates no step claimed: a question with one left is not understood."""
    return [token.text for index, token in enumerate(reading.tokens)
            if index not in reading.used and token.kind in ("number", "date") and reading.mention_at(index) is None]


def _dangling_aggregate(reading: _Reading) -> int | None:
    """Where an aggregate word has nothing to aggregate ("average mpg" when nothing is called mpg)."""
    if reading.measures:
        return None
    for index, token in enumerate(reading.tokens):
        if not reading.free(index) or _AGG_WORDS.get(token.norm) not in (AVG, SUM, MEDIAN) and \
                token.norm not in ("maximum", "minimum", "max", "min"):
            continue
        if token.norm == "total" and reading.norm(index + 1) in ("number", "count"):
            continue
        if reading.count and (token.norm == "total" and reading.norm(index - 1) == "in"
                              or token.norm in ("combined", "altogether", "overall")):
            continue  # "how many flights … in total", "… combined": the count itself
        return index
    return None


_LOWER_OPS = frozenset({">=", ">"})
_UPPER_OPS = frozenset({"<=", "<"})


def check_missing_and_known(filters: Sequence[_Filter]) -> None:
    """Refuse conditions that want a column both missing and known (a missing value read as asked for where it
    was to be left out, beside the known values a ranking of the column keeps): the answer would be no row at
    all, presented as if none met the question."""
    missing = {f.column for f in filters if f.op == "null"}
    both = next((f.column for f in filters if f.op == "not null" and f.column in missing), None)
    if both is not None:
        raise NoPlan(f"the question asks for the rows whose {both} is missing and for those whose {both} is known at "
                     "once: no row is both")


def _disjoint_periods(reading: _Reading) -> str | None:
    """The column whose date, month or year conditions no row can meet at once ("July 2013 with December
    2013" read as both): two periods named side by side are compared, not intersected, and an empty answer
    from their conjunction would be confidently wrong."""
    for column in {f.column for f in reading.filters}:
        for kind in ("date", "year", "month", "number"):  # ("before noon versus at noon or later" too)
            same = [f for f in reading.filters if f.column == column and f.kind == kind]
            equal = {f.values for f in same if f.op == "="}
            if len(equal) > 1:
                return column
            lower = [f for f in same if f.op in _LOWER_OPS | {"="}]
            upper = [f for f in same if f.op in _UPPER_OPS | {"="}]
            for low in lower:
                for high in upper:
                    if low is high or not (low.values and high.values):
                        continue
                    if kind == "number" and low.start == high.start:
                        continue  # ("between 300 and 100", one range said backwards, is read as written)
                    start, end = low.values[0], high.values[0]
                    if type(start) is not type(end):
                        continue
                    strict = low.op == ">" or high.op == "<"
                    if start > end or (strict and start == end):  # type: ignore[operator]
                        return column
        if not _months_met(reading, column):
            return column  # "the first half of 2013 versus the second half": no month is in both
        named = [set(f.values) for f in reading.filters if f.column == column and f.kind == "weekday"
                 and f.op in ("=", "in")]
        if named and not set.intersection(*named):
            return column  # "weekends versus weekdays"
    return None


def _numbers_the_rows(reading: _Reading) -> str | None:
    """A column averaged or summed that is named as the rows are ("flight", a flight's number, of flights):
    "the average flight from JFK" asks about the flights, not the mean of their numbers. So is one no word
    aggregates, beside groups ("on what date did the biggest delay happen, and which flight was it": not the
    day's highest flight number)."""
    for column, aggregate in reading.measures:
        grouped = bool(reading.keys) or reading.bucket is not None
        if (aggregate in (AVG, SUM, MEDIAN) or aggregate is None and grouped) and reading.base.column(column) is not None \
                and named_as_rows(reading.base, column):
            return column
    return None


def _months_met(reading: _Reading, column: str) -> set[int]:
    """The months of the year a row of ``column`` may fall in and meet its month conditions ("in the fourth
    quarter", "June-August") and its date ranges ("from 2013-01-01 to before 2013-07-01") at once."""
    months = set(range(1, 13))
    for condition in reading.filters:
        if condition.column != column or condition.kind != "month":
            continue
        said = {int(value) for value in condition.values if isinstance(value, (int, float))}
        if condition.op in ("=", "in"):
            months &= said
        elif condition.op in ("<>", "not in"):
            months -= said
        elif said and condition.op in _LOWER_OPS:
            months = {month for month in months
                      if month > max(said) or condition.op == ">=" and month == max(said)}
        elif said and condition.op in _UPPER_OPS:
            months = {month for month in months
                      if month < min(said) or condition.op == "<=" and month == min(said)}
    starts = [date.fromisoformat(str(f.values[0])) for f in reading.filters
              if f.column == column and f.kind == "date" and f.op in (">=", ">") and f.values]
    ends = [date.fromisoformat(str(f.values[0])) for f in reading.filters
            if f.column == column and f.kind == "date" and f.op in ("<", "<=") and f.values]
    if starts and ends:
        first, last = max(starts), min(ends)
        if (last - first).days < 365:
            spanned, day = set(), first
            while day < last:
                spanned.add(day.month)
                day = date(day.year + (day.month == 12), day.month % 12 + 1, 1)
            months &= spanned
    return months


def _absent_rows(reading: _Reading) -> str | None:
    """"Which airline has no flights", "carriers with no cancelled flights": a "no" left unread before the
    rows of a table asks for what lacks such rows (an anti-join), which no plan of rows that exist answers."""
    words = set(_table_words(reading.base))
    if reading.scope is not None:
        for join in reading.scope.joins:
            words |= _table_words(join.table)
    for index, token in enumerate(reading.tokens):
        if token.norm != "no" or not reading.free(index):
            continue
        for after in range(index + 1, min(len(reading.tokens), index + 4)):
            if reading.tokens[after].stem in words:
                return " ".join(t.text for t in reading.tokens[index + 1:after + 1])
    return None


def _unshown_measures(reading: _Reading, shape: str) -> list[str]:
    """Number columns named beside a list of the columns to show ("…: date, captain, hull. distance") that
    the list left out and no condition reads: a listing (or a ranking of rows: "the very first flight, by date
    and scheduled departure time") shows no measure, so they would go unshown unsaid."""
    ranks_rows = shape == "top" and not reading.keys and reading.bucket is None
    if shape != "rows" and not ranks_rows or not reading.shown or reading.shown_whole:
        return []
    conditions = {f.column for f in reading.filters}
    ranked = {column for column, agg in reading.measures if agg} | {reading.order_measure} - {None}
    # (a word of the ranked column's name said again, "the highest time made up … the time", is that column)
    said_again = {word for column in ranked if column for word in phrase(column)}
    return list(dict.fromkeys(column for column, agg in reading.measures
                              if agg is None and column not in reading.shown and column not in conditions
                              and column not in ranked and not said_again & set(phrase(column))))


_ROLES = frozenset(ROLE_NOUNS) - {"arrival", "departure"} | {
    # what the rows referring to them did there: "the airports flown to"
    "flown", "flew", "served", "visited", "reached", "sailed", "travelled", "traveled"}


def check_roles_read(reading: _Reading, relationships: Sequence[Relationship]) -> None:
    """"Of the destinations flown to, which airport has the highest altitude?", read on the airports: the
    destinations are the airports other rows (the flights) go to, not every airport. A word of that role (or of
    what those rows did there) on a table others refer to would answer over all its rows: refused rather than
    answered so."""
    referring = sorted({r.left_table for r in relationships if r.right_table == reading.base.name})
    if not referring:
        return
    for token in reading.tokens:
        if token.norm in _ROLES:
            raise NoPlan(f"'{token.text}' speaks of the {reading.base.name} that rows of {' or '.join(referring)} "
                         f"refer to; read on {reading.base.name} alone, the answer would take every one of them")


def check_joined_averages(reading: _Reading) -> None:
    """"Across the distinct planes that flew for Delta, the average year of manufacture": an average over the
    rows of a joined table each taken once, where the join repeats each of them for every row that refers to it
    (a plane once per flight). Refused rather than answered per flight."""
    for column, aggregate in reading.measures:
        join = reading.join_of(column)
        if join is None or aggregate not in (AVG, SUM, MEDIAN, None):
            continue
        words = _table_words(join.table)
        if any(token.norm in _DISTINCT_WORDS and reading.tokens[index + 1].stem in words
               for index, token in enumerate(reading.tokens[:-1])):
            raise NoPlan(f"an aggregate over each distinct row of {join.table.name} is not something this planner "
                         f"computes (joined, each counts once for every row of {reading.base.name})")


def check_ranked_groups_open(reading: _Reading, shape: str) -> None:
    """"Which port, by its name, received the most sailings from Harbourton?" read as the ports the sailings left
    from, Harbourton among them: groups ranked where a condition holds their key to one value rank that value
    alone, the answer the question gave. Refused rather than answered with the place it named."""
    if shape != "top" or not reading.keys:
        return
    # (one name may name several values: "Newark", two airports' names)
    held = [f.column for f in reading.filters if f.column in reading.keys
            and (f.op == "=" and len(f.values) == 1 or f.kind == "name" and f.op in ("=", "in"))]
    if held:
        raise NoPlan(f"the groups ranked are held to one value of {held[0]} by a condition of the question")


def check_counted_keys(reading: _Reading, relationships: Sequence[Relationship]) -> None:
    """"Which 3 planes (tail numbers) flew the most", read on the planes: rows counted per the column other
    tables join them by, their own key, are one each; the count asked for is of the rows that join them (the
    flights), which this reading does not reach. Refused rather than ranked by a count of one."""
    own = {column for relationship in relationships if relationship.right_table == reading.base.name
           for column in relationship.right_columns}
    if (reading.count or reading.top is not None and reading.order_measure is None) and not reading.measures \
            and any(key in own for key in reading.keys):
        others = sorted({r.left_table for r in relationships if r.right_table == reading.base.name})
        raise NoPlan(f"each row of {reading.base.name} has its own {', '.join(k for k in reading.keys if k in own)}: "
                     f"counted by it, every one counts once (the rows that would count are in {' or '.join(others)})")


def check_rows_asked(reading: _Reading, shape: str, others: Sequence[TableInfo]) -> None:
    """Refuse a listing of the queried table's rows where the question asks which rows of another table
    ("Which airlines had cancelled flights?" listed as the cancelled flights themselves), or asks of another
    table's own rows ("which operators in the operators table had no trips": those with none here too)."""
    own = _table_words(reading.base)
    for index, token in enumerate(reading.tokens[1:], start=1):
        said = reading.tokens[index - 1]
        named = next((table for table in others if said.stem in _table_words(table)), None)
        asked = named is not None and any(
            first.norm in ("which", "what") and second.stem in _table_words(named)
            for first, second in zip(reading.tokens, reading.tokens[1:]))
        if token.norm == "table" and said.stem not in own and asked:
            raise NoPlan(f"the question asks of the rows of the {said.text} table; {reading.table.name} was queried")
    if shape != "rows" or reading.shown:
        return
    for index, token in enumerate(reading.tokens[:-1]):
        following = reading.tokens[index + 1]
        if token.norm not in ("which", "what") or not reading.free(index + 1) or following.stem in own:
            continue
        named = next((table for table in others if following.stem in _table_words(table)), None)
        if named is not None:
            raise NoPlan(f"the question asks which {following.text}: listing rows of {reading.table.name} would "
                         f"not say which {named.name.split('.')[-1]} they are")


def _check_understood(reading: _Reading, shape: str) -> tuple[str, ...]:
    """Refuse a plan that would silently ignore part of the question: an unsupported computation, an
    aggregate of nothing, a number or name left unexplained, several unknown words. Returns the one unknown
    word a plan may still be made without (a condition nothing in the data expresses, "premium"): the plan
    carries it so that the answer says it could not use it, rather than pass off a broader answer."""
    absent = _absent_rows(reading)
    if absent is not None:
        raise NoPlan(f"finding what has no {absent} is not something this planner does")
    unsupported = _unsupported(reading)
    if unsupported:
        raise NoPlan(f"'{unsupported}' asks for more than this planner computes (counts, totals, averages, "
                     "minima, maxima, rankings)")
    several = any(f.op == "in" and len(f.values) > 1 and f.kind != "name" and not f.either for f in reading.filters)
    if shape == "share" and (reading.compare or several and not any(t.norm == "or" for t in reading.tokens)):
        # "compare the share … on Dream and Biscoe": one share over both groups is not the share of each
        # ("… from JFK or LGA" is one share of their union)
        raise NoPlan("comparing shares between groups is not something this planner does")
    if shape == "top" and not reading.keys and reading.bucket is None and (reading.top or 1) > 1 \
            and any(agg in (AVG, SUM, MEDIAN) for _, agg in reading.measures):
        # "the average distance of the 5 longest flights": an aggregate of the rows ranked, not those rows
        raise NoPlan("an aggregate of the rows a ranking picks is not something this planner computes")
    numbered = _numbers_the_rows(reading)
    if numbered is not None:
        raise NoPlan(f"{numbered} numbers the rows of {reading.table.name}: it is no measure to average, total "
                     "or take for each group")
    disjoint = _disjoint_periods(reading)
    if disjoint is not None:
        raise NoPlan(f"the conditions on {disjoint} exclude each other: comparing them is not something this "
                     "planner does")
    dangling = _dangling_aggregate(reading)
    if dangling is not None:
        word = reading.tokens[dangling].text.lower()
        of = f" '{reading.tokens[dangling + 1].text}'" if dangling + 1 < len(reading.tokens) else ""
        raise NoPlan(f"could not tell which column of {reading.table.name} to take the {word} of{of}")
    unknown = _unknown_words(reading) + _unshown_measures(reading, shape)
    numbers = _leftover_numbers(reading)
    if numbers:
        raise NoPlan(f"could not tell what {', '.join(numbers[:3])} refers to in {reading.table.name}")
    names = [word for word in unknown if _looks_like_name(reading, word)]
    if names:
        raise NoPlan(f"found no value '{names[0]}' in {reading.table.name}")
    asked = _asked_unknown(reading, unknown)
    if asked is not None:
        raise NoPlan(f"nothing in {reading.table.name} is a '{asked}', which the question asks about")
    condition = _unknown_condition(reading, unknown)
    if condition is not None:
        raise NoPlan(f"nothing in {reading.table.name} tells which rows were '{condition}'")
    if len(unknown) >= 2 or (unknown and shape in ("rows", "exists")):
        words = ", ".join(f"'{word}'" for word in unknown[:4])
        raise NoPlan(f"{reading.table.name} has nothing matching {words}")
    if shape == "rows" and not (reading.listing or reading.filters or reading.measures):
        raise NoPlan(f"the question names {reading.table.name} but not what to compute or list")
    if shape == "rows" and reading.direction is not None:
        raise NoPlan(f"could not tell which column of {reading.table.name} to rank by")
    return tuple(unknown)
