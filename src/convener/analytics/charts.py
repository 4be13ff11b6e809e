"""Charts of query results: choosing a Vega-Lite v5 spec from a result's shape, checking a spec against the
official schema, and drawing it to PNG or SVG — all offline.

A data agent's ``ChartMessage`` carries the spec (``vegaConfig``) and its picture (``image``). The spec is
chosen here from the *shape* of the result, the way an analyst would, so an answer gets a sensible chart with
no model call; the caller's free-text ``instructions`` ("as a pie chart", "horizontal bars") may pick another
mark when the data suits it.

The rules of :func:`choose_chart` (first that applies; "dimension" = temporal or category column):

* no row, or a single row → no chart: one row of numbers is better said in words than drawn as one bar.
* no numeric column → no chart.
* a temporal column (DATE, DATETIME, TIMESTAMP, or an INTEGER named like ``year``/``month``/…) and numbers →
  **line** over time; several numeric columns are folded into series (colour = which column); with a
  category column too, one line per category (the 10 largest, the rest noted).
* two or more category columns and a number → **grouped bars** (first category on x, second as colour) or,
  when either has more than 12 values, a **heatmap** (rect, colour = the number).
* one category column and several numbers → **scatter** of the first two numbers coloured by the category
  when the category repeats across rows (points of groups), else **grouped bars** (one per numeric column).
* one category column and one number → **bars sorted by value**, horizontal when there are more than 12
  bars or a label is longer than 12 characters; at most 50 bars (the largest), the rest noted in the
  subtitle.
* two or more numeric columns only → **scatter** of the first two.
* one numeric column only, 10 rows or more → **histogram** (binned bars of counts); fewer → no chart.
* BYTES, JSON and RECORD columns are left out of every chart.

Instructions may ask for a ``pie chart``/``donut``, ``bar chart``/``bars``, ``line chart``, ``area chart``,
``scatter plot``/``as points``, ``heatmap`` or ``histogram`` (honoured when the data has what that chart
needs, else the rule above stands), ``horizontal`` or ``stacked`` bars, or ``no chart``. A chart word is
needed where the bare word is common in questions ("sales by area", "line items"), as the question is often
passed as the instructions.

Data is inline (``{"values": [...]}``), JSON-safe, at most :data:`MAX_ROWS` rows; temporal values are UTC ISO
8601 text on UTC scales, so every viewer shows the same wall-clock times.

The schema is Vega-Lite's own JSON schema (v5.20.1) as Altair 5 ships it
(``altair/vegalite/v5/schema/vega-lite-schema.json``): found on disk without importing Altair, compiled once.
Rendering uses vl-convert (Vega-Lite 5.20, the version of that schema) in a separate, long-lived worker
process fenced like the analysis sandbox (namespaces, no capabilities, a data-segment limit, emptied
environment): a Vega expression such as ``sequence(0, 1e9)`` makes V8 abort its whole process, which must not
be the server. Specs may load nothing: any ``url`` is refused before rendering, and vl-convert is given no
allowed base URL.
"""

from __future__ import annotations

import atexit
import base64
import copy
import hashlib
import importlib.util
import itertools
import json
import math
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import ValidationError

from convener.analytics import sandbox
from convener.analytics.shapes import (
    BOOLEAN,
    BYTES,
    INTEGER,
    JSON,
    NUMBER_TYPES,
    RECORD,
    STRING,
    TIME,
    TIME_TYPES,
    QueryResult,
    ResultColumn,
)
from convener.api.errors import Internal, InvalidArgument

VegaType = Literal["quantitative", "temporal", "nominal", "ordinal"]

SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v5.json"
RENDER_VERSION = "5.20"  # the vl-convert bundle matching the schema file
MAX_ROWS = 5_000  # inline rows drawn, in all the spec's datasets together
MAX_BARS = 50
MAX_SERIES = 10
MAX_PIE_SLICES = 12
MANY_CATEGORIES = 12  # beyond this many bars, or labels this long, bars are horizontal
MAX_DIMENSION = 2_000  # px: width and height written in a spec are clamped to this
MAX_STEP = 100  # px per band, for width/height given as {"step": n}
MAX_PIXELS = 20_000_000  # the drawn picture, after scale: a 2,000 px square chart at scale 2 fits
MAX_SCALE = 4.0
MAX_SPEC_BYTES = 32 * 2**20
MAX_REPLY_BYTES = 192 * 2**20  # base64 of the largest PNG MAX_PIXELS allows, with room
RENDER_TIMEOUT_SECONDS = 20.0
RENDER_DATA_BYTES = 2**30  # RLIMIT_DATA of the renderer (RLIMIT_AS would stop V8 from reserving its heap)
VALIDATION_SAMPLE = 100  # inline rows checked against the schema per dataset: rows are any JSON
PERIOD_NAMES = frozenset({"year", "yr", "quarter", "month", "week", "day", "hour", "fiscal_year"})

