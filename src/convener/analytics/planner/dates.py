"""Reading time in a question: buckets ("per month"), dates, months, years and year ranges."""

from __future__ import annotations

from datetime import date, timedelta

from convener.analytics.planner.base import NoPlan
from convener.analytics.planner.catalog import _table_words, _time_columns
from convener.analytics.planner.periods import add_day_of_every_year, read_periods
from convener.analytics.planner.state import _Filter, _Reading
from convener.analytics.planner.weekdays import weekday_bucket
from convener.analytics.planner.vocabulary import _BUCKET_ADJECTIVES, _BUCKETS, _UNITS, _YEAR_PREPOSITIONS
from convener.analytics.shapes import TIME_TYPES, ColumnInfo
from convener.analytics.wording import MONTHS, Token


def _time_column(reading: _Reading) -> ColumnInfo | None:
    """The column dates in the question apply to: a time column the question names, else the first."""
    columns = _time_columns(reading.table)
    mentioned = [c for c in columns if any(m.target.column == c.name for m in reading.mentions)]
    chosen = mentioned or _of_named_join(reading, columns) or columns
    return chosen[0] if chosen else None


def _of_named_join(reading: _Reading, columns: list[ColumnInfo]) -> list[ColumnInfo]:
    """The time columns of a joined table whose rows the question names ("planes made in 2005")."""
    if reading.scope is None:
        return []
    found: list[ColumnInfo] = []
    for join in reading.scope.joins:
        words = _table_words(join.table)
        if not any(token.stem in words for token in reading.tokens if token.kind == "word"):
            continue
        found.extend(column for column in columns if reading.join_of(column.name) is join)
    return found


def _read_buckets(tokens: list[Token]) -> tuple[str | None, set[int]]:
    """"monthly", "per year", "by quarter", "over the years", "over time": the time bucket asked for, and
    the tokens that asked (read first, so that "per year" is not taken for a column named year)."""
    def norm(index: int) -> str:
        return tokens[index].norm if 0 <= index < len(tokens) else ""

    unit: str | None = None
    used: set[int] = set()
    for index, token in enumerate(tokens):
        span: list[int] = []
        days = weekday_bucket(tokens, index)
        if days and norm(index - 1) in ("per", "by", "each", "every", "which", "what") and not used.intersection(days):
            # "for each day of the week", "which day of the week": the day's name, not the date
            unit = "weekday"
            used.update(days)
            used.update(i for i in (index - 1, index - 2) if norm(i) in ("per", "by", "each", "every", "for"))
            # "(use the weekday name)", "with the day's name": how the days are shown, which they are
            used.update(i for at, said in enumerate(tokens) if said.norm in ("weekday", "day")
                        and norm(at + 1) in ("name", "names") for i in (at, at + 1))
            continue
        if token.norm in _BUCKET_ADJECTIVES:
            span = [index]
        elif token.norm in _BUCKETS and norm(index - 1) == "calendar" \
                and norm(index - 2) in ("per", "by", "each", "every"):
            span = [index - 2, index - 1, index]  # "in each calendar month": the month as a period of its own
        elif token.norm in _BUCKETS and norm(index - 1) in ("per", "by", "each", "every", "a"):
            span = [index - 2, index - 1, index] if norm(index - 2) in ("for", "in", "of") else [index - 1, index]
        elif token.norm in _BUCKETS and norm(index - 1) == "the" and norm(index - 2) in ("per", "by"):
            span = [index - 2, index - 1, index]  # "by the year of the egg date"
        elif token.norm in _BUCKETS and token.norm.endswith("s") and _ranked_before(tokens, index):
            span = [index]  # "the top 3 days by average delay", "the 3 busiest months": the periods ranked
        elif token.norm in _BUCKETS and token.norm.endswith("s") and norm(index - 1) in ("which", "what") \
                and norm(index + 1) in ("had", "have", "saw", "with", "were", "was", "did"):
            # "which days had more than one cancelled flight", "on which days were two or more flights cancelled":
            # the periods listed
            span = [index - 1, index]
        elif token.norm in ("years", "time") and norm(index - 1) == "the" and norm(index - 2) == "over":
            span = [index - 2, index - 1, index]
        elif token.norm == "time" and norm(index - 1) == "over":
            span = [index - 1, index]
        elif token.norm in _BUCKETS and norm(index - 1) in ("to", "over") and norm(index - 2) == token.norm:
            # "from month to month", "year over year": each period after the one before
            span = [index - 2, index - 1, index]
            if norm(index - 3) == "from":
                span.insert(0, index - 3)
        if span and not used.intersection(span):
            # "for every month except December": all of them but one, taken together, no period of each (said
            # first, "For every month except December, what …", it is asked of each)
            if norm(index - 1) != "every" or not excepting(tokens, index + 1) \
                    or asked_of_each(tokens, span[0], index + 1):
                unit = "month" if token.norm == "time" else _BUCKETS[token.norm]
            used.update(span)
    return unit, used


