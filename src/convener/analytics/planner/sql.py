"""Building SQL: each shape as a sqlglot tree, conditions, date buckets per dialect, and rendering."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import sqlglot
from sqlglot import exp

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _row_nouns, _table_words, named_as_rows
from convener.analytics.planner.dates import _time_column
from convener.analytics.planner.joined_rows import codes_of_names
from convener.analytics.planner.listing import identifies_rows, with_joined_keys
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.planner.weekdays import weekday_number_of, weekday_of
from convener.analytics.planner.vocabulary import (
    _AGG_NAMES,
    _BUSY_WORDS,
    _DISTINCT_WORDS,
    _FREQUENT,
    AVG,
    MAX,
    MEDIAN,
    MIN,
    STDDEV_POP,
    STDDEV_SAMP,
    SUM,
    VAR_POP,
    VAR_SAMP,
)
from convener.analytics.shapes import STRING, TIME_TYPES, TableInfo
from convener.analytics.wording import snake, split_identifier, stem


# --- Shapes ------------------------------------------------------------------------------------------------


@dataclass
class _Query:
    """The SQL being assembled, dialect-neutral until rendered."""

    select: list[exp.Expr]
    group: list[exp.Expr] = field(default_factory=list)
    order: list[exp.Expr] = field(default_factory=list)
    where: list[exp.Expr] = field(default_factory=list)
    limit: int | None = None
    distinct: bool = False
    ties: bool = False
    """Keep every row tied with the last one the limit keeps (rankings of rows only)."""
    asked: exp.Expr | None = None
    """A condition every row found is asked to meet (yes or no), answered over them instead of listing them."""


# --- Building each shape -----------------------------------------------------------------------------------


def _col(name: str) -> exp.Column:
    """A quoted column reference."""
    return exp.column(name, quoted=True)


def _aggregate(agg: str | None, column: str, dialect: str) -> exp.Expr:
    """The aggregate function node of a column; MEDIAN does not exist on SQLite and is refused there."""
    return _aggregate_of(agg, _col(column), dialect)


def _aggregate_of(agg: str | None, operand: exp.Expr, dialect: str) -> exp.Expr:
    """The aggregate function node of any expression (a column, or a CASE keeping some rows' values); the
    aggregates SQLite lacks (MEDIAN, standard deviation, variance) are refused there."""
    agg = agg or AVG
    if agg == MEDIAN and dialect == "sqlite":
        raise NoPlan("a median cannot be computed on SQLite")
    if agg in (STDDEV_SAMP, STDDEV_POP, VAR_SAMP, VAR_POP) and dialect == "sqlite":
        raise NoPlan("a standard deviation or variance cannot be computed on SQLite")
    functions: dict[str, type[exp.Func]] = {AVG: exp.Avg, SUM: exp.Sum, MIN: exp.Min, MAX: exp.Max,
                                            MEDIAN: exp.Median, STDDEV_SAMP: exp.StddevSamp,
                                            STDDEV_POP: exp.StddevPop, VAR_SAMP: exp.Variance,
                                            VAR_POP: exp.VariancePop}
    return functions[agg](this=operand)


def _measure_alias(agg: str | None, column: str) -> str:
    """``average_horsepower``, ``total_yield``…"""
    return f"{snake(_AGG_NAMES[agg or AVG])}_{snake(column)}"


def _measures(reading: _Reading, dialect: str, default: str | None = AVG) -> list[tuple[exp.Expr, str]]:
    """Each measure as an aliased aggregate and its alias (``average_horsepower``)."""
    sums = reading.scope.sums if reading.scope else frozenset()
    chosen = [(column, agg or (SUM if column in sums else default)) for column, agg in reading.measures]
    return [(exp.alias_(_aggregate(agg, column, dialect), _measure_alias(agg, column), quoted=True),
             _measure_alias(agg, column)) for column, agg in chosen]


def _count_expression(reading: _Reading) -> tuple[exp.Expr, str]:
    """COUNT(*) named after the rows, or COUNT(DISTINCT column)."""
    if reading.distinct:
        alias = f"distinct_{snake(reading.distinct)}"
        return exp.alias_(exp.Count(this=exp.Distinct(expressions=[_col(reading.distinct)])), alias,
                          quoted=True), alias
    alias = f"number_of_{_rows_called(reading.table)}"
    return exp.alias_(exp.Count(this=exp.Star()), alias, quoted=True), alias


def _rows_called(table: TableInfo) -> str:
    """What the rows are, for naming a count: a plural table name ("cars"), else the one noun of a
    description saying "one row per day" (→ "days"), else the table name."""
    name = snake(table.name.split(".")[-1])
    nouns = _row_nouns(table.description or "")
    if name.endswith("s") or len(nouns) != 1:
        return name
    noun = next(iter(nouns))
    return noun if noun.endswith("s") else f"{noun}s"


def _values(reading: _Reading, dialect: str) -> list[tuple[exp.Expr, str]]:
    """What a grouped shape computes: the measures, or a count of rows when the question counts or names
    the rows ("airports per state"); "sales by region", with nothing called sales, is not a count."""
    if reading.share_split is not None:
        return [_share_expression(reading, dialect)]
    if reading.measures:
        counted = [_count_expression(reading)] if reading.count and reading.rows_counted else []
        return [*counted, *_measures(reading, dialect)]
    if not (reading.count or reading.distinct or _names_rows(reading) or _ranks_by_condition(reading)
            or _ranks_by_activity(reading) or reading.absent):
        by = " and ".join(reading.keys) or "group"
        raise NoPlan(f"could not tell what to compute for each {by} of {reading.table.name}")
    return [_count_expression(reading)]


def _ranks_by_condition(reading: _Reading) -> bool:
    """"Which month had the most cancellations": a condition on the rows named right after "most" or
    "fewest" is what is counted in each group."""
    conditions = {f.start for f in reading.filters if f.kind == "boolean"}
    return reading.top is not None and any(
        token.norm in ("most", "fewest", "least") and conditions & {index + 1, index + 2, index + 3}
        for index, token in enumerate(reading.tokens))


def _ranks_by_activity(reading: _Reading) -> bool:
    """"The 3 busiest carriers", "the quietest month", "the 5 most frequent destinations", "the least common
    species": how busy, frequent or common a group is is how many rows it has."""
    tokens = reading.tokens
    return reading.top is not None and any(
        token.norm in _BUSY_WORDS or token.norm in _FREQUENT and index > 0
        and tokens[index - 1].norm in ("most", "least", "fewest") for index, token in enumerate(tokens))



def _names_rows(reading: _Reading) -> bool:
    """Whether the question names the table's rows ("airports", "days"), or some of them by a glossary term of
    a condition said as their plural ("late arrivals by quarter": the flights that arrived late)."""
    words = _table_words(reading.table)
    return any(token.stem in words for token in reading.tokens if token.kind == "word") or any(
        f.kind == "boolean" and reading.virtual(f.column) and 0 <= f.start < len(reading.tokens)
        and reading.tokens[f.start].norm.endswith("s") for f in reading.filters)


def _build_count(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT COUNT(*) (or COUNT(DISTINCT column))."""
    expression, alias = _count_expression(reading)
    what = f"distinct {reading.distinct} values" if reading.distinct else "rows"
    return _Query([expression]), alias, f"Counts the {what} of {reading.table.name}"


def _build_exists(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT COUNT(*) > 0: whether any row meets the conditions (a yes/no question)."""
    answer = exp.alias_(exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0)), "answer",
                        quoted=True)
    return _Query([answer]), f"any_{_rows_called(reading.table)}", \
        f"Tells whether any row of {reading.table.name} meets the conditions"


