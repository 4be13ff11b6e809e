"""AIP-160 filters compiled by convener.api.filtering, executed for real against a small table.

Row selection runs on in-memory SQLite and, when CONVENER_TEST_DATABASE_URL is set, on that
database too (a uniquely named table, dropped afterwards).
"""

from __future__ import annotations

import calendar
import os
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    func,
    select,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.pool import StaticPool

from convener.api.errors import InvalidArgument
from convener.api.filtering import (
    MAX_COMPARISONS,
    MAX_DEPTH,
    MAX_FILTER_LENGTH,
    FieldType,
    FilterField,
    compile_filter,
)

DATABASE_URL_ENV = "CONVENER_TEST_DATABASE_URL"
TEXT, AUDIO, IMAGE = 1, 2, 4


def micros(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> int:
    return calendar.timegm((y, mo, d, h, mi, s)) * 1_000_000 + us


class Row(NamedTuple):
    id: int
    name: str | None
    turns: int | None
    active: bool | None
    state: str | None
    start: int | None
    inputs: int | None
    root: str | None


LAST_MICRO_OF_2023 = micros(2023, 12, 31, 23, 59, 59, 999_999)
ROWS = [
    Row(1, "alpha", 1, True, "LIVE", micros(2024, 1, 1), TEXT, "agent.run"),
    Row(2, "beta", 2, False, "DRAFT", micros(2024, 1, 1, us=500_000), TEXT | AUDIO, "tool.call"),
    Row(3, "gamma", 3, True, "LIVE", micros(2024, 6, 1, 12), AUDIO, None),
    Row(4, "100% sure", 4, True, "ARCHIVED", LAST_MICRO_OF_2023, IMAGE, "agent.plan"),
    Row(5, "1000 sure", 5, False, "DRAFT", micros(2025, 3, 1), TEXT | IMAGE, "agent.plan"),
    Row(6, "snake_case", 6, None, "LIVE", None, 0, "tool.call"),
    Row(7, "snakeXcase", -3, False, None, micros(1969, 12, 31, 23, 59, 59), None, ""),
    Row(8, "a/b", 0, True, "DRAFT", micros(2024, 1, 1, 5, 30), TEXT | AUDIO | IMAGE, "agent.run"),
    Row(9, "", None, False, "LIVE", micros(2024, 1, 2), AUDIO | IMAGE, None),
    Row(10, None, 10, True, "ARCHIVED", micros(2024, 1, 1), TEXT, "agent.run"),
    Row(11, 'say "hi" it\'s \\ ok', 11, True, "LIVE", micros(2024, 2, 1), TEXT, "agent.run"),
    Row(12, "café ☕", 12, False, "DRAFT", micros(2024, 2, 2), AUDIO, "agent.run"),
    Row(13, "x' OR 1=1 --", 13, True, "LIVE", micros(2024, 2, 3), TEXT, "agent.run"),
    Row(14, "star*", 14, True, "LIVE", micros(2024, 2, 4), TEXT, "agent.run"),
    Row(15, "stargazer", 15, True, "LIVE", micros(2024, 2, 5), TEXT, "agent.run"),
]
ALL_IDS = {row.id for row in ROWS}


def make_table(metadata: MetaData, name: str) -> Table:
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("name", String(200)),
        Column("turn_count", Integer),
        Column("active", Boolean),
        Column("state", String(20)),
        Column("start_time", BigInteger),
        Column("input_types", Integer),
        Column("root_span_name", String(200)),
    )


def fields_for(table: Table) -> dict[str, FilterField]:
    c = table.c
    return {
        "name": FilterField(c.name, FieldType.STRING),
        "turnCount": FilterField(c.turn_count, FieldType.INTEGER),
        "active": FilterField(c.active, FieldType.BOOLEAN),
        "state": FilterField(c.state, FieldType.ENUM, ("LIVE", "DRAFT", "ARCHIVED")),
        "startTime": FilterField(c.start_time, FieldType.TIMESTAMP),
        "inputTypes": FilterField(
            c.input_types,
            FieldType.ENUM,
            repeated_bits={"TEXT": TEXT, "AUDIO": AUDIO, "IMAGE": IMAGE},
        ),
        "rootSpan.name": FilterField(c.root_span_name, FieldType.STRING),
    }


