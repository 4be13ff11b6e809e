"""What a question says in parentheses beside what it says in words: the data's own values glossing the names
before them ("Miami (MIA)", "United, Delta or American (UA, DL, AA)") and examples of what the words name
("each day of the week (Monday, Tuesday, ...)"). Either way the parentheses repeat the question; the words
they repeat are read once."""

from __future__ import annotations

import re
from collections.abc import Sequence

from convener.analytics.planner.catalog import _Candidate
from convener.analytics.wording import Token

_PARENTHESES = re.compile(r"\(([^()]*)\)")
_ELIDED = re.compile(r"(\.\.\.|…|\betc\.?)\s*$", re.IGNORECASE)
_JOINERS = frozenset({"and", "or"})


def parenthesised(tokens: list[Token], text: str, candidates: Sequence[_Candidate]) -> set[int]:
    """Indexes of the words that parentheses repeat: names the values in parentheses after them gloss, and
    examples in parentheses that end in an ellipsis or "etc." (the examples themselves)."""
    repeated: set[int] = set()
    for match in _PARENTHESES.finditer(text):
        inside = [i for i, token in enumerate(tokens) if match.start(1) <= token.start < match.end(1)]
        if not inside:
            continue
        if _ELIDED.search(match.group(1)):
            repeated.update(inside)  # "(Monday, Tuesday, ...)": what the words before name, by example
            continue
        if _range_of_a_period(tokens, inside):
            repeated.update(inside)  # "by scheduled departure hour (0-23)": the values the hours take
            continue
        if _days_of_a_week_part(tokens, inside):
            repeated.update(inside)  # "on weekends (Sat+Sun)": the days the word names
            continue
        values = _values_listed(tokens, inside, candidates)
        if values:
            repeated.update(_names_before(tokens, text, _past_column_name(inside, candidates), values))
    return repeated


_PERIOD_WORDS = frozenset({"hour", "hours", "minute", "minutes", "month", "months", "day", "days", "weekday"})


def _range_of_a_period(tokens: list[Token], inside: list[int]) -> bool:
    """Whether the words in parentheses are a range of numbers ("0-23", "1 to 12") right after a period named
    within a few words before them ("hour of their scheduled departure (0-23)"): the values the period takes."""
    words = [tokens[i] for i in inside]
    numbers = [token for token in words if token.kind == "number"]
    if len(numbers) != 2 or any(t.kind != "number" and t.norm not in ("to", "through") for t in words) \
            or not (numbers[0].number or 0) < (numbers[1].number or 0) <= 60:
        return False
    return any(tokens[i].norm in _PERIOD_WORDS for i in range(max(0, inside[0] - 5), inside[0]))


_WEEK_PARTS = frozenset({"weekend", "weekends", "weekday", "weekdays"})
_DAY_NAMES = frozenset({day for name in ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
                        for day in (name, name[:3], name[:3] + "s", name + "s")} | {"tues", "thur", "thurs"})


def _days_of_a_week_part(tokens: list[Token], inside: list[int]) -> bool:
    """Whether the words in parentheses are days of the week (named or cut short: "Sat+Sun", "Sat/Sun", "Mon-Fri")
    right after "weekend(s)" or "weekday(s)", which they spell out."""
    words = [tokens[i] for i in inside if tokens[i].kind == "word"]
    return inside[0] > 0 and tokens[inside[0] - 1].norm in _WEEK_PARTS and bool(words) \
        and all(token.norm in _DAY_NAMES | _JOINERS | {"to", "through", "thru"} for token in words)


def _past_column_name(inside: list[int], candidates: Sequence[_Candidate]) -> int:
    """Where the names the parenthesised values gloss end: right before the parentheses, or before the name of
    the values' column said between ("the Pacific time zone (America/Los_Angeles)")."""
    columns = {(c.target.table, c.target.column) for c in candidates
               if c.source == "value" and inside[0] <= c.start <= inside[-1]}
    named = [c.start for c in candidates if c.source == "name" and c.end == inside[0] and c.start < c.end
             and (c.target.table, c.target.column) in columns]
    return min(named, default=inside[0])


def _values_listed(tokens: list[Token], inside: list[int], candidates: Sequence[_Candidate]) -> int:
    """How many values of the data the words in parentheses list, each one whole ("MIA"; "UA, DL, AA"), or 0
    when they are anything else."""
    spans = {(c.start, c.end) for c in candidates if c.source == "value" and not c.target.alternatives}
    count, index = 0, inside[0]
    while index <= inside[-1]:
        if tokens[index].norm in _JOINERS and count:
            index += 1
            continue
        end = max((e for s, e in spans if s == index and e - 1 <= inside[-1]), default=None)
        if end is None:
            return 0
        count, index = count + 1, end
    return count


def _names_before(tokens: list[Token], text: str, opening: int, count: int) -> set[int]:
    """The capitalised words before the parentheses at ``opening`` that name ``count`` things, one name (of at
    most four words) per value, with the commas, "and" and "or" between them; none when they do not."""
    names: set[int] = set()
    found, size, index = 0, 0, opening - 1
    while index >= 0:
        token, gap = tokens[index], text[tokens[index].end:tokens[index + 1].start]
        if "," in gap or token.norm in _JOINERS:
            if found == count:
                break
            size = 0  # a name ends here
        if token.kind == "word" and token.text[:1].isupper() and not token.is_stopword:
            found += size == 0
            size += 1
            if size > 4:
                return set()
            names.add(index)
        elif token.norm in _JOINERS and found:
            names.add(index)
        else:
            break
        index -= 1
    return names if found == count else set()