def _build_contrast(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """One measure over two groups of rows, set against each other: whether the first's is higher (or lower)
    than the second's, or by how much, each group's aggregate over its rows only (CASE WHEN, portable)."""
    assert reading.contrast is not None
    first, second, higher, asked = reading.contrast
    measures = list(dict.fromkeys(reading.measures))  # "how many mm longer are the flippers": one, said twice
    groups = f"{_describe_filters([first]).removeprefix(', where ')} and {_describe_filters([second]).removeprefix(', where ')}"
    if not measures and reading.count:
        # "were more penguins sampled in PAL0809 than in PAL0708": each group's number of rows
        def of(item: _Filter) -> exp.Expr:
            return _hits(reading, [item], dialect)
        alias = f"number_of_{_rows_called(reading.base)}"
        words = f"the number of rows of {reading.table.name} where {groups}"
    elif not measures and reading.share_split is not None:
        # "is JFK's cancellation rate lower than Newark's": each group's share of its own rows
        _, alias = _share_expression(reading, dialect)  # (takes the share's conditions out of the filters)

        def of(item: _Filter) -> exp.Expr:
            part = exp.Mul(this=exp.Literal.number("100.0"),
                           expression=_hits(reading, [item, *reading.share_conditions], dialect))
            return exp.Div(this=part, expression=_hits(reading, [item], dialect))
        counted = _describe_filters(reading.share_conditions).removeprefix(", where ")
        words = f"the percentage of rows where {counted} among the rows of {reading.table.name} where {groups}"
    else:
        if len(measures) != 1:
            raise NoPlan("two groups are compared on one measure at a time; name the one to compare")
        column, agg = measures[0]
        measured = agg or AVG

        def of(item: _Filter) -> exp.Expr:
            case = exp.Case(ifs=[exp.If(this=_condition(reading, item, dialect), true=_col(column))])
            return _aggregate_of(measured, case, dialect)
        alias = _measure_alias(measured, column)
        words = f"the {_AGG_NAMES[measured]} {column} of the rows of {reading.table.name} where {groups}"

    left, right = (of(first), of(second)) if higher else (of(second), of(first))
    if asked == "whether":
        # the yes or no, then each group's figure it rests on, in the order the question names the groups
        answer = exp.alias_(exp.GT(this=left, expression=right), "answer", quoted=True)
        figures = [exp.alias_(of(item), f"{alias}_{_label(item, number)}", quoted=True)
                   for number, item in enumerate((first, second), start=1)]
        return _Query([answer, *figures]), f"{alias}_compared", f"Tells which is higher of {words}, beside each"
    difference = exp.alias_(exp.Sub(this=left, expression=right), "difference", quoted=True)
    return _Query([difference]), f"difference_in_{alias}", f"Computes the difference between {words}"


def _label(item: _Filter, number: int) -> str:
    """A group's name in a column's alias: the values its condition names ("jfk", "jfk_lga"), else its place."""
    said = "_".join(snake(str(value)) for value in item.values) if item.kind in ("value", "name") else ""
    return said[:30] or str(number)


def _build_aggregate(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT AVG/SUM/MIN/MAX/MEDIAN of the measures, no grouping."""
    counted = [_count_expression(reading)] if reading.count and reading.rows_counted else []
    measures = [*counted, *_measures(reading, dialect)]
    name = "_and_".join(alias for _, alias in measures)
    words = ", ".join(["the number of rows"] * len(counted)
                      + [f"the {_AGG_NAMES[agg or AVG]} of {column}" for column, agg in reading.measures])
    if reading.asked_bound is not None:
        # "is the average … over 215?": the one aggregate compared with the number, yes or no
        if len(measures) != 1 or not isinstance(measures[0][0], exp.Alias):
            raise NoPlan("a yes/no question compares one aggregate with a number")
        op, number, _ = reading.asked_bound
        answer = _COMPARE[op](this=measures[0][0].this.copy(), expression=exp.Literal.number(_plain(number)))
        return _Query([exp.alias_(answer, "answer", quoted=True)]), "answer", \
            f"Tells whether {words} in {reading.table.name} is {op} {_plain(number)}"
    return _Query([expression for expression, _ in measures]), name, f"Computes {words} in {reading.table.name}"


def _keys(reading: _Reading, dialect: str) -> list[tuple[exp.Expr, exp.Expr, str]]:
    """Each group key as (what to group by, what to select, its name). A date column is grouped by the
    bucket asked for, else by what its name says it holds (a ``year`` column by year), else by day."""
    keys: list[tuple[exp.Expr, exp.Expr, str]] = []
    for key in reading.keys:
        if key in reading.hour_keys:  # HHMM times: 1530 is in hour 15
            hour = exp.IntDiv(this=_col(key), expression=exp.Literal.number(100))
            keys.append((hour, exp.alias_(hour.copy(), f"{key}_hour", quoted=True), f"hour of {key}"))
            continue
        if reading.column(key).type not in TIME_TYPES:
            keys.append((_col(key), _col(key), key))
            continue
        named = "year" if stem(key.lower()) == "year" else "month" if "month" in key.lower() else "day"
        unit = reading.bucket or named
        grouped = _bucket(_col(key), unit, dialect)
        keys.append((grouped, exp.alias_(grouped.copy(), unit, quoted=True), unit))
    return keys


def _key_columns(reading: _Reading, keys: list[tuple[exp.Expr, exp.Expr, str]],
                 dialect: str) -> tuple[list[exp.Expr], list[exp.Expr], list[int]]:
    """What the keys select and group by, and where each key is ordered by. A date cut into years shows the
    year's first day beside the year's number: both name the year, as a number to read and as a date for a
    time axis (and for whoever compares the answer with a bucket written as DATE_TRUNC). A day of the week
    shows its ISO number beside its name, and the days are ordered by it, Monday first, not by name."""
    selects: list[exp.Expr] = []
    groups: list[exp.Expr] = []
    positions: list[int] = []
    for (grouped, selected, name), key in zip(keys, reading.keys, strict=True):
        selects.append(selected)
        groups.append(grouped)
        positions.append(len(selects))
        if reading.column(key).type not in TIME_TYPES:
            continue
        if name == "year":
            start = _year_start(_col(key), dialect)
            selects.append(exp.alias_(start, "year_start", quoted=True))
            groups.append(start.copy())
        elif name == "weekday":
            number = weekday_number_of(_col(key), dialect)
            selects.append(exp.alias_(number, "weekday_number", quoted=True))
            groups.append(number.copy())
            positions[-1] = len(selects)
    return selects, groups, positions


def _year_start(column: exp.Expr, dialect: str) -> exp.Expr:
    """The first day of the year of a date column, per dialect."""
    if dialect == "sqlite":
        return _substitute(sqlglot.parse_one("DATE(x, 'start of year')", read="sqlite"), column)
    return _substitute(sqlglot.parse_one("DATE_TRUNC('YEAR', x)", read="duckdb"), column)


def _build_group(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """The measures (or a count) for each value of the group keys, ordered by the keys."""
    keys = _keys(reading, dialect)
    values = _values(reading, dialect)
    selects, groups, places = _key_columns(reading, keys, dialect)
    positions: list[exp.Expr] = [exp.Literal.number(place) for place in places]
    query = _Query(selects + [value for value, _ in values], group=groups, order=positions)
    by = " and ".join(name for _, _, name in keys)
    name = f"{'_and_'.join(alias for _, alias in values)}_by_{snake(by)}"
    return query, name, f"Computes {_value_words(reading)} of {reading.table.name} for each {by}"


def _build_compare(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """A group by the column whose values the question lists ("Europe and Japan", "2014 and 2015"),
    restricted to those values by the IN filter already read."""
    multi = next(f for f in reading.filters if f.op == "in" and f.kind in ("value", "year", "weekday"))
    if multi.kind in ("year", "weekday"):
        reading.bucket = multi.kind
    compared = [*codes_of_names(reading, multi.column), multi.column]
    # the groups asked for first ("… of each species"), then the values listed within each
    reading.keys = [*reading.keys, *compared]
    query, name, explanation = _build_group(reading, dialect)
    listed = " and ".join(str(_plain(v)) for v in multi.values)
    return query, name, f"Compares {listed}: {explanation[0].lower()}{explanation[1:]}"


def _build_time_series(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """A group by the table's date column cut into the bucket asked for (or its own grain)."""
    column = _time_column(reading)
    if column is None:
        raise NoPlan(f"{reading.table.name} has no date column to group by {reading.bucket}")
    if column.name not in reading.keys:
        reading.keys.insert(0, column.name)
    elif reading.keys[0] != column.name:
        reading.keys.remove(column.name)
        reading.keys.insert(0, column.name)
    if reading.bucket is None:
        reading.bucket = "year" if stem(column.name.lower()) == "year" else None
    if column.type not in TIME_TYPES:
        if reading.bucket not in (None, "year"):
            # "planes per month" over a year of manufacture: a year holds no months
            raise NoPlan(f"{reading.table.name}.{column.name} holds years: it has no {reading.bucket} "
                         "to group by")
        reading.bucket = None
    return _build_group(reading, dialect)


LABELS_SHOWN = 6
"""At most this many columns say which row is which in a ranking of rows, besides the measure."""


def _label_columns(reading: _Reading, skip: set[str]) -> list[str]:
    """Columns that say which row is which in a top-N list, in the table's order: its own key, a date, and its
    text columns (names, codes, categories) while there is room: up to ``LABELS_SHOWN``."""
    columns = [c for c in reading.base.columns if c.name not in skip]
    own = [c.name for c in columns if _own_key(reading.base, c.name)][:1]
    dates = [c.name for c in columns if c.type in TIME_TYPES][:1]
    texts = [c.name for c in columns if c.type == STRING and c.name not in own]
    chosen = set([*own, *dates, *texts][:LABELS_SHOWN])
    return [c.name for c in columns if c.name in chosen]


def _own_key(table: TableInfo, column: str) -> bool:
    """``order_id`` of orders, ``id``, ``flight`` of flights (each flight's number): the column that tells the
    table's rows apart."""
    return identifies_rows(table, column) or named_as_rows(table, column)


def _build_top(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """The N best rows by a measure, with the text and date columns that tell them apart; NULLs are left
    out so they never rank first."""
    limit = reading.top or 1
    descending = reading.descending if reading.direction is None else reading.direction
    if reading.order_measure and not any(column == reading.order_measure for column, _ in reading.measures):
        reading.measures.insert(0, (reading.order_measure, None))
    order_word = "highest" if descending else "lowest"
    if not reading.keys and reading.bucket is not None:
        time_column = _time_column(reading)  # "which month had the most flights": months ranked
        if time_column is not None:
            reading.keys.append(time_column.name)
    if reading.keys:
        return _build_top_groups(reading, dialect, limit, descending, order_word)
    if not reading.measures:
        raise NoPlan(f"could not tell what to rank the rows of {reading.table.name} by")
    column = reading.measures[0][0]
    # The columns the question asks to see of each row ("…: ID, study, species"), else those that tell rows apart
    labels = _shown(reading) or _label_columns(reading, {column})
    select: list[exp.Expr] = [_col(name) for name in dict.fromkeys([*labels, column])]
    query = _Query(select, order=[exp.Ordered(this=_col(column), desc=descending)], limit=limit,
                   ties=reading.ties)
    reading.filters.append(_Filter(column, "not null", (), "number"))
    table = reading.table.name.split(".")[-1]
    asked = reading.asked_of_top
    if asked is not None:
        return _asked_of_rows(reading, query, asked, dialect), "answer", (
            f"Tells whether {_describe_filters([asked]).removeprefix(', where ')} for each of the {limit} rows of "
            f"{reading.table.name} with the {order_word} {column}")
    name = f"{'top' if descending else 'bottom'}_{limit}_{snake(table)}_by_{snake(column)}"
    return query, name, f"Lists the {limit} rows of {reading.table.name} with the {order_word} {column}"


def _asked_of_rows(reading: _Reading, query: _Query, asked: _Filter, dialect: str) -> _Query:
    """The rows ``query`` finds, with the column ``asked`` is about among those it shows, asked whether all
    of them meet it; the column must be the queried table's own (it is read from the rows found)."""
    if reading.scope is not None and asked.column in reading.scope.virtual:
        raise NoPlan(f"whether the top rows have a value of {asked.column} (another table's) is not planned")
    if not any(isinstance(c, exp.Column) and c.name == asked.column for c in query.select):
        query.select.append(_col(asked.column))
    query.asked = _condition(reading, asked, dialect)
    return query


def _shown(reading: _Reading) -> list[str]:
    """The columns a ranking of rows shows of each: those asked for ("…: ID, study, species"); with the rows
    shown whole ("… with their species"), the columns that tell rows apart come first."""
    if not reading.shown_per_row:
        return []
    if reading.shown_whole:
        return [*_label_columns(reading, set(reading.shown)), *reading.shown]
    return _with_own_key(reading, reading.shown)


def _with_own_key(reading: _Reading, columns: list[str]) -> list[str]:
    """The columns asked to be shown of each row, then the column that tells the rows apart (the table's own
    key: ``flight`` of flights, ``order_id``) when they do not include it: "Which flights went to Honolulu?
    Give the date, airline and arrival delay" names which flights by their numbers too."""
    key = next((c.name for c in reading.base.columns if _own_key(reading.base, c.name)), None)
    return [*columns, key] if key is not None and key not in columns else list(columns)


def _build_top_groups(reading: _Reading, dialect: str, limit: int, descending: bool,
                      order_word: str) -> tuple[_Query, str, str]:
    """The N best groups by their aggregate (or count), ranked by the value column's position."""
    if reading.measures:
        reading.measures = [(column, agg or (_top_default(reading, descending) if reading.column(column).type
                                             not in TIME_TYPES else MAX if descending else MIN))
                            for column, agg in reading.measures]  # a date is never totalled
    keys = _keys(reading, dialect)
    values = _values(reading, dialect)
    # "the two tail numbers with the most flights": rows without one are no tail number, so no group ranked
    reading.filters.extend(_Filter(key, "not null", (), "value") for key in reading.keys
                           if reading.column(key).type not in TIME_TYPES and key not in reading.empty_grouped)
    selects, groups, _ = _key_columns(reading, keys, dialect)
    first_value: exp.Expr = exp.Literal.number(len(selects) + 1)
    if reading.ties and isinstance(values[0][0], exp.Alias):
        first_value = values[0][0].this.copy()  # compared with the cut-off in HAVING, so the expression itself
    query = _Query(selects + [value for value, _ in values], group=groups,
                   order=[exp.Ordered(this=first_value, desc=descending)], limit=limit, ties=reading.ties)
    by = " and ".join(name for _, _, name in keys)
    name = f"{'top' if descending else 'bottom'}_{limit}_{snake(by)}_by_{values[0][1]}"
    return query, name, (f"Lists the {limit} {by} values of {reading.table.name} ranked by "
                         f"{_value_words(reading)}, {order_word} first")


def _top_default(reading: _Reading, descending: bool) -> str:
    """"Which variety has the most yield" sums; "which symbol has the highest price" takes the maximum and
    "which island had the earliest egg date" the minimum: the group ranked first holds the extreme row."""
    words = {token.norm for token in reading.tokens}
    if words & {"most", "least"}:
        return SUM
    return MIN if not descending or words & {"lowest", "smallest", "minimum"} else MAX


def _value_words(reading: _Reading) -> str:
    """The values computed, in words."""
    if reading.share_split is not None and reading.ratio is None:
        if reading.share_conditions:
            described = _describe_filters(reading.share_conditions).removeprefix(", where ")
            return f"the percentage of rows where {described}"
        return "the percentage of all the rows"
    if not reading.measures:
        return f"the number of {'distinct ' + reading.distinct if reading.distinct else 'rows'}"
    counted = ["the number of rows"] if reading.count and reading.rows_counted else []
    return ", ".join([*counted, *(f"the {_AGG_NAMES[agg or AVG]} {column}" for column, agg in reading.measures)])


def _share_expression(reading: _Reading, dialect: str) -> tuple[exp.Expr, str]:
    """100 × the rows meeting the share's conditions / all rows (of the base filters). The conditions are
    taken out of the filters, which then pick only the rows the share is of."""
    if not reading.share_conditions and reading.ratio is None:
        split = reading.share_split if reading.share_split is not None else -1
        counted = [f for f in reading.filters if f.start > split and f.kind not in ("year", "date")]
        if reading.share_span is not None:
            counted = [f for f in reading.filters if reading.share_span[0] <= f.start < reading.share_span[1]]
        # a condition on a group's own column keeps the groups ("the share … on Dream and Biscoe", each island's)
        counted = [f for f in counted if f.column not in reading.keys]
        if not counted and reading.keys:
            return _group_share_expression(reading)
        if not counted:
            raise NoPlan(f"could not tell what share of the rows of {reading.table.name} to compute")
        reading.share_conditions = counted
        reading.filters = [f for f in reading.filters if f not in counted]
    if reading.ratio is not None:
        return _ratio_expression(reading, dialect)
    condition = exp.and_(*(_condition(reading, f, dialect) for f in reading.share_conditions))
    summed = _summed_share(reading)
    # "what percent of the total miles were flown out of JFK": the kept rows' part of the column's sum
    kept = _col(summed) if summed is not None else exp.Literal.number(1)
    hits = exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=kept)], default=exp.Literal.number(0)))
    whole = exp.Sum(this=_col(summed)) if summed is not None else exp.Count(this=exp.Star())
    share = exp.Div(this=exp.Mul(this=exp.Literal.number("100.0"), expression=hits), expression=whole)
    alias = f"percent_of_total_{snake(summed)}" if summed is not None else f"percent_of_{_rows_called(reading.base)}"
    return exp.alias_(share, alias, quoted=True), alias