def asked_of_each(tokens: list[Token], start: int, after: int) -> bool:
    """Whether "for every <group> except …" opens the question at ``start`` and a question word follows a few
    words ``after`` it ("For every species except Gentoo, what's the average …": asked of each species)."""
    return start == 0 and any(token.norm in ("what", "whats", "how", "which") for token in tokens[after:after + 4])


def excepting(tokens: list[Token], index: int) -> bool:
    """Whether "except", "excluding", "besides" or "other than" stands at ``index``."""
    said = [token.norm for token in tokens[index:index + 2]]
    return said[:1] in (["except"], ["excluding"], ["besides"]) or said == ["other", "than"]


def _ranked_before(tokens: list[Token], index: int) -> bool:
    """Whether a ranking is said right before ``index``: "top 3", "bottom 5", "3 busiest", "5 worst"."""
    def at(position: int) -> Token | None:
        return tokens[position] if 0 <= position < len(tokens) else None

    before, earlier = at(index - 1), at(index - 2)
    if before is None or earlier is None:
        return False
    # (a number spelled out is one too: "the ten busiest days")
    if before.number is not None and earlier.norm in ("top", "bottom"):  # ("the last 3 days": a period)
        return True
    return earlier.number is not None and (before.norm.endswith("est") or before.norm in ("most", "least"))


def _read_dates(reading: _Reading) -> None:
    """ISO dates, "March 1, 2004", "January 2013", and years after a preposition ("in 2008", "after 2005",
    "between 2005 and 2007") become filters on the table's time column."""
    column = _time_column(reading)
    if column is None:
        return
    read_periods(reading, column)
    _read_day_ranges(reading, column)
    _read_full_dates(reading, column)
    _read_year_ranges(reading, column)
    _read_years(reading, column)


_RANGE_WORDS = frozenset({"to", "through", "thru", "till", "until", "and"})


def _read_day_ranges(reading: _Reading, column: ColumnInfo) -> None:
    """Days of one month with no year, as a range: "Jan 1-7", "from January 1 to January 7", "between jan 1 and
    7", "the first week of January" (its days 1 to 7): those days of every year in the data. A year after the
    range is left to the full dates ("January 1 to 7, 2013")."""
    if column.type not in TIME_TYPES:
        return
    tokens = reading.tokens
    for index in range(len(tokens)):
        month = MONTHS.get(tokens[index].norm) if tokens[index].kind == "word" else None
        if month is None or index in reading.used:
            continue
        start, span = index, [index]
        if [reading.norm(i) for i in range(index - 4, index)] == ["the", "first", "week", "of"] \
                or [reading.norm(i) for i in range(index - 3, index)] == ["first", "week", "of"]:
            start = index - (4 if reading.norm(index - 4) == "the" else 3)
            first, last, span = 1, 7, list(range(start, index + 1))
        else:
            if not _day_number_at(reading, index + 1):
                continue
            to = index + 2
            again = to + 1 if MONTHS.get(reading.norm(to + 1)) == month else to  # "January 1 to January 7"
            dashed = "-" in reading.gap(to) or "\u2013" in reading.gap(to)
            # ("January 1 and 7" are two days; "between January 1 and 7" all of them)
            ranged = reading.norm(to) in _RANGE_WORDS \
                and (reading.norm(to) != "and" or reading.norm(index - 1) == "between")
            if not (dashed and _day_number_at(reading, to) or ranged and _day_number_at(reading, again + 1)):
                continue
            last_at = to if dashed else again + 1
            first, last = int(tokens[index + 1].number or 0), int(tokens[last_at].number or 0)
            span = list(range(index, last_at + 1))
            if last_at + 1 < len(tokens) and _is_year(tokens[last_at + 1]) or first > last:
                continue
            if reading.norm(index - 1) in ("from", "between"):
                start = index - 1
        if reading.used.intersection(span):
            continue
        reading.filters.append(_Filter(column.name, "=", (month,), "month", start))
        reading.filters.append(_Filter(column.name, ">=", (first,), "day", start))
        reading.filters.append(_Filter(column.name, "<=", (last,), "day", start))
        reading.used.update(range(start, span[-1] + 1))


