"""convener.analytics.charts: the chart chosen for each shape of result, the schema check, and drawing with
vl-convert — including specs written to hurt (remote data, absurd sizes, a million rows, a V8 memory bomb)."""

from __future__ import annotations

import json
import struct
import time
import xml.etree.ElementTree as ET
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from convener.analytics import charts
from convener.analytics.shapes import QueryResult, ResultColumn
from convener.api.errors import InvalidArgument

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def result(columns: list[tuple[str, str]], rows: list[tuple[Any, ...]],
           truncated: bool = False) -> QueryResult:
    return QueryResult(columns=tuple(ResultColumn(n, t) for n, t in columns), rows=rows, truncated=truncated)


def chosen(data: QueryResult, **kwargs: Any) -> dict[str, Any]:
    """The chosen spec, which must pass the official schema and survive a JSON round trip."""
    spec = charts.choose_chart(data, **kwargs)
    assert spec is not None
    charts.validate_spec(spec)
    assert json.loads(json.dumps(spec)) == spec
    assert spec["$schema"] == charts.SCHEMA_URL
    return spec


def mark(spec: dict[str, Any]) -> str:
    value = spec["mark"]
    return str(value["type"] if isinstance(value, dict) else value)


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


SALES_BY_COUNTRY = result([("country", "STRING"), ("sales", "NUMERIC")],
                          [(f"country {i}", Decimal(i * 10) + Decimal("0.5")) for i in range(20)])
DAILY = result([("day", "DATE"), ("sales", "FLOAT")], [(date(2025, 1, d), d * 1.5) for d in range(1, 29)])


# --- Types --------------------------------------------------------------------------------------------------


def test_column_types_map_to_vega_lite_types_in_one_place() -> None:
    numbers_and_times = ("INTEGER", "FLOAT", "NUMERIC", "DATE", "DATETIME", "TIMESTAMP")
    assert [charts.vega_type(t) for t in numbers_and_times] == ["quantitative"] * 3 + ["temporal"] * 3
    assert [charts.vega_type(t) for t in ("STRING", "BOOLEAN", "TIME", "GEOGRAPHY")] == [
        "nominal", "nominal", "ordinal", "nominal"]
    assert [charts.vega_type(t) for t in ("BYTES", "JSON", "RECORD")] == [None, None, None]


# --- choose_chart: one rule per shape -----------------------------------------------------------------------


def test_a_single_number_is_not_charted() -> None:
    assert charts.choose_chart(result([("total", "INTEGER")], [(42,)])) is None
    assert charts.choose_chart(result([("region", "STRING"), ("total", "INTEGER")], [("North", 4)])) is None
    assert charts.choose_chart(result([("total", "INTEGER")], [])) is None


def test_time_and_a_number_make_a_line_with_utc_dates() -> None:
    spec = chosen(DAILY)
    assert mark(spec) == "line"
    x = spec["encoding"]["x"]
    assert (x["field"], x["type"], x["scale"]) == ("day", "temporal", {"type": "utc"})
    assert spec["encoding"]["y"]["field"] == "sales"
    assert spec["data"]["values"][0] == {"day": "2025-01-01", "sales": 1.5}


def test_time_and_several_numbers_make_one_line_per_column() -> None:
    data = result([("at", "TIMESTAMP"), ("revenue", "FLOAT"), ("cost", "FLOAT")],
                  [(datetime(2025, 1, d, 12, tzinfo=UTC), d * 2.0, d * 1.0) for d in range(1, 11)])
    spec = chosen(data)
    assert mark(spec) == "line"
    assert spec["encoding"]["color"]["field"] == "series"
    assert spec["encoding"]["y"]["field"] == "value"
    assert {row["series"] for row in spec["data"]["values"]} == {"revenue", "cost"}
    assert spec["data"]["values"][0]["at"] == "2025-01-01T12:00:00Z"