def _summed_share(reading: _Reading) -> str | None:
    """The column whose sum a share is of ("the share of total distance flown by …"), None for a share of
    rows. A share of an average or an extreme is no share of anything: refused, not dropped. A column said
    without an aggregate that a condition tests is the condition's ("the flights over 1,000 miles")."""
    tested = {item.column for item in (*reading.filters, *reading.share_conditions)}
    measures = [(column, aggregate) for column, aggregate in reading.measures
                if aggregate is not None or column not in tested]
    if not measures:
        return None
    if len(measures) > 1 or measures[0][1] not in (None, SUM):
        said = ", ".join(f"{(aggregate or 'value').lower()} of {column}" for column, aggregate in measures)
        raise NoPlan(f"could not compute a share of {said}")
    return measures[0][0]


def _group_share_expression(reading: _Reading) -> tuple[exp.Expr, str]:
    """"Each carrier's share of all flights": 100 × a group's rows / the rows of every group (a window over
    the groups: the rows the filters keep); "each carrier's share of the total miles": of a column's sum."""
    summed = _summed_share(reading)
    part = exp.Sum(this=_col(summed)) if summed is not None else exp.Count(this=exp.Star())
    whole = exp.Window(this=exp.Sum(this=part.copy()))
    share = exp.Div(this=exp.Mul(this=exp.Literal.number("100.0"), expression=part), expression=whole)
    alias = f"percent_of_total_{snake(summed)}" if summed is not None \
        else f"percent_of_all_{_rows_called(reading.base)}"
    return exp.alias_(share, alias, quoted=True), alias


