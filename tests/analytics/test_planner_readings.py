"""Readings of the planner on small tables: ranked groups by their extreme, a date key cut into a bucket,
true/false columns named with their value."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.planner.catalog import _Catalog
from convener.analytics.planner.scope import joins_to
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database
from convener.analytics.wording import tokenize

NESTS = TableInfo("nests", (ColumnInfo("nest_id", "STRING"), ColumnInfo("island", "STRING", samples=("North", "South")),
                            ColumnInfo("laid_date", "DATE"), ColumnInfo("eggs", "INTEGER"),
                            ColumnInfo("hatched", "BOOLEAN")),
                  description="One row per nest.")


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE nests (nest_id VARCHAR, island VARCHAR, laid_date DATE, eggs INTEGER, "
                        "hatched BOOLEAN)",
                        "INSERT INTO nests VALUES ('a', 'North', '2020-03-01', 2, true), "
                        "('b', 'North', '2021-06-01', 4, false), ('c', 'South', '2020-01-15', 3, false), "
                        "('d', 'South', '2020-02-01', 1, true)")


def ask(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    return data.execute(plan_question(question, [NESTS]).sql).fetchall()


def test_the_group_ranked_first_by_an_earliest_date_holds_the_earliest_row(data: duckdb.DuckDBPyConnection) -> None:
    assert [row[0] for row in ask(data, "On which island was the earliest laid date?")] == ["South"]


def test_a_date_key_named_with_a_bucket_word_is_cut_into_that_bucket(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(row[-1] for row in ask(data, "Average eggs for each laid year")) == [2.0, 4.0]


@pytest.mark.parametrize("question", ["How many nests were laid in each calendar month?",
                                      "Number of nests by calendar month of laid date"])
def test_a_calendar_month_is_a_month(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan_question(question, [NESTS])
    assert not made.unaccounted, made
    assert [row[-1] for row in data.execute(made.sql).fetchall()] == [1, 1, 1, 1], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("How many nests had hatched false?", 2), ("How many nests whose hatched is true?", 2),
    ("How many South nests had hatched false?", 1),
])
def test_a_true_false_column_named_with_its_value(data: duckdb.DuckDBPyConnection, question: str,
                                                  expected: int) -> None:
    assert ask(data, question) == [(expected,)]


@pytest.mark.parametrize("question", ["Average eggs for nests with hatched true vs. false?",
                                      "average eggs, hatched true or false"])
def test_a_true_false_columns_two_values_set_against_each_other_are_its_groups(
        data: duckdb.DuckDBPyConnection, question: str) -> None:
    assert sorted(ask(data, question)) == [(False, 3.5), (True, 1.5)]


@pytest.mark.parametrize(("question", "expected"), [
    ("How many nests have hatched set to false?", [(2,)]),
    ("percentage of nests per island where hatched is false", [("North", 50.0), ("South", 50.0)]),
    ("How many nests were flagged as hatched?", [(2,)]),  # (the marking said with the condition)
    ("How many nests had hatched marked as false?", [(2,)]),
    # a failure to reach the condition denies it
    ("How many nests failed to reach hatched?", [(2,)]),
    ("How many North nests did not reach hatched?", [(1,)]),
])
def test_a_true_false_column_named_false_after_a_verb(data: duckdb.DuckDBPyConnection, question: str,
                                                     expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [NESTS])
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == expected


# --- Two relationships to one table: the question's words of direction pick the one joined ---------------

TRIPS = TableInfo("trips", (ColumnInfo("trip_id", "INTEGER"), ColumnInfo("start_station", "STRING",
                                                                          "Station the trip left from"),
                            ColumnInfo("end_station", "STRING", "Destination station of the trip"),
                            ColumnInfo("minutes", "INTEGER")),
                  description="One row per trip.")
STATIONS = TableInfo("stations", (ColumnInfo("code", "STRING"), ColumnInfo("name", "STRING"),
                                  ColumnInfo("elevation_feet", "INTEGER", "Elevation in feet")),
                     description="One row per station.")
BOTH_ENDS = (Relationship("trips", ("start_station",), "stations", ("code",)),
             Relationship("trips", ("end_station",), "stations", ("code",)))
STATION_NAMES = {"code": ["HI", "LO"], "name": ["Hill Top", "Low Park"],
                 "start_station": ["HI", "LO"], "end_station": ["HI", "LO"]}


@pytest.fixture(scope="module")
def trips() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE trips (trip_id INTEGER, start_station VARCHAR, end_station VARCHAR, "
                        "minutes INTEGER)",
                        "CREATE TABLE stations (code VARCHAR, name VARCHAR, elevation_feet INTEGER)",
                        "INSERT INTO trips VALUES (1, 'HI', 'LO', 10), (2, 'HI', 'LO', 20), (3, 'LO', 'HI', 30)",
                        "INSERT INTO stations VALUES ('HI', 'Hill Top', 900), ('LO', 'Low Park', 10)")


def plan_trip(question: str) -> Plan:
    return plan_question(question, [TRIPS, STATIONS], values_of=lambda _, column: STATION_NAMES.get(column, []),
                         relationships=BOTH_ENDS)


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trips went to Low Park?", 2), ("How many trips left from Low Park?", 1),
    ("How many trips arrived at stations above 500 feet?", 1),
    ("How many trips whose destination station is Hill Top?", 1),
])
def test_words_of_direction_pick_the_relationship(trips: duckdb.DuckDBPyConnection, question: str,
                                                 expected: int) -> None:
    made = plan_trip(question)
    assert trips.execute(made.sql).fetchall() == [(expected,)], made.sql
    assert "joined by trips." in made.explanation  # which end was taken is said


def test_without_a_word_of_direction_neither_relationship_is_guessed() -> None:
    with pytest.raises(NoPlan):
        plan_trip("How many trips involve Hill Top?")


def test_a_key_named_by_its_end_stays_the_key(trips: duckdb.DuckDBPyConnection) -> None:
    made = plan_trip("Average minutes by start station")
    assert sorted(trips.execute(made.sql).fetchall()) == [("HI", 15.0), ("LO", 30.0)]


def test_a_tied_ranking_over_a_joined_column_joins_in_its_cut_off_too(trips: duckdb.DuckDBPyConnection) -> None:
    made = plan_trip("What is the name of the station that received the most trips?")
    assert trips.execute(made.sql).fetchall() == [("Low Park", 2)], made.sql


def test_a_word_inside_a_value_is_not_a_ranking(trips: duckdb.DuckDBPyConnection) -> None:
    made = plan_trip("How many trips left from Hill Top?")  # "Top" is part of the station's name
    assert trips.execute(made.sql).fetchall() == [(2,)], made.sql


# --- Shares: per group of all rows, a condition's rate, the share word before its verb ----------------------

CALLS = TableInfo("calls", (ColumnInfo("call_id", "INTEGER"), ColumnInfo("team", "STRING", samples=("Red", "Blue")),
                            ColumnInfo("resolved", "BOOLEAN")),
                  description="One row per call.")


@pytest.fixture(scope="module")
def calls() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE calls (call_id INTEGER, team VARCHAR, resolved BOOLEAN)",
                        "INSERT INTO calls VALUES (1, 'Red', true), (2, 'Red', true), (3, 'Red', false), "
                        "(4, 'Blue', false)")


@pytest.mark.parametrize(("question", "expected"), [
    ("Each team's share of all calls, as a percentage", [("Blue", 25.0), ("Red", 75.0)]),
    ("percentage of calls in each team", [("Blue", 25.0), ("Red", 75.0)]),
    ("Resolved rate per team", [("Blue", 0.0), ("Red", 200 / 3)]),
    ("Resolved percentage for each team", [("Blue", 0.0), ("Red", 200 / 3)]),
    ("resolved share by team", [("Blue", 0.0), ("Red", 200 / 3)]),
    ("Resolved rate of Red, as a percentage", [(200 / 3,)]),
    ("Of the Red calls, what percentage were resolved?", [(200 / 3,)]),
    ("Of the Red calls, how many percent were resolved?", [(200 / 3,)]),
    ("What proportion of calls are resolved (percent)?", [(50.0,)]),
])
def test_shares(calls: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [CALLS])
    got = [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in calls.execute(made.sql).fetchall()]
    assert sorted(got) == [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in expected], made.sql
    assert "percentage" in made.explanation


# --- Comparisons with units, a measure among rivals that are no numbers, extremes per group ----------------

RUNS = TableInfo("runs", (ColumnInfo("run_id", "INTEGER"), ColumnInfo("runner", "STRING", samples=("Ann", "Bo")),
                          ColumnInfo("run_date", "DATE"),
                          ColumnInfo("duration", "INTEGER", "Duration of the run, in minutes"),
                          ColumnInfo("distance", "INTEGER", "Distance run, in miles"),
                          ColumnInfo("shoes", "INTEGER", "Number of shoes worn out"),
                          ColumnInfo("shoe", "STRING", "Brand of shoe")),
                 description="One row per run.")


@pytest.fixture(scope="module")
def runs() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE runs (run_id INTEGER, runner VARCHAR, run_date DATE, duration INTEGER, "
                        "distance INTEGER, shoes INTEGER, shoe VARCHAR)",
                        "INSERT INTO runs VALUES (1, 'Ann', '2020-01-01', 30, 3, 1, 'X'), "
                        "(2, 'Ann', '2020-02-01', 150, 2100, 2, 'Y'), (3, 'Bo', '2020-03-01', 90, 10, 3, 'X')")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many runs were longer than 2000 miles?", [(1,)]),  # a quantity, not the year 2000
    ("Count runs whose duration exceeded 60 minutes", [(2,)]),
    ("How many runs had a duration over 2 hours?", [(1,)]),  # in the column's minutes
    ("Average number of shoes per run", [(2.0,)]),
    ("Longest duration for each runner", [("Ann", 150), ("Bo", 90)]),
])
def test_runs(runs: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [RUNS])
    assert sorted(runs.execute(made.sql).fetchall()) == expected, made.sql


def test_a_unit_that_cannot_be_converted_is_refused() -> None:
    with pytest.raises(NoPlan, match="in miles"):
        plan_question("How many runs had a distance over 5 metres?", [RUNS])
    # kilometres are miles by a factor of their definition
    assert '"distance" > 3.10' in plan_question("How many runs had a distance over 5 km?", [RUNS]).sql


# --- Conditions on each group's rows; the values a which-question lists ------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Which runners have more than 1 run?", [("Ann", 2)]),
    ("Average duration per runner among runners with at least 2 runs", [("Ann", 90.0)]),
    ("Which runners had runs longer than 50 minutes?", [("Ann",), ("Bo",)]),
    ("Which runners had runs with shoe Y?", [("Ann",)]),
])
def test_group_conditions_and_listed_values(runs: duckdb.DuckDBPyConnection, question: str,
                                            expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [RUNS], values_of=lambda _, column: {"shoe": ["X", "Y"]}.get(column, []))
    assert sorted(runs.execute(made.sql).fetchall()) == expected, made.sql
    assert not made.unaccounted


def test_a_condition_on_rows_per_group_without_groups_is_refused() -> None:
    with pytest.raises(NoPlan, match="groups"):
        plan_question("How many runs with at least 2 runs?", [RUNS])


# --- Clock times on HHMM columns ----------------------------------------------------------------------------

TRAINS = TableInfo("trains", (ColumnInfo("train_id", "INTEGER"),
                              ColumnInfo("sched_dep", "INTEGER", "Scheduled departure time, as HHMM"),
                              ColumnInfo("dep", "INTEGER", "Actual departure time, as HHMM"),
                              ColumnInfo("sched_arr", "INTEGER", "Scheduled arrival time, as HHMM")),
                   description="One row per train.")


@pytest.fixture(scope="module")
def trains() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE trains (train_id INTEGER, sched_dep INTEGER, dep INTEGER, sched_arr INTEGER)",
                        "INSERT INTO trains VALUES (1, 545, 610, 700), (2, 1230, 1229, 1400), (3, 2215, 2300, 2359)")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many trains were scheduled to leave before 6 am?", 1),
    ("How many trains departed after 10:30 pm?", 1),  # what happened: the actual time
    ("How many trains were scheduled to depart after noon?", 2),
    ("How many trains were scheduled to arrive between 6 and 9 am?", 1),
    ("How many trains were scheduled to leave before 6 in the morning?", 1),
    ("How many trains departed after 10 in the evening?", 1),
    ("How many trains departed after 10 at night?", 1),
])
def test_clock_times(trains: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    made = plan_question(question, [TRAINS])
    assert trains.execute(made.sql).fetchall() == [(expected,)], made.sql
    assert not made.unaccounted


DATED_TRAINS = TableInfo("trains", (*TRAINS.columns, ColumnInfo("run_date", "DATE", "Date of the run")),
                         description="One row per train.")


@pytest.mark.parametrize(("question", "expected"), [
    ("Which train was scheduled to leave first on May 2, 2024? Give its id and scheduled departure.", [(3, 545)]),
    ("Which train departed last on May 1, 2024?", [(2,)]),
    ("Which train was scheduled to leave latest in the day on May 2, 2024?", [(4,)]),
    ("Which train departed earliest on May 1, 2024?", [(1,)]),
])
def test_first_or_last_of_one_day_is_by_the_time_of_day(question: str, expected: list[tuple[object, ...]]) -> None:
    connection = duckdb.connect()
    try:
        connection.execute("CREATE TABLE trains (train_id INTEGER, sched_dep INTEGER, dep INTEGER, sched_arr INTEGER, "
                           "run_date DATE)")
        connection.execute("INSERT INTO trains VALUES (1, 900, 905, 1000, '2024-05-01'), "
                           "(2, 1230, 1300, 1400, '2024-05-01'), (3, 545, 700, 800, '2024-05-02'), "
                           "(4, 2215, 2300, 2359, '2024-05-02')")
        made = plan_question(question, [DATED_TRAINS])
        assert not made.unaccounted, made
        assert [row[:len(expected[0])] for row in connection.execute(made.sql).fetchall()] == expected, made.sql
    finally:
        connection.close()


def test_a_clock_time_of_no_telling_which_column_is_refused() -> None:
    with pytest.raises(NoPlan, match="time of day"):
        plan_question("How many trains at 6 am?", [TRAINS])


# --- Keys named the table's way, compound column names, rankings of keys without empty ones ----------------

GEAR = TableInfo("gear", (ColumnInfo("tagnum", "STRING"), ColumnInfo("kind", "STRING"), ColumnInfo("motor", "STRING"),
                          ColumnInfo("motors", "INTEGER", "Number of motors")),
                 description="One row per boat (a vessel), by tag number.")


@pytest.fixture(scope="module")
def gear() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE gear (tagnum VARCHAR, kind VARCHAR, motor VARCHAR, motors INTEGER)",
                        "INSERT INTO gear VALUES ('A1', 'sail', 'none', 0), ('A1', 'sail', 'none', 0), "
                        "(NULL, 'sail', 'none', 0), (NULL, 'sail', 'none', 0), (NULL, 'row', 'none', 0), "
                        "('B2', 'jet', 'turbine', 2), ('C3', 'jet', 'turbine', 1)")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many boats are there of each vessel kind?", [("jet", 2), ("row", 1), ("sail", 4)]),
    ("How many boats of each kind of motor are there?", [("none", 5), ("turbine", 2)]),
    ("The one tag number with the most boats", [("A1", 2)]),  # the empty tag number ranks no group
])
def test_keys(gear: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [GEAR])
    assert sorted(gear.execute(made.sql).fetchall()) == expected, made.sql
    assert not made.unaccounted


def test_a_key_that_could_be_two_columns_of_joined_tables_is_settled_by_the_table_named() -> None:
    airlines = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING")),
                         description="One row per carrier.")
    both = (*BOTH_ENDS, Relationship("trips", ("start_station",), "airlines", ("carrier",)))
    made = plan_question("What is the name of the station that received the most trips?", [TRIPS],
                         related=[STATIONS, airlines], relationships=both)
    assert '"stations"."name"' in made.sql and "airlines" not in made.sql, made.sql


# --- A date ranked per group, "the N <rows> with the most …", a glossary term said side by side ------------


def test_a_date_ranked_per_group_is_its_latest_not_its_total(data: duckdb.DuckDBPyConnection) -> None:
    assert [row[0] for row in ask(data, "Which island had the most recent laid date?")] == ["North"]


def test_the_n_rows_with_the_most_of_a_column(runs: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("The 2 runs with the most distance", [RUNS])
    assert [row[-1] for row in runs.execute(made.sql).fetchall()] == [2100, 10], made.sql


def test_a_glossary_term_said_side_by_side_beats_its_label_said_apart() -> None:
    flights = TableInfo("flights", (ColumnInfo("flight_id", "INTEGER"), ColumnInfo("arr_delay", "INTEGER"),
                                    ColumnInfo("arr_time", "INTEGER")), description="One row per flight.")
    late = Term("late arrival", "A flight that arrived more than 15 minutes late: arr_delay > 15.",
                ("late flights",))
    made = plan_question("What percentage of flights were late arrivals?", [flights], [late])
    assert "arr_delay > 15" in made.sql and not made.unaccounted, made.sql


def test_a_unit_one_column_is_in_names_that_column(runs: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Sum of miles per runner", [RUNS])
    assert sorted(runs.execute(made.sql).fetchall()) == [("Ann", 2103), ("Bo", 10)], made.sql
    with pytest.raises(NoPlan):  # no column is in hours: "hours" names nothing
        plan_question("Sum of hours per runner", [RUNS])


def test_an_abbreviation_of_a_joined_column_does_not_pick_a_relationship() -> None:
    lined = TableInfo("stations", (*STATIONS.columns, ColumnInfo("lon", "FLOAT", "Longitude")),
                      description="One row per station.")
    for question, joined in (("the trip that left with the longest minutes", False),  # "longest" is no lon
                             ("the trips that left from Hill Top", True)):
        tokens = tokenize(question)
        catalog = _Catalog([TRIPS, lined], (), lambda _, column: STATION_NAMES.get(column, []))
        pairs = joins_to([TRIPS, lined], BOTH_ENDS, question=(tokens, catalog.candidates(tokens, set())))
        assert (("trips", "stations") in pairs) == joined, question


def test_a_plural_word_is_not_the_first_word_of_a_name() -> None:
    makers = TableInfo("makers", (ColumnInfo("maker", "STRING", samples=("PAIR MIKE E", "BOEING")),
                                  ColumnInfo("units", "INTEGER")), description="One row per maker.")
    made = plan_question("How many units per maker for the two pairs?", [makers])
    assert "PAIR MIKE E" not in made.sql or made.unaccounted, made.sql
    assert "PAIR MIKE E" in plan_question("Units of Pair makers", [makers]).sql  # written as the name writes it


def test_the_rows_of_a_table_reached_by_a_picked_relationship_ranked_are_its_key_values() -> None:
    rides = TableInfo("rides", (ColumnInfo("ride_id", "INTEGER"), ColumnInfo("src", "STRING", "Where the ride left from"),
                                ColumnInfo("dst", "STRING", "Destination of the ride")), description="One row per ride.")
    stops = TableInfo("stops", (ColumnInfo("code", "STRING"), ColumnInfo("label", "STRING")),
                      description="One row per stop.")
    ends = (Relationship("rides", ("src",), "stops", ("code",)), Relationship("rides", ("dst",), "stops", ("code",)))
    connection = duckdb.connect()
    connection.execute("CREATE TABLE rides AS SELECT * FROM (VALUES (1, 'A', 'B'), (2, 'A', 'B'), (3, 'B', 'A')) "
                       "AS t(ride_id, src, dst)")
    made = plan_question("Which stop received the most rides?", [rides], related=[stops], relationships=ends)
    assert connection.execute(made.sql).fetchall() == [("B", 2)], made.sql
    connection.close()


def test_the_columns_listed_after_their_are_each_rows(runs: duckdb.DuckDBPyConnection) -> None:
    made = plan_question("Runs longer than 1 mile: their ids and runners", [RUNS])
    assert sorted(runs.execute(made.sql).fetchall()) == [(1, "Ann"), (2, "Ann"), (3, "Bo")], made.sql
    assert "DISTINCT" not in made.sql and not made.unaccounted


TIMES = TableInfo("flights", (ColumnInfo("carrier", "STRING", samples=("DL", "UA")), ColumnInfo("dep_time", "INTEGER"),
                              ColumnInfo("arr_time", "INTEGER"), ColumnInfo("air_time", "INTEGER")),
                  description="One row per flight.")


def test_a_word_several_columns_share_names_the_one_whose_other_words_are_said() -> None:
    sql = plan_question("What was the longest time any flight spent in the air?", [TIMES]).sql
    assert 'MAX("air_time")' in sql
    with pytest.raises(NoPlan, match="could be"):
        plan_question("What was the longest time of any flight?", [TIMES])  # nothing says which


def test_a_share_owned_by_a_value_counts_that_value() -> None:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE flights (carrier VARCHAR, dep_time INTEGER, arr_time INTEGER, air_time INTEGER)")
    connection.execute("INSERT INTO flights VALUES ('DL', 1, 2, 3), ('UA', 1, 2, 3), ('UA', 1, 2, 3), ('UA', 1, 2, 3)")
    assert connection.execute(plan_question("DL's share of all flights?", [TIMES]).sql).fetchall() == [(25.0,)]


DELAYS = TableInfo("flights", (
    ColumnInfo("carrier", "STRING", samples=("DL", "UA")), ColumnInfo("flight_date", "DATE"),
    ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, local, as HHMM"),
    ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes (negative when early)"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes (negative when early)")),
    description="One row per flight.")


def delays() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE flights (carrier VARCHAR, flight_date DATE, sched_dep_time INTEGER, "
                       "dep_delay INTEGER, arr_delay INTEGER)")
    connection.execute("INSERT INTO flights VALUES ('DL', '2013-01-01', 900, 10, -5), ('DL', '2013-01-01', 700, 0, -1), "
                       "('UA', '2013-01-02', 800, 30, 20), ('UA', '2013-01-03', 600, -3, 4)")
    return connection


@pytest.mark.parametrize(("question", "expected"), [
    ("On average, how late were arrivals?", [(4.5,)]),
    ("How late were UA departures on average?", [(13.5,)]),
    ("how late were departures, per carrier", [("DL", 5.0), ("UA", 13.5)]),
])
def test_how_late_is_the_delay_of_the_end_said(question: str, expected: list[tuple[object, ...]]) -> None:
    # not the glossary's "late" (a condition): how much, at the end of the trip the verb or noun names
    made = plan_question(question, [DELAYS], LATE)
    assert not made.unaccounted, made
    assert delays().execute(made.sql).fetchall() == expected, made.sql


@pytest.mark.parametrize("question", ["Average departure delay by scheduled departure hour (0-23)",
                                      "Average departure delay by scheduled departure hour (0 to 23)"])
def test_a_range_in_parentheses_after_a_period_is_the_values_it_takes(question: str) -> None:
    made = plan_question(question, [DELAYS])
    assert not made.unaccounted, made
    assert delays().execute(made.sql).fetchall() == [(6, -3.0), (7, 0.0), (8, 30.0), (9, 10.0)], made.sql


def test_a_shared_word_is_the_column_whose_description_begins_with_the_other_words_said() -> None:
    # "delayed": dep_delay or arr_delay; "departures" says which ("Departure delay in minutes")
    made = plan_question("Average delay of DL departures", [DELAYS])
    assert delays().execute(made.sql).fetchall() == [(5.0,)], made.sql


def test_an_average_said_early_of_the_rows_is_whether_the_average_delay_is_below_zero() -> None:
    made = plan_question("Did DL flights arrive early on average?", [DELAYS])
    assert delays().execute(made.sql).fetchall() == [(True,)], made.sql
    made = plan_question("Did UA flights arrive early on average?", [DELAYS])
    assert delays().execute(made.sql).fetchall() == [(False,)], made.sql


def test_the_most_of_the_rows_events_counts_the_rows() -> None:
    made = plan_question("Which carrier had the most departures?", [DELAYS])
    assert "COUNT(*)" in made.sql and not made.unaccounted, made
    assert sorted(delays().execute(made.sql).fetchall()) == [("DL", 2), ("UA", 2)], made.sql  # tied


@pytest.mark.parametrize("question", ["Which 2 days had the most flights, by number of departures?",
                                      "Which 2 days were busiest for flights by number of departures?"])
def test_a_ranking_by_the_number_of_the_rows_events_counts_the_rows(question: str) -> None:
    # "departures" abbreviates several columns alike: the rows themselves, counted (not a departure time)
    made = plan_question(question, [DELAYS])
    assert "COUNT(*)" in made.sql and "sched_dep_time" not in made.sql, made.sql
    assert [row[1] for row in delays().execute(made.sql).fetchall()] == [2, 1, 1], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("Which flight arrived furthest ahead of schedule?", -5),
    ("Which flight left the most behind schedule?", 30),
    ("On which day did a flight arrive farthest ahead of schedule?", -5),
])
def test_a_superlative_of_lateness_ranks_the_delay_of_the_end_its_verb_names(question: str, expected: int) -> None:
    # not a distance ("furthest") or a count ("most"): the delay itself, earliest (lowest) or latest first
    made = plan_question(question, [DELAYS])
    assert not made.unaccounted, made
    rows = delays().execute(made.sql).fetchall()
    assert len(rows) == 1 and expected in rows[0], made.sql


def test_the_date_of_the_one_row_a_superlative_picks_is_that_rows_not_a_ranking_of_dates() -> None:
    # "the flight with the biggest departure delay": one flight, shown with its date (not each date's maximum)
    made = plan_question("On what date did the flight with the biggest departure delay leave?", [DELAYS])
    assert "GROUP BY" not in made.sql and '"carrier"' in made.sql and not made.unaccounted, made.sql
    rows = delays().execute(made.sql).fetchall()
    assert len(rows) == 1 and {datetime.date(2013, 1, 2), "UA", 30} <= set(rows[0]), made.sql


def test_the_first_rows_said_in_the_plural_are_every_row_of_the_first_date() -> None:
    # two flights on the first date: both ("which flights were they"), not one of them
    made = plan_question("First flights of the year - which date, and which flights were they?", [DELAYS])
    rows = delays().execute(made.sql).fetchall()
    assert len(rows) == 2 and all(datetime.date(2013, 1, 1) in row for row in rows), made.sql


def test_a_count_of_rows_said_with_a_condition_no_number_of_rows_answers_is_declined() -> None:
    with pytest.raises(NoPlan, match="says of the flights counted"):
        plan_question("How many departures were delayed?", [DELAYS])


def test_a_ranking_of_rows_that_leaves_a_named_column_unshown_says_so() -> None:
    made = plan_question("Which was the very first flight, by date and scheduled departure time? Show the carrier "
                         "and the scheduled time.", [DELAYS])
    assert made.unaccounted, made  # the tie-break by time is not read: said, not passed off


def test_an_adjective_of_measure_says_which_of_the_columns_a_shared_word_names() -> None:
    bills = TableInfo("penguins", (ColumnInfo("species", "STRING", samples=("Adelie", "Gentoo")),
                                   ColumnInfo("bill_length_mm", "FLOAT", "Length of the bill in millimetres"),
                                   ColumnInfo("bill_depth_mm", "FLOAT", "Depth of the bill in millimetres")),
                      description="One row per penguin.")
    made = plan_question("Is the average Adelie bill longer than the average Gentoo bill?", [bills])
    assert "bill_length_mm" in made.sql and "bill_depth_mm" not in made.sql, made.sql


LATE = (Term("late arrival", "A flight that arrived more than 15 minutes late, that is flights whose arr_delay > 15."),
        Term("cancellation", "A flight that never departed, that is flights whose dep_delay is null."))


@pytest.mark.parametrize(("question", "expected"), [
    ("When was the first late arrival of the year?", "2013-01-02"),
    ("On what date did the last late arrival from UA happen?", "2013-01-02"),
    ("First date when a DL flight arrived early?", "2013-01-01"),
    ("last day of the year with a UA flight", "2013-01-03"),  # the date itself, not its flights
])
def test_the_first_or_last_of_rows_a_condition_names_is_their_earliest_or_latest_date(
        question: str, expected: str) -> None:
    made = plan_question(question, [DELAYS], LATE)
    assert [str(row[0]) for row in delays().execute(made.sql).fetchall()] == [expected], made.sql


@pytest.mark.parametrize(("question", "column"), [
    ("Flights that departed over 5 minutes late: carrier and the delay.", "dep_delay"),
    ("Flights that arrived over 5 minutes late: carrier and the delay.", "arr_delay"),
    ("The 2 worst arrival delays: date, carrier and delay", "arr_delay"),
])
def test_a_shown_column_said_by_a_shared_word_is_the_one_the_question_names_elsewhere(question: str,
                                                                                     column: str) -> None:
    made = plan_question(question, [DELAYS])
    other = {"dep_delay": "arr_delay", "arr_delay": "dep_delay"}[column]
    assert f'"{column}"' in made.sql.split("FROM")[0] and other not in made.sql, made.sql


def test_a_shown_column_said_by_a_shared_word_nothing_else_names_is_refused() -> None:
    with pytest.raises(NoPlan, match="say which"):
        plan_question("DL flights: carrier and the delay.", [DELAYS])


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights did not arrive early?", 2), ("How many flights didn't leave on time or early?", 2),
])
def test_a_negated_lateness_is_its_opposite(question: str, expected: int) -> None:
    assert delays().execute(plan_question(question, [DELAYS]).sql).fetchall() == [(expected,)]


def test_how_many_rows_and_an_average_per_group_computes_both() -> None:
    made = plan_question("For each carrier, how many flights were there and what was the average arrival delay?",
                         [DELAYS])
    assert sorted(delays().execute(made.sql).fetchall()) == [("DL", 2, -3.0), ("UA", 2, 12.0)], made.sql


def test_how_early_in_a_list_of_columns_is_the_delay_compared() -> None:
    made = plan_question("Which flights left at least 3 minutes ahead of schedule? Carrier and how early.", [DELAYS])
    assert delays().execute(made.sql).fetchall() == [("UA", -3)], made.sql


def test_a_ranking_listed_after_which_rows_shows_the_columns_listed() -> None:
    made = plan_question("the 2 worst departure delays - which flights, carrier and delay", [DELAYS])
    assert "GROUP BY" not in made.sql and sorted(row[:2] for row in delays().execute(made.sql).fetchall()) == \
        [("DL", 10), ("UA", 30)], made.sql


def test_a_number_of_rows_with_an_open_bound_after_it_is_a_condition_on_each_group() -> None:
    made = plan_question("Considering only carriers with 3 or more flights, which carrier had the highest average "
                         "arrival delay?", [DELAYS])
    assert "HAVING COUNT(*) >= 3" in made.sql and not made.unaccounted, made
    made = plan_question("Average arrival delay by carrier, for carriers with 2 or more flights", [DELAYS])
    assert "HAVING COUNT(*) >= 2" in made.sql, made.sql
    made = plan_question("Average arrival delay by carrier, only counting carriers with 2+ flights", [DELAYS])
    assert "HAVING COUNT(*) >= 2" in made.sql and not made.unaccounted, made


@pytest.mark.parametrize(("question", "expected"), [
    ("For teams other than Blue, how many calls are there in each?", [("Red", 3)]),
    ("Calls of every team except Red: how many in each", [("Blue", 1)]),
])
def test_each_closing_the_question_is_each_value_a_negation_left(calls: duckdb.DuckDBPyConnection, question: str,
                                                                  expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [CALLS])
    assert not made.unaccounted, made
    assert calls.execute(made.sql).fetchall() == expected, made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("Add up the departure delay per carrier", [("DL", 10), ("UA", 27)]),
    ("sum up the arrival delay of UA flights", [(24,)]),
])
def test_add_up_is_a_total(question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [DELAYS])
    assert not made.unaccounted, made
    assert delays().execute(made.sql).fetchall() == expected, made.sql


def test_add_alone_is_no_total() -> None:
    with pytest.raises(NoPlan):
        plan_question("Add a flight of DL", [DELAYS])


@pytest.mark.parametrize("question", ["Is the average departure delay worse for DL or for UA?",
                                      "DL vs UA: which one has the lower mean departure delay?",
                                      "DL or UA, which has the higher average departure delay?"])
def test_a_comparative_between_groups_set_against_each_other_shows_each_figure(question: str) -> None:
    made = plan_question(question, [DELAYS])
    assert not made.unaccounted, made
    assert sorted(delays().execute(made.sql).fetchall()) == [("DL", 5.0), ("UA", 13.5)], made.sql


def test_a_comparative_with_than_stays_a_contrast() -> None:
    made = plan_question("Did DL have a higher average departure delay than UA?", [DELAYS])
    assert delays().execute(made.sql).fetchall()[0][0] is False, made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("For each carrier, on what date was its first flight?", [("DL", "2013-01-01"), ("UA", "2013-01-02")]),
    ("for each carrier, when was their last flight", [("DL", "2013-01-01"), ("UA", "2013-01-03")]),
    ("For each carrier, on what date was its first late arrival?", [("UA", "2013-01-02")]),
])
def test_its_first_or_last_for_each_group_is_each_groups_date(question: str, expected: list[tuple[str, str]]) -> None:
    made = plan_question(question, [DELAYS], LATE)
    assert not made.unaccounted, made
    assert [(row[0], str(row[1])) for row in delays().execute(made.sql).fetchall()] == expected, made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("What's the earliest scheduled departure time of any flight?", 600),
    ("latest scheduled departure time of a DL flight", 900),
])
def test_a_superlative_of_time_said_of_times_of_day_is_their_extreme(question: str, expected: int) -> None:
    # not the flights of the first or last date
    made = plan_question(question, [DELAYS])
    assert not made.unaccounted, made
    assert delays().execute(made.sql).fetchall() == [(expected,)], made.sql


def test_the_number_of_a_count_is_no_word_of_a_columns_description() -> None:
    planes = TableInfo("planes", (ColumnInfo("tailnum", "STRING"),
                                  ColumnInfo("engines", "INTEGER", "Number of engines"),
                                  ColumnInfo("engine", "STRING", "Type of engine")),
                       description="One row per plane.")
    connection = duckdb.connect()
    connection.execute("CREATE TABLE planes (tailnum VARCHAR, engines INTEGER, engine VARCHAR)")
    connection.execute("INSERT INTO planes VALUES ('N1', 2, 'Turbo-fan'), ('N2', 1, 'Reciprocating'), "
                       "('N3', 2, 'Turbo-jet')")
    made = plan_question("Number of planes whose engine isn't a Turbo-fan", [planes],
                         values_of=lambda _, column: ["Turbo-fan", "Reciprocating", "Turbo-jet"]
                         if column == "engine" else [])
    assert connection.execute(made.sql).fetchall() == [(2,)], made.sql


def test_a_listing_with_its_identifier_and_a_term_said_again_shows_those() -> None:
    # "with their id and the ratio": the columns asked (the term's figure among them), not every column
    pens = TableInfo("pens", (ColumnInfo("individual_id", "STRING", "Identifier of the penguin"),
                              ColumnInfo("species", "STRING", samples=("Adelie", "Gentoo")),
                              ColumnInfo("bill_length_mm", "FLOAT"), ColumnInfo("bill_depth_mm", "FLOAT")),
                     description="One row per penguin.")
    ratio = Term("bill ratio", "A penguin's bill length over its depth: bill_length_mm / bill_depth_mm")
    connection = duckdb.connect()
    connection.execute("CREATE TABLE pens (individual_id VARCHAR, species VARCHAR, bill_length_mm DOUBLE, "
                       "bill_depth_mm DOUBLE)")
    connection.execute("INSERT INTO pens VALUES ('A1', 'Adelie', 40, 20), ('G1', 'Gentoo', 48, 15), "
                       "('G2', 'Gentoo', 45, 18)")
    made = plan_question("List the Gentoos whose bill ratio is above 2.6, with their id and the ratio", [pens],
                         (ratio,), values_of=lambda _, column: ["Adelie", "Gentoo"] if column == "species" else [])
    assert not made.unaccounted, made
    assert connection.execute(made.sql).fetchall() == [("G1", 3.2)], made.sql


TIMED = TableInfo("flights", (*DELAYS.columns, ColumnInfo("arr_time", "INTEGER", "Actual arrival time, as HHMM"),
                              ColumnInfo("sched_arr_time", "INTEGER", "Scheduled arrival time, as HHMM")),
                  description="One row per flight.")
LATE_ARRIVAL = Term("late arrival", "A flight that arrived more than 15 minutes late: arr_delay > 15.",
                    ("late", "arrived late"))


@pytest.mark.parametrize("question", ["On average, how many minutes late (or early) did DL flights arrive?",
                                      "On average, how late did DL flights arrive?"])
def test_late_or_early_near_a_verb_of_one_end_is_that_ends_delay(question: str) -> None:
    # "arrive" could be the arrival time, scheduled or actual, or the delay: "late" says which (and no condition)
    connection = duckdb.connect()
    try:
        connection.execute("CREATE TABLE flights AS SELECT *, 0 AS arr_time, 0 AS sched_arr_time FROM "
                           "(VALUES ('DL', DATE '2013-01-01', 900, 10, -5), ('DL', DATE '2013-01-01', 700, 0, -1)) "
                           "AS t(carrier, flight_date, sched_dep_time, dep_delay, arr_delay)")
        made = plan_question(question, [TIMED], [LATE_ARRIVAL], values_of=lambda _, c: ["DL", "UA"] if c == "carrier"
                             else [])
        assert not made.unaccounted, made
        assert connection.execute(made.sql).fetchall() == [(-3.0,)], made.sql
    finally:
        connection.close()


def test_a_name_said_whole_outweighs_a_longer_phrase_that_takes_its_last_word() -> None:
    """"air time of departures": the column air_time, said whole, not "time of departures" (dep_time) with
    "air" left over; a phrase's stopwords make it no longer."""
    departures = TableInfo("departures", (ColumnInfo("origin", "STRING"), ColumnInfo("dep_time", "INTEGER"),
                                          ColumnInfo("air_time", "INTEGER")), description="One row per departure.")
    sql = plan_question("Compare the average air time of departures from JFK with those from EWR.", [departures],
                        values_of=lambda table, column: ["EWR", "JFK"] if column == "origin" else []).sql
    assert 'AVG("air_time")' in sql and "dep_time" not in sql


def test_a_word_the_description_says_before_a_name_said_in_other_words_is_part_of_it() -> None:
    """"actual departure time" of dep_time, described "Actual departure time": one mention, as "full name" of
    "Full name of the airline" was; "actual" had been left over, and the listed columns declined."""
    flights = TableInfo("flights", (ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("carrier", "STRING"),
                                    ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, as HHMM"),
                                    ColumnInfo("dep_time", "INTEGER", "Actual departure time, as HHMM")),
                        description="One row per flight.")
    made = plan_question("Show the flights: flight number, carrier and actual departure time.", [flights])
    assert made.sql == 'SELECT "flight", "carrier", "dep_time" FROM "flights" ORDER BY 1', made.sql
