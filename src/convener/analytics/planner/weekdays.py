"""The day of the week: "on a Saturday", "on Saturdays or Sundays", "on weekends" (a condition on the day's
name), "for each day of the week", "which day of the week …" (a bucket of seven named days). SQL per
dialect: DuckDB's DAYNAME, PostgreSQL's TO_CHAR, SQLite's day number named by a CASE."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.wording import Token

DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_NAMES = {name.lower(): name for name in DAYS} | {name.lower() + "s": name for name in DAYS}
_STARTING = frozenset({"starting", "beginning", "start", "starts", "begin", "begins", "began", "started"})
_TEMPLATES = {
    "duckdb": ("DAYNAME(x)", "duckdb"),
    "postgres": ("TRIM(TO_CHAR(x, 'FMDay'))", "postgres"),
    "sqlite": ("CASE CAST(STRFTIME('%w', x) AS INTEGER) "
               + " ".join(f"WHEN {number} THEN '{name}'" for number, name in enumerate(DAYS)) + " END", "sqlite"),
}


_NUMBER_TEMPLATES = {
    "duckdb": ("ISODOW(x)", "duckdb"),
    "postgres": ("CAST(EXTRACT(ISODOW FROM x) AS INTEGER)", "postgres"),
    "sqlite": ("(CAST(STRFTIME('%w', x) AS INTEGER) + 6) % 7 + 1", "sqlite"),
}


def weekday_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The English name of the day of the week of a date column ("Saturday")."""
    return _applied(_TEMPLATES, column, dialect)


def weekday_number_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The day of the week of a date column as ISO 8601 numbers it: Monday 1 to Sunday 7."""
    return _applied(_NUMBER_TEMPLATES, column, dialect)


def _applied(templates: dict[str, tuple[str, str]], column: exp.Expr, dialect: str) -> exp.Expr:
    template = templates.get(dialect)
    if template is None:
        raise NoPlan(f"the day of the week is not planned in {dialect}")
    tree = sqlglot.parse_one(template[0], read=template[1])

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name == "x" and not node.table:
            return column.copy()
        return node

    return tree.transform(replace)


def weekday_bucket(tokens: list[Token], index: int) -> list[int]:
    """The tokens of "day of the week" / "day of week" starting at ``index`` ("day"), or "weekday"; [] if none."""
    norm = [token.norm for token in tokens]
    if norm[index] in ("weekday", "weekdays") and (index == 0 or norm[index - 1] != "on") \
            and not _says_weekends(tokens):  # ("weekends versus weekdays": days, set against)
        return [index]
    if norm[index] in ("day", "days") and norm[index + 1:index + 3] == ["of", "week"]:
        return [index, index + 1, index + 2]
    if norm[index] in ("day", "days") and norm[index + 1:index + 4] == ["of", "the", "week"]:
        return [index, index + 1, index + 2, index + 3]
    return []


def _range_end(reading: _Reading, index: int) -> int | None:
    """Where the day that ends a range of days starting at ``index`` is ("Monday through Friday", "Monday to
    Sunday"), or None."""
    if reading.norm(index + 1) in ("through", "thru", "to", "until", "till") and reading.free(index + 1) \
            and reading.norm(index + 2) in _NAMES and reading.free(index + 2):
        return index + 2
    return None


def read_weekdays(reading: _Reading) -> None:
    """Names of days of the week no value of the data claims: a condition that the row's date falls on
    one of them ("on Saturdays or Sundays")."""
    found: list[str] = []
    start = -1
    for index, token in enumerate(reading.tokens):
        name = _NAMES.get(token.norm)
        if name is None or not reading.free(index):
            continue
        starting = [index - 2, index - 1] if reading.norm(index - 1) == "on" else [index - 1]
        if reading.norm(index + 1) in ("start", "based") and reading.free(index + 1):
            starting = [index + 1]  # "weeks (Monday-start)", "Monday-based weeks": the same, said after
        if reading.norm(starting[0]) in _STARTING or starting == [index + 1]:
            # "weeks starting (on) Monday" says how weeks are cut, not which days count: weeks are cut on
            # Mondays (ISO 8601), and cut on any other day they are not planned; "each day of the week,
            # starting Monday" is the order the days come in, which is Monday first
            weeks = reading.bucket in ("week", "weekday") \
                or any(token.norm in ("week", "weeks", "weekly") for token in reading.tokens)  # ("which week")
            if not weeks or name != "Monday":
                raise NoPlan(f"weeks starting on {name} are not something this planner cuts")
            reading.used.update((*starting, index))
            continue
        through = _range_end(reading, index)
        if through is not None:
            # "Monday through Friday": every day from the one to the other
            first, last = DAYS.index(name), DAYS.index(_NAMES[reading.norm(through)])
            found.extend(DAYS[(first + step) % 7] for step in range((last - first) % 7 + 1))
            start = index if start < 0 else start
            reading.used.update(range(index, through + 1))
            continue
        found.append(name)
        start = index if start < 0 else start
        reading.used.add(index)
        if reading.norm(index - 1) in ("a", "an") and reading.free(index - 1):
            reading.used.add(index - 1)
        if reading.norm(index - 1) in ("or", "and") and reading.free(index - 1):
            reading.used.add(index - 1)
    groups = _day_groups(reading)
    if not found and not groups:
        return
    from convener.analytics.planner.dates import _time_column  # (dates reads buckets with this module)

    column = _time_column(reading)
    if column is None:
        raise NoPlan(f"{reading.table.name} has no date to tell the day of the week by")
    if found:
        values = tuple(dict.fromkeys(found))
        op = "in" if len(values) > 1 else "="
        reading.filters.append(_Filter(column.name, op, values, "weekday", start))
    # each group its own condition: "weekends versus weekdays" are two that no day meets at once
    reading.filters.extend(_Filter(column.name, "in", days, "weekday", at) for at, days in groups)


_GROUPS = {"weekend": ("Saturday", "Sunday"), "weekends": ("Saturday", "Sunday"),
           "weekday": DAYS[1:6], "weekdays": DAYS[1:6]}
"""Days of the week by a name for several of them."""
_ON = frozenset({"on", "during", "over", "at", "a", "the"})


def _says_weekends(tokens: list[Token]) -> bool:
    """Whether weekends are said: then "weekdays" are the days set against them, not a bucket of seven."""
    return any(token.norm in ("weekend", "weekends") for token in tokens)


def _day_groups(reading: _Reading) -> list[tuple[int, tuple[str, ...]]]:
    """"on weekends", "weekend flights", "on weekdays": where a name for several days of the week is said and
    the days it names. "Weekday" is read so only after "on" and the like: "for each weekday" is a bucket."""
    groups = []
    for index, token in enumerate(reading.tokens):
        days = _GROUPS.get(token.norm)
        if days is None or not reading.free(index):
            continue
        if token.norm.startswith("weekday") and reading.norm(index - 1) not in _ON \
                and not _says_weekends(reading.tokens):
            continue
        groups.append((index, days))
        reading.used.add(index)
        if reading.norm(index - 1) in _ON and reading.free(index - 1):
            reading.used.add(index - 1)
    return groups