# --- Types: the one mapping from column types to Vega-Lite --------------------------------------------------

_VEGA_TYPES: dict[str, VegaType] = {
    **{name: "quantitative" for name in NUMBER_TYPES},
    **{name: "temporal" for name in TIME_TYPES},
    STRING: "nominal",
    BOOLEAN: "nominal",
    TIME: "ordinal",  # a time of day: ordered, ISO text sorts correctly
}
UNCHARTABLE = frozenset({BYTES, JSON, RECORD})


def vega_type(column_type: str) -> VegaType | None:
    """The Vega-Lite measurement type of a column type (``shapes``' BigQuery names); None for the types no
    chart can show (BYTES, JSON, RECORD). Unknown types are treated as text (nominal)."""
    upper = column_type.upper()
    if upper in UNCHARTABLE:
        return None
    return _VEGA_TYPES.get(upper, "nominal")


def field_ref(name: str) -> str:
    """A column name as a Vega-Lite field reference: Vega-Lite reads ``a.b`` as field ``b`` inside ``a`` and
    ``a[0]`` as an index, so dots, brackets and backslashes are escaped."""
    return re.sub(r"([.\[\]\\])", r"\\\1", name)


# --- choose_chart -------------------------------------------------------------------------------------------


Role = Literal["time", "category", "number"]


@dataclass(frozen=True)
class _Field:
    key: str  # the key in the inline rows (the column name, made unique)
    title: str
    type: VegaType
    role: Role

    def encoding(self, **extra: Any) -> dict[str, Any]:
        channel: dict[str, Any] = {"field": field_ref(self.key), "type": self.type, "title": self.title}
        if self.type == "temporal":
            channel["scale"] = {"type": "utc"}
        return {**channel, **extra}


@dataclass
class _Shape:
    """The columns of a result by role, and its rows as JSON-safe records."""

    times: list[_Field]
    categories: list[_Field]
    numbers: list[_Field]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def dimensions(self) -> list[_Field]:
        return self.times + self.categories

    def distinct(self, f: _Field) -> int:
        return len({json.dumps(row.get(f.key)) for row in self.rows})


Body = dict[str, Any]  # mark, encoding, transforms and data of a spec


def choose_chart(result: QueryResult, *, title: str | None = None,
                 instructions: str | None = None) -> dict[str, Any] | None:
    """A Vega-Lite v5 spec for ``result`` by the rules of the module docstring, or None when a chart would
    not help. ``instructions`` may choose the mark (see :func:`requested_chart`)."""
    kind, options = requested_chart(instructions)
    if kind == "none":
        return None
    shape = _shape(result)
    if len(shape.rows) < 2 or not shape.numbers:
        return None
    if kind is None or not _fits(kind, shape):
        kind = _default_kind(shape)
    if kind is None:
        return None
    body = _build(kind, shape, options)
    if result.truncated:
        shape.notes.append("the query returned more rows than were kept")
    return _spec(body, title, shape.notes)


def requested_chart(instructions: str | None) -> tuple[str | None, frozenset[str]]:
    """The chart kind a free-text instruction names first (``pie``, ``bar``, ``line``, ``area``, ``scatter``,
    ``heatmap``, ``histogram`` or ``none``), and its options (``horizontal``, ``stacked``, ``donut``)."""
    if not instructions:
        return None, frozenset()
    text = instructions.lower()
    options = {name for name, pattern in _OPTIONS.items() if re.search(pattern, text)}
    found = [(match.start(), kind) for kind, pattern in _KINDS.items()
             for match in re.finditer(pattern, text)]
    return (min(found)[1] if found else None), frozenset(options)


# Patterns need a chart word where the bare word is common in questions ("sales by area", "line items",
# "product line", "points scored"), since the question itself is often passed as the instructions.
_KINDS = {
    "none": r"\bno (chart|graph|plot|visuali[sz]ation)|\bwithout (a )?(chart|graph|plot)|\btable only\b",
    "pie": r"\bpie ?(chart|graph)s?\b|\bas a pie\b|\b(donut|doughnut)s?\b",
    "heatmap": r"\bheat ?maps?\b",
    "histogram": r"\bhistograms?\b",
    "scatter": r"\bscatter ?(plot|chart|graph)?s?\b|\bdot ?plots?\b|\bas (dots|points)\b",
    "line": r"\bline ?(chart|graph|plot)s?\b|\bas (a )?lines?\b|\btrend ?lines?\b",
    "area": r"\barea ?(chart|graph|plot)s?\b",
    "bar": r"\bbar ?(chart|graph|plot)s?\b|\bbars\b|\bas (a )?bar\b|\bcolumn ?(chart|graph)s?\b",
}
_OPTIONS = {"horizontal": r"\bhorizontal", "stacked": r"\bstacked\b", "donut": r"\b(donut|doughnut)s?\b"}


