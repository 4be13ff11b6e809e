"""Readings of the planner on a small shipping schema: a table's other name in parentheses, "how many
<unit>", a key beside an excluded value of the same column, a true/false column said in its description's
words, and "how many different <rows of a joined table>"."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import duckdb
import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.planner.implied import implied_relationships
from convener.analytics.shapes import ColumnInfo, TableInfo
from tests.analytics.small_tables import database

VOYAGES = TableInfo("voyages", (
    ColumnInfo("voyage_id", "INTEGER"), ColumnInfo("port", "STRING", "Port the voyage left from"),
    ColumnInfo("captain", "STRING", "Captain of the voyage"),
    ColumnInfo("hull_number", "STRING", "Hull number of the vessel; the vessels table describes it"),
    ColumnInfo("sea_time", "INTEGER", "Time spent at sea, in hours"),
    ColumnInfo("distance", "INTEGER", "Distance sailed, in km"),
    ColumnInfo("full_hold", "BOOLEAN", "Whether the hold was inspected with a full load of three pallets"),
    ColumnInfo("check_date", "DATE", "Date the hold was first inspected with one pallet")),
    description="Voyages sailed out of three ports: one row per voyage.")
VESSELS = TableInfo("vessels", (ColumnInfo("hull_number", "STRING", "Hull number"),
                                ColumnInfo("builder", "STRING", "Shipyard that built the vessel"),
                                ColumnInfo("year", "INTEGER", "Year the vessel was built")),
                    description="Vessels (seacraft) by hull number, from the register.")
HULLS = (Relationship("voyages", ("hull_number",), "vessels", ("hull_number",)),)
VALUES = {"port": ["Oslo", "Bergen", "Tromso"], "captain": ["Ahab", "Nemo", "Haddock"],
          "hull_number": ["H1", "H2", "H3"], "builder": ["Kvaerner", "Ulstein"]}


@pytest.fixture(scope="module")
def data() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database(
        "CREATE TABLE voyages (voyage_id INTEGER, port VARCHAR, captain VARCHAR, hull_number VARCHAR, "
        "sea_time INTEGER, distance INTEGER, full_hold BOOLEAN, check_date DATE)",
        "CREATE TABLE vessels (hull_number VARCHAR, builder VARCHAR, year INTEGER)",
        "INSERT INTO voyages VALUES (1, 'Oslo', 'Ahab', 'H1', 10, 100, true, '2020-01-05'), "
        "(2, 'Oslo', 'Nemo', 'H1', 20, 300, false, '2020-01-20'), "
        "(3, 'Bergen', 'Ahab', 'H2', 30, 200, true, '2020-02-03'), "
        "(4, 'Bergen', 'Haddock', 'H3', 40, 500, true, '2020-02-10'), "
        "(5, 'Tromso', 'Nemo', 'H3', 50, 400, false, '2020-02-11')",
        "INSERT INTO vessels VALUES ('H1', 'Kvaerner', 1990), ('H2', 'Ulstein', 2001), ('H3', 'Ulstein', 2010)")


def plan(question: str) -> Plan:
    return plan_question(question, [VOYAGES, VESSELS], values_of=lambda _, column: VALUES.get(column, []),
                         relationships=HULLS)


def ask(data: duckdb.DuckDBPyConnection, question: str) -> list[tuple[object, ...]]:
    made = plan(question)
    return sorted(data.execute(made.sql).fetchall(), key=repr)


# --- "Vessels (seacraft)": another name of a table's rows, not a longer form of a column part --------------


def test_the_other_name_of_a_joined_tables_rows_counts_them_by_their_key(data: duckdb.DuckDBPyConnection) -> None:
    # "seacraft" starts with "sea" (of sea_time) but names the vessels; "(by hull number)" says how they
    # are told apart, so it is no group key
    assert ask(data, "how many different seacraft (by hull number) appear in the voyages?") == [(3,)]
    assert ask(data, "How many distinct vessels sailed from Oslo?") == [(1,)]


def test_the_other_name_of_a_joined_tables_rows_is_no_measure(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "Which builder's seacraft made the most voyages?") == [("Ulstein", 3)]


# --- "how many <unit>": an amount of the column in that unit ----------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("If you added every voyage from Oslo together, how many km would that be?", 400),
    ("How many hours did Nemo's voyages spend at sea?", 70),
    ("how many km did a voyage out of Bergen cover on average?", 350),
])
def test_how_many_of_a_columns_unit_asks_for_an_amount(data: duckdb.DuckDBPyConnection, question: str,
                                                      expected: int) -> None:
    assert ask(data, question) == [(expected,)]


def test_how_many_of_the_rows_still_counts_them(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "How many voyages left from Oslo?") == [(2,)]


# --- A key and an excluded value of the same column --------------------------------------------------------


def test_a_key_stays_a_key_beside_a_value_of_its_column_left_out(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "Average distance per port, excluding Tromso") == [("Bergen", 350.0), ("Oslo", 200.0)]
    assert ask(data, "total sea time by captain other than Ahab") == [("Haddock", 40), ("Nemo", 70)]


def test_by_after_a_participle_names_who_did_it_not_a_key(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "How many voyages were sailed by captains other than Ahab and Nemo?") == [(1,)]


# --- A true/false column said in its description's words ---------------------------------------------------


def test_a_condition_said_in_the_words_of_a_true_false_columns_description(
        data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "Per port, what percent of voyages were inspected with three pallets?") == [
        ("Bergen", 100.0), ("Oslo", 50.0), ("Tromso", 0.0)]
    assert ask(data, "How many voyages were not inspected with 3 pallets?") == [(2,)]


def test_a_description_said_with_another_number_is_not_that_condition(data: duckdb.DuckDBPyConnection) -> None:
    # "first inspected with one pallet" is check_date's description, not full_hold's "three pallets"
    made = plan("How many voyages were first inspected with a pallet in each month?")
    assert "full_hold" not in made.sql
    assert [row[-1] for row in sorted(data.execute(made.sql).fetchall())] == [2, 3]


def test_the_verb_of_a_description_alone_is_no_condition() -> None:
    with pytest.raises(NoPlan):
        plan("What percent of voyages were inspected?")


# --- A value ending in "ie" named in the plural ------------------------------------------------------------

BAKES = TableInfo("bakes", (ColumnInfo("bake_id", "INTEGER"),
                            ColumnInfo("item", "STRING", samples=("Brownie", "Cookie", "Scone")),
                            ColumnInfo("grams", "INTEGER", "Weight in grams")),
                  description="One row per bake.")


@pytest.fixture(scope="module")
def bakes() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE bakes (bake_id INTEGER, item VARCHAR, grams INTEGER)",
                        "INSERT INTO bakes VALUES (1, 'Brownie', 80), (2, 'Brownie', 90), (3, 'Cookie', 30), "
                        "(4, 'Scone', 70)")


@pytest.mark.parametrize(("question", "expected"), [
    ("How many bakes aren't Brownies?", 2), ("How many Cookies were baked?", 1),
    ("How much heavier are the Brownies' grams on average than the Scones'?", 15.0),
])
def test_a_value_ending_in_ie_named_in_the_plural(bakes: duckdb.DuckDBPyConnection, question: str,
                                                 expected: float) -> None:
    assert bakes.execute(plan_question(question, [BAKES]).sql).fetchall() == [(expected,)]


# --- "how far", "how heavy": the column an adjective of measure measures, asked for ------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("On average, how far did a voyage captained by Nemo go?", [(350.0,)]),
    ("How far do voyages go on average from each port?", [("Bergen", 350.0), ("Oslo", 200.0), ("Tromso", 400.0)]),
])
def test_how_and_an_adjective_of_measure_ask_for_its_column(data: duckdb.DuckDBPyConnection, question: str,
                                                           expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- A second column holding a joined table's codes joins it too, in its own role ---------------------------

RIDES = TableInfo("rides", (ColumnInfo("ride_id", "INTEGER"),
                            ColumnInfo("origin_dock", "STRING", "Code of the dock the ride left from"),
                            ColumnInfo("end_dock", "STRING", "Code of the destination dock"),
                            ColumnInfo("bike", "STRING", "Bike code"), ColumnInfo("minutes", "INTEGER")),
                  description="One row per ride.")
DOCKS = TableInfo("docks", (ColumnInfo("code", "STRING"), ColumnInfo("name", "STRING")),
                  description="One row per dock.")
RIDE_ENDS = (Relationship("rides", ("end_dock",), "docks", ("code",)),)
RIDE_VALUES = {"code": ["RV", "MK", "PK"], "name": ["Riverside Quay", "Market Square", "Park Gate"],
               "origin_dock": ["RV", "MK"], "end_dock": ["MK", "PK"], "bike": ["RV", "B7"]}


@pytest.fixture(scope="module")
def rides() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE rides (ride_id INTEGER, origin_dock VARCHAR, end_dock VARCHAR, "
                        "bike VARCHAR, minutes INTEGER)",
                        "CREATE TABLE docks (code VARCHAR, name VARCHAR)",
                        "INSERT INTO rides VALUES (1, 'RV', 'MK', 'RV', 10), (2, 'RV', 'PK', 'B7', 20), "
                        "(3, 'MK', 'PK', 'B7', 30)",
                        "INSERT INTO docks VALUES ('RV', 'Riverside Quay'), ('MK', 'Market Square'), "
                        "('PK', 'Park Gate')")


def test_only_a_column_whose_every_value_is_a_code_of_the_joined_key_is_implied() -> None:
    assert implied_relationships([RIDES, DOCKS], RIDE_ENDS, lambda _, column: RIDE_VALUES.get(column, [])) == [
        Relationship("rides", ("origin_dock",), "docks", ("code",))]
    assert implied_relationships([RIDES, DOCKS], RIDE_ENDS, None) == []


@pytest.mark.parametrize(("question", "expected"), [
    ("How many rides left from Riverside Quay?", 2), ("How many rides went to Park Gate?", 2),
    ("How many rides had an origin other than Market Square?", 2),
])
def test_a_place_named_in_the_role_of_an_implied_relationship(rides: duckdb.DuckDBPyConnection, question: str,
                                                            expected: int) -> None:
    made = plan_question(question, [RIDES, DOCKS], values_of=lambda _, column: RIDE_VALUES.get(column, []),
                         relationships=RIDE_ENDS)
    assert rides.execute(made.sql).fetchall() == [(expected,)], made.sql


# --- A word that could name several columns, settled by a word near it naming one ------------------------

LEGS = TableInfo("legs", (ColumnInfo("leg_id", "INTEGER"), ColumnInfo("wait_time", "INTEGER", "Minutes waiting"),
                          ColumnInfo("sail_time", "INTEGER", "Minutes sailing")),
                 description="One row per leg.")


@pytest.fixture(scope="module")
def legs() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE legs (leg_id INTEGER, wait_time INTEGER, sail_time INTEGER)",
                        "INSERT INTO legs VALUES (1, 50, 10), (2, 5, 40)")


@pytest.mark.parametrize(("question", "expected"), [
    ("longest time any leg spent sailing?", [(40,)]), ("the shortest time a leg was waiting", [(5,)]),
    ("average sail time and wait time", [(25.0, 27.5)]),
])
def test_a_word_near_an_ambiguous_one_settles_it(legs: duckdb.DuckDBPyConnection, question: str,
                                                expected: list[tuple[object, ...]]) -> None:
    assert legs.execute(plan_question(question, [LEGS]).sql).fetchall() == expected


def test_an_ambiguous_word_alone_is_still_refused() -> None:
    with pytest.raises(NoPlan):
        plan_question("What is the longest time of a leg?", [LEGS])


# --- "in <unit>" after a column already in that unit ----------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("farthest Oslo distance in km", [(300,)]), ("the farthest distance in km sailed by Ahab", [(200,)]),
])
def test_a_columns_own_unit_said_after_it_is_no_second_measure(data: duckdb.DuckDBPyConnection, question: str,
                                                              expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- A ranking's N opening the question ("5 penguins with the longest bills") ---------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("2 voyages with the longest sea time", [4, 5]), ("list 3 voyages with the shortest distance", [1, 2, 3]),
    ("show 1 Oslo voyage with the greatest distance", [2]),
])
def test_a_number_opening_the_question_is_how_many_rows_to_rank(data: duckdb.DuckDBPyConnection, question: str,
                                                               expected: list[int]) -> None:
    made = plan(question)
    assert sorted(row[0] for row in data.execute(made.sql).fetchall()) == expected, made.sql


# --- "busiest", "quietest": a group ranked by how many rows it has ----------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("the 2 busiest ports", [("Bergen", 2), ("Oslo", 2)]), ("Which is the quietest port?", [("Tromso", 1)]),
    ("Which captain is the busiest?", [("Ahab", 2), ("Nemo", 2)]),
])
def test_busiest_and_quietest_rank_groups_by_their_rows(data: duckdb.DuckDBPyConnection, question: str,
                                                       expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- A column in parentheses glossing the words before it; a noun for its value before a comparison ------------


WELLS = TableInfo("wells", (ColumnInfo("well_id", "INTEGER"), ColumnInfo("ph", "FLOAT", "Acidity of the water"),
                            ColumnInfo("depth_m", "FLOAT", "Depth in metres")),
                  description="One row per well.")


def test_a_column_in_parentheses_after_words_of_its_description_is_a_gloss() -> None:
    connection = duckdb.connect()
    try:
        connection.execute("CREATE TABLE wells (well_id INTEGER, ph FLOAT, depth_m FLOAT)")
        connection.execute("INSERT INTO wells VALUES (1, 6.5, 10), (2, 7.5, 20), (3, 8.0, 30)")
        made = plan_question("Which wells have a water acidity (pH) reading above 7?", [WELLS])
        assert sorted(row[0] for row in connection.execute(made.sql).fetchall()) == [2, 3], made.sql
    finally:
        connection.close()


def test_a_noun_for_a_columns_value_stands_between_it_and_a_comparison(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "How many voyages have a distance reading over 250?") == [(3,)]


def test_columns_in_parentheses_after_the_rows_are_still_what_is_shown(data: duckdb.DuckDBPyConnection) -> None:
    # (then the voyage's own key, which tells the rows apart)
    assert ask(data, "List the Oslo voyages (captain, distance)") == [("Ahab", 100, 1), ("Nemo", 300, 2)]


# --- "… and what were the two averages?": the aggregate computed, asked to be shown ----------------------------


def test_asking_to_see_the_aggregates_computed_is_understood(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "Which had the longer average sea time, Oslo or Bergen, and what were the two averages?") == [
        ("Bergen", 35.0), ("Oslo", 15.0)]
    assert ask(data, "Total distance of Ahab versus Nemo? Show both totals.") == [("Ahab", 300), ("Nemo", 700)]


def test_asking_to_see_an_aggregate_not_computed_is_said_not_understood() -> None:
    assert "medians" in plan("Total distance of Ahab versus Nemo? Show both medians.").unaccounted


# --- "served from", "found on": verbs of the rows' being at the place named ----------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("How many different captains were served from Oslo?", [(2,)]),
    ("Which captains were never found at Tromso?", [("Ahab",), ("Haddock",)]),
])
def test_verbs_of_being_at_a_place_carry_only_the_place(data: duckdb.DuckDBPyConnection, question: str,
                                                      expected: list[tuple[object, ...]]) -> None:
    assert [row[:1] for row in ask(data, question)] == expected


# --- "between A and B": a range of a number, ends included ---------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("How many voyages sailed between 200 and 400 km?", 3),  # the column by its unit
    ("How many voyages had a sea time between 20 and 40, both ends included?", 3),  # the column before "between"
    ("How many voyages had a distance between 300 and 100?", 0),  # as written: nothing lies from 300 up to 100
])
def test_a_number_range_is_read_with_its_ends(data: duckdb.DuckDBPyConnection, question: str,
                                             expected: int) -> None:
    assert ask(data, question) == [(expected,)]


def test_years_between_stay_dates(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("How many voyages were checked between 2019 and 2020?")
    assert "check_date" in made.sql and data.execute(made.sql).fetchall() == [(5,)]


def test_of_columns_in_one_unit_the_one_named_after_it_is_compared() -> None:
    # wait_time and sail_time are both in minutes; "spent sailing" picks one
    made = plan_question("How many legs spent between 20 and 60 minutes sailing?", [LEGS])
    assert '"sail_time" >= 20' in made.sql and '"sail_time" <= 60' in made.sql


def test_a_range_in_words_and_another_unit_is_of_the_column_before_it() -> None:
    # ("hours" alone would name the one column in hours, the offset: the range's unit is no column of its own)
    waits = TableInfo("legs", (*LEGS.columns, ColumnInfo("offset", "INTEGER", "Offset of the local time, in hours")),
                      description="One row per leg.")
    for question in ("How many legs had a wait time between one and two hours (inclusive)?",
                     "legs with a wait time between 1 and 2 hours: leg id and wait time"):
        made = plan_question(question, [waits])
        assert not made.unaccounted, made
        assert '"wait_time" >= 60' in made.sql and '"wait_time" <= 120' in made.sql and "offset" not in made.sql, \
            made.sql


# --- "at least one <row> <condition>": the rows meeting the condition exist --------------------------------


def test_at_least_one_row_with_a_term_said_after_it(data: duckdb.DuckDBPyConnection) -> None:
    terms = [Term("loaded voyage", "A voyage with its hold full, that is voyages whose full_hold = true.", ("loaded",))]
    made = plan_question("From how many distinct ports was at least one voyage loaded?", [VOYAGES, VESSELS], terms,
                         values_of=lambda _, column: VALUES.get(column, []), relationships=HULLS)
    assert data.execute(made.sql).fetchall() == [(2,)], made.sql


# --- "more <rows> in A than in B": two groups' numbers of rows set against each other --------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Did more voyages leave from Bergen than from Tromso?", True),
    ("Were fewer voyages sailed by Haddock than by Ahab?", True),
    ("How many more voyages did Ahab sail than Haddock?", 1),
])
def test_more_rows_of_one_group_than_of_another(data: duckdb.DuckDBPyConnection, question: str,
                                                expected: object) -> None:
    assert [row[:1] for row in ask(data, question)] == [(expected,)]


# --- Two periods either side of "than" are the groups compared ----------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Was the average distance higher in February than in January?", True),
    ("By how many km was the average distance in February longer than in January?", 166.66666666666666),
    ("Were more voyages checked in February than in January?", True),
])
def test_two_periods_set_against_each_other(data: duckdb.DuckDBPyConnection, question: str, expected: object) -> None:
    assert [row[:1] for row in ask(data, question)] == [(pytest.approx(expected),)]


def test_a_condition_said_as_the_plural_of_its_rows_compares_how_many_each_group_has(
        data: duckdb.DuckDBPyConnection) -> None:
    # Bergen has two full holds, Oslo one
    full = Term("full hold", "A voyage whose hold was full, that is voyages whose full_hold = true.",
                ("full holds",))
    made = plan_question("Did Bergen have more full holds than Oslo?", [VOYAGES, VESSELS], [full],
                         values_of=lambda _, column: VALUES.get(column, []), relationships=HULLS)
    assert not made.unaccounted, made
    assert data.execute(made.sql).fetchall() == [(True, 2, 1)], made.sql


def test_a_yes_or_no_comparison_shows_each_groups_figure_beside_the_answer(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Was the average distance of voyages from Bergen higher than from Tromso?")
    rows = data.execute(made.sql).fetchall()
    assert len(rows) == 1 and len(rows[0]) == 3 and rows[0][0] == (rows[0][1] > rows[0][2]), made.sql
    assert '"average_distance_bergen"' in made.sql, made.sql  # each figure named by its group


# --- "whose trains arrived later on average": the delay at the end the verb names ----------------------------

TRAINS = TableInfo("trains", (ColumnInfo("train_id", "INTEGER"), ColumnInfo("line", "STRING", samples=("Red", "Blue")),
                              ColumnInfo("dep_delay", "INTEGER", "Departure delay in minutes"),
                              ColumnInfo("arr_delay", "INTEGER", "Arrival delay in minutes")),
                   description="One row per train.")


@pytest.fixture(scope="module")
def trains() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE trains (train_id INTEGER, line VARCHAR, dep_delay INTEGER, arr_delay INTEGER)",
                        "INSERT INTO trains VALUES (1, 'Red', 5, 1), (2, 'Red', 7, 3), (3, 'Blue', 0, 9)")


@pytest.mark.parametrize(("question", "expected"), [
    ("Red or Blue - whose trains arrived later on average?", [("Blue", 9.0), ("Red", 2.0)]),
    ("Red or Blue: whose trains departed later on average?", [("Blue", 0.0), ("Red", 6.0)]),
])
def test_a_verb_of_one_end_and_later_measure_that_ends_delay(trains: duckdb.DuckDBPyConnection, question: str,
                                                             expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [TRAINS])
    assert sorted(trains.execute(made.sql).fetchall()) == expected, made.sql


def test_later_with_no_groups_set_against_each_other_is_not_read() -> None:
    try:
        made = plan_question("Which line's trains arrived later on average?", [TRAINS])
    except NoPlan:
        return
    assert "later" in made.unaccounted


# --- "for each of the three ports": how many groups there are, said before the key ------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Average distance for each of the 3 ports", [("Bergen", 350.0), ("Oslo", 200.0), ("Tromso", 400.0)]),
    ("Count the voyages for each of the 3 captains", [("Ahab", 2), ("Haddock", 1), ("Nemo", 2)]),
])
def test_the_number_of_groups_before_a_key(data: duckdb.DuckDBPyConnection, question: str,
                                           expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- "leaving out the ones from Oslo": the rows named again between the verb and the value ---------------------


@pytest.mark.parametrize(("question", "expected"), [
    ("Average distance of voyages, leaving out the ones from Oslo and Tromso", [(350.0,)]),
    ("How many voyages, ruling out those from Oslo?", [(3,)]),
])
def test_leaving_out_the_ones_named_again(data: duckdb.DuckDBPyConnection, question: str,
                                          expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- "anything but Oslo": "but" after a word for every other value excludes it ------------------------------

@pytest.mark.parametrize(("question", "expected"), [
    ("voyages whose port is anything but Oslo: how many?", [(3,)]),
    ("How many voyages from all but Bergen?", [(3,)]),
    ("voyages from any port but Tromso, how many", [(4,)]),
])
def test_anything_but_a_value_excludes_it(data: duckdb.DuckDBPyConnection, question: str,
                                          expected: list[tuple[object, ...]]) -> None:
    assert ask(data, question) == expected


# --- "earliest check": a part of one column's name, which no other column has, names that column -------------

def test_a_part_of_only_one_columns_name_names_it(data: duckdb.DuckDBPyConnection) -> None:
    assert ask(data, "earliest check?") == [(datetime.date(2020, 1, 5),)]


def test_a_part_two_columns_share_names_neither() -> None:
    with pytest.raises(NoPlan):
        plan("average hull?")  # hull_number is in voyages and in vessels


# --- "LGA departures": a plural noun several columns abbreviate alike is the rows, the events they record -------

TRIPS = TableInfo("trips", (ColumnInfo("origin", "STRING"), ColumnInfo("dep_time", "INTEGER", "Departure time, HHMM"),
                            ColumnInfo("sched_dep_time", "INTEGER", "Scheduled departure time, HHMM"),
                            ColumnInfo("dep_delay", "INTEGER", "Departure delay, in minutes"),
                            ColumnInfo("distance", "INTEGER", "Distance, in miles")),
                  description="Trips: one row per trip.")


@pytest.fixture(scope="module")
def trips() -> Iterator[duckdb.DuckDBPyConnection]:
    yield from database("CREATE TABLE trips (origin VARCHAR, dep_time INTEGER, sched_dep_time INTEGER, "
                        "dep_delay INTEGER, distance INTEGER)",
                        "INSERT INTO trips VALUES ('LGA', 900, 850, 10, 700), ('LGA', 1000, 1000, 0, 900), "
                        "('JFK', 1100, 1030, 30, 2500)")


@pytest.mark.parametrize(("question", "expected"), [
    ("average distance of LGA departures", [(800.0,)]),
    ("JFK departures: count them", [(1,)]),
])
def test_a_plural_noun_several_columns_abbreviate_is_the_rows(trips: duckdb.DuckDBPyConnection, question: str,
                                                              expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [TRIPS], values_of=lambda _, column: {"origin": ["LGA", "JFK"]}.get(column, []))
    assert trips.execute(made.sql).fetchall() == expected



# --- "the 2 most frequent captains": how often a group's rows occur is how many there are -----------------------

@pytest.mark.parametrize(("question", "expected"), [
    ("the 2 most frequent captains", [("Ahab", 2), ("Nemo", 2)]),
    ("1 least common port", [("Tromso", 1)]),
    ("the 2 most popular ports", [("Bergen", 2), ("Oslo", 2)]),
])
def test_most_frequent_ranks_groups_by_their_rows(data: duckdb.DuckDBPyConnection, question: str,
                                                  expected: list[tuple[object, ...]]) -> None:
    made = plan(question)
    assert not made.unaccounted
    assert ask(data, question) == expected


# --- "total voyages", "long voyages by port": rows counted where they are named, or a condition said as them ----

LONG = Term("long voyage", "A voyage of more than 250 km, that is voyages whose distance > 250", ("long voyages",))


@pytest.mark.parametrize(("question", "expected"), [
    ("total voyages from Oslo", [(2,)]),
    ("total long voyages", [(3,)]),
    ("long voyages by port", [("Bergen", 1), ("Oslo", 1), ("Tromso", 1)]),
    ("total voyages distance", [(1500,)]),  # a number column named: it is what is added up, not the rows
])
def test_rows_or_a_condition_said_as_rows_are_counted(data: duckdb.DuckDBPyConnection, question: str,
                                                      expected: list[tuple[object, ...]]) -> None:
    made = plan_question(question, [VOYAGES, VESSELS], [LONG], values_of=lambda _, column: VALUES.get(column, []),
                         relationships=HULLS)
    assert not made.unaccounted
    assert sorted(data.execute(made.sql).fetchall(), key=repr) == expected


# --- "Which voyages left Oslo? Captain, distance and port please.": a list of columns as a sentence of its own ----

def test_a_sentence_that_lists_columns_names_the_columns_shown(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Which voyages left Oslo? Captain, distance and port please.")
    assert not made.unaccounted
    assert sorted(data.execute(made.sql).fetchall()) == [("Ahab", 100, "Oslo", 1), ("Nemo", 300, "Oslo", 2)]



# --- "to Seattle": a capitalised word inside the question is a name, not a column's word said loosely -----------

def test_a_capitalised_word_inside_the_question_is_a_name_not_a_column_said_loosely() -> None:
    from convener.analytics.planner.catalog import _token_matches
    from convener.analytics.wording import tokenize

    assert _token_matches(tokenize("earliest flight to Seattle")[-1], "seat", True) == (False, False)
    # the same word in lower case, or opening the question, may still be a column's word said loosely
    assert _token_matches(tokenize("earliest flight to seattle")[-1], "seat", True) == (True, False)
    assert _token_matches(tokenize("Seattle")[0], "seat", True) == (True, False)


# --- "by the year of the check date": a time bucket after "by the" --------------------------------------------

def test_a_bucket_after_by_the_groups_by_it(data: duckdb.DuckDBPyConnection) -> None:
    made = plan("Average distance by the month of the check date?")
    assert ask(data, "Average distance by the month of the check date?") == [
        (datetime.datetime(2020, 1, 1), 200.0), (datetime.datetime(2020, 2, 1), 366.6666666666667)], made.sql


def test_a_terms_words_around_a_word_of_degree_are_the_term_at_that_degree(
        data: duckdb.DuckDBPyConnection) -> None:
    made_up = Term("distance made up", "Kilometres a voyage made up: distance - sea_time, from voyages.",
                   ("km made up",))
    made = plan_question("Which captain made up the most distance on average?", [VOYAGES], [made_up])
    assert made.terms_used == ("distance made up",) and not made.unaccounted
    # (500 - 40) against 315 and 130
    assert [row[0] for row in data.execute(made.sql).fetchall()] == ["Haddock"]


@pytest.mark.parametrize("question", [
    "I'd like to see Oslo and Bergen next to each other: the average distance of their voyages.",
    "Put the average distance of the Oslo voyages next to that of Bergen.",
])
def test_next_to_sets_groups_side_by_side_and_is_no_future(question: str) -> None:
    made = plan(question)
    assert 'GROUP BY "port"' in made.sql and "'Oslo'" in made.sql and not made.unaccounted, made


def test_next_month_is_still_the_future() -> None:
    with pytest.raises(NoPlan, match="future"):
        plan("How many voyages next month?")


def test_rows_counted_by_the_key_other_tables_join_them_by_are_refused() -> None:
    relationships = [Relationship("voyages", ("hull_number",), "vessels", ("hull_number",))]
    with pytest.raises(NoPlan, match="every one counts once"):
        plan_question("Which hull number has the most vessels?", [VESSELS], relationships=relationships)
    made = plan_question("How many vessels per builder?", [VESSELS], relationships=relationships)
    assert 'GROUP BY "builder"' in made.sql


def test_first_before_a_word_of_the_date_columns_description_is_its_words(data: duckdb.DuckDBPyConnection) -> None:
    # check_date is "Date the hold was first inspected with one pallet": "first-pallet checks" are its rows
    made = plan("Count of first-pallet checks by month")
    assert not made.unaccounted, made
    assert sorted(data.execute(made.sql).fetchall())[0][1:] == (2,), made.sql


def test_a_verb_that_says_what_the_description_says_is_its_word(data: duckdb.DuckDBPyConnection) -> None:
    # the vessels' year "the vessel was manufactured": "built" says the same
    made_in = TableInfo("vessels", (*VESSELS.columns[:2], ColumnInfo("year", "INTEGER",
                                                                   "Year the vessel was manufactured")),
                        description=VESSELS.description)
    made = plan_question("Which voyages were on vessels built before 2005? Show the captain and the year built.",
                         [VOYAGES, made_in], values_of=lambda _, column: VALUES.get(column, []), relationships=HULLS)
    assert not made.unaccounted, made
    assert sorted(row[:2] for row in data.execute(made.sql).fetchall()) == [("Ahab", 1990), ("Ahab", 2001),
                                                                             ("Nemo", 1990)], made.sql


def test_a_superlative_of_time_before_a_joined_tables_noun_is_of_its_time(data: duckdb.DuckDBPyConnection) -> None:
    # "the oldest vessel": the vessels' year, not the voyages' check date
    made = plan("Which voyages sailed on the oldest vessel? Give the captain and the vessel's year.")
    assert sorted(row[:2] for row in data.execute(made.sql).fetchall()) == [("Ahab", 1990), ("Nemo", 1990)], made.sql


def test_an_average_over_each_distinct_joined_row_is_refused() -> None:
    # joined, a vessel counts once for every voyage on it: the average per voyage is not the one asked
    with pytest.raises(NoPlan, match="distinct"):
        plan("Across the distinct vessels of Ahab's voyages, what is the average year?")


# --- "voyages whose captain is Ahab or Nemo": a relative "whose" asks no choice between the values ---------------


@pytest.mark.parametrize(("question", "expected"), [
    # (each value had been counted apart, as if "whose" asked which of them)
    ("How many voyages were there whose captain is Ahab or Nemo?", [(4,)]),
    ("How many voyages sailed on vessels whose builder is Kvaerner or Ulstein?", [(5,)]),
])
def test_values_joined_by_or_after_a_relative_whose_are_one_condition(data: duckdb.DuckDBPyConnection, question: str,
                                                                      expected: list[tuple[object, ...]]) -> None:
    assert not plan(question).unaccounted
    assert ask(data, question) == expected