TEMPLATE = make_table(MetaData(), "t")
FIELDS = fields_for(TEMPLATE)


@dataclass
class Db:
    engine: Engine
    table: Table
    fields: dict[str, FilterField]

    def ids(self, text: str | None) -> set[int]:
        statement = select(self.table.c.id)
        condition = compile_filter(text, self.fields)
        if condition is not None:
            statement = statement.where(condition)
        with self.engine.connect() as connection:
            return set(connection.execute(statement).scalars())

    def assert_intact(self) -> None:
        with self.engine.connect() as connection:
            count = connection.execute(select(func.count()).select_from(self.table)).scalar_one()
        assert count == len(ROWS)

    def rejects(self, text: str, *fragments: str) -> str:
        with pytest.raises(InvalidArgument) as caught:
            compile_filter(text, self.fields)
        message = caught.value.message
        for fragment in fragments:
            assert fragment in message, (fragment, message)
        self.assert_intact()
        return message


def where(predicate: Callable[[Row], Any]) -> set[int]:
    return {row.id for row in ROWS if predicate(row)}


BACKENDS = ["sqlite"] + (["postgresql"] if os.environ.get(DATABASE_URL_ENV) else [])


@pytest.fixture(scope="module", params=BACKENDS)
def db(request: pytest.FixtureRequest) -> Iterator[Db]:
    if request.param == "sqlite":
        engine = create_engine("sqlite://", poolclass=StaticPool)
    else:
        engine = create_engine(os.environ[DATABASE_URL_ENV])
    metadata = MetaData()
    table = make_table(metadata, f"filtering_test_{uuid.uuid4().hex[:12]}")
    metadata.create_all(engine)
    columns = [column.name for column in table.columns]
    with engine.begin() as connection:
        connection.execute(table.insert(), [dict(zip(columns, row, strict=True)) for row in ROWS])
    try:
        yield Db(engine, table, fields_for(table))
    finally:
        metadata.drop_all(engine)
        engine.dispose()


# ---------------------------------------------------------------- structure and precedence


def test_blank_filter_selects_everything(db: Db) -> None:
    assert compile_filter(None, db.fields) is None
    assert compile_filter("", db.fields) is None
    assert compile_filter(" \t\r\n ", db.fields) is None
    assert db.ids("") == ALL_IDS


def test_or_binds_tighter_than_and(db: Db) -> None:
    # a AND (b OR c), not (a AND b) OR c
    assert db.ids("turnCount = 1 AND turnCount = 2 OR state = LIVE") == {1}


def test_parentheses_override_precedence(db: Db) -> None:
    expected = where(lambda r: r.state == "LIVE")
    assert db.ids("(turnCount = 1 AND turnCount = 2) OR state = LIVE") == expected


def test_juxtaposition_is_an_implicit_and(db: Db) -> None:
    explicit = db.ids("state = LIVE AND active = true")
    assert explicit == where(lambda r: r.state == "LIVE" and r.active is True)
    assert db.ids("state = LIVE active = true") == explicit
    assert db.ids("state=LIVE(active=true)") == explicit


def test_or_binds_tighter_than_juxtaposition(db: Db) -> None:
    assert db.ids("turnCount = 1 turnCount = 2 OR state = LIVE") == {1}


def test_not_and_minus_negate_a_comparison(db: Db) -> None:
    expected = where(lambda r: r.state != "LIVE")  # includes the row whose state is unset
    assert 7 in expected
    assert db.ids("NOT state = LIVE") == expected
    assert db.ids("-state = LIVE") == expected
    assert db.ids("state != LIVE") == expected


def test_negating_a_group_applies_de_morgan_and_keeps_unset_fields(db: Db) -> None:
    group = where(lambda r: r.state == "LIVE" or r.active is True)
    assert db.ids("state = LIVE OR active = true") == group
    assert db.ids("NOT (state = LIVE OR active = true)") == ALL_IDS - group
    assert db.ids("-(state = LIVE OR active = true)") == ALL_IDS - group