def _shape(result: QueryResult) -> _Shape:
    keys = _unique_keys(result.columns)
    fields, positions = [], []
    for index, (column, key) in enumerate(zip(result.columns, keys, strict=True)):
        described = _field(column, key)
        if described is not None:
            fields.append(described)
            positions.append(index)
    notes = []
    rows = result.rows
    if len(rows) > MAX_ROWS:
        notes.append(f"the first {MAX_ROWS} of {len(rows)} rows")
        rows = rows[:MAX_ROWS]
    records = [{f.key: _chart_value(row[i]) for f, i in zip(fields, positions, strict=True)} for row in rows]
    return _Shape(times=[f for f in fields if f.role == "time"],
                  categories=[f for f in fields if f.role == "category"],
                  numbers=[f for f in fields if f.role == "number"], rows=records, notes=notes)


def _field(column: ResultColumn, key: str) -> _Field | None:
    """A column's part in a chart: a time axis, a category or a measure (None: not chartable)."""
    kind = vega_type(column.type)
    if kind is None:
        return None
    if _is_period(column):
        return _Field(key, column.name, "ordinal", "time")
    if kind == "temporal":
        return _Field(key, column.name, kind, "time")
    return _Field(key, column.name, kind, "number" if kind == "quantitative" else "category")


def _unique_keys(columns: Sequence[ResultColumn]) -> list[str]:
    """Column names as record keys; a repeated name (``SELECT a.n, b.n``) gets ``_2``, ``_3``…"""
    seen: Counter[str] = Counter()
    keys = []
    for column in columns:
        seen[column.name] += 1
        keys.append(column.name if seen[column.name] == 1 else f"{column.name}_{seen[column.name]}")
    return keys


def _is_period(column: ResultColumn) -> bool:
    """An INTEGER column that counts time (``year``, ``order_month``): an ordered axis, not a measure."""
    if column.type.upper() != INTEGER:
        return False
    name = column.name.lower()
    return name in PERIOD_NAMES or any(name.endswith("_" + period) for period in PERIOD_NAMES)