def _ratio_expression(reading: _Reading, dialect: str) -> tuple[exp.Expr, str]:
    """The rows of the ratio's first value over those of its second (NULL when there are none of those)."""
    assert reading.ratio is not None

    def rows_where(item: _Filter) -> exp.Expr:
        return _hits(reading, [item], dialect)

    first, second = reading.ratio
    ratio = exp.Div(this=exp.Mul(this=exp.Literal.number("1.0"), expression=rows_where(first)),
                    expression=exp.Nullif(this=rows_where(second), expression=exp.Literal.number(0)))
    alias = snake(f"ratio of {first.values[0]} to {second.values[0]}")
    return exp.alias_(ratio, alias, quoted=True), alias


def _build_share(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """SELECT the share of rows meeting the conditions, as a percentage."""
    expression, alias = _share_expression(reading, dialect)
    if reading.ratio is not None:
        first, second = reading.ratio
        return _Query([expression]), alias, (f"Computes the ratio of the rows of {reading.table.name} where "
                                             f"{first.column} is {first.values[0]!r} to those where it is "
                                             f"{second.values[0]!r}")
    described = _describe_filters(reading.share_conditions).removeprefix(", where ")
    return _Query([expression]), alias, f"Computes the percentage of the rows of {reading.table.name} where {described}"


def _build_rows(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """Every column of the filtered rows: a listing leaves the choice of columns to the reader."""
    table = reading.table.name.split(".")[-1]
    if reading.shown and reading.shown_whole:
        # "the flights … with their arrival delay": every column of the rows, and a joined one asked beside them
        added = [_col(name) for name in reading.shown if reading.virtual(name)]
        return _Query([exp.Star(), *added]), f"{snake(table)}_rows", f"Lists the rows of {reading.table.name}"
    if reading.shown:
        # "list the destinations of …": each value once, as a listing of them reads
        shown = (_with_own_key if reading.shown_per_row else with_joined_keys)(reading, reading.shown)
        # (a name listed beside the key added for it is a joined row's: a key no row of that table has names
        # nothing)
        reading.filters.extend(_Filter(name, "not null", (), "value") for key, name in pairwise(shown)
                               if key not in reading.shown)
        query = _Query([_col(name) for name in shown], order=[exp.Literal.number(1)])
        # (the rows' identifiers are listed one per row, "the individual IDs of …", unless asked once each:
        # "the distinct IDs")
        once = any(token.norm in _DISTINCT_WORDS for token in reading.tokens)
        per_row = reading.shown_per_row or not once and any(identifies_rows(reading.base, name)
                                                              for name in reading.shown)
        query.distinct = not per_row
        named = " and ".join(reading.shown)
        each = "the" if per_row else "the distinct"
        return query, f"{snake(table)}_{snake(named)}", f"Lists {each} {named} of {reading.table.name}"
    return _Query([exp.Star()]), f"{snake(table)}_rows", f"Lists the rows of {reading.table.name}"


def _build_all(reading: _Reading, dialect: str) -> tuple[_Query, str, str]:
    """Whether every row the conditions keep meets the one asked of them all (yes or no): the least of 1 for
    each row that does and 0 for each that does not is 1 (a row it cannot tell, a NULL, does not)."""
    assert reading.asked_of_all is not None
    answer = _every_row_meets(_condition(reading, reading.asked_of_all, dialect))
    asked = _describe_filters([reading.asked_of_all]).removeprefix(", where ")
    return _Query([answer]), "answer", f"Tells whether {asked} for every row of {reading.table.name}"


def _every_row_meets(condition: exp.Expr) -> exp.Expr:
    """Whether every row meets ``condition``, as the answer: each row is 1 when it does, 0 when it does not
    (or cannot tell, a NULL), and all of them do when the least is 1. Portable: no BOOL_AND."""
    met = exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))], default=exp.Literal.number(0))
    return exp.alias_(exp.EQ(this=exp.Min(this=met), expression=exp.Literal.number(1)), "answer", quoted=True)