def test_double_negation_cancels(db: Db) -> None:
    assert db.ids("NOT NOT turnCount > 3") == db.ids("turnCount > 3")
    assert db.ids("--turnCount > 3") == db.ids("turnCount > 3")
    assert db.ids("NOT -(NOT turnCount > 3)") == ALL_IDS - db.ids("turnCount > 3")


def test_keywords_are_uppercase_only(db: Db) -> None:
    db.rejects("state = LIVE and active = true", 'after "and"', "position 14")
    db.rejects("not state = LIVE", 'after "not"', "position 1")


def test_nesting_up_to_the_limit_is_accepted(db: Db) -> None:
    nested = "(" * MAX_DEPTH + "turnCount = 1" + ")" * MAX_DEPTH
    assert db.ids(nested) == {1}
    assert db.ids("NOT " * MAX_DEPTH + "turnCount = 1") == {1}


# ---------------------------------------------------------------- strings


def test_string_equality_is_exact(db: Db) -> None:
    assert db.ids('name = "alpha"') == {1}
    assert db.ids("name = alpha") == {1}
    assert db.ids("name = 'alpha'") == {1}
    assert db.ids('name = "alph"') == set()
    assert db.ids('name = ""') == {9}


def test_string_inequality_includes_unset_values(db: Db) -> None:
    assert db.ids('name != "alpha"') == ALL_IDS - {1}


def test_string_ordering_is_lexicographic(db: Db) -> None:
    assert db.ids('name < "b"') == where(lambda r: r.name is not None and r.name < "b")
    assert db.ids('name >= "snake"') == {6, 7, 13, 14, 15}
    assert db.ids('name <= "beta"') == where(lambda r: r.name is not None and r.name <= "beta")
    assert db.ids('name > "stargazer"') == {13}


def test_string_wildcards_match_prefix_suffix_and_contains(db: Db) -> None:
    assert db.ids('name = "gam*"') == {3}
    assert db.ids('name = "*ta"') == {2}
    assert db.ids('name = "*am*"') == {3}
    assert db.ids("name = star*") == {14, 15}
    assert db.ids('name = "*"') == ALL_IDS - {10}
    assert db.ids('name != "snake*"') == ALL_IDS - {6, 7}


def test_wildcards_treat_percent_underscore_and_slash_literally(db: Db) -> None:
    assert db.ids('name = "100%*"') == {4}
    assert db.ids('name = "*e_c*"') == {6}
    assert db.ids('name = "a/*"') == {8}
    assert db.ids('name = "*%"') == set()


def test_escaped_asterisk_is_not_a_wildcard(db: Db) -> None:
    assert db.ids('name = "star\\*"') == {14}
    assert db.ids('name = "star*"') == {14, 15}


def test_has_on_a_string_is_a_substring_match(db: Db) -> None:
    assert db.ids('name:"am"') == {3}
    assert db.ids('name:"%"') == {4}
    assert db.ids("name:_") == {6}
    assert db.ids('name:"*sure*"') == {4, 5}


def test_quoted_strings_support_backslash_escapes(db: Db) -> None:
    assert db.ids('name = "say \\"hi\\" it\'s \\\\ ok"') == {11}
    assert db.ids("name = 'say \"hi\" it\\'s \\\\ ok'") == {11}
    assert db.ids('name = "tab\\there\\nnewline\\r"') == set()


def test_unicode_string_literals_match(db: Db) -> None:
    assert db.ids('name = "café ☕"') == {12}
    assert db.ids('name:"☕"') == {12}


def test_dotted_fields_resolve_through_traversal(db: Db) -> None:
    agents = where(lambda r: (r.root or "").startswith("agent."))
    assert db.ids('rootSpan.name = "agent.*"') == agents
    assert db.ids('rootSpan.name:"plan"') == {4, 5}
    db.rejects("rootSpan = x", 'unknown field "rootSpan"')
    db.rejects("rootSpan.nam = x", 'unknown field "rootSpan.nam"')


# ---------------------------------------------------------------- integers, booleans, enums