def _chart_value(value: Any) -> Any:
    """JSON-safe, and temporal values as UTC text, so that every viewer draws the same times."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat() + "Z"
    if isinstance(value, date):
        return value.isoformat()  # a date-only ISO string is read as UTC midnight
    return sandbox.json_value(value)


def _default_kind(shape: _Shape) -> str | None:
    if shape.times:
        return "line"
    if len(shape.categories) >= 2:
        wide = any(shape.distinct(f) > MANY_CATEGORIES for f in shape.categories[:2])
        return "heatmap" if wide else "bar"
    if shape.categories:
        repeats = shape.distinct(shape.categories[0]) < len(shape.rows)
        return "scatter" if len(shape.numbers) >= 2 and repeats else "bar"
    if len(shape.numbers) >= 2:
        return "scatter"
    return "histogram" if len(shape.rows) >= 10 else None


def _fits(kind: str, shape: _Shape) -> bool:
    """Whether the data has what a requested kind of chart needs (there is at least one number)."""
    dimensions = len(shape.dimensions)
    needs = {
        "pie": dimensions >= 1,
        "bar": dimensions >= 1,
        "heatmap": dimensions >= 2,
        "histogram": True,
        "scatter": dimensions >= 1 or len(shape.numbers) >= 2,
        "line": dimensions >= 1 or len(shape.numbers) >= 2,
        "area": dimensions >= 1 or len(shape.numbers) >= 2,
    }
    return needs.get(kind, False)


def _build(kind: str, shape: _Shape, options: frozenset[str]) -> Body:
    if kind == "pie":
        return _pie(shape, donut="donut" in options)
    if kind == "heatmap":
        return _heatmap(shape)
    if kind == "histogram":
        return _histogram(shape)
    if kind == "scatter" and len(shape.numbers) >= 2 and len(shape.categories) <= 1 and not shape.times:
        return _scatter(shape)
    mark = {"scatter": "point"}.get(kind, kind)
    if not shape.dimensions:
        return _xy_line(shape, mark)
    return _series(shape, mark, options)


def _spec(body: Body, title: str | None, notes: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"$schema": SCHEMA_URL}
    if title or notes:
        heading: dict[str, Any] = {"text": title or ""}
        if notes:
            heading["subtitle"] = "; ".join(notes)
        spec["title"] = heading
    spec.update(body)
    return spec


# --- The kinds of chart -------------------------------------------------------------------------------------


def _series(shape: _Shape, mark: str, options: frozenset[str]) -> Body:
    """A measure along a dimension: line, area, bar or point; colour is a second dimension or, with several
    measures, which measure."""
    x = shape.times[0] if shape.times else shape.categories[0]
    others = [d for d in shape.dimensions if d is not x]
    rows, y, color = shape.rows, shape.numbers[0], None
    if others:
        color = others[0]
        rows = _top_series(shape, rows, color, y)
    elif len(shape.numbers) > 1:
        rows, y, color = _folded(shape)
    elif mark == "bar" and x.type == "nominal":
        rows = _top_bars(shape, rows, y)
    encoding: dict[str, Any] = {"x": (_banded(x) if mark == "bar" else x).encoding(), "y": y.encoding()}
    if x.type == "nominal":
        encoding["x"]["sort"] = None  # the rows' order: the query's, or by value for bars
    if color is not None:
        encoding["color"] = color.encoding()
        if mark == "bar" and "stacked" not in options:
            encoding["xOffset"] = {"field": field_ref(color.key)}
    encoding["tooltip"] = _tooltip([x, y] + ([color] if color else []))
    body: Body = {"data": {"values": rows}, "mark": _mark(mark, len(rows)), "encoding": encoding}
    if mark == "bar" and _horizontal(shape, x, rows, options):
        body["encoding"] = _swap_axes(encoding)
    if mark in ("line", "area", "point"):
        body["width"], body["height"] = 480, 300
    return body


def _banded(f: _Field) -> _Field:
    """A temporal field as ordered bands (its ISO text), for bars and heatmap cells: one band per value
    rather than a thin bar on a continuous time axis whose granularity is unknown."""
    return _Field(f.key, f.title, "ordinal", f.role) if f.type == "temporal" else f


def _mark(mark: str, points: int) -> dict[str, Any]:
    if mark == "line":
        return {"type": "line", "point": points <= 60, "tooltip": True}
    return {"type": mark, "tooltip": True}


def _top_bars(shape: _Shape, rows: list[dict[str, Any]], y: _Field) -> list[dict[str, Any]]:
    """Bars largest first, at most :data:`MAX_BARS`. Sorted here rather than with ``"sort": "-y"``, which
    Vega-Lite ignores when the field name needs escaping."""
    ordered = sorted(rows, key=lambda row: _number(row.get(y.key)), reverse=True)
    if len(ordered) > MAX_BARS:
        shape.notes.append(f"the {MAX_BARS} largest of {len(ordered)} bars")
    return ordered[:MAX_BARS]


def _top_series(shape: _Shape, rows: list[dict[str, Any]], color: _Field, y: _Field) -> list[dict[str, Any]]:
    """At most :data:`MAX_SERIES` colours: the series with the largest totals."""
    totals: defaultdict[str, float] = defaultdict(float)
    for row in rows:
        totals[json.dumps(row.get(color.key))] += _number(row.get(y.key))
    if len(totals) <= MAX_SERIES:
        return rows
    kept = set(sorted(totals, key=totals.__getitem__, reverse=True)[:MAX_SERIES])
    shape.notes.append(f"the {MAX_SERIES} largest of {len(totals)} {color.title} series")
    return [row for row in rows if json.dumps(row.get(color.key)) in kept]


def _folded(shape: _Shape) -> tuple[list[dict[str, Any]], _Field, _Field]:
    """Several measures as one: long rows of (dimension, series, value) — folded here rather than by a
    Vega-Lite fold, so the series names are the column names exactly, dots and all."""
    taken = {f.key for f in shape.dimensions + shape.numbers}
    series_key, value_key = _free("series", taken), _free("value", taken)
    rows = [{**{d.key: row.get(d.key) for d in shape.dimensions},
             series_key: n.title, value_key: row.get(n.key)}
            for row in shape.rows for n in shape.numbers]
    if len(rows) > MAX_ROWS:
        shape.notes.append(f"the first {MAX_ROWS} of {len(rows)} values")
        rows = rows[:MAX_ROWS]
    series = _Field(series_key, "series", "nominal", "category")
    return rows, _Field(value_key, "value", "quantitative", "number"), series


def _free(name: str, taken: set[str]) -> str:
    candidates = itertools.chain([name], (f"{name}_{i}" for i in itertools.count(2)))
    return next(candidate for candidate in candidates if candidate not in taken)


def _horizontal(shape: _Shape, x: _Field, rows: list[dict[str, Any]], options: frozenset[str]) -> bool:
    if "horizontal" in options:
        return True
    if x.type == "temporal" or x in shape.times:
        return False
    labels = {str(row.get(x.key)) for row in rows}
    return len(labels) > MANY_CATEGORIES or any(len(label) > MANY_CATEGORIES for label in labels)


def _swap_axes(encoding: dict[str, Any]) -> dict[str, Any]:
    swap = {"x": "y", "y": "x", "xOffset": "yOffset"}
    return {swap.get(channel, channel): value for channel, value in encoding.items()}


def _scatter(shape: _Shape) -> Body:
    x, y = shape.numbers[0], shape.numbers[1]
    loose = {"zero": False}
    encoding: dict[str, Any] = {"x": x.encoding(scale=loose), "y": y.encoding(scale=loose)}
    shown = [*shape.categories[:1], x, y]
    if shape.categories:
        color = shape.categories[0]
        encoding["color"] = color.encoding()
    encoding["tooltip"] = _tooltip(shown)
    return {"data": {"values": shape.rows}, "mark": {"type": "point", "tooltip": True}, "encoding": encoding,
            "width": 480, "height": 300}


def _xy_line(shape: _Shape, mark: str) -> Body:
    """A line (or area, or points) through two measures, ordered by the first."""
    x, y = shape.numbers[0], shape.numbers[1]
    rows = sorted(shape.rows, key=lambda row: _number(row.get(x.key)))
    return {"data": {"values": rows}, "mark": _mark(mark, len(rows)),
            "encoding": {"x": x.encoding(), "y": y.encoding(), "tooltip": _tooltip([x, y])},
            "width": 480, "height": 300}


def _heatmap(shape: _Shape) -> Body:
    x, y = shape.dimensions[0], shape.dimensions[1]
    if shape.distinct(y) > shape.distinct(x):
        x, y = y, x
    value = shape.numbers[0]
    encoding = {
        "x": _banded(x).encoding(),
        "y": _banded(y).encoding(),
        "color": value.encoding(),
        "tooltip": _tooltip([x, y, value]),
    }
    return {"data": {"values": shape.rows}, "mark": {"type": "rect", "tooltip": True}, "encoding": encoding}


def _pie(shape: _Shape, *, donut: bool) -> Body:
    """Slices of the first measure by the first dimension; past :data:`MAX_PIE_SLICES`, the smallest are
    summed into "Other" (a pie shows parts of a whole, so the whole must stay)."""
    part, value = shape.dimensions[0], shape.numbers[0]
    totals: defaultdict[str, float] = defaultdict(float)
    for row in shape.rows:
        totals[str(row.get(part.key))] += _number(row.get(value.key))
    slices = sorted(totals.items(), key=lambda item: item[1], reverse=True)
    if len(slices) > MAX_PIE_SLICES:
        kept, rest = slices[:MAX_PIE_SLICES - 1], slices[MAX_PIE_SLICES - 1:]
        slices = [*kept, ("Other", sum(amount for _, amount in rest))]
        shape.notes.append(f"{len(rest)} smallest slices summed as Other")
    rows = [{part.key: name, value.key: amount} for name, amount in slices]
    slice_field = _Field(part.key, part.title, "nominal", part.role)
    mark: dict[str, Any] = {"type": "arc", "tooltip": True}
    if donut:
        mark["innerRadius"] = 60
    encoding = {"theta": value.encoding(stack=True), "color": slice_field.encoding(sort=None),
                "tooltip": _tooltip([slice_field, value])}
    return {"data": {"values": rows}, "mark": mark, "encoding": encoding}


def _histogram(shape: _Shape) -> Body:
    value = shape.numbers[0]
    encoding = {"x": value.encoding(bin={"maxbins": 30}),
                "y": {"aggregate": "count", "type": "quantitative", "title": "rows"}}
    return {"data": {"values": shape.rows}, "mark": {"type": "bar", "tooltip": True}, "encoding": encoding,
            "width": 480, "height": 300}


def _tooltip(fields: Sequence[_Field]) -> list[dict[str, Any]]:
    return [{"field": field_ref(f.key), "type": f.type, "title": f.title} for f in fields]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


# --- validate_spec ------------------------------------------------------------------------------------------


def validate_spec(spec: dict[str, Any]) -> None:
    """Raises InvalidArgument, naming the first offending path, when ``spec`` is not a Vega-Lite v5 spec by
    the official schema, or when it would load anything (a ``url``, in data, lookups or image marks): charts
    are drawn from inline data only. Inline rows are any JSON to the schema, so only the first
    :data:`VALIDATION_SAMPLE` of each dataset are checked (a 5,000-row check would take half a second)."""
    if not isinstance(spec, dict):
        raise InvalidArgument("a Vega-Lite spec must be a JSON object")
    declared = spec.get("$schema")
    if declared is not None and not (isinstance(declared, str) and "/vega-lite/v5" in declared):
        raise InvalidArgument(f"only Vega-Lite v5 specs are supported; $schema is {str(declared)[:100]!r}")
    _refuse_urls(spec, "$")
    checked = _sampled(spec)
    key = _canonical(checked)
    with _VALID_LOCK:
        if key is not None and key in _VALID:
            _VALID.move_to_end(key)
            return
    problem = _deepest(_validator().iter_errors(checked))
    if problem is not None:
        message = problem.message if len(problem.message) <= 300 else problem.message[:300] + "…"
        raise InvalidArgument(f"invalid Vega-Lite spec at {problem.json_path}: {message}")
    if key is None:
        return
    with _VALID_LOCK:
        _VALID[key] = None
        while len(_VALID) > VALID_KEPT:
            _VALID.popitem(last=False)


VALID_KEPT = 256
"""Specs (as checked: their first rows) remembered as valid: the schema's verdict on a spec never changes, and
a question asked again, or a dashboard redrawn, gives the same spec."""
_VALID: OrderedDict[str, None] = OrderedDict()
_VALID_LOCK = threading.Lock()


def _canonical(node: Any) -> str | None:
    """One text per JSON value, whatever its keys' order, to remember it by (a digest: specs may be large);
    None for anything JSON would not give back as it is (numbers as keys, tuples, NaN, other objects): such a
    spec is checked or drawn every time rather than risk two specs sharing a key."""
    try:
        text = json.dumps(node, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        if json.loads(text) != node:
            return None
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def schema_path() -> Path:
    """The Vega-Lite v5 JSON schema file shipped by Altair 5, located without importing Altair."""
    found = importlib.util.find_spec("altair")
    roots = list(found.submodule_search_locations or []) if found else []
    for root in roots:
        candidate = Path(root, "vegalite", "v5", "schema", "vega-lite-schema.json")
        if candidate.is_file():
            return candidate
    raise Internal("the Vega-Lite v5 schema is not installed (it ships with the altair 5.x package)")


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return validator_class(schema)


def _refuse_urls(node: Any, path: str) -> None:
    """Any ``url`` key outside the inline rows: data, lookup data, image marks and the ``url`` channel."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}"
            if key == "url":
                raise InvalidArgument(f"{where}: charts may not load anything; put the rows in data.values")
            if (key == "values" and isinstance(value, list)) or (key == "datasets" and path == "$"):
                continue  # inline rows: any JSON, a column may well be called "url"
            _refuse_urls(value, where)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _refuse_urls(item, f"{path}[{index}]")