def _day_number_at(reading: _Reading, index: int) -> bool:
    return index < len(reading.tokens) and index not in reading.used and _day_number(reading.tokens[index])


def _is_year(token: Token) -> bool:
    """A whole number between 1800 and 2100 written without decimals."""
    return token.kind == "number" and token.is_integer and 1800 <= (token.number or 0) <= 2100 \
        and "." not in token.text


def _read_full_dates(reading: _Reading, column: ColumnInfo) -> None:
    """"2005-03-01", "on March 1, 2004" (one day) and "January 2013" (a month) on a date column."""
    if column.type not in TIME_TYPES:
        return
    tokens = reading.tokens
    for index, token in enumerate(tokens):
        if index in reading.used:
            continue
        if token.kind == "date":
            year, month, day = (int(part) for part in token.norm.split("-"))
            _add_day(reading, column, year, month, day, [index])
            continue
        month_at = index + 2 if reading.norm(index + 1) == "of" else index + 1
        if _day_number(token) and not reading.used.intersection(range(index, month_at + 1)):
            # "4 July 2013", "the 4th of July 2013": the day before its month (words after it may be read already:
            # "the 4th of July: flight number, carrier")
            named = _month(tokens[month_at]) if month_at < len(tokens) else None
            if named is not None and month_at + 1 < len(tokens) and _is_year(tokens[month_at + 1]) \
                    and month_at + 1 not in reading.used:
                _add_day(reading, column, int(tokens[month_at + 1].number or 0), named, int(token.number or 0),
                         list(range(index, month_at + 2)))
                continue
            if named is not None and (month_at == index + 2 or reading.norm(index - 1) == "on"):
                # "on 4 July", "the 4th of July": that day of every year
                _add_yearless_day(reading, column, named, int(token.number or 0), list(range(index, month_at + 1)))
                continue
        named = _month(token)
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        after = tokens[index + 2] if index + 2 < len(tokens) else None
        if named is not None and _read_month_list(reading, column, index):
            continue
        if named is not None and (reading.norm(index - 1) in ("in", "during", "of", "for") or _another_month(
                reading, column.name, index)) and (following is None or not (_is_year(following) or _day_number(following))):
            # "in December": that month of every year; "in July versus January": another
            against = _another_month(reading, column.name, index)
            reading.filters.append(_Filter(column.name, "=", (named,), "month", index))
            reading.used.update((index,) if against else (index - 1, index))  # the word setting it against: the sides'
            continue
        if named is None or following is None:
            continue
        if following.stem in _table_words(reading.base) and index + 1 not in reading.used:
            # "Virgin America's December flights": the rows of that month (of every year), said before their noun
            reading.filters.append(_Filter(column.name, "=", (named,), "month", index))
            reading.used.add(index)
        elif _day_number(following) and after is not None and _is_year(after):
            _add_day(reading, column, int(after.number or 0), named, int(following.number or 0),
                     [index, index + 1, index + 2])
        elif _is_year(following):
            _add_month(reading, column, int(following.number or 0), named, [index, index + 1])
        elif _day_number(following) and reading.norm(index - 1) in ("on", "for"):
            _add_yearless_day(reading, column, named, int(following.number or 0), [index, index + 1])


_SET_AGAINST = frozenset({"versus", "vs", "against", "or", "and", "with"})

_DENYING = frozenset({"not", "outside", "except", "excluding", "besides", "other"})
"""Words before months that keep the rows of every other month ("outside the summer months of June, July and
August", "not in July")."""
_BEFORE_MONTHS = frozenset({"in", "of", "the", "during", "for", "month", "months", "summer", "winter", "spring",
                            "autumn", "fall", "holiday", "holidays", "period", "than",
                            # "(i.e. June, July and August)", "(namely …)"
                            "i", "e", "ie", "namely"})
"""Words between such a denial, or a preposition, and the months ("outside the summer months of …")."""


