"""Places named as people name them ("out of Newark", "to LaGuardia", "Boston (BOS)") and yes/no questions
("did any flight …"): read generally, and declined where the name says too little."""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Sequence

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.planner.described import what_it_is_spans
from convener.analytics.shapes import ColumnInfo, TableInfo
from convener.analytics.wording import phrase, tokenize
from tests.analytics.small_tables import database

FLIGHTS = TableInfo("flights", (ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("carrier", "STRING"),
                                ColumnInfo("flight_date", "DATE"),
                                ColumnInfo("origin", "STRING", "FAA code of the airport the flight left from"),
                                ColumnInfo("dest", "STRING", "FAA code of the destination airport"),
                                ColumnInfo("arr_delay", "INTEGER"), ColumnInfo("distance", "INTEGER",
                                                                               "Distance in miles")),
                    description="One row per flight.")
AIRPORTS = TableInfo("airports", (ColumnInfo("faa", "STRING"), ColumnInfo("name", "STRING"),
                                  ColumnInfo("tzone", "STRING")),
                     description="Airports: one row per airport.")
NAMES = {"EWR": "Newark Liberty Intl", "ZRP": "Newark Penn Station", "LGA": "La Guardia", "JFK": "John F Kennedy Intl",
         "MIA": "Miami Intl", "BOS": "General Edward Lawrence Logan Intl", "ZTY": "Boston Back Bay Station",
         "ATL": "Hartsfield Jackson Atlanta Intl", "AAA": "Adams County Airport", "BBB": "Baker County Airport",
         "CCC": "Clay County Airport", "DDD": "Dade County Airport"}
ROWS = [(1, "UA", "EWR", "MIA", 10, 1100), (2, "DL", "EWR", "ATL", -5, 750), (3, "DL", "LGA", "ATL", 20, 760),
        (4, "B6", "JFK", "BOS", 3, 190), (5, "DL", "JFK", "MIA", 30, 1090), (6, "AA", "LGA", "MIA", None, 1096)]
VALUES = {("flights", "carrier"): ["AA", "B6", "DL", "UA"], ("flights", "origin"): ["EWR", "JFK", "LGA"],
          ("flights", "dest"): ["ATL", "BOS", "MIA"], ("airports", "faa"): sorted(NAMES),
          ("airports", "name"): sorted(NAMES.values()), ("airports", "tzone"): ["America/Chicago"]}
RELATIONSHIPS = (Relationship("flights", ("origin",), "airports", ("faa",)),
                 Relationship("flights", ("dest",), "airports", ("faa",)))


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    rows = ", ".join(f"({n}, '{c}', DATE '2013-01-0{n}', '{o}', '{d}', {'NULL' if a is None else a}, {m})"
                     for n, c, o, d, a, m in ROWS)
    names = ", ".join(f"('{code}', '{name}', 'America/New_York')" for code, name in NAMES.items())
    yield from database("CREATE TABLE flights (flight INTEGER, carrier VARCHAR, flight_date DATE, origin VARCHAR, "
                        "dest VARCHAR, arr_delay INTEGER, distance INTEGER)", f"INSERT INTO flights VALUES {rows}",
                        "CREATE TABLE airports (faa VARCHAR, name VARCHAR, tzone VARCHAR)",
                        f"INSERT INTO airports VALUES {names}")


def plan(question: str) -> Plan:
    return plan_question(question, [FLIGHTS], values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=RELATIONSHIPS, related=[AIRPORTS])


def answer(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    return data.execute(plan(question).sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    ("What was the average arrival delay for flights out of Newark?", 2.5),
    ("How many flights went to LaGuardia?", 0), ("How many flights left from LaGuardia?", 2),
    ("How many flights went to Miami?", 3),
])
def test_a_place_named_inside_a_few_names_of_a_joined_table_is_those_names(
        data: duckdb.DuckDBPyConnection, question: str, expected: float) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize("question", ["How many flights went to County?", "How many flights went to Springfield?",
                                      "How many flights went to Chicago?"])
def test_a_name_inside_many_names_or_none_or_a_code_is_declined(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights went to Boston (BOS)?", 1),  # not 0: "Boston" is BOS's name here, not Back Bay Station
    ("how many flights didn't go to Atlanta (ATL)?", 4),
    ("Number of flights to Boston (BOS) versus Miami (MIA)", [("BOS", 1), ("MIA", 3)]),
    # a list of names glossed by a list of values, one for each
    ("How many flights did not go to Atlanta or Miami (ATL, MIA)?", 1),
    ("How many flights went to Boston, Atlanta or Miami (BOS, ATL, MIA)?", [("ATL", 2), ("BOS", 1), ("MIA", 3)]),
    # examples in parentheses show what the words before name; they ask for nothing of their own
    # "from" chose the join "Newark" is read through, and still says which rows "leave out" leaves out
    ("What's the average arrival delay if we leave out flights from Newark?", 53 / 3),
    ("Leaving Newark out, what was the average arrival delay?", 53 / 3),
    ("How many flights went out on each day of the week (Tuesday, Wednesday, ...)?",
     [("Tuesday", 2, 1), ("Wednesday", 3, 1), ("Thursday", 4, 1), ("Friday", 5, 1), ("Saturday", 6, 1),
      ("Sunday", 7, 1)]),
])
def test_a_name_before_a_value_in_parentheses_is_that_values_name(
        data: duckdb.DuckDBPyConnection, question: str, expected: object) -> None:
    rows = answer(data, question)
    assert (rows if isinstance(expected, list) else rows[0][0]) == expected