def _sampled(node: Any, top: bool = True) -> Any:
    """The spec with each inline dataset cut to its first rows (a shallow copy where needed)."""
    if isinstance(node, dict):
        copied: dict[str, Any] = {}
        for key, value in node.items():
            if key == "values" and isinstance(value, list):
                copied[key] = value[:VALIDATION_SAMPLE]
            elif key == "datasets" and top and isinstance(value, dict):
                copied[key] = {name: rows[:VALIDATION_SAMPLE] if isinstance(rows, list) else rows
                               for name, rows in value.items()}
            else:
                copied[key] = _sampled(value, top=False)
        return copied
    if isinstance(node, list):
        return [_sampled(item, top=False) for item in node]
    return node


def _deepest(errors: Iterator[ValidationError]) -> ValidationError | None:
    """The most specific problem: Vega-Lite's schema is a tree of ``anyOf``, whose top-level error ("is not
    valid under any of the given schemas" at ``$``) says nothing; the deepest leaf under it usually names the
    field at fault."""
    leaves = [leaf for error in itertools.islice(errors, 20) for leaf in _leaves(error)]
    if not leaves:
        return None
    return max(leaves, key=lambda error: (len(error.absolute_path), _TELLING.get(str(error.validator), 2)))


# Among problems at the same depth, how much each kind says: "not one of [the marks]" beats "'boxplot' was
# expected" (one alternative of many) or "is not of type 'object'" (another alternative's shape).
_TELLING = {"enum": 4, "additionalProperties": 3, "type": 1, "required": 1, "const": 0}


