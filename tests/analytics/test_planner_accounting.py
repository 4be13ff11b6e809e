"""The offline planner's accounting of question words: a comparison, an ordinal or superlative, a time bucket,
an average, a unit or a named column that no reading step turned into SQL makes the plan say so (or refuse),
never answer as if the word were not there; and the two readings that had let such words slip through."""

from __future__ import annotations

import pytest

from convener.analytics.planner import NoPlan, Plan, Relationship, Term, plan_question
from convener.analytics.shapes import ColumnInfo, TableInfo

FLIGHTS = TableInfo("flights", (
    ColumnInfo("flight", "INTEGER"), ColumnInfo("tailnum", "STRING"), ColumnInfo("carrier", "STRING"),
    ColumnInfo("flight_date", "DATE"), ColumnInfo("distance", "INTEGER"), ColumnInfo("air_time", "INTEGER"),
    ColumnInfo("dep_delay", "INTEGER"), ColumnInfo("arr_delay", "INTEGER"), ColumnInfo("cancelled", "BOOLEAN")))
PLANES = TableInfo("planes", (
    ColumnInfo("tailnum", "STRING"), ColumnInfo("manufacturer", "STRING"), ColumnInfo("engines", "INTEGER")))
VALUES = {("flights", "carrier"): ["UA", "AA"], ("planes", "manufacturer"): ["BOEING", "AIRBUS"]}
TERMS = (Term("average speed", "Miles per hour: distance / (air_time / 60)"),
         Term("late arrival", "A flight arriving late: arr_delay > 15"))


def plan(question: str) -> Plan:
    return plan_question(question, [FLIGHTS], TERMS, values_of=lambda t, c: VALUES.get((t, c), []),
                         relationships=(Relationship("flights", ("tailnum",), "planes", ("tailnum",)),),
                         related=[PLANES])


def said_or_refused(question: str) -> tuple[str, ...] | None:
    """The words the plan says it could not use, or None when the question was refused."""
    try:
        return plan(question).unaccounted
    except NoPlan:
        return None


@pytest.mark.parametrize(("question", "word"), [
    ("How many flights departed more than an hour late?", "than"),  # a comparison with no number read
    ("Which day of the month has the most flights?", "month"),  # grouped by date, not by day of the month
    ("List the flights that were first cancelled", "first"),  # listed unordered
    ("What is the average seat count of the flights?", "average"),  # an average of nothing
])
def test_a_structure_word_left_unread_is_named_or_refused(question: str, word: str) -> None:
    unaccounted = said_or_refused(question)
    assert unaccounted is None or word in unaccounted, plan(question).sql


@pytest.mark.parametrize("question", ["On what date was the first cancelled flight?",
                                      "On what date was the very first cancelled flight?"])
def test_the_first_row_of_a_condition_is_the_earliest_date_of_those_rows(question: str) -> None:
    made = plan(question)
    assert not made.unaccounted and made.sql.startswith('SELECT MIN("flight_date")') and "AVG" not in made.sql


def test_a_ranking_accounts_for_its_superlative() -> None:
    made = plan("Which carrier had the most cancelled flights?")
    assert not made.unaccounted and "LIMIT 1" in made.sql


def test_a_unit_after_its_number_or_asked_for_is_accounted() -> None:
    assert not plan("How many flights had a distance over 1000 miles?").unaccounted
    assert not plan("What is the total distance of UA flights in miles?").unaccounted


def test_a_named_column_left_out_of_the_plan_is_said() -> None:
    """A column the question names that ends as neither key, filter nor measure is no description of the rows:
    the answer must not pass off the ungrouped average as the one asked for."""
    made = plan("Average air time of flights, with their manufacturer")
    assert made.unaccounted == ("manufacturer",), made.sql


def test_of_two_column_names_the_last_is_the_measure() -> None:
    assert 'MAX("distance")' in plan("What's the longest flight distance?").sql


def test_a_formula_named_with_its_average_keeps_it_under_a_superlative() -> None:
    made = plan("Which carrier has the highest average speed?")
    assert "AVG((distance / (air_time / 60)))" in made.sql and "DESC LIMIT 1 OFFSET 0" in made.sql, made.sql


@pytest.mark.parametrize("question", [
    "How many flights were refunded?", "How many of the cancelled flights were overbooked?",
    "What is the average distance of the damaged flights?",
])
def test_an_unknown_participle_that_is_the_condition_is_refused(question: str) -> None:
    with pytest.raises(NoPlan, match="tells which rows"):
        plan(question)


def test_a_participle_of_how_the_data_holds_rows_is_not_a_condition() -> None:
    assert plan("How many flights are listed?").sql.startswith("SELECT COUNT")


