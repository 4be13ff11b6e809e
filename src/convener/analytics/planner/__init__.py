"""The offline planner: a plain-language question over one table turned into SQL by rules, with no model.

A data agent without a language model still answers the common questions: counts, sums, averages, minima
and maxima of a column, grouped by a category or bucketed by month or year, top and bottom N, comparisons
of two groups, and plain listings, each filtered by values that exist in the data ("cars from Japan"), by
numbers ("more than 8 cylinders") and by dates ("after 2005"). Everything else is refused with a
``NoPlan`` whose reason names what was not understood: an honest "I can't" beats a confident wrong query.

How a question is read:

1. Guard: empty, too long, asking to change data or about the future → refused.
2. Phrases are looked up in a catalog of what the data calls things: column names split into words
   (``Miles_per_Gallon`` ↔ "miles per gallon"), column synonyms, glossary terms (a term maps to the column
   its description names, or stands for a filter when its description quotes a value: "weather = 'rain'")
   and the values of string columns (``values_of``). The table whose words and values the question hits
   hardest is the one queried; joins are not planned.
3. Structure words then bind to those phrases: comparisons to the number and column beside them, "by",
   "per" and "each" to group keys, "average"/"total"/"highest" to measures, "top 5" to an ordering.
4. Words left over that the catalog does not know make the question unanswerable when they matter.

SQL is built as a sqlglot tree (identifiers quoted, values as literals: question text never reaches SQL
as text) and rendered in the requested dialect; date bucketing is written per dialect because SQLite has
no ``DATE_TRUNC`` or ``EXTRACT``.

The package: ``base`` (Plan, NoPlan, Term), ``vocabulary`` (word lists), ``catalog`` (what phrases refer to,
the table asked about), ``state`` (the reading so far), ``dates``, ``clock`` (times of day on HHMM columns)
and ``reading`` (binding structure words),
``scope`` (joined tables and glossary
formulas as virtual columns), ``checks`` (guards and refusals), ``shaping`` (the shape of the answer) and ``sql`` (building and rendering).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import sqlglot
from sqlglot import exp

from convener.analytics.planner.base import (
    MAX_QUESTION_CHARACTERS,
    Guess,
    KeysOf,
    NoPlan,
    Plan,
    Relationship,
    SpanOf,
    Term,
    ValuesOf,
)
from convener.analytics.planner.catalog import _Catalog, _choose_table, dated
from convener.analytics.planner.checks import (
    _check_understood,
    _disjoint_periods,
    _guard,
    check_counted_keys,
    check_joined_averages,
    check_missing_and_known,
    check_ranked_groups_open,
    check_roles_read,
    check_rows_asked,
    with_short_words_spelled_out,
    without_intensifiers,
)
from convener.analytics.planner.dates import _read_buckets
from convener.analytics.planner.fronted import fronted_spans, places_after_labels
from convener.analytics.planner.guesses import guessed, read_guesses, read_joined_values, read_periods
from convener.analytics.planner.held import check_periods_held
from convener.analytics.planner.implied import implied_relationships
from convener.analytics.planner.ordering import apply_sort_order
from convener.analytics.planner.parentheses import parenthesised
from convener.analytics.planner.reading import _read
from convener.analytics.planner.scope import Codes, _scope, joins_to
from convener.analytics.planner.shaping import _settle_count, _shape
from convener.analytics.planner.sides import answered_sides, read_sides, split_into_sides
from convener.analytics.planner.sql import (
    _BUILDERS,
    _Query,
    _condition,
    _describe_filters,
    _describe_group_conditions,
    _render,
    count_conditions_in_groups,
    count_listed_conditions,
    count_named_conditions,
    describe_counted,
    describe_listed,
    quoted_table,
)
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import _BUCKETS
from convener.analytics.shapes import TableInfo


def plan_question(question: str, tables: Sequence[TableInfo], terms: Sequence[Term] = (), *,
                  dialect: str = "duckdb", values_of: ValuesOf | None = None, keys_of: KeysOf | None = None,
                  relationships: Sequence[Relationship] = (), related: Sequence[TableInfo] = (),
                  span_of: SpanOf | None = None) -> Plan:
    """Plan ``question`` over one of ``tables`` as SQL in ``dialect``; raise ``NoPlan`` with a reason when
    the question is outside the shapes this planner knows or mentions things the data does not have.
    ``related`` tables are never queried on their own but may be joined to the one queried, by
    ``relationships`` or by a key column named after them; ``keys_of`` lets the data pick one of several
    relationships to a table where the question's words do not, and read a joined table's names said beside
    codes as codes; ``span_of`` lets it decline periods a date column holds nothing of."""
    sqlglot.Dialect.get_or_raise(dialect)
    tokens = with_short_words_spelled_out(without_intensifiers(_guard(question)), question)
    if not tables:
        raise NoPlan("there are no tables to query")
    names = [table.name for table in tables]
    others = [table for table in related if table.name not in names]
    relationships = [*relationships, *implied_relationships([*tables, *others], relationships, values_of)]
    reachable = joins_to([*tables, *others], relationships) if len(tables) + len(others) > 1 else set()
    # A table that joins many-to-one to one asked about may be the one to query ("revenue by region": the
    # orders, joined to the stores that have regions).
    choosable = [*names, *(t.name for t in related if t.name not in names and any((t.name, name) in reachable
                                                                                   for name in names))]
    # Only tables that join one that may be queried are read into the catalog: matching values costs per
    # table ("which airlines flew to Seattle": the flights that name the airlines reach the airports).
    joined = {name for pair in reachable for name in pair if set(pair) & set(choosable)}
    everything = [*tables, *(table for table in others if table.name in joined)]
    catalog = _Catalog(everything, terms, values_of, known=others)
    catalog.text = question
    bucket, used = _read_buckets(tokens)
    # "how much time did flights make up in the air": the verb is the term's, read with its noun
    used |= {at for term in terms for _, verb in fronted_spans(tokens, question, (term.name, *term.labels),
                                                               term.description) for at in verb}
    used |= {at for term in terms for at in places_after_labels(tokens, (term.name, *term.labels), term.description)}
    used |= parenthesised(tokens, question, catalog.candidates(tokens, used))
    # A table reached by several relationships (flights to airports by origin and by dest) is joined only
    # when the question's words pick one: else its phrases do not make the question about the other table.
    codes = _codes(values_of, keys_of) if values_of is not None and keys_of is not None else None
    pairs = joins_to([*tables, *others], relationships, question=(tokens, catalog.candidates(tokens, used)),
                     codes=codes) if reachable else set()
    def joins_of(many: str) -> list[str]:
        return [one for name, one in pairs if name == many]

    # (a period named without being read as the buckets yet: "the busiest month of the year")
    periods = {bucket, *(_BUCKETS.get(token.norm) for token in tokens)}
    try:
        table, candidates = _choose_table(catalog, tokens, used, choosable, joins_of)
    except NoPlan:
        # "the ten busiest days": periods ranked, and no other word of the data, of the one table that has dates
        with_dates = [name for name in choosable if dated(catalog.tables[name])]
        if periods == {None} or len(with_dates) != 1:
            raise
        table, candidates = catalog.tables[with_dates[0]], catalog.candidates(tokens, used)
    if periods & {"day", "week", "month", "quarter", "weekday"} and not dated(table):
        # "the 3 busiest days of the year" read on planes (a year of manufacture, no date): periods asked of
        # rows that have no dates, where another table's rows do: those rows are the ones asked about
        with_dates = [name for name in choosable if dated(catalog.tables[name])]
        if not with_dates and any(dated(other) for other in [*tables, *others]):
            raise NoPlan(f"{table.name} has no dates to group by, and the question's other words pick it")
        if with_dates:
            table, candidates = _choose_table(catalog, tokens, used, with_dates, joins_of)
    scope, mentions = _scope(table, everything, relationships, candidates, tokens, codes)
    reading = _read(scope.table, tokens, mentions, used | scope.said, bucket, scope, question)
    # one measure said twice ("on average, how many minutes do dives spend under water": the unit, and the words
    # of the description, name the dive time) is asked once, with the aggregate one of them says
    aggregated = {column for column, aggregate in reading.measures if aggregate}
    reading.measures = list(dict.fromkeys(measure for measure in reading.measures
                                          if measure[1] or measure[0] not in aggregated))
    # ("from each airport, by airport name": the name the key's join shows, and the name asked by: one key)
    reading.keys = list(dict.fromkeys(reading.keys))
    _settle_count(reading)
    read_sides(reading, _disjoint_periods)
    shape = _shape(reading)
    check_counted_keys(reading, relationships)
    check_roles_read(reading, relationships)
    check_joined_averages(reading)
    check_ranked_groups_open(reading, shape)
    unaccounted = (*_check_understood(reading, shape), *_columns_not_listed(reading, shape))
    check_rows_asked(reading, shape, [other for other in everything if other.name != reading.base.name])
    check_periods_held(reading, span_of)
    # A ranking of rows shows the columns asked for; a ranking of groups or an aggregate has no rows to show.
    ranks_rows = shape == "top" and not reading.keys and reading.bucket is None
    if reading.shown and shape != "rows" and not ranks_rows:
        # "average air time, with their manufacturer", "list the full name of each destination airport" (grouped
        # by the destination): columns to show where no rows are shown (a key shown is shown: "per supplier
        # (full name)")
        unaccounted = (*unaccounted, *(name for name in reading.shown if name not in unaccounted
                                       and name not in reading.keys))
    # A condition said twice ("ahead of schedule (negative arrival delay)", "on time or early (arr_delay <= 0)")
    # is one condition.
    reading.filters = list({replace(f, start=-1): f for f in reading.filters}.values())
    query, name, explanation = _BUILDERS[shape](reading, dialect)
    listed = count_listed_conditions(reading, query, dialect)
    counted = [*listed, *(count_named_conditions(reading, query, dialect)
                          or count_conditions_in_groups(reading, query, dialect))]
    check_missing_and_known([f for f in reading.filters if f not in counted])
    query.where = [_condition(reading, f, dialect) for f in reading.filters if f not in counted]
    if reading.sides is not None:
        query.select = answered_sides(reading, split_into_sides(
            query.select, [exp.and_(*(_condition(reading, f, dialect) for f in side)) for side in reading.sides]))
    apply_sort_order(reading, query)
    sql = _render(reading, query, dialect)
    if shape == "top":
        unaccounted = (*unaccounted, *(name for name in _measures_not_computed(reading, query)
                                       if name not in unaccounted))
    where = _describe_filters([f for f in reading.filters if f not in counted]) + describe_listed(listed) \
        + describe_counted([f for f in counted if f not in listed]) \
        + _describe_group_conditions(reading) + "".join(
            f"; side {number}{_describe_filters(side)}" for number, side in enumerate(reading.sides or (), start=1))
    used_joins = [join for join in scope.joins if f'"{join.table.name.split(".")[-1]}"' in sql]
    read = (table.name, *(join.table.name for join in used_joins))
    # Which of several ways to reach a table was taken ("airports by dest, not origin") is said.
    by = "".join(f", {join.table.name} joined by {table.name}.{mine} = {join.table.name}.{theirs}"
                 for join in used_joins if join.chosen for mine, theirs in join.on)
    guesses = read_guesses(guessed(catalog, tokens, used), reading, dialect) + read_periods(reading, dialect)
    guesses += tuple(value for value in read_joined_values(reading, dialect)  # (a name a word was guessed as: once)
                     if not any(value.said in (guess.said, *guess.names) for guess in guesses))
    return Plan(sql=sql, result_name=name, tables=read, explanation=explanation + where + by + ".",
                terms_used=tuple(reading.terms), shape=shape, unaccounted=unaccounted, guessed=guesses)


def _columns_not_listed(reading: _Reading, shape: str) -> tuple[str, ...]:
    """Columns named as measures of rows that a listing does not show ("…: flight number, date, tail number and
    build year", the planes' year read alone, after the list): said, so that the answer says it could not use
    them rather than pass the rows off as what was asked."""
    if shape != "rows":
        return ()
    every_own = not reading.shown or reading.shown_whole  # (the rows' own columns all shown)
    return tuple(dict.fromkeys(column for column, aggregate in reading.measures if aggregate is None
                               and column not in reading.shown and not (every_own and not reading.virtual(column))))


def _measures_not_computed(reading: _Reading, query: _Query) -> list[str]:
    """Measures read that a ranking does not compute, show, rank by or hold to a condition: said, so that the answer
    says it could not use them ("the earliest arrival (most negative arr delay)": the earliest dates ranked, the
    delay unused). The query names a joined table's column or a formula by its reading's name until rendered."""
    computed = {column.name for part in (*query.select, *query.order, *query.where)
                for column in part.find_all(exp.Column)}
    return [column for column, _ in reading.measures if column not in computed]


def _codes(values_of: ValuesOf, keys_of: KeysOf) -> Codes:
    """The values of a column of the queried table that key the rows of another that the question names."""
    def codes(table: str, mine: str, other: str, theirs: str, column: str, names: Sequence[str]) -> list[str]:
        own = set(values_of(table, mine))
        return [key for key in keys_of(other, theirs, column, names) if key in own]
    return codes


__all__ = ["MAX_QUESTION_CHARACTERS", "Guess", "KeysOf", "NoPlan", "Plan", "Relationship", "SpanOf", "Term", "plan_question",
           "quoted_table"]