@pytest.mark.parametrize(("question", "expected"), [
    ("Did any flight go from JFK to Miami (MIA)?", True), ("Did any flight go from JFK to Atlanta (ATL)?", False),
    ("Are there any DL flights out of LaGuardia?", True), ("did carrier AA fly anything out of Newark?", False),
    ("Does any flight in the data cover more than 1,000 miles?", True),
    ("On January 2, 2013, was there a flight to Miami?", False),
    ("any flight covering more than 1,000 miles?", True), ("Any flights from JFK to Atlanta (ATL)?", False),
])
def test_a_yes_no_question_asks_whether_any_row_meets_its_conditions(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize("question", ["Are there any flights per carrier?",
                                      "Did any flight have a gate change?"])
def test_a_yes_no_question_that_is_not_about_whether_rows_exist_is_declined(question: str) -> None:
    with pytest.raises(NoPlan):
        plan(question)


def test_a_share_split_by_the_verb_that_chose_the_join_counts_only_what_follows_it(
        data: duckdb.DuckDBPyConnection) -> None:
    # of DL's 3 flights, one left from Newark: the share is of DL's flights, not of all of them
    assert answer(data, "What percent of DL's flights departed from Newark?") == [(100 / 3,)]


def test_a_noun_of_direction_points_at_what_follows_not_at_the_place_before(
        data: duckdb.DuckDBPyConnection) -> None:
    rows = answer(data, "From LaGuardia, which destinations had the highest average arrival delay?")
    assert [row[0] for row in rows] == ["ATL"]  # of LGA's flights (ATL 20, MIA none); not flights *to* LaGuardia


@pytest.mark.parametrize("question", ["How many different destinations did LaGuardia flights go to?",
                                      "Which destinations did LaGuardia flights serve?",
                                      "Which origins did Miami flights come from?",
                                      "Which destinations were LaGuardia flights headed to?"])
def test_a_noun_of_direction_before_a_verb_is_what_is_asked_about_not_the_end_of_the_place_after(
        question: str) -> None:
    # "LaGuardia flights" says no direction: read by "destinations" it became flights *to* LaGuardia
    with pytest.raises(NoPlan):
        plan(question)


@pytest.mark.parametrize(("question", "expected"), [
    ("Count the flights whose destination is Miami.", 3), ("How many flights whose origin was LaGuardia?", 2),
])
def test_a_noun_of_direction_before_a_verb_that_says_what_it_is_points_at_the_place(
        data: duckdb.DuckDBPyConnection, question: str, expected: int) -> None:
    assert answer(data, question) == [(expected,)]


def test_side_by_side_compares_the_values_named(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "Show the average arrival delay of UA and of B6 side by side.") == [("B6", 3.0), ("UA", 10.0)]


@pytest.mark.parametrize(("question", "expected"), [
    ("Are there flights from LaGuardia to Atlanta (ATL)?", True), ("Are there flights from Newark to Boston (BOS)?", False),
    ("Were any DL flights out of Newark? How many?", 1),  # the count asked answers both
])
def test_are_there_rows_and_a_count_asked_beside_it(data: duckdb.DuckDBPyConnection, question: str,
                                                     expected: object) -> None:
    assert answer(data, question) == [(expected,)]


def test_a_value_said_beside_a_never_of_the_same_column_must_be_met_by_the_group(
        data: duckdb.DuckDBPyConnection) -> None:
    rows = answer(data, "Which destinations had flights from JFK but never from LaGuardia?")
    assert [row[0] for row in rows] == ["BOS"]  # MIA had flights from both


def test_never_without_groups_asked_for_is_never_dropped_silently() -> None:
    try:
        made = plan("How many flights never went to Miami?")
    except NoPlan:
        return
    assert "never" in made.unaccounted


def test_a_column_two_joined_tables_share_is_the_one_whose_table_is_named_after_it() -> None:
    airlines = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING")),
                         description="Airlines: one row per carrier.")
    made = plan_question("What's the name of the destination airport that received the most flights?", [FLIGHTS],
                         values_of=lambda t, c: VALUES.get((t, c), []), related=[AIRPORTS, airlines],
                         relationships=(*RELATIONSHIPS, Relationship("flights", ("carrier",), "airlines", ("carrier",))))
    assert '"airports"."name"' in made.sql and '"airlines"' not in made.sql


