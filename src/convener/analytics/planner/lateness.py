"""Lateness said in words: "left more than an hour late", "arrived more than 50 minutes early", "more than two
hours behind schedule". The column is the table's delay (in a unit of time) at the end of the trip the verb
names (leaving: the departure's delay; arriving: the arrival's), and "early" is a delay below zero."""

from __future__ import annotations

from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _Mention, _Target
from convener.analytics.planner.scope import _direction_of
from convener.analytics.planner.state import _Filter, _matches, _Reading, groups_set_against
from convener.analytics.planner.units import unit_named, unit_of
from convener.analytics.planner.vocabulary import (
    _AWAY,
    _COMPARATORS,
    _SHARE_VERBS,
    TRIP_END_WORDS,
    _SHARE_WORDS,
    _TOWARD,
    AUXILIARIES,
    AVG,
)
from convener.analytics.shapes import NUMBER_TYPES, ColumnInfo
from convener.analytics.wording import phrase

_LATE = (("behind", "schedule"), ("late",), ("later",))
_EARLY = (("ahead", "of", "schedule"), ("early",), ("earlier",))
_TIME_UNITS = frozenset({"minutes", "hours", "seconds"})
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}
_PHRASAL = {**{(verb, "in"): "toward"
               for verb in ("got", "get", "gets", "getting", "came", "come", "comes", "coming")},
            **{(verb, "down"): "toward" for verb in ("touched", "touch", "touches", "touching")},
            **{(verb, "off"): "away" for verb in ("took", "take", "takes", "taking")},
            **{(verb, "back"): "away" for verb in ("pushed", "push", "pushes", "pushing")}}
"""Verbs of two words for the ends of a trip ("got in" is arriving, "pushed back" leaving)."""


def _delay_columns(reading: _Reading) -> list[ColumnInfo]:
    """Numeric columns of the queried table that are a delay in a unit of time ("dep_delay": "Departure delay
    in minutes")."""
    return [column for column in reading.base.columns if column.type in NUMBER_TYPES
            and "delay" in {*phrase(column.name), *phrase(column.description or "")}
            and unit_of(column) in _TIME_UNITS]


def check_condition_ends(reading: _Reading) -> None:
    """"What percentage of flights departed late" where the glossary's "late" is an arrival more than 15
    minutes late: a condition on the delay of one end of the trip, said of the other end's verb, is not
    that condition. Said with no amount ("left late", "didn't leave late"), it is that end's delay above zero
    (at most zero, denied), when its description says early is negative; else it is refused, as answering with
    the condition would answer another question."""
    if reading.scope is None:
        return
    delays = {column.name: _direction_of(column) for column in _delay_columns(reading)}
    for mention in list(reading.mentions):
        condition = reading.scope.virtual.get(mention.target.column)
        if not mention.is_value or condition is None:
            continue
        ends = {delays[column.name] for column in condition.find_all(exp.Column) if column.name in delays}
        if len(ends) != 1 or None in ends:
            continue
        near = range(max(0, mention.start - 2), min(len(reading.tokens), mention.end + 2))
        for index in near:
            word = reading.norm(index)
            said = None if word not in TRIP_END_WORDS else "toward" if word in _TOWARD else "away" if word in _AWAY \
                else None
            if said is None or said in ends:
                continue
            other = [name for name, end in delays.items() if end == said
                     and "negative" in (reading.column(name).description or "").lower()]
            # (with an amount, "6 hours late leaving", or asked how, "how late they left", it is no condition)
            amount = reading.norm(mention.start - 1) == "how" or unit_named(reading.norm(mention.start - 1)) is not None
            if len(other) != 1 or mention.end - mention.start != 1 or reading.norm(mention.start) != "late" or amount:
                raise NoPlan(f"'{reading.tokens[mention.start].text}' is defined for the other end of the trip "
                             f"than '{reading.tokens[index].text}'")
            _read_late_at_the_other_end(reading, mention, index, other[0])
            break