_BUILDERS: dict[str, Callable[[_Reading, str], tuple[_Query, str, str]]] = {
    "count": _build_count, "aggregate": _build_aggregate, "group": _build_group, "compare": _build_compare,
    "time_series": _build_time_series, "top": _build_top, "rows": _build_rows, "share": _build_share,
    "exists": _build_exists, "contrast": _build_contrast, "all": _build_all,
}


# --- Dates, conditions and rendering -----------------------------------------------------------------------


_SQLITE_BUCKETS = {
    "day": "DATE(x)",
    "week": "DATE(x, '-' || ((CAST(STRFTIME('%w', x) AS INTEGER) + 6) % 7) || ' days')",
    "month": "DATE(x, 'start of month')",
    "quarter": "DATE(x, 'start of month', '-' || ((CAST(STRFTIME('%m', x) AS INTEGER) - 1) % 3) || ' months')",
    "year": "CAST(STRFTIME('%Y', x) AS INTEGER)",
}


def _bucket(column: exp.Expr, unit: str, dialect: str) -> exp.Expr:
    """The start of the ``unit`` a date falls in (the year as a number for "year")."""
    if unit == "weekday":
        return weekday_of(column, dialect)
    if dialect == "sqlite":
        return _substitute(sqlglot.parse_one(_SQLITE_BUCKETS[unit], read="sqlite"), column)
    if unit == "year":
        return exp.Extract(this=exp.var("YEAR"), expression=column)
    return _substitute(sqlglot.parse_one(f"DATE_TRUNC('{unit.upper()}', x)", read="duckdb"), column)