def test_the_rows_the_most_counts_are_the_table_queried(data: duckdb.DuckDBPyConnection) -> None:
    airlines = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING")),
                         description="Airlines: one row per carrier.")
    made = plan_question("Which airline has the most flights? Give the airline's name.", [FLIGHTS, airlines],
                         values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=(Relationship("flights", ("carrier",), "airlines", ("carrier",)),))
    assert made.tables[0] == "flights" and 'GROUP BY "airlines"."name"' in made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("Did DL fly to Atlanta?", True), ("Did B6 fly to Miami?", False), ("Does UA fly out of Newark?", True),
])
def test_a_question_opened_by_an_auxiliary_about_rows_asks_whether_they_exist(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


@pytest.mark.parametrize(("question", "expected"), [
    ("Are all DL flights out of LaGuardia?", False), ("Did every flight to Boston (BOS) leave from JFK?", True),
])
def test_a_yes_no_question_about_all_rows_asks_its_last_condition_of_the_rows_the_others_keep(
        data: duckdb.DuckDBPyConnection, question: str, expected: bool) -> None:
    assert answer(data, question) == [(expected,)]


def test_which_groups_never_did_something_with_a_verb_between(data: duckdb.DuckDBPyConnection) -> None:
    assert sorted(row[0] for row in answer(data, "Which carriers never flew to Miami?")) == ["B6"]


def test_a_superlative_of_length_is_no_abbreviation_of_a_column() -> None:
    airports = TableInfo("airports", (*AIRPORTS.columns, ColumnInfo("lon", "FLOAT", "Longitude")),
                         description=AIRPORTS.description)
    made = plan_question("List the 2 longest flights out of Newark by distance", [FLIGHTS],
                         values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS,
                         related=[airports])
    assert '"lon"' not in made.sql and '"distance" DESC' in made.sql


def test_which_row_of_a_joined_table_ranks_by_the_rows_that_join_it(data: duckdb.DuckDBPyConnection) -> None:
    data.execute("CREATE OR REPLACE TEMP TABLE airlines AS SELECT * FROM (VALUES ('UA', 'United'), ('DL', 'Delta'), "
                 "('B6', 'JetBlue'), ('AA', 'American')) t(carrier, name)")
    airlines = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING")),
                         description="Airlines: one row per carrier.")
    made = plan_question("Which airline had the most flights?", [FLIGHTS], related=[airlines],
                         values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=(Relationship("flights", ("carrier",), "airlines", ("carrier",)),))
    assert data.execute(made.sql).fetchall() == [("DL", "Delta", 3)]


@pytest.mark.parametrize(("question", "expected"), [
    ("latest date with an EWR to MIA flight", [(datetime.date(2013, 1, 1),)]),
    ("longest distance of a JFK flight", [(1090,)]),
])
def test_one_row_noun_after_the_codes_that_qualify_it_is_the_rows_not_the_flight_number(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    made = plan(question)
    assert '"flight"' not in made.sql, made.sql
    assert answer(data, question) == expected


def test_groups_that_never_did_something_out_of_a_place(data: duckdb.DuckDBPyConnection) -> None:
    # UA flew only out of Newark, B6 only out of JFK; AA and DL flew out of LGA
    assert [row[0] for row in answer(data, "Which carriers never flew out of LGA?")] == ["B6", "UA"]


def test_a_code_is_read_as_written_not_in_a_word_that_is_a_form_of_it() -> None:
    airports = TableInfo("airports", (ColumnInfo("faa", "STRING"), ColumnInfo("alt", "INTEGER", "Altitude in feet")),
                         description="Airports: one row per airport.")
    codes = {("airports", "faa"): ["JFK", "SIT"]}

    def asked(question: str) -> str:
        return plan_question(question, [airports], values_of=lambda t, c: codes.get((t, c), [])).sql

    assert "'SIT'" not in asked("Which airport sits at the highest altitude?")  # Sitka's code is SIT
    assert "'SIT'" in asked("What is the altitude of SIT?") and "'SIT'" in asked("altitude of sit")


def test_sea_level_is_what_a_height_is_measured_from_not_a_code() -> None:
    airports = TableInfo("airports", (ColumnInfo("faa", "STRING"), ColumnInfo("alt", "INTEGER", "Altitude in feet")),
                         description="Airports: one row per airport.")
    codes = {("airports", "faa"): ["DEN", "SEA"]}
    made = plan_question("How many airports are more than 5,000 feet above sea level?", [airports],
                         values_of=lambda t, c: codes.get((t, c), []))
    assert not made.unaccounted, made
    assert "'SEA'" not in made.sql and '"alt" > 5000' in made.sql, made.sql
    assert "'SEA'" in plan_question("What is the altitude of SEA?", [airports],
                                    values_of=lambda t, c: codes.get((t, c), [])).sql


def test_values_of_two_columns_joined_by_or_are_declined_not_both_required() -> None:
    # "Atlanta" is read through the airports' names, "MIA" is a code of dest: both conditions at once is no
    # flight at all, which would be a confident 0
    with pytest.raises(NoPlan, match="two columns"):
        plan("How many flights went to Atlanta or Miami (MIA)?")
    assert "NOT" not in plan("How many flights went to Miami (MIA) or Boston (BOS)?").sql


def keys_of(table: str, key: str, column: str, names: Sequence[str]) -> list[str]:
    """The airports' look-up the pipeline makes of the data: the codes of the airports of those names."""
    assert (table, key, column) == ("airports", "faa", "name")
    return [code for code, name in NAMES.items() if name in names]


def answer_by_codes(data: duckdb.DuckDBPyConnection, question: str) -> tuple[str, list[tuple[object, ...]]]:
    sql = plan_question(question, [FLIGHTS], values_of=lambda t, c: VALUES.get((t, c), []), keys_of=keys_of,
                        relationships=RELATIONSHIPS, related=[AIRPORTS]).sql
    return sql, data.execute(sql).fetchall()


@pytest.mark.parametrize(("question", "expected"), [
    # no word of direction: the data says La Guardia's and Newark's codes are origins, not destinations
    ("How many different destinations did Newark flights go to?", [(2,)]),
    ("Did LaGuardia have more flights than Newark?", [(False,)]),  # two each
])
def test_of_two_relationships_the_one_whose_codes_the_named_rows_have_is_taken(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    sql, rows = answer_by_codes(data, question)
    assert [row[:len(expected[0])] for row in rows] == expected and '"origin" = "airports"."faa"' in sql, sql


@pytest.mark.parametrize(("question", "expected"), [
    # "at" may point at a destination; La Guardia's code is an origin only (JFK: 3 and 30, LGA: 20)
    ("Is the average arrival delay at JFK higher than at LaGuardia?", [(False,)]),
    # a name and a code of one column, either of them: both are the column's codes
    ("How many flights went to Atlanta or Miami (MIA)?", [(5,)]),
    ("Number of flights out of JFK versus Newark", [("EWR", 2), ("JFK", 2)]),
])
def test_a_name_said_beside_codes_of_the_same_column_is_read_as_the_codes_of_its_rows(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]]) -> None:
    sql, rows = answer_by_codes(data, question)
    assert [row[:len(expected[0])] for row in rows] == expected and "JOIN" not in sql, sql