def _leaves(error: ValidationError) -> Iterator[ValidationError]:
    if not error.context:
        yield error
        return
    for child in error.context:
        yield from _leaves(child)


# --- render -------------------------------------------------------------------------------------------------


def render(spec: dict[str, Any], fmt: Literal["png", "svg"] = "png", *, scale: float = 1.0) -> bytes:
    """The chart drawn as PNG (``scale`` × its size) or SVG, offline, by vl-convert in a fenced worker.

    The spec is validated (no ``url``), then bounded: inline rows capped at :data:`MAX_ROWS` across datasets,
    width/height clamped to :data:`MAX_DIMENSION` px (steps to :data:`MAX_STEP`), and the drawn picture
    refused past :data:`MAX_PIXELS`. Raises InvalidArgument when the spec cannot be drawn (bad spec, too
    large, too slow, or too much memory: the worker dies and is replaced), Internal when the renderer cannot
    run at all.
    """
    if fmt not in ("png", "svg"):
        raise InvalidArgument("the chart format must be png or svg")
    if not (isinstance(scale, int | float) and 0 < scale <= MAX_SCALE and math.isfinite(scale)):
        raise InvalidArgument(f"scale must be in (0, {MAX_SCALE:g}]")
    validate_spec(spec)
    bounded = bounded_spec(spec)
    request = {"spec": bounded, "format": fmt, "scale": float(scale)}
    key = _canonical(request)
    with _DRAWN_LOCK:
        drawn = _DRAWN.get(key) if key is not None else None
        if key is not None and drawn is not None:
            _DRAWN.move_to_end(key)
            return drawn
    reply = _RENDERER.draw(request)
    if not reply.get("ok"):
        raise InvalidArgument(f"the chart could not be drawn: {_first_line(str(reply.get('error')))}")
    data = base64.b64decode(str(reply["data"]))
    if key is not None:
        _keep_drawn(key, data)
    return data


