"""Two groups of rows set side by side by conditions on one column that no row meets at once: "the average
departure delay in July versus January", "weekend versus weekday flights", "before noon compared with noon or
later", "the first half of 2013 or the second half". Read as conditions together they keep nothing; each side
is one figure of the answer, the aggregate over the rows its conditions keep (``AVG(CASE WHEN … THEN x END)``,
a count as ``COUNT(CASE WHEN … THEN 1 END)``), in one row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sqlglot import exp

from convener.analytics.planner.catalog import _table_words
from convener.analytics.planner.contrast import _HIGHER, COMPARATIVES
from convener.analytics.planner.state import _Reading
from convener.analytics.planner.vocabulary import AUXILIARIES

PIVOTS = frozenset({"versus", "vs", "against", "compared", "compare", "or"})
"""Words that set what comes before them against what comes after ("with" too, in a question that begins by
asking to compare: "Compare the delay before noon with after 6 pm")."""


_THOSE = frozenset({"those", "ones", "that", "on", "in", "at", "during", "for"})
"""After "than", what stands for the rows of the other side ("smaller delays than those scheduled at noon") or
the word that places them ("worse on weekends than on weekdays")."""


def read_sides(reading: _Reading, disjoint: Callable[[_Reading], str | None]) -> None:
    """Split the conditions on the column ``disjoint`` finds (whose conditions exclude each other) into the two
    sides a word of ``PIVOTS`` between them parts, when the question asks for one aggregate or a count and
    each side's conditions alone keep some rows: ``reading.sides``. Left as read otherwise (and refused)."""
    more_rows = more_rows_at(reading, of_conditions=True) is not None
    if reading.keys or reading.bucket is not None or reading.top is not None or reading.contrast is not None \
            or reading.share_split is not None or not (reading.count or reading.measures or more_rows):
        return
    column = disjoint(reading)
    if column is None:
        return
    compared = [f for f in reading.filters if f.column == column]
    starts = sorted({f.start for f in compared})
    pivot_words = PIVOTS | ({"with"} if reading.norm(0) in ("compare", "comparing") else set())
    pivots = [i for i in range(starts[0] + 1, starts[-1]) if reading.free(i) and (
        reading.norm(i) in pivot_words or reading.norm(i) == "than" and reading.norm(i + 1) in _THOSE)]
    if len(pivots) != 1:
        return
    others = [f for f in reading.filters if f.column != column]
    sides = ([f for f in compared if f.start < pivots[0]], [f for f in compared if f.start > pivots[0]])
    if not all(sides) or any(disjoint(replace(reading, filters=[*others, *side])) is not None for side in sides):
        return
    reading.filters = others
    reading.sides = sides
    reading.count = reading.count or not reading.measures  # "were there more flights in … or …": how many
    reading.used.add(pivots[0])
    # "were there more flights in … or …": which side has more, its two figures say
    reading.used.update(i for i, token in enumerate(reading.tokens) if token.norm in COMPARATIVES and reading.free(i))


def split_into_sides(select: list[exp.Expr], conditions: list[exp.Expr]) -> list[exp.Expr]:
    """Each aggregate of ``select`` once per side, over the rows of that side's condition (its name numbered
    after the side: ``average_dep_delay_1``, ``average_dep_delay_2``); other expressions as they are."""
    split: list[exp.Expr] = []
    for expression in select:
        aggregate = expression.this if isinstance(expression, exp.Alias) else expression
        if not isinstance(aggregate, exp.AggFunc):
            split.append(expression)
            continue
        name = expression.alias if isinstance(expression, exp.Alias) else "value"
        for number, condition in enumerate(conditions, start=1):
            side = aggregate.copy()
            if isinstance(side.this, exp.Distinct):  # COUNT(DISTINCT CASE WHEN … THEN x END): NULLs not counted
                side.this.set("expressions", [_kept(condition, value) for value in side.this.expressions])
            else:
                side.set("this", _kept(condition, exp.Literal.number(1) if isinstance(side.this, exp.Star)
                                       else side.this))
            split.append(exp.alias_(side, f"{name}_{number}", quoted=True))
    return split


def _kept(condition: exp.Expr, value: exp.Expr) -> exp.Expr:
    """``value`` where ``condition`` holds, else NULL (which no aggregate counts)."""
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())])


def more_rows_at(reading: _Reading, *, of_conditions: bool) -> int | None:
    """Where the question asks which group has more (or fewer) of the table's rows ("more visits") or, with
    ``of_conditions``, of the rows a condition keeps ("more cancellations"): the comparative's place."""
    rows = _table_words(reading.base)
    conditions = {f.start for f in reading.filters if f.kind == "boolean"} if of_conditions else set()
    return next((index for index, token in enumerate(reading.tokens[:-1])
                 if token.norm in ("more", "fewer", "less") and reading.free(index)
                 and (reading.tokens[index + 1].stem in rows or conditions & {index + 1, index + 2})), None)


def answered_sides(reading: _Reading, select: list[exp.Expr]) -> list[exp.Expr]:
    """"Were there more flights in the first half of 2013 than in the second?": a yes or no question of two sides
    is answered first (the first side's figure above the second's, below for "fewer"), its two figures beside."""
    figures = [e.this if isinstance(e, exp.Alias) else e for e in select]
    figures = [figure for figure in figures if isinstance(figure, exp.AggFunc)]
    said = {token.norm in _HIGHER for token in reading.tokens if token.norm in COMPARATIVES}
    # ("were there more … than …" is read as a count; "… in February or in November?" asks which, not whether)
    asked = (reading.yes_no or reading.norm(0) in AUXILIARIES) and any(t.norm == "than" for t in reading.tokens)
    if not asked or len(figures) != 2 or len(said) != 1:
        return select
    first, second = (figure.copy() for figure in figures)
    compared = exp.GT(this=first, expression=second) if said.pop() else exp.LT(this=first, expression=second)
    return [exp.alias_(compared, "answer", quoted=True), *select]