def test_a_name_no_row_of_the_queried_table_keys_is_still_read_through_the_join(
        data: duckdb.DuckDBPyConnection) -> None:
    # Boston's Back Bay Station is no flight's destination: the name stays, and the answer of nothing says so
    sql, rows = answer_by_codes(data, "How many flights went to Boston Back Bay Station?")
    assert "JOIN" in sql and rows == [(0,)], sql


def test_a_negated_name_of_a_joined_table_keeps_the_rows_the_table_lacks() -> None:
    # flight 7 goes to XXX, an airport the airports table lacks: it did not go to Atlanta either
    made = plan_question("How many flights did not go to Atlanta?", [FLIGHTS],
                         values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS,
                         related=[AIRPORTS])
    names = ", ".join(f"('{code}', '{name}', 'America/New_York')" for code, name in NAMES.items())
    connection = duckdb.connect()
    connection.execute("CREATE TABLE flights AS SELECT * FROM (VALUES (6, 'UA', DATE '2013-01-06', 'JFK', 'ATL', 1, 1), "
                       "(7, 'UA', DATE '2013-01-07', 'JFK', 'XXX', 1, 1)) AS t(flight, carrier, flight_date, origin, "
                       "dest, arr_delay, distance)")
    connection.execute(f"CREATE TABLE airports AS SELECT * FROM (VALUES {names}) AS t(faa, name, tzone)")
    assert connection.execute(made.sql).fetchall() == [(1,)], made.sql
    connection.close()


def test_a_negated_attribute_of_a_joined_table_is_said_of_the_rows_it_has() -> None:
    # "planes whose engine is not Turbo-fan" are planes the planes table has: a flight with none is not one
    planes = TableInfo("planes", (ColumnInfo("tailnum", "STRING"), ColumnInfo("engine", "STRING")),
                       description="Planes: one row per plane.")
    fleet = TableInfo("flights", (ColumnInfo("flight", "INTEGER"), ColumnInfo("tailnum", "STRING")),
                      description="One row per flight.")
    made = plan_question("How many flights were on planes whose engine is not Turbo-fan?", [fleet],
                         values_of=lambda t, c: {"engine": ["Turbo-fan", "Turbo-jet"]}.get(c, []),
                         relationships=(Relationship("flights", ("tailnum",), "planes", ("tailnum",)),),
                         related=[planes])
    assert "IS NULL" not in made.sql, made.sql


def test_a_word_the_schema_uses_for_another_thing_is_no_abbreviation_of_a_column() -> None:
    timed = TableInfo("flights", (*FLIGHTS.columns, ColumnInfo("tailnum", "STRING", "Tail number"),
                                  ColumnInfo("air_time", "INTEGER", "Time spent in the air"),
                                  ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes")),
                      description=FLIGHTS.description)
    planes = TableInfo("planes", (ColumnInfo("tailnum", "STRING"), ColumnInfo("seats", "INTEGER")),
                       description="Planes (aircraft) by tail number.")
    # "aircraft" is what planes are: no count of distinct air times
    with pytest.raises(NoPlan):
        plan_question("number of distinct aircraft per carrier", [timed], related=[planes])
    # a word nothing else in the schema uses still abbreviates: "airborne" is air_time, "departure" dep_delay
    assert 'MAX("air_time")' in plan_question("longest time spent airborne", [timed], related=[planes]).sql
    assert 'AVG("dep_delay")' in plan_question("average departure delay", [timed], related=[planes]).sql


CODED = TableInfo("flights", (
    ColumnInfo("carrier", "STRING", "Two-letter airline code; the airlines table gives its name"),
    ColumnInfo("origin", "STRING", "FAA code of the New York airport the flight left from"),
    ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes")),
    description="Flights: one row per flight.")


@pytest.mark.parametrize("question", [
    "Average departure delay by origin airport and carrier.",  # words of origin's description after it
    "Average departure delay for each combination of origin and airline code.",  # what carrier is, in words
    "Average departure delay for each combination of origin airport and airline code.",
])
def test_each_key_joined_by_and_is_kept_however_it_is_said(question: str) -> None:
    made = plan_question(question, [CODED])
    assert 'GROUP BY "origin", "carrier"' in made.sql and not made.unaccounted


@pytest.mark.parametrize(("question", "description", "spans"), [
    ("delay by airline code", "Two-letter airline code; the airlines table gives its name", [(2, 4)]),
    # "the flight left" comes after "of": what the flight did, not what origin is
    ("how many flights left", "FAA code of the airport the flight left from", []),
    ("flights from New York", "New York airport code", []),  # a name in capitals is a value's
    ("by airline code (carrier)", "Airline code", []),  # a parenthesis after the words says the column itself
    ("per airline code", "Airline code of the carrier", []),  # the column's own name's words name it already
])
def test_a_column_is_named_by_the_first_words_of_its_description(question: str, description: str,
                                                                  spans: list[tuple[int, int]]) -> None:
    tokens = tokenize(question)
    column = "airline_code" if "of the carrier" in description else "carrier"
    assert what_it_is_spans(tokens, range(len(tokens)), description, phrase(column), question) == spans


def test_a_columns_name_wins_over_what_other_columns_are_described_as() -> None:
    jobs = TableInfo("jobs", (ColumnInfo("manufacturing", "FLOAT", "Manufacturing jobs, thousands"),
                              ColumnInfo("durable_goods", "FLOAT", "Manufacturing jobs in durable goods"),
                              ColumnInfo("nondurable_goods", "FLOAT",
                                         "Manufacturing jobs in nondurable goods")),
                     description="One row per month.")
    assert 'AVG("manufacturing")' in plan_question("average manufacturing jobs", [jobs]).sql


def test_two_names_with_to_between_are_a_routes_ends_not_alternatives() -> None:
    # both names read through one relationship would be "flights to LaGuardia or Atlanta"
    made = None
    try:
        made = plan("How many LaGuardia to Atlanta flights were there?")
    except NoPlan as refused:
        assert "route" in str(refused)
    if made is not None:  # read as a route: LaGuardia the origin, Atlanta the destination
        assert "IN (" not in made.sql


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights went to Miami International?", 3),  # the data writes "Miami Intl"
    ("How many flights left from John F Kennedy International?", 2),
    ("How many flights left from John F Kennedy Intl?", 2),
    ("How many flights went to Hartsfield Jackson Atlanta International?", 2),
])
def test_a_name_spelled_out_matches_the_abbreviation_the_data_writes(data: duckdb.DuckDBPyConnection, question: str,
                                                                    expected: int) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(expected,)]