def _read_late_at_the_other_end(reading: _Reading, mention: _Mention, verb: int, column: str) -> None:
    """"left late" of ``column`` (the departure delay): above zero, or at most zero where a negation stands
    before it ("didn't leave late", "weren't late leaving")."""
    first = min(mention.start, verb)
    negation = next((at for at in range(first - 1, max(-1, first - 3), -1)
                     if reading.norm(at) in _NOT and reading.free(at)), None)
    reading.mentions.remove(mention)
    reading.used.update((mention.start, verb))
    if negation is not None:
        reading.used.add(negation)
    reading.filters.append(_Filter(column, "<=" if negation is not None else ">", (0,), "number", mention.start))


def read_lateness(reading: _Reading) -> None:
    """"<comparison> <number> <unit of time> late|early|behind schedule": a condition on the delay of the
    end of the trip a verb of the clause names; where no verb or several delays leave the column open, the
    words are left to the other readings (and refused when none reads them)."""
    delays = _delay_columns(reading)
    if not delays:
        return
    for index in range(len(reading.tokens)):
        for words, op in _COMPARATORS:
            if _matches(reading, index, words):
                _read_one(reading, index, len(words), op, delays)
                break
    _read_plain_lateness(reading, delays)


_PLAIN = ((("on", "time", "or", "early"), "<="), (("early", "or", "on", "time"), "<="),
          (("on", "time", "or", "ahead", "of", "schedule"), "<="), (("early",), "<"), (("ahead", "of", "schedule"), "<"),
          (("behind", "schedule"), ">"),
          *(((edge, owner, "scheduled", "time"), op) for edge, op in (("before", "<"), ("after", ">"))
            for owner in ("their", "its", "the")))
"""Lateness said with no amount: early, ahead of schedule or before the scheduled time is a delay below zero,
behind schedule (after it) above, on time or early at most zero. ("On time" alone is not read: whether it allows
a few minutes is not said.)"""


def _read_plain_lateness(reading: _Reading, delays: list[ColumnInfo]) -> None:
    """"Flights that arrived early", "how many got in ahead of schedule", "left behind schedule": a delay
    below (or above) zero, the delay's description saying early is negative, at the end of the trip the verb
    right before names."""
    for index in range(len(reading.tokens)):
        said = next(((words, op) for words, op in _PLAIN if _said(reading, index, words)), None)
        if said is None:
            continue
        words, op = said
        # "arrived furthest ahead of schedule", "left the most behind schedule": the delay ranked, not compared
        degree = index - 2 if reading.norm(index - 2) == "the" and reading.norm(index - 1) == "most" else index - 1
        ranked = reading.norm(index - 1) in _FURTHEST and op in ("<", ">") and reading.free(index - 1)
        before = degree if ranked else index
        verb = next((i for i in (before - 1, before - 2) if _direction(reading, i) is not None), None)
        if verb is None:
            continue
        column, _ = _column(reading, verb + 1, delays, -1)
        if column is None or "negative" not in (column.description or "").lower():
            continue
        if ranked:
            reading.direction = op == ">"
            reading.order_measure = column.name
            reading.top = reading.top or 1
            reading.used.update(range(degree, index))
        averaged = next((at for at in (index + len(words), verb - 2) if _on_average(reading, at)), None)
        if averaged is not None:
            # "did Delta flights arrive early on average": whether the average delay is below zero, not the
            # flights that each did; asked only as a yes/no question
            if reading.norm(0) not in AUXILIARIES or reading.asked_bound is not None:
                continue
            reading.asked_bound = (op, 0.0, index)
            reading.measures.append((column.name, AVG))
            reading.used.update((averaged, averaged + 1))
        else:
            negation = next((at for at in (verb - 1, verb - 2) if reading.norm(at) in _NOT and reading.free(at)), None)
            if negation is not None:  # "did not arrive early": at or after the schedule
                op = _NEGATED[op]
                reading.used.add(negation)
            reading.filters.append(_Filter(column.name, op, (0,), "number", index))
        span = range(index, index + len(words))
        for mention in [m for m in reading.mentions if m.start in span or m.end - 1 in span]:
            reading.mentions.remove(mention)  # ("schedule": part of sched_dep_time's name, read here)
        reading.used.update(span)
        _read_phrasal(reading, verb)
        if not any(token.norm in _SHARE_WORDS for token in reading.tokens):
            # (with a share the verb is left to it: "what percentage arrived early" splits the share there)
            reading.used.add(verb)
            named = reading.mention_at(verb)
            if named is not None and not named.is_value:
                reading.mentions.remove(named)  # "arrive": the verb, not a column whose name it abbreviates