def test_time_category_and_number_make_a_line_per_category() -> None:
    data = result([("month", "DATE"), ("region", "STRING"), ("orders", "INTEGER")],
                  [(date(2025, m, 1), r, m * 3) for m in range(1, 7) for r in ("North", "South", "East")])
    spec = chosen(data)
    assert mark(spec) == "line"
    assert (spec["encoding"]["x"]["field"], spec["encoding"]["color"]["field"]) == ("month", "region")


def test_an_integer_year_is_a_time_axis_not_a_measure() -> None:
    yearly = result([("year", "INTEGER"), ("revenue", "FLOAT")], [(2015 + i, i * 1.1) for i in range(8)])
    spec = chosen(yearly)
    assert mark(spec) == "line"
    assert (spec["encoding"]["x"]["field"], spec["encoding"]["x"]["type"]) == ("year", "ordinal")


def test_category_and_number_make_bars_sorted_by_value() -> None:
    data = result([("product", "STRING"), ("units", "INTEGER")], [("gizmo", 3), ("widget", 9), ("gadget", 5)])
    spec = chosen(data)
    assert mark(spec) == "bar"
    assert spec["encoding"]["x"]["field"] == "product"  # few short labels: vertical
    assert [row["product"] for row in spec["data"]["values"]] == ["widget", "gadget", "gizmo"]
    assert spec["encoding"]["x"]["sort"] is None  # the rows' (sorted) order


def test_many_or_long_categories_make_horizontal_bars() -> None:
    spec = chosen(SALES_BY_COUNTRY)
    assert (spec["encoding"]["y"]["field"], spec["encoding"]["x"]["field"]) == ("country", "sales")
    long = result([("name", "STRING"), ("n", "INTEGER")], [("a rather long product name", 1), ("short", 2)])
    assert chosen(long)["encoding"]["y"]["field"] == "name"


def test_bars_are_capped_at_the_largest_fifty_and_say_so() -> None:
    data = result([("sku", "STRING"), ("units", "INTEGER")], [(f"sku-{i:03d}", i) for i in range(120)])
    spec = chosen(data)
    values = spec["data"]["values"]
    assert len(values) == charts.MAX_BARS
    assert values[0] == {"sku": "sku-119", "units": 119}
    assert "50 largest of 120" in spec["title"]["subtitle"]


def test_two_categories_and_a_number_make_grouped_bars_or_a_heatmap() -> None:
    few = result([("region", "STRING"), ("product", "STRING"), ("units", "INTEGER")],
                 [(r, p, len(r) * len(p)) for r in ("North", "South") for p in ("widget", "gizmo")])
    spec = chosen(few)
    assert mark(spec) == "bar"
    assert spec["encoding"]["color"]["field"] == "product"
    assert spec["encoding"]["xOffset"]["field"] == "product"
    assert "xOffset" not in chosen(few, instructions="stacked bars")["encoding"]

    many = result([("store", "STRING"), ("weekday", "STRING"), ("visits", "INTEGER")],
                  [(f"store {s}", d, s * d) for s in range(20) for d in range(7)])
    spec = chosen(many)
    assert mark(spec) == "rect"
    assert spec["encoding"]["x"]["field"] == "store"  # the wider dimension across
    assert spec["encoding"]["color"]["field"] == "visits"


def test_two_numbers_make_a_scatter_coloured_by_category() -> None:
    plain = result([("horsepower", "INTEGER"), ("mpg", "FLOAT")],
                   [(60 + i * 5, 40 - i * 0.7) for i in range(30)])
    spec = chosen(plain)
    assert mark(spec) == "point"
    assert (spec["encoding"]["x"]["field"], spec["encoding"]["y"]["field"]) == ("horsepower", "mpg")
    grouped = result([("origin", "STRING"), ("horsepower", "INTEGER"), ("mpg", "FLOAT")],
                     [(("USA", "Japan", "Europe")[i % 3], 60 + i * 5, 40 - i * 0.7) for i in range(30)])
    spec = chosen(grouped)
    assert mark(spec) == "point"
    assert spec["encoding"]["color"]["field"] == "origin"