def test_integer_supports_every_ordering_operator(db: Db) -> None:
    def turns(test: Callable[[int], bool]) -> set[int]:
        return where(lambda r: r.turns is not None and test(r.turns))

    assert db.ids("turnCount = 3") == {3}
    assert db.ids("turnCount != 3") == ALL_IDS - {3}
    assert db.ids("turnCount < 2") == turns(lambda t: t < 2)
    assert db.ids("turnCount <= 2") == turns(lambda t: t <= 2)
    assert db.ids("turnCount > 12") == turns(lambda t: t > 12)
    assert db.ids("turnCount >= 12") == turns(lambda t: t >= 12)
    assert db.ids("turnCount = -3") == {7}
    assert db.ids("turnCount>-1 turnCount<+2") == {1, 8}
    assert db.ids('turnCount = "4"') == {4}


def test_integer_rejects_non_integers(db: Db) -> None:
    db.rejects("turnCount = abc", 'field turnCount expects an integer, got "abc"', "position 13")
    db.rejects("turnCount = 1.5", "expects an integer")
    db.rejects("turnCount > 9223372036854775808", "expects an integer")
    db.rejects("turnCount > 99999999999999999999999", "expects an integer")
    db.rejects("turnCount:3", 'operator ":" is not supported for field turnCount')


def test_boolean_equality(db: Db) -> None:
    assert db.ids("active = true") == where(lambda r: r.active is True)
    assert db.ids("active = false") == where(lambda r: r.active is False)
    assert db.ids("active != true") == where(lambda r: r.active is not True)
    db.rejects("active = yes", "expects true or false")
    db.rejects("active = TRUE", "expects true or false")
    db.rejects("active < true", 'operator "<" is not supported for field active')


def test_enum_values_may_be_bare_or_quoted(db: Db) -> None:
    live = where(lambda r: r.state == "LIVE")
    assert db.ids("state = LIVE") == live
    assert db.ids('state = "LIVE"') == live
    assert db.ids("state = 'LIVE'") == live
    assert db.ids("state:LIVE") == live
    assert db.ids("state != DRAFT") == where(lambda r: r.state != "DRAFT")


def test_enum_rejects_unknown_values_and_ordering(db: Db) -> None:
    db.rejects("state = live", "expects one of LIVE, DRAFT, ARCHIVED", '"live"', "position 9")
    db.rejects("state = LI*", "expects one of")
    db.rejects("state > LIVE", 'operator ">" is not supported for field state', "position 7")


# ---------------------------------------------------------------- timestamps


def test_timestamps_compare_as_instants(db: Db) -> None:
    bound = micros(2024, 1, 1)
    later = where(lambda r: r.start is not None and r.start > bound)
    assert db.ids('startTime > "2024-01-01T00:00:00Z"') == later
    assert db.ids('startTime >= "2025-03-01T00:00:00Z"') == {5}
    assert db.ids('startTime < "1970-01-01T00:00:00Z"') == {7}
    assert db.ids('startTime <= "2023-12-31T23:59:59.999999Z"') == {4, 7}
    assert db.ids('startTime != "2024-01-01T00:00:00Z"') == ALL_IDS - {1, 10}


def test_timestamps_accept_offsets(db: Db) -> None:
    assert db.ids('startTime = "2024-01-01T05:30:00+05:30"') == {1, 10}
    assert db.ids('startTime = "2023-12-31T19:00:00-05:00"') == {1, 10}
    assert db.ids("startTime = '2024-01-01t05:30:00z'") == {8}


def test_timestamp_fractions_truncate_to_microseconds(db: Db) -> None:
    assert db.ids('startTime = "2024-01-01T00:00:00.5Z"') == {2}
    assert db.ids('startTime = "2024-01-01T00:00:00.500000999Z"') == {2}
    assert db.ids('startTime = "2023-12-31T23:59:59.9999999Z"') == {4}
    assert db.ids('startTime = "2024-01-01T00:00:00.000000001Z"') == {1, 10}


