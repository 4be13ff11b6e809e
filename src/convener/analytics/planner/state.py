"""What the planner has understood of a question so far, and the small helpers every reading step uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from convener.analytics.planner.catalog import _Mention
from convener.analytics.planner.units import CONVERSIONS
from convener.analytics.shapes import NUMBER_TYPES, ColumnInfo, TableInfo
from convener.analytics.wording import Token


# --- Reading the structure of the question -----------------------------------------------------------------


@dataclass(frozen=True)
class _Filter:
    """``column op value``; ``values`` for IN; ``kind`` is value, name (the values one name names), number, year,
    date or boolean. ``start`` is where in the question the condition was said (a share tells its condition from its base by it)."""

    column: str
    op: str
    values: tuple[str | float, ...]
    kind: str
    start: int = -1
    either: bool = False
    """Values said as alternatives ("to LAX or SFO"): one condition the rows meet, not groups set side by side."""


@dataclass(frozen=True)
class _Join:
    """A table joined many-to-one to the queried one: ``on`` pairs (queried table's column, its column)."""

    table: TableInfo
    on: tuple[tuple[str, str], ...]
    chosen: bool = False
    """Joined by one of several relationships to the table, the one the question's words pointed to."""


@dataclass(frozen=True)
class _Scope:
    """The queried table as the reading sees it: ``base`` plus virtual columns, each with the SQL it stands
    for (``virtual``): columns of joined tables and glossary formulas. ``table`` lists them all, so every
    reading step treats a virtual column as a column; ``sums`` are the formulas, totalled by default."""

    base: TableInfo
    table: TableInfo
    virtual: dict[str, exp.Expr] = field(default_factory=dict)
    joins: tuple[_Join, ...] = ()
    sums: frozenset[str] = frozenset()
    said: frozenset[int] = frozenset()
    """The question's words that picked, of several relationships to one table, the one joined ("to" in
    "flights to San Francisco Intl"): read, so never left over."""
    held_by: dict[str, frozenset[str]] = field(default_factory=dict)
    """For each value the question says, the queried table's columns that hold it ("RDK": origin and dest)."""


@dataclass
class _Reading:
    """Everything the planner understood of a question, before choosing a shape."""

    table: TableInfo
    tokens: list[Token]
    mentions: list[_Mention]
    used: set[int] = field(default_factory=set)
    text: str = ""
    """The question as written: the characters between its words ("June-August", "June, August")."""
    filters: list[_Filter] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    empty_grouped: set[str] = field(default_factory=set)
    """Group keys whose empty values are a group of their own ("with unknown sex as its own group")."""
    bucket: str | None = None
    telling_names_apart: set[str] = field(default_factory=set)
    """Group keys that join another table whose names, grouped by, are asked: a name the joined table lacks is no
    group ("by destination airport name"), and the code beside it tells two places of one name apart."""
    hour_keys: set[str] = field(default_factory=set)
    """Group keys that hold times of day as HHMM numbers, grouped by their hour ("by scheduled departure hour")."""
    measures: list[tuple[str, str | None]] = field(default_factory=list)
    count: bool = False
    distinct: str | None = None
    top: int | None = None
    descending: bool = True
    listing: bool = False
    compare: bool = False
    terms: list[str] = field(default_factory=list)
    order_measure: str | None = None
    counted_measure: str | None = None
    counted_with_verb: str | None = None
    """The words of the counted measure, when they hold a verb ("how many departures were delayed")."""
    listed_counts: frozenset[int] = frozenset()
    """Where true/false conditions begin that a list of figures beside a count names as figures of their own
    ("number of flights, cancellations and average delay"): each counts its rows, beside the count of all."""
    count_conditions: frozenset[int] = frozenset()
    """Where true/false conditions the count phrase names itself begin ("the number of cancelled flights and the
    average delay"): beside other figures, the count counts the rows meeting them, and the figures are of all rows."""
    superlative_top: bool = False
    """The ranking was read from an adjective's superlative alone ("what's the longest flipper"), with no
    number or which-word of its own: asked for each group, it is each group's extreme instead."""
    amount: str | None = None
    """"how many grams …", "how many miles …": "how many" before the unit a numeric column is in asks for an
    amount of that column (its total unless an aggregate word says otherwise), not for a number of rows."""
    rows_counted: bool = False
    """"the number of flights": the count phrase names the table's rows, so it is a count of its own even
    beside aggregated measures ("the number of flights and the maximum delay")."""
    direction: bool | None = None
    scope: _Scope | None = None
    share_split: int | None = None
    share_conditions: list[_Filter] = field(default_factory=list)
    group_conditions: list[tuple[str, float]] = field(default_factory=list)
    """Conditions on the number of rows of each group ("with at least 50 flights": (">=", 50)): HAVING."""
    share_span: tuple[int, int] | None = None
    """The words of the one condition a share counts, when named before it ("the cancellation rate")."""
    ties: bool = True
    """A ranking keeps the rows tied with its last ("the four lightest penguins" when two weigh the same):
    cutting a tie at random would present an arbitrary row as the answer."""
    sides: tuple[list[_Filter], list[_Filter]] | None = None
    """Two groups of rows set side by side by conditions on one column that exclude each other ("in July versus
    January"): each aggregate is computed over each side's rows (see ``sides``)."""
    ratio: tuple[_Filter, _Filter] | None = None
    """"the ratio of male to female penguins": the rows of the first over the rows of the second."""
    stated_factors: dict[tuple[str, str], float] = field(default_factory=dict)
    """Factors between units the question states ("(1 mile = 1.609344 km)": (miles, km) 1.609344 and back):
    a conversion to the unit asked for uses the question's own factor."""
    zero_included: bool = False
    """The groups with no row counted are to be shown with 0 ("(including zero)", "including carriers with
    none"): each group's own rows are counted, not the rows that met the conditions grouped."""
    shown: list[str] = field(default_factory=list)
    """Columns a listing names right after its verb ("list the destinations of …"): what it shows."""
    shown_per_row: bool = False
    """The shown columns are each row's ("… : their ids and species"), not the distinct values of them."""
    shown_whole: bool = False
    """The rows are shown whole, the shown columns beside them ("flights … with their arrival delay")."""
    shown_value: int | None = None
    """Where "the value" stands among the shown columns ("give id, species and the value"): the column the
    question's one number condition reads, placed there once the conditions are read."""
    shown_unsettled: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Shown columns said by a word several columns share ("…: carrier and the delay"), by their place among
    the shown: the columns it could be, settled once the conditions are read (the one the question names
    elsewhere: compared, ranked or measured)."""
    contrast: tuple[_Filter, _Filter, bool, str] | None = None
    """Two groups set against each other ("is the average … of males greater than that of females"): the
    first's condition, the second's, whether the comparative says higher, and what is asked ("whether" or
    "difference")."""
    contrast_judged: str | None = None
    """The contrast's comparative when it judges ("worse", "better"): higher or lower by what the measure is."""
    yes_no: bool = False
    """The question opens with an auxiliary ("did United fly to Denver?"): about rows, it asks whether any
    exist."""
    absent: list[_Filter] = field(default_factory=list)
    """Conditions no row of a group may meet ("which carriers never had a flight cancelled"): HAVING."""
    present: list[_Filter] = field(default_factory=list)
    """Conditions some row of a group must meet, said beside an absent one ("from JFK but never from LGA")."""
    exists: bool = False
    asked_bound: tuple[str, float, int] | None = None
    """"Is the average flipper length over 215 mm?": the aggregate compared with the number (and where its
    unit would be said), yes or no."""
    asked_of_all: _Filter | None = None
    """"Did every Chinstrap nest have a full clutch?": the condition every row the others keep is asked to meet."""
    asked_of_top: _Filter | None = None
    """"Is the heaviest penguin a Gentoo?": the value the top rows are asked to have, no condition on them."""
    """A yes/no question: whether any row meets the conditions ("did any flight …")."""
    bounds: dict[int, tuple[str, tuple[int, ...]]] = field(default_factory=dict)
    """Numbers followed by "or more"/"or less" (by position): the comparison their equality becomes."""
    sort: tuple[str | None, bool] | None = None
    """The order every row is asked in ("oldest date first": the column, or None for the measure; whether
    descending), which ranks nothing away."""
    unplaced: list[str] = field(default_factory=list)
    """Columns the question names that no step made a key, filter, measure or ordering of ("per plane
    manufacturer" when the manufacturer could not be grouped by): words the plan does not account for."""

    @property
    def base(self) -> TableInfo:
        """The table queried, without virtual columns."""
        return self.scope.base if self.scope else self.table

    def virtual(self, name: str) -> bool:
        return self.scope is not None and name in self.scope.virtual

    def join_of(self, name: str) -> _Join | None:
        """The join whose table's column the virtual column ``name`` is (None for the queried table's own
        columns and for formulas)."""
        expression = self.scope.virtual.get(name) if self.scope is not None else None
        if not isinstance(expression, exp.Column) or self.scope is None:
            return None
        return next((join for join in self.scope.joins if join.table.name.split(".")[-1] == expression.table), None)

    def column(self, name: str) -> ColumnInfo:
        found = self.table.column(name)
        assert found is not None
        return found

    def norm(self, index: int) -> str:
        return self.tokens[index].norm if 0 <= index < len(self.tokens) else ""

    def mention_at(self, index: int) -> _Mention | None:
        return next((m for m in self.mentions if m.start <= index < m.end), None)

    def free(self, index: int) -> bool:
        return 0 <= index < len(self.tokens) and index not in self.used and self.mention_at(index) is None

    def factor(self, source: str, target: str) -> float | None:
        """What a measure in the unit ``source`` is multiplied by to be in ``target``: the question's own factor
        when it states one ("1 mile = 1.6 km"), else the known one, if any."""
        return self.stated_factors.get((source, target), CONVERSIONS.get((source, target)))

    def gap(self, index: int) -> str:
        """The characters between the token before ``index`` and the one at it, as the question wrote them."""
        if not 0 < index < len(self.tokens):
            return ""
        return self.text[self.tokens[index - 1].end:self.tokens[index].start]


def _matches(reading: _Reading, index: int, words: tuple[str, ...]) -> bool:
    """Whether ``words`` occur at ``index`` as free tokens (not already used by another reading step)."""
    return all(reading.norm(index + offset) == word and reading.free(index + offset)
               for offset, word in enumerate(words))


def _find_phrase(reading: _Reading, phrases: Sequence[tuple[str, ...]]) -> tuple[int, tuple[str, ...]] | None:
    """The first free occurrence of any of ``phrases``."""
    for index in range(len(reading.tokens)):
        for words in phrases:
            if _matches(reading, index, words):
                return index, words
    return None


def _numeric_mention(reading: _Reading, index: int) -> _Mention | None:
    """The mention at ``index`` when it names a numeric column."""
    mention = reading.mention_at(index)
    if mention and not mention.is_value and reading.column(mention.target.column).type in NUMBER_TYPES:
        return mention
    return None


def _note_term(reading: _Reading, mention: _Mention) -> None:
    """Record the glossary term a mention came through, once."""
    if mention.target.term and mention.target.term not in reading.terms:
        reading.terms.append(mention.target.term)


def groups_set_against(reading: _Reading) -> bool:
    """Whether the question names two values of one column ("Biscoe or Dream", "B6 vs EV"): groups to compare."""
    valued = [mention.target.column for mention in reading.mentions if mention.is_value]
    return any(valued.count(column) > 1 for column in valued)


_LISTING = frozenset({"list", "show", "name", "give", "find"})
_ARTICLES = frozenset({"the", "all", "every", "me", "us"})


def listed_at(reading: _Reading) -> int:
    """Where the words naming what the question lists stand: after its first "which" or "what", else after a verb
    of listing that opens it ("list the destinations …"), else at its first word ("destinations served from …")."""
    asked = next((index for index, token in enumerate(reading.tokens[:-1]) if token.norm in ("which", "what")), None)
    if asked is not None and reading.norm(asked + 1) in ("ones", "one") and reading.norm(0) in ("of", "among"):
        # "Of the carriers in the sample, which ones never flew out of Newark?": the values named first
        return next((index for index in range(1, asked) if reading.norm(index) not in _ARTICLES), asked + 1)
    if asked is not None:
        return asked + 1
    index = 1 if reading.norm(0) in _LISTING else 0
    while index and reading.norm(index) in _ARTICLES:
        index += 1
    return index