_FURTHEST = frozenset({"furthest", "farthest", "most"})
"""Superlatives of how far from the schedule ("furthest ahead of schedule", "the most behind schedule")."""
_NOT = frozenset({"not", "never", "didnt", "doesnt", "dont", "wasnt", "werent"})
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


def _on_average(reading: _Reading, index: int) -> bool:
    return (reading.norm(index), reading.norm(index + 1)) == ("on", "average")


def _read_phrasal(reading: _Reading, particle: int) -> None:
    """A verb of two words ends at ``particle``: its particle is read with it, and its first word too unless a
    share splits there ("what percent of EV's flights got in late": the rows that did, of EV's)."""
    if (reading.norm(particle - 1), reading.norm(particle)) not in _PHRASAL:
        return
    reading.used.add(particle)
    if reading.norm(particle - 1) not in _SHARE_VERBS:
        reading.used.add(particle - 1)


def _direction(reading: _Reading, index: int, read_already: bool = False) -> str | None:
    """The end of the trip the verb at ``index`` names ("arrived", the "in" of "got in"): toward or away;
    a verb another reading took is none, unless ``read_already`` says it may have been."""
    if index < 0 or index in reading.used and not read_already:
        return None
    phrasal = _PHRASAL.get((reading.norm(index - 1), reading.norm(index)))
    if phrasal is not None:
        return phrasal
    word = reading.norm(index)
    if word not in TRIP_END_WORDS:
        return None
    return "toward" if word in _TOWARD else "away" if word in _AWAY else None


def _read_one(reading: _Reading, index: int, size: int, op: str, delays: list[ColumnInfo]) -> None:
    number_at = index + size
    token = reading.tokens[number_at] if number_at < len(reading.tokens) else None
    if token is None or not reading.free(number_at):
        return
    if token.number is not None:
        amount, unit_at = token.number, number_at + 1
    elif token.norm in ("a", "an"):
        amount, unit_at = 1.0, number_at + 1  # "more than an hour late"
    else:
        return
    unit = unit_named(reading.norm(unit_at))
    if unit not in _TIME_UNITS or unit_at in reading.used:
        return  # (a unit may be a mention: "hours" names the one column in hours, the time zone's offset)
    after = unit_at + 1
    late = next((words for words in _LATE if _said(reading, after, words)), None)
    early = next((words for words in _EARLY if _said(reading, after, words)), None)
    said: tuple[str, ...] | None = late or early
    start = index
    if said is None:
        # "delayed (leaving) by more than 10 hours (on departure)": a delay said with its verb, no "late"
        delayed = _delayed_by(reading, index)
        if delayed is None:
            return
        said, start = (), delayed
        if reading.norm(after) in ("on", "at", "when") and reading.free(after):
            after += 1  # "… on departure": the end of the trip said after the amount
    column, verb = _column(reading, index, delays, after + len(said))
    if column is None:
        return
    own = unit_of(column)
    value = amount if own == unit else amount * (reading.factor(unit, own or "") or 0)
    if not value:
        return
    if early:
        op, value = _FLIPPED[op], -value
    reading.filters.append(_Filter(column.name, op, (value,), "number", index))
    span = range(start, after + len(said))
    # "late" (a glossary condition), "schedule" (part of sched_dep_time's name): read here, as the delay
    for mention in [m for m in reading.mentions if m.start in span or m.end - 1 in span]:
        reading.mentions.remove(mention)
    reading.used.update(span)
    if verb is not None:
        reading.used.add(verb)
        _read_phrasal(reading, verb)
        named = reading.mention_at(verb)
        if named is not None:
            reading.mentions.remove(named)  # "departing": the verb, not a column whose name it abbreviates


def _delayed_by(reading: _Reading, index: int) -> int | None:
    """Where "delayed" stands before the "by" right before the comparison at ``index`` ("delayed by more than",
    "delayed leaving by more than"): the delay compared is the one the verb of leaving or arriving names."""
    if reading.norm(index - 1) != "by" or index - 1 in reading.used:
        return None
    return next((at for at in (index - 2, index - 3) if reading.norm(at) == "delayed" and at not in reading.used
                 and all(_direction(reading, between) is not None for between in range(at + 1, index - 1))), None)