def _read_month_list(reading: _Reading, column: ColumnInfo, index: int) -> bool:
    """Months of every year said as a list ("in June, July or August") or denied ("not in July", "outside the
    summer months of June, July and August", "excluding December"): one condition on the month (IN, or NOT IN
    and <> when denied). Returns whether it read one; a single month not denied is left to the caller."""
    months, end = [index], index + 1
    while end < len(reading.tokens):
        if reading.norm(end) in ("and", "or"):
            at = end + 1
        elif "," in reading.gap(end) and _month_token(reading, end):  # "June, July"
            at = end
        else:
            break
        if not _month_token(reading, at) or at in reading.used:
            break
        months.append(at)
        end = at + 1
    start = index
    while start > 0 and reading.norm(start - 1) in _BEFORE_MONTHS and reading.free(start - 1) and index - start < 5:
        start -= 1
    denied = start > 0 and reading.norm(start - 1) in _DENYING and reading.free(start - 1)
    if denied and reading.norm(start - 1) == "not" and reading.norm(start - 2) in ("do", "does", "did"):
        denied = False  # ("did not fly in July": a clause's own negation, read with it)
    if denied:
        # "outside the summer months (i.e. excluding June, July and August)": the parenthesis says the denial again
        outer = start - 1
        while outer > 0 and reading.norm(outer - 1) in _BEFORE_MONTHS and reading.free(outer - 1) \
                and start - outer < 8:
            outer -= 1
        if outer < start - 1 and reading.norm(outer - 1) in _DENYING and reading.free(outer - 1) \
                and any("(" in reading.gap(at) for at in range(outer, start)):
            start = outer
    joiners = {reading.norm(at - 1) for at in months[1:]}
    if not denied and (len(months) == 1 or len(months) == 2 and joiners == {"and"}):
        return False  # (one month, or two set side by side: "in June and July", "June and July compared")
    glossed = reading.norm(start) in ("in", "during") and any("(" in reading.gap(at) for at in range(start, index + 1))
    # "in the summer months June, July and August": the months named after their noun, the list read from "in"
    named = reading.norm(index - 1) in ("month", "months") and reading.norm(start) in ("in", "during")
    if not denied and reading.norm(index - 1) not in ("in", "during", "of", "for") and not glossed and not named:
        return False  # ("June, July and August flights": not a list this reads; "in summer (June, …)" is one)
    values = tuple(dict.fromkeys(_month(reading.tokens[at]) or 0 for at in months))
    op = ("not in" if denied else "in") if len(values) > 1 else ("<>" if denied else "=")
    # (months named as one period, "the summer months June, July and August", are one condition, not groups)
    reading.filters.append(_Filter(column.name, op, values, "month", index, either=named or glossed))
    reading.used.update(range(start - 1 if denied else start, end))
    return True


def _month_token(reading: _Reading, index: int) -> bool:
    return 0 <= index < len(reading.tokens) and _month(reading.tokens[index]) is not None


def _another_month(reading: _Reading, column: str, index: int) -> bool:
    """Whether the month named at ``index`` follows a word that sets it beside a month of the year already read
    ("in July versus January", "July or January")."""
    return reading.norm(index - 1) in _SET_AGAINST and any(
        f.column == column and f.kind == "month" and f.op == "=" for f in reading.filters)


def _day_number(token: Token) -> bool:
    """A whole number that can be a day of the month."""
    return token.kind == "number" and token.is_integer and 1 <= (token.number or 0) <= 31


def _month(token: Token) -> int | None:
    """The month a word names: a full name in any case, an abbreviation ("Mar", "Dec") only capitalised."""
    if token.kind != "word" or token.norm not in MONTHS:
        return None
    if len(token.norm) > 3 and token.norm != "sept" or token.text[:1].isupper():
        return MONTHS[token.norm]
    return None


def _add_day(reading: _Reading, column: ColumnInfo, year: int, month: int, day: int, span: list[int]) -> None:
    """A filter on one day, or on the days after or before it where a word right before says so ("after
    2013-12-25", "on or before 20 Nov 2009", "between … and …"); an impossible date is refused."""
    try:
        said = date(year, month, day)
    except ValueError:
        raise NoPlan(f"{year}-{month:02d}-{day:02d} is not a date") from None
    bound = _day_bound(reading, span[0])
    if bound is None:
        reading.filters.append(_Filter(column.name, "=", (said.isoformat(),), "date", span[0]))
        if reading.norm(span[0] - 1) == "on":
            reading.used.add(span[0] - 1)
    else:
        # as half-open bounds on whole days, which hold for a timestamp too: "after" the 25th is from the 26th on
        starts, words = bound
        first = said + timedelta(days=1) if starts in (">", "<=") else said
        reading.filters.append(_Filter(column.name, ">=" if starts in (">", ">=") else "<", (first.isoformat(),),
                                       "date", span[0]))
        reading.used.update(words)
    reading.used.update(span)


_DAY_BOUNDS = {"after": ">", "since": ">=", "from": ">=", "before": "<", "until": "<=", "till": "<=",
               "through": "<=", "thru": "<=", "by": "<="}
"""Words right before a day that bound the days asked ("after 2013-12-25": the days after it)."""