def test_a_unit_finds_the_column_measured_in_it() -> None:
    """"more than 1,000 miles" where the comparison names no column: the one column described in miles (not
    a formula in miles per hour)."""
    table = TableInfo("flights", (
        ColumnInfo("origin", "STRING"), ColumnInfo("distance", "INTEGER", description="Distance flown, in miles"),
        ColumnInfo("air_time", "INTEGER", description="Time in the air, in minutes"),
        ColumnInfo("body_mass_g", "INTEGER")))
    assert 'WHERE "distance" > 1000' in plan_question("How many flights flew more than 1,000 miles?", [table]).sql
    assert '"distance" > 1000' in plan_question("How many flights were longer than 1,000 miles?", [table]).sql
    assert '"body_mass_g" > 5000' in plan_question("How many flights had more than 5000 grams?", [table]).sql
    with pytest.raises(NoPlan):
        plan_question("How many flights had more than 5 litres?", [table])


def test_a_unit_the_rows_own_column_converts_to_is_not_another_tables_column_in_it() -> None:
    """"Total hours in the air … for flights out of Harbourton": the flights' minutes in the air, in hours (the
    ports' time zone offset, their one column in hours, had been summed)."""
    flights = TableInfo("flights", (
        ColumnInfo("flight_id", "INTEGER"), ColumnInfo("origin", "STRING", "Code of the port the flight left from"),
        ColumnInfo("flight_date", "DATE"),
        ColumnInfo("air_time", "INTEGER", description="Time spent in the air, in minutes")))
    ports = TableInfo("ports", (ColumnInfo("code", "STRING"), ColumnInfo("name", "STRING"),
                                ColumnInfo("tz", "INTEGER", "Offset of the port's time zone from GMT, in hours")))
    values = {("ports", "name"): ["Harbourton"], ("ports", "code"): ["HAR"], ("flights", "origin"): ["HAR"]}
    sql = plan_question("Total hours in the air per month for flights out of Harbourton", [flights],
                        values_of=lambda t, c: values.get((t, c), []), related=[ports],
                        keys_of=lambda table, key, column, names: ["HAR"] if column == "name" else list(names),
                        relationships=[Relationship("flights", ("origin",), "ports", ("code",))]).sql
    assert '"air_time" * 0.01666' in sql and '"tz"' not in sql, sql


def test_a_share_written_in_percent_is_a_share() -> None:
    assert "100.0 *" in plan("What share of flights were cancelled, in percent?").sql
    assert "100.0 *" in plan("What proportion of UA flights were cancelled, as a percentage?").sql


def test_shares_of_two_groups_are_not_one_share_of_both() -> None:
    compared = plan("Compare the share of cancelled flights of UA and AA, in percent").sql
    assert 'GROUP BY "carrier"' in compared and "\"carrier\" IN ('UA', 'AA')" in compared
    assert "GROUP BY" not in plan("What share of the flights of UA or AA were cancelled?").sql


def test_a_joined_tables_name_before_its_column_groups_by_it() -> None:
    """"per plane manufacturer": the group is the joined table's column, and flights on no known plane make
    no group of their own."""
    sql = plan("Average arrival delay per plane manufacturer").sql
    assert 'GROUP BY "planes"."manufacturer"' in sql and " JOIN " in sql and "LEFT JOIN" not in sql, sql


DESCRIBED = TableInfo("flights", FLIGHTS.columns,
                      description="Flights that departed New York City (JFK, LGA, EWR) in 2013: one row per "
                                  "flight, from the FAA registry.")


@pytest.mark.parametrize(("question", "said"), [
    ("How many flights out of New York?", ()),  # two words side by side as the description has them
    ("How many flights are in the registry?", ()),  # the thing a clause of the description ends on
    ("How many new flights?", ("new",)),  # a word of the description said alone says something more
])
def test_a_tables_description_accounts_for_its_words_only_as_it_says_them(question: str,
                                                                          said: tuple[str, ...]) -> None:
    assert plan_question(question, [DESCRIBED]).unaccounted == said


def test_a_word_several_columns_share_before_another_column_is_not_its_modifier() -> None:
    # "delay" is dep_delay or arr_delay, not a word about the year the plane was built
    with pytest.raises(NoPlan, match="say which"):
        plan_question("average delay year",
                      [TableInfo("flights", (*FLIGHTS.columns, ColumnInfo("year", "INTEGER")))])
    assert 'MAX("distance")' in plan("What's the longest flight distance?").sql  # "flight" names one column


def test_how_many_of_what_the_top_rows_did_is_declined_not_answered_with_those_rows() -> None:
    with pytest.raises(NoPlan, match="superlative"):
        plan("How many flights did the longest flight make?")


def test_a_participle_of_a_number_column_before_the_rows_is_a_condition_left_unread() -> None:
    # "delayed flights" are some flights: not settled into the departure delay averaged, nor dropped
    assert plan("What is the average departure delay of delayed flights?").unaccounted == ("delayed",)
    trips = TableInfo("trips", (ColumnInfo("trip_id", "INTEGER"), ColumnInfo("delay", "INTEGER")),
                      description="One row per trip.")
    assert plan_question("average delay of delayed trips", [trips]).unaccounted == ("delayed",)