def _said(reading: _Reading, index: int, words: tuple[str, ...]) -> bool:
    """Whether ``words`` stand at ``index``, unread (a mention of them is read over: "late" as a glossary
    condition is the lateness compared here)."""
    return all(reading.norm(index + offset) == word and index + offset not in reading.used
               for offset, word in enumerate(words))


def _column(reading: _Reading, index: int, delays: list[ColumnInfo],
            end: int) -> tuple[ColumnInfo | None, int | None]:
    """The delay a comparison at ``index`` is about, and the verb that said which: the only delay, else the
    one at the end of the trip the nearest verb of leaving or arriving before it names, or right after the
    lateness (``end``: "more than 5 hours late departing")."""
    # (after the lateness, a verb of two words ends a word later: "late taking off")
    verb = next((i for i in (*range(index - 1, max(-1, index - 6), -1), end, end + 1)
                 if _direction(reading, i) is not None
                 and not ((found := reading.mention_at(i)) is not None and found.is_value)), None)
    if verb is None:
        return (delays[0], None) if len(delays) == 1 else (None, None)
    direction = _direction(reading, verb)
    matching = [column for column in delays if _direction_of(column) == direction]
    if len(matching) != 1:
        return None, None
    return matching[0], verb


def read_later_measure(reading: _Reading) -> None:
    """"B6 or EV: whose flights arrived later on average?": a verb of one end of the trip and "later" or
    "earlier", with no number to compare, asks for that end's delay as a measure (its aggregate said
    elsewhere), compared between the groups the question names."""
    delays = _delay_columns(reading)
    # Only where groups are set against each other ("B6 or EV"): else "later" compares with nothing said,
    # and left unread it tells the reader so.
    if not groups_set_against(reading):
        return
    for index, token in enumerate(reading.tokens):
        if token.norm not in ("later", "earlier") or not reading.free(index) or reading.norm(index + 1) == "than":
            continue
        verb = index - 1
        if reading.norm(verb) not in TRIP_END_WORDS or not reading.free(verb):
            continue
        end = "toward" if reading.norm(verb) in _TOWARD else "away" if reading.norm(verb) in _AWAY else None
        columns = [column for column in delays if _direction_of(column) == end]
        if end is None or len(columns) != 1:
            continue
        reading.mentions.append(_Mention(index, index + 1, _Target(reading.table.name, columns[0].name), "lateness"))
        reading.mentions.sort(key=lambda mention: mention.start)
        reading.used.add(verb)
        return


def read_how_late(reading: _Reading) -> None:
    """"On average, how late were arrivals in July?", "how late did the flights arrive": the delay of the end of
    the trip the verb or noun after "how late" names, as a measure (its aggregate said elsewhere, else an
    average)."""
    delays = _delay_columns(reading)
    for index, token in enumerate(reading.tokens[:-2]):
        late = reading.mention_at(index + 1)
        # ("how late they arrived": the glossary's "late arrival" read as its adjective and verb is no condition)
        if token.norm != "how" or reading.norm(index + 1) != "late" or not reading.free(index) \
                or index + 1 in reading.used and (late is None or late.source != "glossary") \
                or late is not None and (late.start != index + 1 or not late.is_value):
            continue  # (the glossary's "late", or its "late arrival" read across "were": "late were arrivals")
        # (the glossary's term may have taken its verb with "late": "how late they arrived")
        glossed = late is not None and late.source == "glossary"
        for at in range(index + 2, min(index + 6, len(reading.tokens))):
            word = reading.norm(at)
            end = _direction(reading, at, glossed) \
                or ("toward" if word == "arrivals" else "away" if word == "departures" else None)
            if end is None:
                continue
            columns = [column for column in delays if _direction_of(column) == end]
            if len(columns) != 1:
                return
            named = reading.mention_at(at)
            if named is not None and not named.is_value and named is not late:
                reading.mentions.remove(named)  # "arrivals": the end said, not a column whose name it abbreviates
            if late is not None:
                reading.mentions.remove(late)  # "late": how much, not the glossary's condition
            reading.mentions.append(_Mention(index + 1, index + 2, _Target(reading.table.name, columns[0].name),
                                             "lateness"))
            reading.mentions.sort(key=lambda mention: mention.start)
            reading.used.update((index, at))
            return