def test_timestamps_reject_malformed_values(db: Db) -> None:
    for bad in [
        "yesterday",
        "2024-01-01",
        "2024-02-30T00:00:00Z",
        "2024-01-01T24:00:00Z",
        "2024-01-01T00:00:00",
        "2024-01-01T00:00:00+24:00",
        "2024-01-01T00:00:00.1234567890Z",
        "0000-01-01T00:00:00Z",
        "\uff12\uff10\uff12\uff14-01-01T00:00:00Z",  # fullwidth digits,
    ]:
        db.rejects(f'startTime > "{bad}"', "field startTime expects an RFC 3339 timestamp")
    db.rejects("startTime > 2024-01-01T00:00:00Z", 'unexpected ":"', "quote values")


# ---------------------------------------------------------------- repeated enums and presence


def test_repeated_enum_has_means_contains(db: Db) -> None:
    audio = where(lambda r: (r.inputs or 0) & AUDIO)
    assert db.ids("inputTypes:AUDIO") == audio
    assert db.ids("inputTypes = AUDIO") == audio
    assert db.ids('inputTypes:"AUDIO"') == audio
    assert db.ids("inputTypes:AUDIO inputTypes:IMAGE") == {8, 9}


def test_repeated_enum_not_equal_means_does_not_contain(db: Db) -> None:
    no_audio = ALL_IDS - where(lambda r: (r.inputs or 0) & AUDIO)
    assert 7 in no_audio and 6 in no_audio  # unset and empty masks
    assert db.ids("inputTypes != AUDIO") == no_audio
    assert db.ids("-inputTypes:AUDIO") == no_audio
    assert db.ids("NOT inputTypes:AUDIO") == no_audio


def test_repeated_enum_rejects_unknown_values_and_ordering(db: Db) -> None:
    db.rejects("inputTypes:VIDEO", "expects one of TEXT, AUDIO, IMAGE", '"VIDEO"')
    db.rejects("inputTypes > TEXT", 'operator ">" is not supported for field inputTypes')


def test_has_star_tests_presence(db: Db) -> None:
    assert db.ids("name:*") == where(lambda r: r.name)  # neither unset nor empty
    assert db.ids("-name:*") == {9, 10}
    assert db.ids("turnCount:*") == where(lambda r: r.turns is not None)
    assert db.ids("active:*") == where(lambda r: r.active is not None)
    assert db.ids("state:*") == where(lambda r: r.state is not None)
    assert db.ids("startTime:*") == where(lambda r: r.start is not None)
    assert db.ids("inputTypes:*") == where(lambda r: r.inputs)
    assert db.ids("rootSpan.name:*") == where(lambda r: r.root)
    assert db.ids('name:"*"') == db.ids("name:*")
    assert db.ids('name:"\\*"') == {14}  # an escaped star is a substring, not presence


# ---------------------------------------------------------------- hostile input


def test_sql_injection_in_a_literal_is_only_a_value(db: Db) -> None:
    assert db.ids('name = "x\' OR 1=1 --"') == {13}
    assert db.ids('name = "\'; DROP TABLE t; --"') == set()
    assert db.ids('name = "*\'; DELETE FROM x; --*"') == set()
    db.rejects("name = x' OR 1=1 --", "unterminated string", "position 9")
    db.assert_intact()


def test_sql_injection_in_field_names_is_rejected(db: Db) -> None:
    db.rejects("name; DROP TABLE t", 'unexpected character ";"', "position 5")
    db.rejects('name = "x"; DROP TABLE t', 'unexpected character ";"')
    listing = "filterable fields: active, inputTypes, name, rootSpan.name, startTime, state, turnCount"
    db.rejects("id = 1", 'unknown field "id" at position 1; ' + listing)
    db.rejects("1=1", 'unknown field "1"')
    db.rejects('"name" = "x"', "expected a field name")
    db.rejects("name) OR (1=1", 'expected an operator (= != < <= > >= :) after "name"')
    db.rejects(f"{db.table.name}.name = x", "unknown field")