def _day_bound(reading: _Reading, at: int) -> tuple[str, list[int]] | None:
    """The bound a day at ``at`` sets and the words saying it: "after", "on or before", "between" (the first of
    two days: from it on) and the "and" or "to" before the second day of a range ("between A and B", "from A to
    B": up to B, B included); None for the day itself."""
    before = at - 1
    word = reading.norm(before)
    if before < 0 or not reading.free(before):
        return None
    if word in ("after", "before") and reading.norm(before - 1) == "or" and reading.norm(before - 2) == "on":
        return (">=" if word == "after" else "<=", [before - 2, before - 1, before])
    if word == "between":
        return (">=", [before])
    if word in ("and", "to") and _range_opened(reading, before):
        return ("<=", [before])
    return (_DAY_BOUNDS[word], [before]) if word in _DAY_BOUNDS else None


def _range_opened(reading: _Reading, joiner: int) -> bool:
    """Whether the day before ``joiner`` ("and", "to") opened a range with "between" or "from" right before it."""
    opened = [item for item in reading.filters if item.kind == "date" and item.op == ">=" and item.start < joiner]
    if not opened:
        return False
    start = max(item.start for item in opened)
    return reading.norm(start - 1) in ("between", "from")


def _add_yearless_day(reading: _Reading, column: ColumnInfo, month: int, day: int, span: list[int]) -> None:
    """"On July 4" with no year: that day of every year in the data."""
    add_day_of_every_year(reading, column, month, day, span[0])
    reading.used.update(span)
    if reading.norm(span[0] - 1) in ("on", "the"):
        reading.used.add(span[0] - 1)


def _add_month(reading: _Reading, column: ColumnInfo, year: int, month: int, span: list[int]) -> None:
    """A month as a half-open date range."""
    start = f"{year:04d}-{month:02d}-01"
    end = f"{year + (month == 12):04d}-{month % 12 + 1:02d}-01"
    reading.filters.append(_Filter(column.name, ">=", (start,), "date", span[0]))
    reading.filters.append(_Filter(column.name, "<", (end,), "date", span[0]))
    reading.used.update(span)


def _read_year_ranges(reading: _Reading, column: ColumnInfo) -> None:
    """"between 2005 and 2007", "from 2005 to 2007": both years included."""
    tokens = reading.tokens
    for index in range(len(tokens) - 3):
        first, joiner, second = tokens[index + 1], tokens[index + 2], tokens[index + 3]
        if (reading.norm(index), joiner.norm) not in (("between", "and"), ("from", "to"), ("from", "through")):
            continue
        if not (_is_year(first) and _is_year(second)) or reading.used.intersection(range(index, index + 4)):
            continue
        reading.filters.append(_Filter(column.name, ">=", (first.number or 0,), "year", index))
        reading.filters.append(_Filter(column.name, "<=", (second.number or 0,), "year", index))
        reading.used.update(range(index, index + 4))


def _read_years(reading: _Reading, column: ColumnInfo) -> None:
    """A year after a preposition ("in 2008", "after 2005") or on its own ("1982 cars"); several years
    joined by "and"/"or" make one IN filter."""
    years: list[float] = []
    first = -1
    for index, token in enumerate(reading.tokens):
        if index in reading.used or not _is_year(token):
            continue
        before = reading.norm(index - 1)
        if before == "than" or reading.norm(index + 1) in _UNITS:
            continue  # "longer than 2000 miles", "2000 g": a quantity, not a year
        op = _YEAR_PREPOSITIONS.get(before, "=")
        if before == "prior" or (before == "to" and reading.norm(index - 2) == "prior"):
            op = "<"
        later = (reading.norm(index + 1), reading.norm(index + 2))
        if later[0] == "or" and later[1] in ("later", "after", "newer", "more", "since"):
            op = ">="  # "in 2005 or later"
            reading.used.update((index + 1, index + 2))
        elif later[0] == "or" and later[1] in ("earlier", "before", "older"):
            op = "<="
            reading.used.update((index + 1, index + 2))
        elif later[0] in ("onwards", "onward"):
            op = ">="
            reading.used.add(index + 1)
        if op == "=":
            years.append(token.number or 0)
            first = index if first < 0 else first
        else:
            reading.filters.append(_Filter(column.name, op, (token.number or 0,), "year", index))
        reading.used.add(index)
        if before in _YEAR_PREPOSITIONS or before in ("and", "or"):
            reading.used.add(index - 1)
    if years:
        reading.filters.append(_Filter(column.name, "=" if len(years) == 1 else "in", tuple(years), "year", first))