DRAWN_KEPT_BYTES = 16 * 2**20
"""Pictures remembered, in bytes all together: the renderer draws the same spec to the same bytes, and drawing
takes tens of milliseconds (a question asked again, a dashboard redrawn). Larger pictures are not kept."""
_DRAWN: OrderedDict[str, bytes] = OrderedDict()
_DRAWN_LOCK = threading.Lock()


def _keep_drawn(key: str, data: bytes) -> None:
    if len(data) > DRAWN_KEPT_BYTES // 8:
        return
    with _DRAWN_LOCK:
        _DRAWN[key] = data
        _DRAWN.move_to_end(key)
        while sum(len(kept) for kept in _DRAWN.values()) > DRAWN_KEPT_BYTES:
            _DRAWN.popitem(last=False)


def forget_drawn() -> None:
    """Forget the pictures drawn (benchmarks measure a first drawing with it)."""
    with _DRAWN_LOCK:
        _DRAWN.clear()


def bounded_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``spec`` that cannot ask for an absurd picture: inline rows capped (a budget of
    :data:`MAX_ROWS` for all datasets together) and sizes clamped."""
    budget = [MAX_ROWS]
    bounded = _bound(spec, budget)
    assert isinstance(bounded, dict)
    return bounded


def _bound(node: Any, budget: list[int]) -> Any:
    if isinstance(node, list):
        return [_bound(item, budget) for item in node]
    if not isinstance(node, dict):
        return node
    copied: dict[str, Any] = {}
    for key, value in node.items():
        if key == "values" and isinstance(value, list):
            copied[key] = _take(value, budget)
        elif key == "datasets" and isinstance(value, dict):
            copied[key] = {name: _take(rows, budget) if isinstance(rows, list) else rows
                           for name, rows in value.items()}
        elif key in ("width", "height", "continuousWidth", "continuousHeight", "discreteWidth",
                     "discreteHeight"):
            copied[key] = _clamped_size(value)
        else:
            copied[key] = _bound(value, budget)
    return copied


def _take(rows: list[Any], budget: list[int]) -> list[Any]:
    kept = rows[:budget[0]]
    budget[0] -= len(kept)
    return copy.deepcopy(kept)


def _clamped_size(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return min(value, MAX_DIMENSION)
    if isinstance(value, dict) and isinstance(value.get("step"), int | float):
        return {**value, "step": min(value["step"], MAX_STEP)}
    return value


def _first_line(text: str) -> str:
    """vl-convert's message without its wrapper ("Vega-Lite to SVG conversion failed:") and JS stack."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("at ")]
    useful = [line for line in lines if not line.endswith("conversion failed:")]
    return (useful or lines or ["unknown error"])[0][:500]