def test_the_first_words_of_one_name_among_many_name_it() -> None:
    # "Chicago O'Hare" begins one of many airports' names (Chicago alone begins several): that one
    names = [*NAMES.values(), "Chicago Ohare Intl", "Chicago Midway Intl", "Chicago Rockford International Airport",
             "Chicago Meigs", "First Flight Airport", *(f"Airfield Number {n}" for n in range(60))]
    values = {**VALUES, ("airports", "name"): names}
    made = plan_question("How many flights went to Chicago O'Hare?", [FLIGHTS],
                         values_of=lambda t, c: values.get((t, c), []), relationships=RELATIONSHIPS, related=[AIRPORTS])
    assert "'Chicago Ohare Intl'" in made.sql and not made.unaccounted, made
    with pytest.raises(NoPlan):
        plan_question("How many flights went to Chicago?", [FLIGHTS], values_of=lambda t, c: values.get((t, c), []),
                      relationships=RELATIONSHIPS, related=[AIRPORTS])
    # "the first flight to Miami": everyday words and the rows' noun, uncapitalised, begin no name among many
    made = plan_question("When was the first flight to Miami?", [FLIGHTS], values_of=lambda t, c: values.get((t, c), []),
                         relationships=RELATIONSHIPS, related=[AIRPORTS])
    assert "First Flight" not in made.sql and "Miami" in made.sql, made.sql


def test_a_whole_name_of_a_joined_table_is_checked_like_a_guess(data: duckdb.DuckDBPyConnection) -> None:
    # the airports table has Boston Back Bay Station, but no flight goes there: an answer of nothing resting on
    # that name must be able to say so, as for a name read from one of its words
    made = plan_question("How many flights went to Boston Back Bay Station each day?", [FLIGHTS],
                         values_of=lambda t, c: VALUES.get((t, c), []), keys_of=keys_of,
                         relationships=RELATIONSHIPS, related=[AIRPORTS])
    checks = [guess for guess in made.guessed if guess.names[0].endswith("'Boston Back Bay Station'")]
    assert [guess.said for guess in checks] == ["Boston Back Bay Station"], made.guessed
    assert data.execute(checks[0].check).fetchall() == [(False,)], checks[0].check
    held = plan_question("How many flights went to Miami Intl?", [FLIGHTS], values_of=lambda t, c: VALUES.get((t, c), []),
                         keys_of=keys_of, relationships=RELATIONSHIPS, related=[AIRPORTS])
    assert [data.execute(guess.check).fetchall() for guess in held.guessed] == [[(True,)]], held.guessed


@pytest.mark.parametrize(("question", "expected"), [
    ("How many flights from Newark to Miami?", [(1,)]),
    ("How many Newark-to-Miami flights were there?", [(1,)]),
    ("Is there any LaGuardia to Atlanta flight?", [(True,)]),
    ("Is there any Atlanta to LaGuardia flight?", None),  # no flight leaves Atlanta: not a route of the data
    ("Latest date a flight went from LaGuardia to Miami?", [(datetime.date(2013, 1, 6),)]),
])
def test_a_route_between_two_names_of_a_joined_table_is_each_ends_codes(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[object, ...]] | None) -> None:
    try:
        sql, rows = answer_by_codes(data, question)
    except NoPlan:
        assert expected is None
        return
    assert expected is not None and rows == expected and "JOIN" not in sql, sql