def _month_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The month of a date column as a number 1-12, per dialect."""
    if dialect == "sqlite":
        return _substitute(sqlglot.parse_one("CAST(STRFTIME('%m', x) AS INTEGER)", read="sqlite"), column)
    return exp.Extract(this=exp.var("MONTH"), expression=column)


def _day_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The day of the month of a date column as a number 1-31, per dialect."""
    if dialect == "sqlite":
        return _substitute(sqlglot.parse_one("CAST(STRFTIME('%d', x) AS INTEGER)", read="sqlite"), column)
    return exp.Extract(this=exp.var("DAY"), expression=column)


def _year_of(column: exp.Expr, dialect: str) -> exp.Expr:
    """The year of a date column as a number, per dialect."""
    return _bucket(column, "year", dialect)


def _substitute(template: exp.Expr, column: exp.Expr) -> exp.Expr:
    """The template with its placeholder column ``x`` replaced by ``column``."""
    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name == "x" and not node.table:
            return column.copy()
        return node

    return template.transform(replace)


def _literal(value: str | float) -> exp.Expr:
    """A value as a literal node: quoting and escaping are sqlglot's, per dialect."""
    if isinstance(value, str):
        return exp.Literal.string(value)
    return exp.Literal.number(int(value) if float(value).is_integer() else value)


def _date(value: str) -> exp.Expr:
    """CAST('yyyy-mm-dd' AS DATE), which sqlglot writes as DATE('…') for SQLite."""
    return exp.cast(exp.Literal.string(value), exp.DataType.build("DATE"))


def _condition(reading: _Reading, item: _Filter, dialect: str) -> exp.Expr:
    """A filter as a sqlglot condition: literals for values, date ranges for years of date columns."""
    column = _col(item.column)
    if item.op == "not null":
        return exp.Not(this=exp.Is(this=column, expression=exp.Null()))
    if item.op == "null":
        return exp.Is(this=column, expression=exp.Null())
    if item.kind == "year":
        return _year_condition(reading, item, dialect)
    if item.kind == "date":
        return _compare(column, item.op, [_date(str(v)) for v in item.values])
    if item.kind == "periods":  # (start, end) pairs, each half-open: the rows in any of them
        bounds = [str(v) for v in item.values]
        return exp.or_(*(exp.paren(exp.and_(exp.GTE(this=column.copy(), expression=_date(start)),
                                            exp.LT(this=column.copy(), expression=_date(end))))
                         for start, end in zip(bounds[::2], bounds[1::2], strict=True)))
    if item.kind == "month":
        return _compare(_month_of(column, dialect), item.op, [_literal(v) for v in item.values])
    if item.kind == "weekday":
        return _compare(weekday_of(column, dialect), item.op, [_literal(v) for v in item.values])
    if item.kind == "day":
        return _compare(_day_of(column, dialect), item.op, [_literal(v) for v in item.values])
    if item.kind == "boolean":
        return column if item.values == ("true",) else exp.Not(this=column)
    condition = _compare(column, item.op, [_literal(v) for v in item.values])
    joined = reading.scope.virtual.get(item.column) if reading.scope is not None else None
    if item.op in ("<>", "not in") and isinstance(joined, exp.Column) and joined.table \
            and "name" in split_identifier(joined.name).lower().split():
        # "leave out flights to Atlanta": a flight whose airport the joined table lacks is not to Atlanta either
        # (an attribute is another matter: "planes whose engine is not Turbo-fan" are planes the table has)
        return exp.or_(exp.paren(condition), exp.Is(this=column.copy(), expression=exp.Null()))
    return condition


def _compare(column: exp.Expr, op: str, values: list[exp.Expr]) -> exp.Expr:
    """``column op value(s)`` with the operator as a node, never as text."""
    if op in ("in", "not in"):
        condition: exp.Expr = exp.In(this=column, expressions=values)
        return exp.Not(this=condition) if op == "not in" else condition
    operators: dict[str, type[exp.Binary]] = {"=": exp.EQ, "<>": exp.NEQ, ">": exp.GT, ">=": exp.GTE,
                                              "<": exp.LT, "<=": exp.LTE}
    return operators[op](this=column, expression=values[0])


def _year_condition(reading: _Reading, item: _Filter, dialect: str) -> exp.Expr:
    """Years compare with the year of a date column as a date range (so an index can serve it), with an
    integer year column as numbers."""
    column_info = reading.column(item.column)
    column = _col(item.column)
    years = [int(float(v)) for v in item.values]
    if column_info.type not in TIME_TYPES:
        return _compare(column, item.op, [exp.Literal.number(y) for y in years])
    if item.op == "in":
        return exp.In(this=_year_of(column, dialect), expressions=[exp.Literal.number(y) for y in years])
    year = years[0]
    first, next_first = _date(f"{year:04d}-01-01"), _date(f"{year + 1:04d}-01-01")
    if item.op == "=":
        return exp.and_(exp.GTE(this=column, expression=first), exp.LT(this=column.copy(), expression=next_first))
    bounds: dict[str, exp.Expr] = {
        ">": exp.GTE(this=column, expression=next_first), ">=": exp.GTE(this=column, expression=first),
        "<": exp.LT(this=column, expression=first), "<=": exp.LT(this=column, expression=next_first),
    }
    return bounds[item.op]


def quoted_table(name: str) -> exp.Table:
    """A table name, possibly ``schema.table`` or ``catalog.schema.table``, quoted part by part."""
    parts = name.split(".")
    table = exp.Table(this=exp.to_identifier(parts[-1], quoted=True))
    if len(parts) >= 2:
        table.set("db", exp.to_identifier(parts[-2], quoted=True))
    if len(parts) >= 3:
        table.set("catalog", exp.to_identifier(parts[-3], quoted=True))
    return table


def count_listed_conditions(reading: _Reading, query: _Query, dialect: str) -> list[_Filter]:
    """The conditions listed as figures of their own beside the count of all rows (``listed_counts``), each
    counted right after it (0 where none is); returns them, which the caller leaves out of the WHERE."""
    listed = [f for f in reading.filters if f.start in reading.listed_counts]
    counting = _counts_of_all_rows(query)
    if not listed or len(counting) != 1:
        return []
    for offset, item in enumerate(listed, start=1):
        name = snake(item.column)
        alias = f"number_of_{name if name.endswith('s') else name + 's'}"  # "number_of_cancelled_flights"
        query.select.insert(counting[0] + offset, exp.alias_(_hits(reading, [item], dialect), alias, quoted=True))
    return listed