def test_field_names_are_case_sensitive(db: Db) -> None:
    db.rejects('Name = "alpha"', 'unknown field "Name"')
    db.rejects("turncount = 1", 'unknown field "turncount"')


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ('name = "alpha', ("unterminated string", "position 8")),
        ("name = 'alpha", ("unterminated string", "position 8")),
        ('name = "alpha\\', ("unterminated string",)),
        ('name = "\\q"', ("unknown escape sequence \\q", "position 9")),
        ("name =", ('expected a value after "="', "position 6")),
        ("name = AND turnCount = 1", ('expected a value after "="',)),
        ("name == x", ('expected a value after "="', "position 6")),
        ("= x", ('expected a comparison, got "="', "position 1")),
        ("name", ('expected an operator (= != < <= > >= :) after "name"', "position 1")),
        ("name = x AND", ('expected a comparison after "AND"', "position 10")),
        ("name = x OR", ('expected a comparison after "OR"', "position 10")),
        ("AND name = x", ('expected a comparison, got "AND"', "position 1")),
        ("name = x OR OR name = y", ('expected a comparison, got "OR"', "position 13")),
        ("NOT", ('expected a comparison after "NOT"', "position 1")),
        ("-", ('expected a comparison after "-"', "position 1")),
        ("()", ('expected a comparison, got ")"', "position 2")),
        ("name = x ()", ('expected a comparison, got ")"', "position 11")),
        ("(name = x", ('missing ")" for the "("', "position 1")),
        ("name = x)", ('unexpected ")"', "position 9")),
        ("name = x y", ("expected an operator", 'after "y"', "position 10")),
        ("name ! x", ('unexpected character "!"', "position 6")),
        ("name = x, y", ('unexpected character ","', "position 9")),
        ('name = "a" "b"', ("expected a field name",)),
        ("name = fo@o", ('unexpected character "@"',)),
    ],
)
def test_syntax_errors_name_the_problem_and_position(db: Db, text: str, fragments: tuple[str, ...]) -> None:
    message = db.rejects(text, *fragments)
    assert message.startswith("filter: ")


def test_too_long_filters_are_rejected_before_parsing(db: Db) -> None:
    megabyte = 'name = "' + "x" * 1_000_000 + '"'
    limit = f"filter is {len(megabyte)} characters long; the limit is {MAX_FILTER_LENGTH}"
    db.rejects(megabyte, limit)
    db.rejects("(" * 10_000 + "name = x" + ")" * 10_000, "characters long")
    db.rejects("NOT " * 10_000 + "name = x", "characters long")
    db.rejects("-" * 10_000 + "name = x", "characters long")


def test_nesting_beyond_the_limit_is_rejected_without_recursion_errors(db: Db) -> None:
    depth_message = f"nesting deeper than {MAX_DEPTH} levels"
    db.rejects("(" * 2000 + "name = x" + ")" * 2000, depth_message, f"position {MAX_DEPTH + 1}")
    db.rejects("(" * 4000, depth_message)
    db.rejects("NOT " * 1000 + "name = x", depth_message, f"position {4 * MAX_DEPTH + 1}")
    db.rejects("-" * 4000 + "name = x", depth_message)
    db.rejects("-(" * 2000, depth_message)


def test_too_many_comparisons_are_rejected(db: Db) -> None:
    many = " OR ".join(["turnCount = 1"] * MAX_COMPARISONS)
    assert db.ids(many) == {1}
    db.rejects(many + " OR turnCount = 1", f"more than {MAX_COMPARISONS} comparisons")


def test_control_characters_are_rejected(db: Db) -> None:
    db.rejects('name = "a\x00b"', "control character U+0000 in string", "position 10")
    db.rejects('name = "a\x1bb"', "control character U+001B")
    db.rejects('name = "a\nb"', "control character U+000A")
    db.rejects("name = x\x00", 'unexpected character "\\u0000"', "position 9")
    db.rejects("name\x7f = x", 'unexpected character "\\u007f"')
    db.rejects("name\x0b= x", 'unexpected character "\\u000b"')
    assert db.ids("name\t=\r\nalpha") == {1}


def test_unicode_outside_quotes_is_rejected(db: Db) -> None:
    db.rejects('名前 = "x"', 'unexpected character "名"', "position 1")
    db.rejects('name \uff1d "x"', 'unexpected character "\uff1d"', "position 6")
    db.rejects("turnCount = \uff17", 'unexpected character "\uff17"')
    db.rejects("name = x\u202e OR 1=1", 'unexpected character "\\u202e"')
    db.rejects("name = caf\u00e9", 'unexpected character "é"')