def test_a_value_said_whole_that_begins_longer_values_names_them_all() -> None:
    # the data writes one maker two ways: "Airbus" is AIRBUS and AIRBUS INDUSTRIE, "Boeing" BOEING alone
    planes = TableInfo("planes", (ColumnInfo("tailnum", "STRING"), ColumnInfo("manufacturer", "STRING")),
                       description="Planes: one row per plane.")
    makers = ["AIRBUS", "AIRBUS INDUSTRIE", "BOEING"]

    def values_of(table: str, column: str) -> list[str]:
        return makers if column == "manufacturer" else []

    connection = duckdb.connect()
    connection.execute("CREATE TABLE planes AS SELECT * FROM (VALUES ('N1', 'AIRBUS'), ('N2', 'AIRBUS INDUSTRIE'), "
                       "('N3', 'BOEING')) AS t(tailnum, manufacturer)")
    airbus = plan_question("How many Airbus planes are there?", [planes], values_of=values_of)
    boeing = plan_question("How many Boeing planes are there?", [planes], values_of=values_of)
    assert connection.execute(airbus.sql).fetchall() == [(2,)], airbus.sql
    assert connection.execute(boeing.sql).fetchall() == [(1,)], boeing.sql
    connection.close()


def test_a_name_glossed_by_a_value_in_parentheses_after_its_columns_name_is_that_value() -> None:
    # "the Pacific time zone (America/Los_Angeles)": Pacific glosses the value, it is not Pacific/Honolulu too
    stations = TableInfo("stations", (ColumnInfo("code", "STRING"), ColumnInfo("tzone", "STRING", "Time zone name")),
                         description="Weather stations: one row per station.")
    zones = ["America/Los_Angeles", "Pacific/Honolulu", "America/Chicago"]
    made = plan_question("How many stations are in the Pacific time zone (America/Los_Angeles)?", [stations],
                         values_of=lambda t, c: zones if c == "tzone" else [])
    assert "Pacific/Honolulu" not in made.sql and "'America/Los_Angeles'" in made.sql and "GROUP BY" not in made.sql, made.sql


def test_a_column_asked_to_be_shown_is_not_shown_by_being_filtered_on() -> None:
    # Newark's airport name picks the rows; the names asked for are the destinations', which this plan does
    # not show: it must say so, not answer as if it had
    made = plan("Top 2 destinations from Newark by number of flights — show the airport names.")
    assert "names" in made.unaccounted, made


def test_a_word_of_a_columns_name_glossed_in_its_description_names_it_too() -> None:
    birds = TableInfo("birds", (ColumnInfo("study", "STRING", "Study (season) the bird was sampled in: S1 or S2"),
                                ColumnInfo("bill_length_mm", "FLOAT", "Length of the bill (culmen) in millimetres"),
                                ColumnInfo("sex", "STRING", "Sex of the bird: male or female (null when unknown)")),
                      description="Birds: one row per bird.")
    assert 'GROUP BY "study"' in plan_question("How many birds per season?", [birds]).sql
    assert 'AVG("bill_length_mm")' in plan_question("Average culmen length", [birds]).sql
    # a parenthesis that glosses no word of a name names nothing
    assert 'GROUP BY "sex"' not in plan_question("How many birds per unknown?", [birds]).sql


def test_a_joined_tables_column_said_of_another_tables_rows_is_refused() -> None:
    airlines = TableInfo("airlines", (ColumnInfo("carrier", "STRING"), ColumnInfo("name", "STRING",
                                                                                  "Full name of the airline")),
                         description="Airlines: one row per airline.")
    relationships = [Relationship("flights", ("carrier",), "airlines", ("carrier",)),
                     Relationship("flights", ("origin",), "airports", ("faa",)),
                     Relationship("flights", ("dest",), "airports", ("faa",))]
    with pytest.raises(NoPlan, match="is of airports"):
        plan_question("What is the name of the airport with the most flights?", [FLIGHTS],
                      relationships=relationships, related=[airlines, AIRPORTS])
    # said before the column as well: "the airport names", where only the airlines' names are reached
    with pytest.raises(NoPlan, match="is of airports"):
        plan_question("For United Air Lines, how many flights per origin? Use the airport names.", [FLIGHTS],
                      values_of=lambda t, c: ["United Air Lines"] if (t, c) == ("airlines", "name") else [],
                      relationships=relationships, related=[airlines, AIRPORTS])