def test_one_row_per_category_with_two_numbers_makes_grouped_bars() -> None:
    data = result([("region", "STRING"), ("revenue", "FLOAT"), ("cost", "FLOAT")],
                  [("North", 10.0, 7.0), ("South", 12.0, 8.0), ("East", 9.0, 9.5)])
    spec = chosen(data)
    assert mark(spec) == "bar"
    assert spec["encoding"]["xOffset"]["field"] == "series"


def test_one_numeric_column_makes_a_histogram() -> None:
    spec = chosen(result([("amount", "FLOAT")], [(float(i % 17),) for i in range(200)]))
    assert mark(spec) == "bar"
    assert spec["encoding"]["x"]["bin"] == {"maxbins": 30}
    assert spec["encoding"]["y"]["aggregate"] == "count"
    assert charts.choose_chart(result([("amount", "FLOAT")], [(1.0,), (2.0,)])) is None


def test_shapes_without_a_chart() -> None:
    names = result([("name", "STRING"), ("city", "STRING")], [("Ann", "Oslo"), ("Bo", "Rome")])
    assert charts.choose_chart(names) is None
    blobs = result([("id", "STRING"), ("payload", "BYTES")], [("a", b"x"), ("b", b"y")])
    assert charts.choose_chart(blobs) is None


def test_instructions_choose_a_compatible_mark() -> None:
    data = result([("product", "STRING"), ("units", "INTEGER")], [("gizmo", 3), ("widget", 9), ("gadget", 5)])
    pie = chosen(data, instructions="Show it as a pie chart")
    assert mark(pie) == "arc"
    assert pie["encoding"]["theta"]["field"] == "units"
    assert chosen(data, instructions="a donut please")["mark"]["innerRadius"] > 0
    assert mark(chosen(data, instructions="as a line chart")) == "line"
    assert mark(chosen(data, instructions="as points")) == "point"
    assert mark(chosen(data, instructions="area chart")) == "area"
    assert chosen(data, instructions="horizontal bar chart")["encoding"]["y"]["field"] == "product"
    assert mark(chosen(DAILY, instructions="bar chart")) == "bar"
    assert charts.choose_chart(data, instructions="no chart, just the table") is None
    # A heatmap needs two dimensions: the default is kept.
    assert mark(chosen(data, instructions="heatmap")) == "bar"


@pytest.mark.parametrize("question", [
    "What are the sales by area?", "Which product line sold most line items?", "Who scored the most points?",
    "How are units distributed over products?", "Which bar sold the most?",
])
def test_questions_passed_as_instructions_keep_the_default(question: str) -> None:
    data = result([("product", "STRING"), ("units", "INTEGER")], [("gizmo", 3), ("widget", 9), ("gadget", 5)])
    assert charts.requested_chart(question)[0] is None
    assert mark(chosen(data, instructions=question)) == "bar"


def test_pie_sums_the_smallest_slices_as_other() -> None:
    data = result([("city", "STRING"), ("people", "INTEGER")], [(f"city {i}", 100 - i) for i in range(30)])
    values = chosen(data, instructions="a pie chart")["data"]["values"]
    assert len(values) == charts.MAX_PIE_SLICES
    assert values[-1]["city"] == "Other"
    assert sum(v["people"] for v in values) == sum(100 - i for i in range(30))


def test_field_names_with_dots_and_brackets_are_escaped_and_drawn() -> None:
    data = result([("t.name", "STRING"), ("sum[x]", "INTEGER")], [("a", 3), ("b", 5), ("c", 1)])
    spec = chosen(data, title="Dotted")
    x, y = spec["encoding"]["x"], spec["encoding"]["y"]
    assert (x["field"], x["title"], y["field"], y["title"]) == ("t\\.name", "t.name", "sum\\[x\\]", "sum[x]")
    assert spec["data"]["values"][0] == {"t.name": "b", "sum[x]": 5}
    svg = charts.render(spec, "svg").decode()
    assert svg.count('aria-roledescription="bar"') == 3
    # The marks' labels show the values, so they were read through the escaped references.
    assert 'aria-label="t.name: b; sum[x]: 5"' in svg