def test_lone_surrogates_in_strings_are_rejected(db: Db) -> None:
    db.rejects('name = "\ud800"', "U+D800 in string")


def test_messages_quote_hostile_text_safely(db: Db) -> None:
    message = db.rejects('"' + "\u202e" * 3 + "x" * 100 + '" = 1', "expected a field name")
    assert "\u202e" not in message and "x" * 41 not in message


FUZZ_FIELDS = ["name", "turnCount", "active", "state", "startTime", "inputTypes", "rootSpan.name"]
FUZZ_OPERATORS = ["=", "!=", "<", "<=", ">", ">=", ":"]
FUZZ_VALUES = [
    "x",
    '"x*"',
    "'*y'",
    "*",
    "LIVE",
    "AUDIO",
    "true",
    "1",
    "-1",
    "1.5",
    '"2024-01-01T00:00:00Z"',
    '"%_/"',
    '"\\*"',
    "9" * 25,
    '"é☕"',
]
FUZZ_NOISE = [
    "(",
    ")",
    "AND",
    "OR",
    "NOT",
    "-",
    '"',
    "'",
    "\\",
    ";",
    "%",
    "\x00",
    "\ud800",
    "é",
    ".",
    "\uff1d",
    "rootSpan",
]


def random_filter(rng: random.Random, depth: int = 0) -> str:
    """A mostly well-formed filter from the grammar, so that mutations land near valid input."""
    if depth < 3 and rng.random() < 0.3:
        joiner = rng.choice([" AND ", " OR ", " "])
        inner = joiner.join(random_filter(rng, depth + 1) for _ in range(rng.randint(2, 3)))
        return rng.choice(["", "NOT ", "-"]) + "(" + inner + ")"
    comparison = rng.choice(FUZZ_FIELDS) + rng.choice(FUZZ_OPERATORS) + rng.choice(FUZZ_VALUES)
    return rng.choice(["", "", "NOT ", "-"]) + comparison


def mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.choice([0, 0, 1, 2])):
        at = rng.randint(0, len(text))
        if rng.random() < 0.5:
            text = text[:at] + rng.choice(FUZZ_NOISE) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 3) :]
    return text


def test_random_input_raises_only_invalid_argument(db: Db) -> None:
    rng = random.Random(160)
    accepted = rejected = 0
    for _ in range(3000):
        text = mutate(rng, random_filter(rng))
        try:
            condition = compile_filter(text, db.fields)
        except InvalidArgument:
            rejected += 1
            continue
        accepted += 1
        statement = select(func.count()).select_from(db.table)
        if condition is not None:
            statement = statement.where(condition)
        with db.engine.connect() as connection:
            connection.execute(statement).scalar_one()
    assert accepted > 300 and rejected > 300
    db.assert_intact()


# ---------------------------------------------------------------- bound parameters


def test_literals_reach_sql_only_as_bound_parameters() -> None:
    text = (
        'name = "x\' OR 1=1 --" OR name = "50%_off*" OR turnCount >= 424242 '
        'OR active = true OR state = ARCHIVED OR startTime > "2024-01-01T00:00:00Z" '
        'OR inputTypes:IMAGE OR rootSpan.name:"needle"'
    )
    condition = compile_filter(text, FIELDS)
    assert condition is not None
    statement = select(TEMPLATE.c.id).where(condition)
    for dialect in (sqlite.dialect(), create_engine("postgresql+psycopg://").dialect):
        compiled = statement.compile(dialect=dialect)
        sql = str(compiled)
        literals = ["1=1", "50", "424242", "ARCHIVED", "2024", "1704067200000000", "needle", "true"]
        for fragment in literals:
            assert fragment not in sql, (fragment, sql)
        values = set(compiled.params.values())
        assert {"x' OR 1=1 --", "50/%/_off%", 424242, True, "ARCHIVED"} <= values
        assert {micros(2024, 1, 1), IMAGE, "%needle%"} <= values