def test_an_aggregate_of_the_rows_a_ranking_picks_is_declined_not_answered_with_the_rows() -> None:
    with pytest.raises(NoPlan, match="ranking picks"):
        plan("What is the average distance of the 5 longest flights?")


def test_the_column_named_as_the_rows_are_is_no_measure_to_average() -> None:
    # flight is each flight's number: "the average flight" is about flights, not the mean of their numbers
    with pytest.raises(NoPlan, match="numbers the rows"):
        plan("What is the average flight from JFK?")
    # nor, beside groups, one no word aggregates: "which flight was it" is not each day's highest number
    with pytest.raises(NoPlan, match="numbers the rows"):
        plan("On what date did the biggest departure delay happen, and which flight was it?")


def test_rows_set_against_each_other_by_the_same_are_not_all_the_rows() -> None:
    assert said_or_refused("Which flights were flown on the same day?") in (None, ("same",))
    assert said_or_refused("Which flights were flown on the same day?") != ()


def test_each_joined_row_once_is_said_when_not_read() -> None:
    # ("the average engines across the distinct UA planes" averaged over flights: a plane once a flight)
    assert said_or_refused("Across the distinct UA planes, what is the average number of engines?") \
        in (None, ("distinct",))
    # a listing reads it, and the rows of a table are distinct already
    assert plan("List the distinct carriers of the flights with a late arrival").unaccounted == ()
    distinct = plan_question("What is the average number of engines across distinct planes?", [PLANES])
    assert distinct.unaccounted == (), distinct


def test_a_sign_of_a_word_several_columns_share_is_declined_not_given_to_one() -> None:
    with pytest.raises(NoPlan, match="say which"):
        plan("How many flights had a negative delay?")
    assert '"dep_delay" < 0' in plan("How many flights had a negative departure delay?").sql


BUILT = TableInfo("planes", (ColumnInfo("tailnum", "STRING"), ColumnInfo("year", "INTEGER", "Year the plane was built"),
                             ColumnInfo("seats", "INTEGER")), description="One row per plane.")


@pytest.mark.parametrize("question", ["How many planes were built each month?", "Seats per quarter"])
def test_a_column_of_years_is_not_cut_into_months(question: str) -> None:
    with pytest.raises(NoPlan, match="holds years"):
        plan_question(question, [BUILT])
    assert "GROUP BY" in plan_question("How many planes were built each year?", [BUILT]).sql


PARCELS = TableInfo("parcels", (ColumnInfo("parcel_id", "INTEGER"), ColumnInfo("mass_g", "INTEGER", "Mass in grams"),
                                ColumnInfo("route_km", "INTEGER", "Distance carried in km")),
                    description="One row per parcel.")


@pytest.mark.parametrize("question", ["How many parcels were weighed?",
                                      "Of the parcels that were weighed, what share weigh more than 500 g?"])
def test_a_verb_of_measure_without_its_measure_is_a_condition_not_filler(question: str) -> None:
    # which parcels were weighed (a mass known) is no number the verb carries: refused or said, never dropped
    try:
        made = plan_question(question, [PARCELS])
    except NoPlan:
        return
    assert "weighed" in made.unaccounted, made


def test_a_verb_of_measure_carries_the_measure_after_it() -> None:
    made = plan_question("How many parcels weighed over 500 grams?", [PARCELS])
    assert "mass_g" in made.sql and not made.unaccounted, made


def test_the_rows_own_noun_with_an_aggregate_and_a_bound_in_a_unit_averages_the_unit_s_column() -> None:
    # ("the average UA flight": the flight number had been a second measure, and the question declined)
    table = TableInfo("flights", (
        ColumnInfo("flight", "INTEGER", "Flight number"), ColumnInfo("carrier", "STRING"),
        ColumnInfo("distance", "INTEGER", "Distance flown, in miles")), description="Flights: one row per flight.")
    made = plan_question("Is the average UA flight longer than 1,000 miles?", [table],
                         values_of=lambda _, column: ["UA"] if column == "carrier" else [])
    assert made.sql == """SELECT AVG("distance") > 1000 AS "answer" FROM "flights" WHERE "carrier" = 'UA'""", made


def test_worse_and_better_between_two_groups_are_the_measures_ends() -> None:
    # (a worse delay is a longer one, a better one shorter; the comparatives had been unread, the question declined)
    assert plan("Is the average arrival delay of UA flights worse than that of AA flights?").sql.startswith(
        """SELECT AVG(CASE WHEN "carrier" = 'UA' THEN "arr_delay" END) > AVG(CASE WHEN "carrier" = 'AA'""")
    assert plan("Is the average arrival delay of UA flights better than that of AA flights?").sql.startswith(
        """SELECT AVG(CASE WHEN "carrier" = 'AA' THEN "arr_delay" END) > AVG(CASE WHEN "carrier" = 'UA'""")
    with pytest.raises(NoPlan, match="worse means higher or lower"):
        plan("Is the average distance of UA flights worse than that of AA flights?")