NYC_FLIGHTS = TableInfo("flights", (
    *CODED.columns[:2], ColumnInfo("dest", "STRING", "FAA code of the destination airport"),
    ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes")),
    description="Flights that departed New York City (JFK, LGA, EWR): one row per flight.")
PLACED_AIRPORTS = TableInfo("airports", (*AIRPORTS.columns, ColumnInfo("lat", "DOUBLE", "Latitude")),
                            description=AIRPORTS.description)
LATE = Term("late arrival", "A flight that arrived more than 15 minutes late: arr_delay > 15",
            ("late", "arrived late"))


def test_a_word_of_a_glossary_phrase_names_no_column_of_a_joined_table() -> None:
    # "late" of "arrived late" (the term) is no word of the airports' lat: "arrived" does not point at the
    # airports, and "each of the three NYC airports" stays the flights' origins
    made = plan_question("For each of the three NYC airports, how many flights arrived late?", [NYC_FLIGHTS],
                         [LATE], values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS,
                         related=[PLACED_AIRPORTS])
    assert 'GROUP BY "origin"' in made.sql and "arr_delay > 15" in made.sql and not made.unaccounted, made


def test_each_airport_said_in_the_origins_words_is_the_origin_beside_the_other_ends_join() -> None:
    # "to Miami" joins the airports by the destination; "each NYC airport" is still the origin (as its
    # description says), not the destination airports the join reaches
    made = plan_question("For flights to Miami, what was the average arrival delay from each NYC airport?",
                         [NYC_FLIGHTS], values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS,
                         related=[AIRPORTS])
    assert 'GROUP BY "flights"."origin"' in made.sql and "'Miami Intl'" in made.sql and not made.unaccounted, made


def test_headed_is_a_verb_of_going_that_the_place_after_it_reads(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "How many flights were headed somewhere other than MIA or BOS?") == [(2,)]


@pytest.mark.parametrize("question", ["How many flights left laguardia?", "How many flights left LaGuardia?"])
def test_two_words_of_a_name_written_as_one_name_it_however_cased(data: duckdb.DuckDBPyConnection,
                                                                   question: str) -> None:
    assert answer(data, question) == [(2,)]


def test_a_month_is_no_word_of_a_name(data: duckdb.DuckDBPyConnection) -> None:
    # an airport's name that holds a month's name ("March Air Reserve Base") is not what "in January" says
    values = {**VALUES, ("airports", "name"): [*VALUES[("airports", "name")], "Lake January Airport"]}
    made = plan_question("How many flights left LaGuardia in January?", [FLIGHTS],
                         values_of=lambda t, c: values.get((t, c), []), relationships=RELATIONSHIPS,
                         related=[AIRPORTS])
    assert data.execute(made.sql).fetchall() == [(2,)], made.sql


@pytest.mark.parametrize("question", ["How many flights went to Boston BOS?", "how many flights went to boston (BOS)?"])
def test_a_word_of_names_no_flight_refers_to_only_glosses_a_code_beside_it(data: duckdb.DuckDBPyConnection,
                                                                          question: str) -> None:
    # Boston's airport is "General Edward Lawrence Logan Intl": "Boston" is only in a station's name, which no
    # flight goes to; beside BOS it says which airport BOS is (read as that name, no flight would be counted)
    sql, rows = answer_by_codes(data, question)
    assert rows == [(1,)], sql


@pytest.mark.parametrize(("question", "expected"), [("how many flights went to atlanta", 2),
                                                   ("how many flights went out of newark", 2)])
def test_a_place_after_to_or_from_is_read_however_cased(data: duckdb.DuckDBPyConnection, question: str,
                                                        expected: int) -> None:
    # (a word inside the names, not their first: "Hartsfield Jackson Atlanta Intl")
    assert answer(data, question) == [(expected,)]


def test_destinations_that_received_a_number_of_flights(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Average distance per destination, restricted to destinations that received at least 2 flights")
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [("ATL", 755.0), ("MIA", pytest.approx(3286 / 3))], made.sql


def test_mileage_is_a_number_of_miles(data: duckdb.DuckDBPyConnection) -> None:
    assert answer(data, "What is the total mileage of DL flights?") == [(2600,)]


@pytest.mark.parametrize("question", ["list the flights to MIA - date, carrier, flight no",
                                      "list the flights to MIA - date, carrier, flight no."])
def test_no_ending_a_list_of_columns_is_a_number(data: duckdb.DuckDBPyConnection, question: str) -> None:
    made = plan(question)
    assert not made.unaccounted, made
    assert [row[1:] for row in data.execute(made.sql).fetchall()] == [("UA", 1), ("DL", 5), ("AA", 6)], made.sql


def test_a_code_written_in_capitals_is_a_code_though_it_is_a_word_too() -> None:
    flights = TableInfo("flights", (ColumnInfo("carrier", "STRING", "Airline code"),
                                    ColumnInfo("flight_date", "DATE", "Date of the flight")),
                        description="Flights: one row per flight.")
    codes = {("flights", "carrier"): ["AS", "UA", "US"]}
    for question, code in (("What is the last date on which an AS flight appears?", "AS"),
                           ("When did the last US flight leave?", "US")):
        made = plan_question(question, [flights], values_of=lambda t, c: codes.get((t, c), []))
        assert f"\"carrier\" = '{code}'" in made.sql and not made.unaccounted, made


def test_a_code_that_opens_with_a_digit_is_one_word() -> None:
    flights = TableInfo("flights", (ColumnInfo("carrier", "STRING", "Airline code"),
                                    ColumnInfo("flight_date", "DATE", "Date of the flight")),
                        description="Flights: one row per flight.")
    codes = {("flights", "carrier"): ["9E", "EV", "MQ", "UA"]}
    made = plan_question("Count the flights not operated by EV, MQ or 9E.", [flights],
                         values_of=lambda t, c: codes.get((t, c), []))
    assert "NOT \"carrier\" IN ('EV', 'MQ', '9E')" in made.sql and not made.unaccounted, made
    # a time of day in capitals is still a time, not a code; a number and a letter are two words
    assert [(t.text, t.kind) for t in tokenize("at 9PM")] == [("at", "word"), ("9", "number"), ("PM", "word")]
    assert [(t.text, t.kind) for t in tokenize("delta 15N")] == [("delta", "word"), ("15", "number"), ("N", "word")]


@pytest.mark.parametrize(("question", "expected"), [
    ("Average arrival delay excluding flights out of Newark?", pytest.approx(53 / 3)),
    ("How many flights were there, except those out of Newark?", 4),
])
def test_a_denial_before_the_rows_and_the_way_to_a_joined_name_denies_the_name(
        data: duckdb.DuckDBPyConnection, question: str, expected: float) -> None:
    # (before, "out of" between them kept the denial from the name: Newark's flights were the ones kept, the
    # answer saying it could not use "excluding")
    made = plan(question)
    assert not made.unaccounted and data.execute(made.sql).fetchall() == [(expected,)], made.sql


@pytest.mark.parametrize(("question", "expected"), [
    # a preposition ending the question points at the table named before it (declined: no join was chosen)
    ("Which airports did DL fly to?", [("ATL", "Hartsfield Jackson Atlanta Intl"), ("MIA", "Miami Intl")]),
    ("Give me the names of the airports UA flew to.", [("MIA", "Miami Intl")]),
    ("Which airports did B6 fly from?", [("JFK", "John F Kennedy Intl")]),
])
def test_a_preposition_ending_the_question_points_at_the_table_named_before_it(
        data: duckdb.DuckDBPyConnection, question: str, expected: list[tuple[str, str]]) -> None:
    made = plan(question)
    assert not made.unaccounted and sorted(data.execute(made.sql).fetchall()) == expected, made.sql


def test_the_other_end_of_a_place_said_is_not_listed_as_the_end_asked() -> None:
    # LaGuardia is an origin: "which airports … go to" asks for the destinations, not LaGuardia itself (answered so)
    with pytest.raises(NoPlan, match="other end"):
        plan_question("Which airports did LaGuardia flights go to?", [FLIGHTS], keys_of=keys_of,
                      values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS, related=[AIRPORTS])


def test_a_value_right_after_its_column_names_it_even_after_by(data: duckdb.DuckDBPyConnection) -> None:
    # ("every flight by carrier DL" had been the number of DL's flights, grouped by carrier)
    made = plan("List every flight by carrier DL with its date and origin.")
    assert not made.unaccounted and "GROUP BY" not in made.sql, made.sql
    assert sorted(row[0] for row in data.execute(made.sql).fetchall()) == [2, 3, 5]
    # a key asked for, and a condition of its own after it
    assert answer(data, "Number of flights by carrier, excluding UA") == [("AA", 1), ("B6", 1), ("DL", 3)]


def test_a_key_asked_twice_is_grouped_by_once() -> None:
    """"from each airport, by airport name": the name shown beside the key's code and the name asked by are
    one column of the result."""
    sql = plan_question("How many flights left from each airport, by airport name?", [FLIGHTS],
                        values_of=lambda t, c: VALUES.get((t, c), []), relationships=RELATIONSHIPS,
                        related=[AIRPORTS]).sql
    assert sql.count('"airports"."name"') == 2, sql  # once selected, once grouped by


VOYAGES = TableInfo("voyages", (ColumnInfo("voyage_id", "INTEGER"), ColumnInfo("dest", "STRING")),
                    description="One row per voyage.")
PORTS = TableInfo("ports", (ColumnInfo("code", "STRING"), ColumnInfo("country", "STRING")),
                  description="One row per port.")


def plan_voyage(question: str) -> str:
    values = {("voyages", "dest"): ["MCO", "FLL", "Florida Keys", "Oslo"]}
    return plan_question(question, [VOYAGES], values_of=lambda t, c: values.get((t, c), []), related=[PORTS],
                         relationships=[Relationship("voyages", ("dest",), "ports", ("code",))]).sql


def test_a_value_before_a_plural_noun_and_a_list_of_values_describes_the_list() -> None:
    """"the Florida ports MCO or FLL": "Florida" heads the list, as a heading does; alone it is a value."""
    assert plan_voyage("How many voyages went to the Florida ports MCO or FLL?").endswith(
        """WHERE "dest" IN ('MCO', 'FLL')""")
    assert plan_voyage("How many voyages went to Florida?").endswith("""WHERE "dest" = 'Florida Keys'""")


@pytest.mark.parametrize("question", ["Did any voyage bound for Oslo exist?", "Pull up the voyages to Oslo."])
def test_words_of_going_and_of_showing_are_read_as_such(question: str) -> None:
    assert """"dest" = 'Oslo'""" in plan_voyage(question)


def test_a_number_a_comparison_binds_is_no_value_of_another_column() -> None:
    """"an arrival delay over 60 minutes" where some joined row's name is "60": the number is the delay's bound
    (a plane model "60" had been a condition beside it)."""
    values = {**VALUES, ("airports", "name"): ["60", "Miami Intl"]}
    for question, op in (("How many flights to Miami Intl had an arrival delay over 60 minutes?", ">"),
                         ("How many flights to Miami Intl had an arrival delay of at least 60 minutes?", ">=")):
        sql = plan_question(question, [FLIGHTS], values_of=lambda t, c: values.get((t, c), []), related=[AIRPORTS],
                            relationships=[Relationship("flights", ("dest",), "airports", ("faa",))]).sql
        assert sql.endswith(f"""WHERE "flights"."arr_delay" {op} 60 AND "airports"."name" = 'Miami Intl'"""), sql


def test_originating_is_a_word_of_the_trips_start() -> None:
    """"flights originated at each airport": the origins (the destinations had been taken, the list of
    origins a condition on them: a confidently wrong share)."""
    sql = plan("How many flights originated at each airport?").sql
    assert 'GROUP BY "flights"."origin"' in sql and '"dest"' not in sql, sql


def test_words_of_the_rows_doing_what_they_are_counted_for_are_read_as_such() -> None:
    # ("operate" and "racked" had no reading: the questions were declined)
    assert plan_voyage("Did the line operate any voyage to Oslo?").endswith("""WHERE "dest" = 'Oslo'""")
    assert 'GROUP BY "dest"' in plan_voyage("Which destination racked up the most voyages?")