def test_values_are_json_safe() -> None:
    columns = [("d", "DATETIME"), ("v", "NUMERIC"), ("nan", "FLOAT"), ("same", "FLOAT"), ("same", "FLOAT")]
    data = result(columns,
                  [(datetime(2025, 3, 1, 8, 30), Decimal("1.25"), float("nan"), 1.0, 2.0),
                   (datetime(2025, 3, 2, 8, 30), Decimal("2.5"), float("inf"), 3.0, 4.0)], truncated=True)
    spec = chosen(data)
    first = spec["data"]["values"][0]
    assert first["d"] == "2025-03-01T08:30:00Z"
    assert {row["series"] for row in spec["data"]["values"]} == {"v", "nan", "same"}
    assert "more rows" in spec["title"]["subtitle"]
    json.dumps(spec, allow_nan=False)


# --- validate_spec ------------------------------------------------------------------------------------------


def test_invalid_specs_name_the_path() -> None:
    with pytest.raises(InvalidArgument, match=r"\$\.encoding\.x\.type: 'nominl' is not one of"):
        charts.validate_spec({"mark": "bar", "encoding": {"x": {"field": "a", "type": "nominl"}}})
    with pytest.raises(InvalidArgument, match=r"\$\.mark: 'barz' is not one of"):
        charts.validate_spec({"mark": "barz"})
    with pytest.raises(InvalidArgument, match=r"\$\.layer\[0\]\.encoding\.y\.aggregate"):
        charts.validate_spec({"layer": [{"mark": "bar",
                                         "encoding": {"y": {"field": "a", "aggregate": "avgg"}}}]})
    with pytest.raises(InvalidArgument, match="only Vega-Lite v5"):
        charts.validate_spec({"$schema": "https://vega.github.io/schema/vega-lite/v6.json", "mark": "bar"})


@pytest.mark.parametrize("spec", [
    {"data": {"url": "http://127.0.0.1:5432/orders.csv"}, "mark": "bar"},
    {"data": {"url": "file:///etc/passwd", "format": {"type": "dsv", "delimiter": ":"}}, "mark": "text"},
    {"data": {"values": [{"a": 1}]}, "mark": "point",
     "transform": [{"lookup": "a", "from": {"data": {"url": "data/cars.json"}, "key": "a"}}]},
    {"data": {"values": [{"u": "x"}]}, "mark": "image",
     "encoding": {"url": {"field": "u", "type": "nominal"}}},
])
def test_specs_that_would_load_anything_are_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument, match="may not load anything"):
        charts.validate_spec(spec)
    with pytest.raises(InvalidArgument, match="may not load anything"):
        charts.render(spec)


def test_the_renderer_itself_loads_nothing_either() -> None:
    """Past validation, vl-convert is given no allowed base URL (and its worker has no network)."""
    for url in ("http://127.0.0.1:5432/orders.csv", "data/cars.json"):
        spec = {"data": {"url": url}, "mark": "point", "encoding": {"x": {"field": "a", "type": "nominal"}}}
        reply = charts._RENDERER.draw({"spec": spec, "format": "svg", "scale": 1.0})
        assert reply["ok"] is False and "not allowed" in reply["error"]


def test_a_column_called_url_in_inline_rows_is_fine() -> None:
    charts.validate_spec({"data": {"values": [{"url": "http://example.com", "n": 1}]}, "mark": "bar",
                          "encoding": {"x": {"field": "url", "type": "nominal"}}})


def test_the_validator_is_compiled_once() -> None:
    assert charts._validator() is charts._validator()
    assert charts.schema_path().name == "vega-lite-schema.json"


# --- render -------------------------------------------------------------------------------------------------


