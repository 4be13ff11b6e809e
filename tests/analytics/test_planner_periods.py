"""Lateness and periods said in words: "left more than an hour late", "arrived more than 5 minutes early",
"between July 3 and July 5, 2013", "from June through August 2013", "Christmas Day 2013", "New Year's Day"."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Term, plan_question
from convener.analytics.planner.checks import without_intensifiers
from convener.analytics.shapes import ColumnInfo, TableInfo
from convener.analytics.wording import tokenize
from tests.analytics.small_tables import answerer, database

FLIGHTS = TableInfo("flights", (
    ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("flight_date", "DATE"),
    ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes (negative when early)"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes (negative when early)")),
    description="One row per flight.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE flights (flight INTEGER, flight_date DATE, dep_delay INTEGER, arr_delay INTEGER)",
        "INSERT INTO flights VALUES (1, '2013-01-01', 90, 80), (2, '2013-07-03', -5, -30), (3, '2013-07-05', 130, 125), "
        "(4, '2013-07-06', 0, -2), (5, '2013-08-31', 20, 70), (6, '2013-12-25', 61, 50), (7, '2014-01-01', 5, 3)")


def plan(question: str) -> Plan:
    return plan_question(question, [FLIGHTS])


answer = answerer(plan)


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights left more than an hour late?", 3), ("How many flights left more than two hours behind schedule?", 1),
    ("How many flights arrived more than 20 minutes early?", 1), ("How many flights arrived at least 60 minutes late?", 3),
    ("How many flights left on time or early?", 2), ("How many flights departed early or on time?", 2),
    ("How many flights left early?", 1),
])
def test_lateness_is_the_delay_of_the_end_the_verb_names(data: duckdb.DuckDBPyConnection, question: str,
                                                          expected: int) -> None:
    assert data.execute(plan(question).sql).fetchall() == [(expected,)]


def test_lateness_without_a_verb_between_two_delays_is_declined() -> None:
    with pytest.raises(NoPlan):
        plan("How many flights were more than an hour late?")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights were there between July 3 and July 5, 2013?", 2),
    ("How many flights were there from June through August 2013?", 4),
    ("How many flights were there on Christmas Day 2013?", 1),
    ("How many flights were there on New Year's Day?", 2),  # that day of every year in the data
    ("Did any flight leave more than an hour late on New Year's Day 2014?", False),
    ("How many flights were there on the Fourth of July?", 0), ("How many flights were there on July 5?", 1),
    ("How many flights were there on the 3rd of July?", 1), ("How many flights on 25 December?", 1),
    ("How many flights were there on January 1?", 2),  # a day without a year: that day of every year
    ("how many flights were there on christmas day?", 1),  # a day known by name, in any case but "new year"
])
def test_periods_said_in_words_are_ranges_of_dates(data: duckdb.DuckDBPyConnection, question: str,
                                                   expected: object) -> None:
    assert data.execute(plan(question).sql).fetchall() == [(expected,)]


def test_a_day_of_the_year_that_no_year_has_is_refused() -> None:
    with pytest.raises(NoPlan, match="02-30 is not a day of the year"):
        plan("How many flights were there on February 30?")


def test_the_rows_of_the_last_day_are_all_the_rows_of_that_date(data: duckdb.DuckDBPyConnection) -> None:
    rows = data.execute(plan("List the flights on the last day in the data: flight number and arrival delay").sql)
    assert sorted(row[:2] for row in rows.fetchall()) == [(7, 3)]
    rows = data.execute(plan("List the flights on the first day in the data: flight number and arrival delay").sql)
    assert sorted(row[:2] for row in rows.fetchall()) == [(1, 80)]
    rows = data.execute(plan("List the flights on the final day covered by the data: flight number, arrival delay").sql)
    assert sorted(row[:2] for row in rows.fetchall()) == [(7, 3)]


@pytest.mark.parametrize("question", [
    "How many flights were there between July 3 and July 5?", "How many flights were there from Jul 3 to 5?",
    "How many flights were there on jul 3-5?",
])
def test_a_range_of_days_of_one_month_without_a_year_is_those_days_of_every_year(
        data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(2,)]


def test_the_first_week_of_a_month_is_its_first_seven_days(data: duckdb.DuckDBPyConnection) -> None:
    # (January 1 of 2013 and of 2014; August 31 is no day of August's first week)
    assert data.execute(plan("How many flights were there in the first week of January?").sql).fetchall() == [(2,)]
    assert data.execute(plan("How many flights were there in the first week of August?").sql).fetchall() == [(0,)]


@pytest.mark.parametrize("question", ["How many flights were there between July 30 and August 2?",
                                      "How many flights were there on July 3 and 5?"])
def test_a_range_of_days_across_months_without_a_year_is_not_guessed(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


def test_a_number_of_hours_in_what_names_a_column_compares_that_column() -> None:
    table = TableInfo("flights", (ColumnInfo("flight", "INTEGER"),
                                  ColumnInfo("air_time", "INTEGER", "Time spent in the air, in minutes")),
                      description="One row per flight.")
    assert '"air_time" > 360' in plan_question("flights that spent more than 6 hours in the air", [table]).sql


def test_the_verb_of_lateness_may_follow_it_and_its_unit_may_name_another_column(
        data: duckdb.DuckDBPyConnection) -> None:
    table = TableInfo("flights", (*FLIGHTS.columns, ColumnInfo("tz", "INTEGER", "Offset from GMT, in hours")),
                      description="One row per flight.")
    sql = plan_question("Which flights were more than 2 hours late departing?", [table]).sql
    assert '"dep_delay" > 120' in sql and "tz" not in sql


def test_a_day_written_as_an_ordinal_is_that_day(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("How many flights were there on July 3rd, 2013?").sql).fetchall() == [(1,)]


LATE = Term("late arrival", "A flight that arrived more than 15 minutes late, that is flights whose arr_delay > 15.",
            ("late",))


def test_a_condition_defined_on_one_end_of_the_trip_is_not_read_of_the_other(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan_question("How many flights arrived late?", [FLIGHTS], [LATE]).sql).fetchall() == [(4,)]
    # said of the other end with no amount: that end's delay above zero (at most zero, denied), not the glossary's
    for question, expected in (("How many flights departed late?", 5), ("How many flights didn't leave late?", 2),
                               ("How many flights weren't late leaving?", 2)):
        made = plan_question(question, [FLIGHTS], [LATE])
        assert not made.unaccounted and "arr_delay" not in made.sql, made
        assert data.execute(made.sql).fetchall() == [(expected,)], made.sql
    # with an amount it is that amount ("more than 2 hours late leaving"); asked how late, no condition at all
    assert '"dep_delay" > 120' in plan_question("Was any flight more than 2 hours late leaving?", [FLIGHTS], [LATE]).sql
    with pytest.raises(NoPlan):
        plan_question("List the flights and how late they left", [FLIGHTS], [LATE])
    # asked how late of the glossary's own end: the delay, no condition ("the flights and how late they arrived"
    # had listed the late arrivals alone)
    late = Term(LATE.name, LATE.description, ("late", "arrived late", "late flights"))
    for question in ("List the flights and how late they arrived", "how late did the flights arrive"):
        made = plan_question(question, [FLIGHTS], [late])
        assert "> 15" not in made.sql and data.execute(made.sql).fetchall() != [], made.sql


def test_any_before_the_rows_noun_speaks_of_the_rows(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("What was the longest departure delay of any flight?")
    assert data.execute(made.sql).fetchall() == [(130,)]


def test_early_after_a_verb_is_a_delay_below_zero(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("How many flights arrived early?").sql).fetchall() == [(2,)]
    assert data.execute(plan("How many flights left before their scheduled time?").sql).fetchall() == [(1,)]
    assert data.execute(plan("How many flights arrived after their scheduled time?").sql).fetchall() == [(5,)]
    assert data.execute(plan("What percentage of flights left early?").sql).fetchall() == [(pytest.approx(100 / 7),)]


@pytest.mark.parametrize(("question", "expected"), [
    # two months of a year either side of "than" are the two groups: July 2013 (-5, 130, 0) and December 2013 (61)
    ("Was the average departure delay in July 2013 higher than in December 2013?", False),
    ("Were there more flights in July 2013 than in December 2013?", True),
    ("Was the average departure delay in December 2013 higher than in January 2014?", True),
])
def test_two_months_of_a_year_either_side_of_than_are_the_groups_compared(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert [row[:1] for row in data.execute(plan(question).sql).fetchall()] == [(expected,)]


def test_a_verb_several_columns_abbreviate_before_a_period_says_what_the_rows_did() -> None:
    timed = TableInfo("flights", (
        ColumnInfo("flight_date", "DATE"), ColumnInfo("dep_time", "INTEGER", "Actual departure time, as HHMM"),
        ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, as HHMM (e.g. 1530)"),
        ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes")), description="One row per flight.")
    made = plan_question("How many flights did depart in July 2013?", [timed])
    assert made.sql.startswith("SELECT COUNT(*)") and "2013-07-01" in made.sql and not made.unaccounted, made.sql
    with pytest.raises(NoPlan, match="could be"):  # no period after it: which of the three is not said
        plan_question("What was the average time flights did depart?", [timed])


def test_a_bucket_after_top_n_is_the_periods_ranked(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Top 2 days by average departure delay?")
    assert [row[0].isoformat()[:10] for row in data.execute(made.sql).fetchall()] == ["2013-07-05", "2013-01-01"]
    with pytest.raises(NoPlan):  # "the last 3 days of 2013" is a stretch of time, not a ranking of days
        plan("How many flights were there in the last 3 days of 2013?")


def test_a_unit_after_the_number_names_the_column_compared_over_a_column_without_one() -> None:
    timed = TableInfo("flights", (
        ColumnInfo("flight_date", "DATE"), ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, as HHMM"),
        ColumnInfo("distance", "INTEGER", "Distance flown, in miles")), description="One row per flight.")
    assert '"distance" < 1800' in plan_question("How many departures were under 1,800 miles?", [timed]).sql


def test_a_time_at_or_later_is_a_bound_and_bounds_that_exclude_each_other_are_set_side_by_side() -> None:
    timed = TableInfo("flights", (
        ColumnInfo("flight_date", "DATE"), ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, as HHMM"),
        ColumnInfo("distance", "INTEGER", "Distance flown, in miles")), description="One row per flight.")
    made = plan_question("How many flights were scheduled to depart at 6 pm or later?", [timed])
    assert '"sched_dep_time" >= 1800' in made.sql and not made.unaccounted, made.sql
    # both at once is no flight: a comparison, each side a figure of its own
    compared = plan_question("Average distance of flights scheduled before noon versus at noon or later?", [timed])
    assert compared.sql.count('AVG(CASE WHEN "sched_dep_time"') == 2 and "side 2" in compared.explanation, compared


@pytest.mark.parametrize("question", ["Monthly flight counts", "Monthly flight count in 2013"])
def test_the_rows_noun_before_count_names_the_rows_counted_not_a_column(data: duckdb.DuckDBPyConnection,
                                                                        question: str) -> None:
    made = plan(question)  # "flight" is also the flight-number column: no average of flight numbers
    assert "AVG" not in made.sql and [row[1] for row in data.execute(made.sql).fetchall()][:4] == [1, 3, 1, 1]


# rows: 2013-01-01, 2013-07-03, 2013-07-05, 2013-07-06, 2013-08-31, 2013-12-25, 2014-01-01
@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights were there in the third quarter of 2013?", 4),
    ("How many flights in Q3 2013?", 4),
    ("How many fourth-quarter flights were there?", 1),  # of every year: December 2013
    ("How many flights in the first quarter?", 2),  # January 2013 and January 2014
    ("How many flights in the second half of 2013?", 5),
    ("How many flights in the first half of the year?", 2),
    ("How many flights were there from July to August?", 4),
    ("How many flights between June and August?", 4),
    ("How many flights in June-August 2013?", 4),
    ("How many flights from December to January?", 3),  # a range into the next year
    ("How many flights in July, August 2013?", 4),  # two months listed, in that year
])
def test_parts_of_a_year_and_ranges_of_months(data: duckdb.DuckDBPyConnection, question: str,
                                              expected: int) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert data.execute(made.sql).fetchall() == [(expected,)]


@pytest.mark.parametrize("question", [
    "How many flights in the first half of 2013 versus the second half?",
    "Compare the number of flights in the first quarter with the third quarter.",
])
def test_parts_of_a_year_set_against_each_other_are_each_a_figure(data: duckdb.DuckDBPyConnection,
                                                                   question: str) -> None:
    made = plan(question)
    assert len(data.execute(made.sql).fetchall()[0]) == 2 and "side 2" in made.explanation, made


@pytest.mark.parametrize("question", [
    "How many flights in July and in August 2013?",  # each month said as a condition of its own
])
def test_periods_no_row_can_fall_in_at_once_are_declined_not_intersected(question: str) -> None:
    with pytest.raises(NoPlan, match="exclude each other"):
        plan(question)


def test_a_year_has_no_fifth_quarter() -> None:
    with pytest.raises(NoPlan):
        plan("How many flights in the fifth quarter of 2013?")


@pytest.mark.parametrize("question", ["How many flights in late 2013?",
                                      "How many flights in early July 2013?",
                                      "average departure delay in mid-2013"])
def test_a_loose_part_of_a_period_is_declined_not_read_as_the_whole(question: str) -> None:
    with pytest.raises(NoPlan, match="no dates bound"):
        plan(question)


def test_late_after_a_verb_is_still_lateness_in_a_period(data: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("How many flights arrived late in 2013?", [FLIGHTS],
                         [Term("late arrival", "A flight that arrived late: arr_delay > 15", ("late",))])
    assert data.execute(made.sql).fetchall() == [(4,)]


# delays: dep 90 -5 130 0 20 61 5; arr 80 -30 125 -2 70 50 3
@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights got in more than an hour behind schedule?", 3),  # "got in" is arriving
    ("How many flights took off more than an hour late?", 3),  # "took off" is leaving
    ("How many flights pushed back more than two hours late?", 1),
    ("How many flights arrived ahead of schedule?", 2),  # no amount: below zero
    ("How many flights arrived behind schedule?", 5),
    # said twice, one condition
    ("How many flights arrived ahead of schedule (a negative arrival delay)?", 2),
])
def test_lateness_with_two_word_verbs_and_without_an_amount(data: duckdb.DuckDBPyConnection, question: str,
                                                             expected: int) -> None:
    # with scheduled times beside the delays, "schedule" alone could be either end's
    scheduled = TableInfo("flights", (*FLIGHTS.columns, ColumnInfo("sched_dep_time", "INTEGER"),
                                      ColumnInfo("sched_arr_time", "INTEGER")),
                          description=FLIGHTS.description)
    made = plan_question(question, [scheduled])
    assert not made.unaccounted
    assert data.execute(made.sql).fetchall() == [(expected,)]


def test_a_day_known_by_name_with_its_year_is_read_in_any_capitals(data: duckdb.DuckDBPyConnection) -> None:
    assert data.execute(plan("how many flights were there on christmas day 2013?").sql).fetchall() == [(1,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights were delayed leaving by more than an hour?", 3),
    ("How many flights were delayed by more than 2 hours leaving?", 1),
    ("Was any departure delayed by more than 2 hours?", True),
    ("How many flights were delayed by over 60 minutes on arrival?", 3),
])
def test_delayed_by_an_amount_is_the_delay_of_the_end_the_verb_names(data: duckdb.DuckDBPyConnection,
                                                                    question: str, expected: int | bool) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(expected,)], made.sql


def test_delayed_by_an_amount_without_the_end_is_declined() -> None:
    with pytest.raises(NoPlan):
        plan("How many flights were delayed by more than an hour?")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights were more than an hour late taking off?", 3),
    ("How many flights were more than an hour late getting in?", 3),
    ("How many flights were more than two hours late touching down?", 1),
])
def test_a_verb_of_two_words_after_the_lateness_names_its_end(data: duckdb.DuckDBPyConnection, question: str,
                                                               expected: int) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(expected,)], made.sql


@pytest.mark.parametrize("question", ["How many July flights were there?",
                                      "What was the total departure delay of July flights?"])
def test_a_month_said_before_the_rows_noun_is_that_month(data: duckdb.DuckDBPyConnection, question: str) -> None:
    # ("July" before "flights" had been looked for as a value, and the question declined)
    made = plan(question)
    assert not made.unaccounted
    assert data.execute(made.sql).fetchall() in ([(3,)], [(125,)])


@pytest.mark.parametrize(("question", "expected"), [
    ("Of the flights with a departure delay recorded, how many had a negative delay?", 1),
    ("Of the flights with an arrival delay recorded, how many had a negative delay?", 2),
])
def test_a_word_two_columns_share_said_after_one_of_them_is_that_one(data: duckdb.DuckDBPyConnection, question: str,
                                                                    expected: int) -> None:
    # ("delay" could be either delay: the question had been declined)
    made = plan(question)
    assert not made.unaccounted and data.execute(made.sql).fetchall() == [(expected,)], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    # (each day's greatest delay had been ranked, or the greatest alone answered, the columns asked unused)
    ("On what date did the single biggest departure delay happen? Include the flight number and the arrival delay.",
     {3, datetime.date(2013, 7, 5), 125, 130}),
    ("When did the single worst departure delay happen? Give the date, flight number and arrival delay.",
     {3, datetime.date(2013, 7, 5), 125, 130}),
    # asked only when it happened (the day's greatest delay alone had been answered: the date and the delay, not
    # the flight that had it)
    ("On what date did the single worst departure delay happen?", {3, datetime.date(2013, 7, 5), 130}),
    ("When did the single biggest departure delay happen?", {3, datetime.date(2013, 7, 5), 130}),
])
def test_the_single_greatest_of_a_column_is_that_row(data: duckdb.DuckDBPyConnection, question: str,
                                                     expected: set[object]) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    rows = data.execute(made.sql).fetchall()
    assert len(rows) == 1 and expected <= set(rows[0]), made.sql


def test_a_stressed_superlative_keeps_the_word_that_stressed_it() -> None:
    # ("single" is dropped before reading, yet says the answer is one row's: the superlative carries it)
    kept = without_intensifiers(tokenize("the single worst delay, the very best day, which single day, "
                                         "the busiest single day"))
    assert [t.norm for t in kept] == ["the", "worst", "delay", "the", "best", "day", "which", "day", "the",
                                      "busiest", "day"]
    assert [t.stressed_by for t in kept if t.stressed_by] == ["single", "very", "single"]
    # "away" after a word of distance repeats it; elsewhere it stays a word to read
    assert [t.norm for t in without_intensifiers(tokenize("the farthest away, far away, away from"))] == [
        "the", "farthest", "far", "away", "from"]


@pytest.mark.parametrize(("question", "expected"), [
    # a word right before a whole day bounds the days (each had been read as that day alone, the word dropped)
    ("How many flights flew after 2013-07-05?", 4),
    ("How many flights flew before 5 July 2013?", 2),
    ("How many flights flew on or before July 5, 2013?", 3),
    ("How many flights flew on or after 2013-08-31?", 3),
    ("How many flights flew since 25 Dec 2013?", 2),
    ("How many flights flew between 2013-07-03 and 2013-07-06?", 3),
    ("How many flights flew from July 3, 2013 to July 5, 2013?", 2),
    ("How many flights flew on 2013-07-05?", 1),
])
def test_a_word_before_a_whole_day_bounds_the_days(data: duckdb.DuckDBPyConnection, question: str,
                                                  expected: int) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    # a day written with slashes, month first unless the first number cannot be a month (had been declined)
    ("How many flights flew on 7/5/2013?", 1),
    ("How many flights flew on 31/08/2013?", 1),
    ("How many flights flew after 12/25/2013?", 1),
])
def test_a_day_written_with_slashes_is_that_day(data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]


def test_a_day_with_slashes_that_is_no_date_is_refused() -> None:
    with pytest.raises(NoPlan, match="not a date"):
        plan("How many flights flew on 13/13/2013?")


def test_digits_run_into_a_slashed_day_are_no_day() -> None:
    # ("112/25/2013" had been read as 12/25/2013, its first digit left over)
    assert [t.kind for t in tokenize("112/25/2013")] == ["number", "number", "number"]
    assert [t.norm for t in tokenize("12/25/2013")] == ["2013-12-25"]


@pytest.mark.parametrize("question", ["List the two busiest months.", "Which were the two busiest months?",
                                      "the two busiest months by flight count"])
def test_periods_ranked_with_no_other_word_are_of_the_one_table_with_dates(data: duckdb.DuckDBPyConnection,
                                                                         question: str) -> None:
    """"the ten busiest days" names no table: the periods are of the rows of the one table that has dates
    (planes have none), and a number spelled out ranks as one written in digits."""
    planes = TableInfo("planes", (ColumnInfo("tailnum", "STRING"), ColumnInfo("seats", "INTEGER")),
                       description="One row per plane.")
    made = plan_question(question, [FLIGHTS, planes])
    rows = data.execute(made.sql).fetchall()
    # July 2013 has three flights; four months tie for second with one each, all kept
    assert made.tables == ("flights",) and (rows[0][0].month, rows[0][-1]) == (7, 3) and len(rows) == 5, made.sql


def test_a_measure_a_ranking_of_rows_leaves_unused_is_said() -> None:
    # (the earliest dates were ranked, the delay said in parentheses passed over: a confidently wrong answer)
    made = plan("Which flight was the earliest (lowest departure delay)?")
    assert made.unaccounted == ("dep_delay",), made