def _counts_of_all_rows(query: _Query) -> list[int]:
    """Where the query selects COUNT(*) (aliased)."""
    return [index for index, selected in enumerate(query.select) if isinstance(selected, exp.Alias)
            and isinstance(selected.this, exp.Count) and isinstance(selected.this.this, exp.Star)]


def _hits(reading: _Reading, conditions: list[_Filter], dialect: str) -> exp.Expr:
    """The number of rows meeting every one of ``conditions``: SUM(CASE WHEN … THEN 1 ELSE 0 END), 0 where none
    does (portable, unlike COUNT(*) FILTER)."""
    condition = exp.and_(*(_condition(reading, f, dialect) for f in conditions))
    return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                                 default=exp.Literal.number(0)))


def describe_listed(listed: list[_Filter]) -> str:
    """The conditions counted as figures of their own (``count_listed_conditions``), in words."""
    return "".join(f", and the number of rows where {_describe_filters([item]).removeprefix(', where ')}"
                   for item in listed)


def count_named_conditions(reading: _Reading, query: _Query, dialect: str) -> list[_Filter]:
    """A count whose phrase names its conditions beside other figures (``count_conditions``: "the number of
    cancelled flights and the mean delay") counts them, in any shape: the other figures are of all the rows.
    Returns the conditions counted, which the caller leaves out of the WHERE."""
    named = [f for f in reading.filters if f.start in reading.count_conditions]
    counting = _counts_of_all_rows(query)
    if not named or not reading.rows_counted or not reading.measures or len(counting) != 1:
        return []
    _count_only(reading, query, counting[0], named, dialect)
    return named


def count_conditions_in_groups(reading: _Reading, query: _Query, dialect: str) -> list[_Filter]:
    """"Monthly cancellations", "how many flights were cancelled in each quarter": a time series shows every
    period of the rows asked about, and a true/false condition says which of their rows to count. A period
    where none meets it counts 0: as a WHERE, it would go missing from the series (and from its chart).
    Groups of other keys ("cancellations per carrier") show those that have some, as rankings, shares and
    conditions on the groups' sizes do: they keep their WHERE, unless the question counts among each group's
    own rows ("for every destination, how many of its flights were cancelled"): every group then, 0 where
    none is. Returns the conditions counted, which the caller leaves out of the WHERE."""
    if not query.group or query.limit is not None or reading.top is not None or reading.group_conditions \
            or reading.absent or reading.present or reading.share_split is not None \
            or not (any(reading.column(key).type in TIME_TYPES for key in reading.keys) or _of_own_rows(reading)):
        return []
    aggregates = [i for i, e in enumerate(query.select) if e.find(exp.AggFunc) is not None]
    if len(aggregates) != 1:
        return []
    selected = query.select[aggregates[0]]
    if not isinstance(selected, exp.Alias) or not isinstance(selected.this, exp.Count) \
            or not isinstance(selected.this.this, exp.Star):
        return []
    counted = [f for f in reading.filters if f.kind == "boolean" and f.values == ("true",)]
    if not counted or _groups_having_any(reading, counted):
        return []
    _count_only(reading, query, aggregates[0], counted, dialect)
    return counted


def _groups_having_any(reading: _Reading, counted: list[_Filter]) -> bool:
    """"For each week that had any cancellations", "only list carriers with at least one cancellation": only the
    groups where some row meets a condition are asked (the condition said right after "any" or "at least one",
    read as one of ``counted``: a condition said twice is kept once, so its place is the words being read)."""
    def some(i: int) -> int | None:  # where the words saying "some" begin, if they end at ``i``
        if reading.norm(i) == "any":
            return i
        at_least_one = i >= 2 and reading.tokens[i].number == 1 and reading.norm(i - 1) == "least" \
            and reading.norm(i - 2) == "at"
        return i - 2 if at_least_one else None

    for i in range(1, len(reading.tokens)):
        start = some(i)
        if start is not None and reading.norm(start - 1) in ("had", "has", "have", "with") \
                and i + 1 in reading.used and reading.mention_at(i + 1) is None:
            return bool(counted)
    return False


def _count_only(reading: _Reading, query: _Query, index: int, counted: list[_Filter], dialect: str) -> None:
    """The COUNT(*) selected at ``index`` made to count only the rows meeting ``counted`` (0 where none does)."""
    selected = query.select[index]
    assert isinstance(selected, exp.Alias)
    query.select[index] = exp.alias_(_hits(reading, counted, dialect), selected.alias, quoted=True)


def _of_own_rows(reading: _Reading) -> bool:
    """Whether the question counts "of its"/"of their" rows ("how many of its flights"): of each group's own; or
    says the groups with none count too ("how many cancelled flights did it have (including zero)?")."""
    rows = _table_words(reading.base)
    return any(reading.norm(i) == "of" and reading.norm(i + 1) in ("its", "their") and reading.tokens[i + 2].stem in rows
               for i in range(len(reading.tokens) - 2)) or reading.zero_included


def _render(reading: _Reading, query: _Query, dialect: str) -> str:
    """The assembled query as one SELECT in ``dialect``, the table quoted part by part; virtual columns
    become the SQL they stand for, and the tables they come from are joined."""
    select = exp.Select(expressions=query.select).from_(quoted_table(reading.base.name), copy=False)
    if query.distinct:
        select = select.distinct(copy=False)
    if query.where:
        select = select.where(exp.and_(*query.where), copy=False)
    if query.group:
        select = select.group_by(*query.group, copy=False)
    if reading.group_conditions and not query.group:
        raise NoPlan("a condition on the number of rows needs groups to apply to (say 'per …')")
    if (reading.absent or reading.present) and not query.group:
        raise NoPlan("what a group lacks needs groups to apply to (say 'which …')")
    for item, compare in [*((a, exp.EQ) for a in reading.absent), *((p, exp.GT) for p in reading.present)]:
        # "never had a flight cancelled": no row of the group meets the condition (a WHERE would keep the
        # groups with some row that does not)
        select = select.having(compare(this=_hits(reading, [item], dialect), expression=exp.Literal.number(0)),
                               copy=False)
    for op, number in reading.group_conditions:
        select = select.having(_COMPARE[op](this=exp.Count(this=exp.Star()),
                                            expression=exp.Literal.number(_plain(number))), copy=False)
    if query.ties and query.limit is not None and len(query.order) == 1 \
            and isinstance(query.order[0], exp.Ordered):
        virtual = reading.scope is not None and bool(reading.scope.virtual)
        select = _with_ties(select, query.order[0], query.limit,
                            (lambda cut: _resolve_virtual(reading, cut)) if virtual else (lambda cut: cut))
    elif query.order:
        select = select.order_by(*query.order, copy=False)
    if query.limit is not None and not query.ties:
        select = select.limit(query.limit, copy=False)
    if reading.scope is not None and reading.scope.virtual:
        select = _resolve_virtual(reading, select)
    if query.asked is not None:
        # the rows found, asked whether every one of them meets the condition
        found = exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier("found", quoted=True)))
        select = exp.Select(expressions=[_every_row_meets(query.asked)]).from_(found, copy=False)
    return select.sql(dialect=dialect)