def test_png_of_a_twenty_bar_chart() -> None:
    spec = chosen(SALES_BY_COUNTRY, title="Sales by country")
    charts.render(spec)  # the worker's first chart pays for starting JavaScript
    started = time.perf_counter()
    png = charts.render(spec)
    elapsed = time.perf_counter() - started
    assert png.startswith(PNG_MAGIC)
    width, height = png_size(png)
    assert 200 < width < 1200 and 300 < height < 1200
    assert 5_000 < len(png) < 500_000
    assert elapsed < 2.0
    double = charts.render(spec, scale=2)
    assert png_size(double) == (width * 2, height * 2)


def test_svg_is_xml() -> None:
    svg = charts.render(chosen(DAILY), "svg")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("data", [
    SALES_BY_COUNTRY, DAILY,
    result([("a", "STRING"), ("b", "STRING"), ("n", "INTEGER")], [(f"s{i}", str(d), i * d) for i in range(15)
                                                                     for d in range(3)]),
    result([("x", "FLOAT"), ("y", "FLOAT")], [(i * 1.0, i * 2.0) for i in range(12)]),
    result([("x", "FLOAT")], [(i * 1.0,) for i in range(40)]),
])
def test_every_chosen_chart_renders(data: QueryResult) -> None:
    assert charts.render(chosen(data)).startswith(PNG_MAGIC)


def test_a_billion_pixel_width_is_clamped() -> None:
    spec = {"data": {"values": [{"a": "x", "b": 1}]}, "mark": "bar", "width": 1e9, "height": 1e9,
            "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}
    assert charts.bounded_spec(spec)["width"] == charts.MAX_DIMENSION
    width, height = png_size(charts.render(spec))
    assert width <= charts.MAX_DIMENSION + 200 and height <= charts.MAX_DIMENSION + 200


def test_a_picture_too_large_after_steps_is_refused() -> None:
    spec = {"data": {"values": [{"a": str(i), "b": 1} for i in range(3000)]}, "mark": "bar",
            "width": {"step": 1e6},
            "encoding": {"x": {"field": "a", "type": "nominal"}, "y": {"field": "b", "type": "quantitative"}}}
    with pytest.raises(InvalidArgument, match="pixels"):
        charts.render(spec)


def test_a_million_inline_rows_are_capped() -> None:
    values = [{"a": i, "b": i % 97} for i in range(1_000_000)]
    spec: dict[str, Any] = {
        "data": {"values": values}, "mark": "point",
        "encoding": {"x": {"field": "a", "type": "quantitative"},
                     "y": {"field": "b", "type": "quantitative"}},
    }
    bounded = charts.bounded_spec(spec)
    assert len(bounded["data"]["values"]) == charts.MAX_ROWS
    assert len(spec["data"]["values"]) == 1_000_000  # the caller's spec is left alone
    started = time.perf_counter()
    svg = charts.render(spec, "svg").decode()
    assert time.perf_counter() - started < 10
    assert svg.count('aria-roledescription="point"') == charts.MAX_ROWS


def test_a_memory_bomb_stops_the_worker_not_the_server() -> None:
    bomb = {"data": {"values": [{"a": 1}]}, "mark": "point",
            "transform": [{"calculate": "sequence(0, 1e9)", "as": "s"}, {"flatten": ["s"]}],
            "encoding": {"x": {"field": "s", "type": "quantitative"}}}
    with pytest.raises(InvalidArgument, match="renderer stopped|longer than"):
        charts.render(bomb)
    assert charts.render(chosen(DAILY)).startswith(PNG_MAGIC)  # a fresh worker takes over


def test_bad_render_arguments() -> None:
    spec = chosen(DAILY)
    with pytest.raises(InvalidArgument, match="scale"):
        charts.render(spec, scale=100)
    with pytest.raises(InvalidArgument, match="format"):
        charts.render(spec, "gif")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="could not be drawn"):
        charts.render({"data": {"values": [{"a": 1}]}, "mark": "point",
                       "transform": [{"calculate": "datum.a +* (", "as": "b"}],
                       "encoding": {"x": {"field": "b", "type": "quantitative"}}})
