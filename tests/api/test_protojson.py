"""The proto3 JSON mapping: Timestamp, Duration, bytes, int64 and ProtoModel.to_json."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from convener.api.protojson import Bytes, Duration, Int64, ProtoModel, Struct, Timestamp

NANOS = 1_000_000_000


# --- Timestamp --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("2014-10-02T15:01:23Z", "2014-10-02T15:01:23Z"),
        ("2014-10-02t15:01:23z", "2014-10-02T15:01:23Z"),
        ("2014-10-02T15:01:23+00:00", "2014-10-02T15:01:23Z"),
        ("2014-10-02T15:01:23-00:00", "2014-10-02T15:01:23Z"),
        ("2014-10-02T15:01:23+05:30", "2014-10-02T09:31:23Z"),
        ("2014-10-02T15:01:23-08:00", "2014-10-02T23:01:23Z"),
        ("2014-12-31T23:30:00-01:00", "2015-01-01T00:30:00Z"),
        ("2014-10-02T15:01:23.045123456Z", "2014-10-02T15:01:23.045123456Z"),
        ("2014-10-02T15:01:23.045123456+05:30", "2014-10-02T09:31:23.045123456Z"),
    ],
)
def test_timestamps_are_normalised_to_utc_with_z(text: str, normalised: str) -> None:
    assert str(Timestamp.parse(text)) == normalised


@pytest.mark.parametrize(
    ("fraction", "rendered"),
    [
        ("", ""),
        (".0", ""),
        (".000000000", ""),
        (".5", ".500"),
        (".045", ".045"),
        (".1234", ".123400"),
        (".045123", ".045123"),
        (".0451234", ".045123400"),
        (".045123456", ".045123456"),
        (".000000001", ".000000001"),
        (".999999999", ".999999999"),
    ],
)
def test_timestamp_fractions_are_written_with_0_3_6_or_9_digits(fraction: str, rendered: str) -> None:
    assert str(Timestamp.parse(f"2014-10-02T15:01:23{fraction}Z")) == f"2014-10-02T15:01:23{rendered}Z"


def test_timestamp_parse_gives_seconds_since_the_epoch_and_nanos() -> None:
    assert Timestamp.parse("1970-01-01T00:00:00Z") == Timestamp(0, 0)
    assert Timestamp.parse("2014-10-02T15:01:23.045123456Z") == Timestamp(1_412_262_083, 45_123_456)
    assert Timestamp.parse("1969-12-31T23:59:59.5Z") == Timestamp(-1, 500_000_000)


@pytest.mark.parametrize(
    "value",
    [
        Timestamp(0),
        Timestamp(0, 1),
        Timestamp(-1, 999_999_999),
        Timestamp(1_412_262_083, 45_000_000),
        Timestamp(1_412_262_083, 45_123_000),
        Timestamp(1_412_262_083, 45_123_456),
        Timestamp(-62_135_596_800),
        Timestamp(253_402_300_799, 999_999_999),
    ],
)
def test_timestamp_format_then_parse_is_the_identity(value: Timestamp) -> None:
    assert Timestamp.parse(str(value)) == value


def test_timestamp_bounds_are_year_1_and_year_9999() -> None:
    assert Timestamp.parse("0001-01-01T00:00:00Z") == Timestamp(-62_135_596_800)
    assert str(Timestamp(-62_135_596_800)) == "0001-01-01T00:00:00Z"
    assert Timestamp.parse("9999-12-31T23:59:59.999999999Z") == Timestamp(253_402_300_799, 999_999_999)
    assert str(Timestamp(253_402_300_799)) == "9999-12-31T23:59:59Z"
    # In range after applying the offset.
    assert str(Timestamp.parse("0001-01-01T00:30:00-01:00")) == "0001-01-01T01:30:00Z"


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:30:00+01:00",  # 0000-12-31T23:30:00Z
        "9999-12-31T23:59:59-00:01",  # 10000-01-01T00:00:59Z
        "0000-12-31T23:59:59Z",
    ],
)
def test_timestamps_outside_the_range_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="0001-01-01 to 9999-12-31|not a valid date"):
        Timestamp.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "2023-02-30T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2023-04-31T00:00:00Z",
        "2023-13-01T00:00:00Z",
        "2023-00-10T00:00:00Z",
        "2023-01-00T00:00:00Z",
        "2023-01-01T24:00:00Z",
        "2023-01-01T23:60:00Z",
        "2023-01-01T23:59:61Z",
        "2023-01-01T00:00:00+24:00",
    ],
)
def test_impossible_dates_and_times_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid date and time"):
        Timestamp.parse(text)


def test_a_leap_day_is_a_date() -> None:
    assert str(Timestamp.parse("2024-02-29T12:00:00Z")) == "2024-02-29T12:00:00Z"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "2023-01-01",
        "2023-01-01T00:00:00",
        "2023-01-01 00:00:00Z",
        "2023-01-01T00:00Z",
        "2023-1-01T00:00:00Z",
        "23-01-01T00:00:00Z",
        "+2023-01-01T00:00:00Z",
        "12023-01-01T00:00:00Z",
        "2023-01-01T00:00:00.Z",
        "2023-01-01T00:00:00.1234567890Z",
        "2023-01-01T00:00:00+0530",
        "2023-01-01T00:00:00+05",
        "2023-01-01T00:00:00UTC",
        " 2023-01-01T00:00:00Z",
        "2023-01-01T00:00:00Z ",
        "2023-01-01T00:00:00ZZ",
        "1412262083",
    ],
)
def test_garbage_is_not_a_timestamp(text: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        Timestamp.parse(text)


def test_timestamp_error_messages_clip_long_input() -> None:
    with pytest.raises(ValueError) as caught:
        Timestamp.parse("x" * 10_000)
    assert len(str(caught.value)) < 200


def test_a_timestamp_followed_by_a_newline_is_rejected() -> None:
    with pytest.raises(ValueError):
        Timestamp.parse("2014-10-02T15:01:23Z\n")


def test_a_timestamp_with_non_ascii_digits_is_rejected() -> None:
    with pytest.raises(ValueError):
        Timestamp.parse("2014-10-02T15:01:23.\u0661\u0662\u0663Z")


def test_timestamps_order_subtract_and_add_durations() -> None:
    early = Timestamp.parse("2024-01-01T00:00:00Z")
    late = Timestamp.parse("2024-01-01T00:00:01.5Z")
    assert early < late
    assert max(late, early) == late
    assert late - early == Duration(1_500_000_000)
    assert early - late == Duration(-1_500_000_000)
    assert early + Duration(1_500_000_000) == late
    assert late + Duration(-1_500_000_000) == early
    assert Timestamp(0, 999_999_999) + Duration(1) == Timestamp(1, 0)


@pytest.mark.parametrize("micros", [0, 1, -1, 1_412_262_083_045_123, -62_135_596_800_000_000])
def test_timestamp_micros_round_trip(micros: int) -> None:
    stamp = Timestamp.from_micros(micros)
    assert 0 <= stamp.nanos < NANOS
    assert stamp.to_micros() == micros


def test_timestamp_to_micros_truncates_nanos() -> None:
    assert Timestamp(1, 999).to_micros() == 1_000_000


class Stamped(ProtoModel):
    at: Timestamp | None = None
    took: Duration | None = None


def test_timestamp_fields_accept_rfc3339_text_and_write_it_normalised() -> None:
    model = Stamped.model_validate({"at": "2014-10-02T15:01:23.100+05:30"})
    assert model.at == Timestamp.parse("2014-10-02T09:31:23.1Z")
    assert model.to_json() == {"at": "2014-10-02T09:31:23.100Z"}


@pytest.mark.parametrize("value", [1_412_262_083, 1.5, {"seconds": "1"}, "yesterday", True])
def test_timestamp_fields_reject_anything_but_rfc3339_text(value: Any) -> None:
    with pytest.raises(ValidationError) as caught:
        Stamped.model_validate({"at": value})
    assert caught.value.errors()[0]["loc"] == ("at",)


# --- Duration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanos", "rendered"),
    [
        ("0s", 0, "0s"),
        ("3s", 3 * NANOS, "3s"),
        ("3.5s", 3_500_000_000, "3.500s"),
        ("3.000s", 3 * NANOS, "3s"),
        ("-1.5s", -1_500_000_000, "-1.500s"),
        ("-0.5s", -500_000_000, "-0.500s"),
        ("0.000001s", 1_000, "0.000001s"),
        ("1.000000001s", NANOS + 1, "1.000000001s"),
        ("0.1234s", 123_400_000, "0.123400s"),
        ("315576000000s", 315_576_000_000 * NANOS, "315576000000s"),
        ("-315576000000s", -315_576_000_000 * NANOS, "-315576000000s"),
    ],
)
def test_durations_parse_and_format(text: str, nanos: int, rendered: str) -> None:
    duration = Duration.parse(text)
    assert duration == Duration(nanos)
    assert str(duration) == rendered
    assert Duration.parse(str(duration)) == duration


@pytest.mark.parametrize(
    "text",
    ["", "s", "3", "3.5", "3.5 s", " 3s", "3S", "1.s", ".5s", "+1s", "--1s", "-s", "1m", "1h", "PT1S",
     "1.1234567890s", "1e3s", "1,5s", "infs", "NaNs"],
)
def test_garbage_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        Duration.parse(text)


def test_duration_from_seconds() -> None:
    assert str(Duration.from_seconds(2.5)) == "2.500s"
    assert str(Duration.from_seconds(-0.25)) == "-0.250s"


def test_duration_fields_accept_text_only() -> None:
    assert Stamped.model_validate({"took": "1.5s"}).to_json() == {"took": "1.500s"}
    with pytest.raises(ValidationError):
        Stamped.model_validate({"took": 1.5})
    with pytest.raises(ValidationError):
        Stamped.model_validate({"took": "1.5"})


@pytest.mark.parametrize("text", ["315576000001s", "-315576000001s", "99999999999999999999s"])
def test_durations_outside_ten_thousand_years_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        Duration.parse(text)


@pytest.mark.parametrize("text", ["3.5s\n", "\uff11s"])
def test_durations_with_a_newline_or_non_ascii_digits_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        Duration.parse(text)


# --- bytes and int64 ----------------------------------------------------------------------------


class Blobby(ProtoModel):
    data: Bytes | None = None
    count: Int64 | None = None


@pytest.mark.parametrize("text", ["", "aGVsbG8=", "aGVsbG8", "aGk=", "aGk", "+/8=", "-_8=", "-_8", "AAAA"])
def test_bytes_accept_standard_and_url_safe_base64_padded_or_not(text: str) -> None:
    assert Blobby.model_validate({"data": text}).to_json() == {"data": text}


@pytest.mark.parametrize("text", ["not base64!", "a", "aGVsbG8=\n", "aGVs bG8=", "aGVsbG8!", "é"])
def test_bytes_reject_text_that_is_not_base64(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Blobby.model_validate({"data": text})
    assert "base64" in str(caught.value)


def test_bytes_reject_non_strings() -> None:
    with pytest.raises(ValidationError):
        Blobby.model_validate({"data": 123})


@pytest.mark.parametrize(("given", "value"), [("123", 123), (123, 123), ("-5", -5), ("0", 0), (-5, -5)])
def test_int64_is_accepted_as_string_or_number_and_written_as_string(given: Any, value: int) -> None:
    model = Blobby.model_validate({"count": given})
    assert model.count == value
    assert model.to_json() == {"count": str(value)}


@pytest.mark.parametrize("given", ["12a", "1.5", 1.5, "", "one", [1]])
def test_int64_rejects_non_integers(given: Any) -> None:
    with pytest.raises(ValidationError):
        Blobby.model_validate({"count": given})


def test_int64_limits_are_accepted() -> None:
    assert Blobby.model_validate({"count": "9223372036854775807"}).to_json() == {"count": "9223372036854775807"}
    assert Blobby.model_validate({"count": "-9223372036854775808"}).to_json() == {"count": "-9223372036854775808"}


@pytest.mark.parametrize("given", ["9223372036854775808", "-9223372036854775809", 2**64])
def test_int64_rejects_values_outside_int64(given: Any) -> None:
    with pytest.raises(ValidationError):
        Blobby.model_validate({"count": given})


# --- ProtoModel -----------------------------------------------------------------------------------


class Leaf(ProtoModel):
    leaf_name: str | None = None
    tags: list[str] | None = None


class Tree(ProtoModel):
    display_name: str | None = None
    item_count: int | None = None
    leaves: list[Leaf] | None = None
    only_leaf: Leaf | None = None
    labels: list[str] | None = None
    args: Struct | None = None


def test_to_json_uses_camel_case_names() -> None:
    tree = Tree(display_name="x", item_count=0, only_leaf=Leaf(leaf_name="y"))
    assert tree.to_json() == {"displayName": "x", "itemCount": 0, "onlyLeaf": {"leafName": "y"}}


def test_fields_are_read_by_camel_case_name_and_by_field_name() -> None:
    assert Tree.model_validate({"displayName": "x"}).display_name == "x"
    assert Tree.model_validate({"display_name": "x"}).display_name == "x"


def test_to_json_omits_unset_fields_but_keeps_zero_values_that_were_set() -> None:
    assert Tree().to_json() == {}
    assert Tree(display_name="", item_count=0).to_json() == {"displayName": "", "itemCount": 0}


def test_to_json_omits_empty_repeated_fields_at_every_depth() -> None:
    tree = Tree(labels=[], leaves=[Leaf(tags=[]), Leaf(leaf_name="a", tags=["t"])], only_leaf=Leaf(tags=[]))
    assert tree.to_json() == {"leaves": [{}, {"leafName": "a", "tags": ["t"]}], "onlyLeaf": {}}


def test_to_json_keeps_empty_lists_objects_and_nulls_inside_struct_values() -> None:
    args = {"empty_list": [], "empty_object": {}, "nothing": None, "nested": {"deeper": [[], {}], "x": None}}
    assert Tree(args=args).to_json() == {"args": args}
    assert Tree(args={}).to_json() == {"args": {}}


def test_struct_keys_are_not_camel_cased() -> None:
    assert Tree.model_validate({"args": {"snake_key": {"other_key": 1}}}).to_json() == {
        "args": {"snake_key": {"other_key": 1}}
    }


def test_unknown_fields_are_rejected_at_every_depth() -> None:
    with pytest.raises(ValidationError) as caught:
        Tree.model_validate({"bogus": 1})
    assert caught.value.errors()[0]["type"] == "extra_forbidden"
    with pytest.raises(ValidationError) as caught:
        Tree.model_validate({"onlyLeaf": {"leafName": "a", "colour": "red"}})
    assert caught.value.errors()[0]["loc"] == ("onlyLeaf", "colour")


def test_json_schema_uses_camel_case_names() -> None:
    properties = Tree.json_schema()["properties"]
    assert {"displayName", "itemCount", "leaves", "onlyLeaf", "labels", "args"} == set(properties)
    assert Stamped.json_schema()["properties"]["at"]["anyOf"][0] == {"type": "string", "format": "date-time"}