def _with_ties(select: exp.Select, order: exp.Ordered, limit: int,
               resolve: Callable[[exp.Select], exp.Select]) -> exp.Select:
    """The rows ranked at most ``limit``, ties kept: those whose value reaches the ``limit``-th value
    (computed by the same query, limited), in order. Portable: no window function, no FETCH WITH TIES.
    ``resolve`` makes the cut-off query whole on its own (the joins its virtual columns need)."""
    value = order.this
    cutoff = select.copy().select(value.copy(), append=False, copy=False)
    cutoff = cutoff.order_by(order.copy(), copy=False).limit(1, copy=False).offset(limit - 1, copy=False)
    cutoff = resolve(cutoff)
    compare = exp.GTE if order.args.get("desc") else exp.LTE
    # Fewer rows than ``limit``: no cut-off value, and every row is kept.
    condition = exp.or_(compare(this=value.copy(), expression=exp.Subquery(this=cutoff)),
                        exp.Is(this=exp.Subquery(this=cutoff.copy()), expression=exp.Null()))
    if select.args.get("group"):
        return select.having(condition, copy=False).order_by(order.copy(), copy=False)
    return select.where(condition, copy=False).order_by(order.copy(), copy=False)


def _alias(name: str) -> str:
    return name.split(".")[-1]


def _resolve_virtual(reading: _Reading, select: exp.Select) -> exp.Select:
    """Virtual columns replaced by their SQL; when a joined table's column is used, the table is LEFT
    JOINed (many-to-one: the queried table's rows are neither repeated nor dropped; INNER when grouped by
    its column) and every column qualified with its table."""
    assert reading.scope is not None
    virtual = reading.scope.virtual
    # a formula selected as it is keeps its name ("bill_ratio"), not the text of its arithmetic
    select = select.copy()
    select.set("expressions", [exp.alias_(item, item.name, quoted=True)
                               if isinstance(item, exp.Column) and not item.table and item.name in virtual
                               and not isinstance(virtual[item.name], exp.Column) else item
                               for item in select.expressions])

    def substitute(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name in virtual:
            return virtual[node.name].copy()
        return node

    substituted = select.transform(substitute)
    assert isinstance(substituted, exp.Select)
    select = substituted
    used = {column.table for column in select.find_all(exp.Column) if column.table}
    joins = [join for join in reading.scope.joins if _alias(join.table.name) in used]
    if not joins:
        return select
    base = _alias(reading.base.name)
    own = {column.name for column in reading.base.columns}

    def qualify(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name in own:
            return exp.column(node.name, table=base, quoted=True)
        if isinstance(node, exp.Star) and not isinstance(node.parent, exp.Count | exp.Column):
            return exp.Column(this=exp.Star(), table=exp.to_identifier(base, quoted=True))
        return node

    qualified = select.transform(qualify)
    assert isinstance(qualified, exp.Select)
    select = qualified
    # A group of the joined table's column has no row for what matches nothing there: "per manufacturer"
    # lists manufacturers, not a group of planes without one (an inner join); otherwise LEFT.
    grouped = {column.table for key in reading.keys if key in virtual
               for column in virtual[key].find_all(exp.Column) if column.table}
    for join in joins:
        alias = _alias(join.table.name)
        # (grouped by the key too, "per destination, with its name", the name only labels each group: a code the
        # joined table lacks is a group of its own, with no name)
        labelled = all(mine in reading.keys and mine not in reading.telling_names_apart for mine, _ in join.on)
        kind = "inner" if alias in grouped and not labelled else "left"
        on = exp.and_(*(exp.EQ(this=exp.column(mine, table=base, quoted=True),
                               expression=exp.column(theirs, table=alias, quoted=True)) for mine, theirs in join.on))
        select = select.join(quoted_table(join.table.name), on=on, join_type=kind, copy=False)
    return select


def _plain(value: str | float) -> str | int | float:
    """Whole floats as ints, for explanations."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


_COMPARE: dict[str, type[exp.Binary]] = {">": exp.GT, ">=": exp.GTE, "<": exp.LT, "<=": exp.LTE, "=": exp.EQ}


def _describe_group_conditions(reading: _Reading) -> str:
    """The conditions on each group's rows, in words, for the explanation."""
    return "".join(f", keeping the groups whose number of rows is {op} {_plain(number)}"
                   for op, number in reading.group_conditions)


def _describe_filters(filters: list[_Filter]) -> str:
    """The filters in words, for the explanation."""
    described = []
    for item in filters:
        if item.op == "not null" and item.kind != "missing":
            continue
        if item.kind == "missing":
            described.append(f"{item.column} is {'missing' if item.op == 'null' else 'known'}")
            continue
        if item.kind == "boolean":
            described.append(f"{item.column} is {item.values[0]}")
            continue
        if item.kind == "periods":
            bounds = [str(v) for v in item.values]
            spans = " or ".join(f"from {start} to before {end}" for start, end in zip(bounds[::2], bounds[1::2],
                                                                                      strict=True))
            described.append(f"{item.column} is {spans}")
            continue
        values = [_plain(v) for v in item.values]
        shown = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values)
        if item.kind in ("year", "month", "day"):
            subject = f"the {item.kind} of {item.column}"
        else:
            subject = item.column
        op = {"=": "is", "<>": "is not", "in": "is one of", "not in": "is none of"}.get(item.op, item.op)
        described.append(f"{subject} {op} {shown}")
    return f", where {' and '.join(described)}" if described else ""


def describe_counted(counted: list[_Filter]) -> str:
    """The conditions a count of each group counts (``count_conditions_in_groups``), in words."""
    return f", counting the rows where {_describe_filters(counted).removeprefix(', where ')}" if counted else ""