# The worker: imports vl-convert once, then draws one chart per request line. SVG first, so the size is known
# before a PNG is rasterised; both standard streams go to /dev/null once it is ready (V8 prints its crash
# reports there), replies go to a private copy of the original stdout.
_WORKER = r"""
import base64, json, os, re, resource, sys
limits = json.loads(sys.argv[1])
resource.setrlimit(resource.RLIMIT_DATA, (limits["data"], limits["data"]))
resource.setrlimit(resource.RLIMIT_FSIZE, (2**20, 2**20))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
import vl_convert
reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
SIZE = re.compile(r'<svg[^>]*?\swidth="([0-9.]+)"[^>]*?\sheight="([0-9.]+)"')

def draw(request):
    svg = vl_convert.vegalite_to_svg(request["spec"], vl_version=limits["version"], allowed_base_urls=[])
    found = SIZE.search(svg[:4000])
    width, height = (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)
    scale = request["scale"] if request["format"] == "png" else 1.0
    if width * height * scale * scale > limits["pixels"]:
        return {"ok": False, "error": "the chart would be %gx%g px at scale %g, more than %d pixels"
                % (width, height, scale, limits["pixels"])}
    data = svg.encode() if request["format"] == "svg" else vl_convert.svg_to_png(svg, scale=scale)
    return {"ok": True, "data": base64.b64encode(data).decode()}

reply.write("ready\n")
reply.flush()
for line in sys.stdin:
    try:
        answer = draw(json.loads(line))
    except Exception as error:
        answer = {"ok": False, "error": str(error)[:4000]}
    reply.write(json.dumps(answer) + "\n")
    reply.flush()
"""


class _WorkerGone(Exception):
    """The render worker ended (crashed, or was killed by its limits)."""


class _WorkerLate(Exception):
    """The render worker did not answer before the deadline."""


class _Renderer:
    """One long-lived worker (startup costs ~0.7 s of JavaScript; a warm chart ~40 ms), used by one request at
    a time. A worker that dies, overruns or is killed is replaced on the next request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: str | None = None
        self._pending = bytearray()

    def draw(self, request: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(request).encode() + b"\n"
        if len(line) > MAX_SPEC_BYTES:
            raise InvalidArgument(f"the chart spec is over {MAX_SPEC_BYTES // 2**20} MiB")
        with self._lock:
            process = self._running()
            try:
                assert process.stdin is not None
                process.stdin.write(line)
                process.stdin.flush()
                answer = self._read_line(process, time.monotonic() + RENDER_TIMEOUT_SECONDS)
            except (_WorkerGone, OSError) as error:
                self.close()
                raise InvalidArgument("the chart renderer stopped while drawing this chart: it needed more "
                                      "memory or time than a chart may use") from error
            except _WorkerLate as error:
                self.close()
                late = f"drawing the chart took longer than {RENDER_TIMEOUT_SECONDS:g} s"
                raise InvalidArgument(late) from error
        reply = json.loads(answer)
        assert isinstance(reply, dict)
        return reply

    def close(self) -> None:
        """Stops the worker (also at exit) and removes its folder."""
        if self._process is not None:
            sandbox.kill_group(self._process)
            self._process = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        self._pending.clear()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self.close()
        self._folder = tempfile.mkdtemp(prefix="convener-render-")
        limits = {"data": RENDER_DATA_BYTES, "version": RENDER_VERSION, "pixels": MAX_PIXELS}
        self._process = sandbox.start_isolated(
            [sys.executable, "-I", "-B", "-c", _WORKER, json.dumps(limits)], self._folder)
        try:
            ready = self._read_line(self._process, time.monotonic() + RENDER_TIMEOUT_SECONDS)
        except (_WorkerGone, _WorkerLate):
            ready = bytes(self._pending)
        if ready != b"ready":
            detail = ready.decode("utf-8", errors="replace").strip()[-300:]
            self.close()
            raise Internal("the chart renderer could not start" + (f": {detail}" if detail else ""))
        return self._process

    def _read_line(self, process: subprocess.Popen[bytes], deadline: float) -> bytes:
        """The worker's next line, without its newline."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (end := self._pending.find(b"\n")) < 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _WorkerLate()
                if not selector.select(left):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise _WorkerGone()
                self._pending += chunk
                if len(self._pending) > MAX_REPLY_BYTES:
                    raise _WorkerGone()
        line = bytes(self._pending[:end])
        del self._pending[:end + 1]
        return line


_RENDERER = _Renderer()
atexit.register(_RENDERER.close)
