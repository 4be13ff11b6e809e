"""The demo's SQL data: eight small public datasets of the vega-datasets package, in one DuckDB file.

The data agents of the demo (``analytics_agent.yaml``) answer questions over this file, and the analytics
gold set (``tests/analytics/gold.json``) is scored against it. Every table is loaded with explicit types,
so a question's numbers, categories and dates arrive as numbers, strings and ``DATE`` s, and every table
and column carries a ``COMMENT`` so that schema introspection has descriptions to show and a planner has
words to match.

Column names are the datasets' own (``Miles_per_Gallon``, ``sepalLength``, ``temp_max``…), so the demo
shows matching against names as they come, with two exceptions: ``stocks.date`` is parsed from text
("Jan 1 2000") into a ``DATE``, and ``us_employment.trade_transportation_utilties`` is spelt correctly
(``trade_transportation_utilities``). The ``la-riots``, hourly temperature and JSON-only chart datasets are
left out.

The package's data files are located with ``importlib.util.find_spec`` rather than by importing
``vega_datasets``, whose import needs pandas.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from convener.api.errors import FailedPrecondition


@dataclass(frozen=True)
class DemoTable:
    """One table: the file it comes from, the SELECT that types it (``{src}`` is the file reader), and the
    descriptions stored as comments."""

    name: str
    file: str
    select: str
    description: str
    columns: tuple[tuple[str, str], ...]


def _json(file: str) -> str:
    return f"read_json('{file}', format = 'array')"


def _csv(file: str) -> str:
    return f"read_csv('{file}', header = true, all_varchar = true)"


TABLES: tuple[DemoTable, ...] = (
    DemoTable(
        "cars", "cars.json",
        'SELECT "Name", CAST("Miles_per_Gallon" AS DOUBLE) AS "Miles_per_Gallon", '
        'CAST("Cylinders" AS INTEGER) AS "Cylinders", CAST("Displacement" AS DOUBLE) AS "Displacement", '
        'CAST("Horsepower" AS INTEGER) AS "Horsepower", CAST("Weight_in_lbs" AS INTEGER) AS "Weight_in_lbs", '
        'CAST("Acceleration" AS DOUBLE) AS "Acceleration", CAST("Year" AS DATE) AS "Year", "Origin" FROM {src}',
        "Cars sold in the 1970s and early 1980s (the UCI Auto MPG data): one row per model.",
        (("Name", "Make and model of the car, lowercase"),
         ("Miles_per_Gallon", "Fuel economy in miles per US gallon (null when unknown)"),
         ("Cylinders", "Number of engine cylinders"),
         ("Displacement", "Engine displacement in cubic inches"),
         ("Horsepower", "Engine power in horsepower (null when unknown)"),
         ("Weight_in_lbs", "Weight of the car in pounds"),
         ("Acceleration", "Seconds to accelerate from 0 to 60 mph (lower is quicker)"),
         ("Year", "Model year, as January 1st of that year"),
         ("Origin", "Region the car comes from: USA, Europe or Japan")),
    ),
    DemoTable(
        "seattle_weather", "seattle-weather.csv",
        "SELECT CAST(strptime(date, '%Y/%m/%d') AS DATE) AS date, CAST(precipitation AS DOUBLE) AS precipitation, "
        "CAST(temp_max AS DOUBLE) AS temp_max, CAST(temp_min AS DOUBLE) AS temp_min, "
        "CAST(wind AS DOUBLE) AS wind, weather FROM {src}",
        "Daily weather in Seattle, 2012 to 2015: one row per day.",
        (("date", "Day of the observation"),
         ("precipitation", "Precipitation that day, in millimetres"),
         ("temp_max", "Maximum (high) temperature that day, in degrees Celsius"),
         ("temp_min", "Minimum (low) temperature that day, in degrees Celsius"),
         ("wind", "Average wind speed that day, in metres per second"),
         ("weather", "Kind of weather: drizzle, rain, sun, snow or fog")),
    ),
    DemoTable(
        "stocks", "stocks.csv",
        "SELECT symbol, CAST(strptime(date, '%b %d %Y') AS DATE) AS date, CAST(price AS DOUBLE) AS price "
        "FROM {src}",
        "Monthly stock prices of five technology companies, 2000 to 2010: one row per symbol and month.",
        (("symbol", "Ticker symbol of the company: AAPL, AMZN, GOOG, IBM or MSFT"),
         ("date", "First day of the month the price is for"),
         ("price", "Share price in US dollars")),
    ),
    DemoTable(
        "barley", "barley.json",
        'SELECT CAST("yield" AS DOUBLE) AS "yield", variety, CAST("year" AS INTEGER) AS "year", site FROM {src}',
        "Barley yields of ten varieties at six Minnesota sites in 1931 and 1932 (Immer et al.).",
        (("yield", "Yield in bushels per acre"),
         ("variety", "Barley variety"),
         ("year", "Harvest year, 1931 or 1932"),
         ("site", "Experimental site (farm) in Minnesota")),
    ),
    DemoTable(
        "iris", "iris.json",
        'SELECT CAST("sepalLength" AS DOUBLE) AS "sepalLength", CAST("sepalWidth" AS DOUBLE) AS "sepalWidth", '
        'CAST("petalLength" AS DOUBLE) AS "petalLength", CAST("petalWidth" AS DOUBLE) AS "petalWidth", '
        "species FROM {src}",
        "Fisher's iris flowers: measurements of 150 flowers of three species.",
        (("sepalLength", "Sepal length in centimetres"),
         ("sepalWidth", "Sepal width in centimetres"),
         ("petalLength", "Petal length in centimetres"),
         ("petalWidth", "Petal width in centimetres"),
         ("species", "Iris species: setosa, versicolor or virginica")),
    ),
    DemoTable(
        "airports", "airports.csv",
        "SELECT iata, name, city, state, country, CAST(latitude AS DOUBLE) AS latitude, "
        "CAST(longitude AS DOUBLE) AS longitude FROM {src}",
        "Airports of the United States and its territories, from the FAA: one row per airport.",
        (("iata", "Airport code (IATA or FAA location identifier)"),
         ("name", "Name of the airport"),
         ("city", "City the airport serves"),
         ("state", "Two-letter state code, such as TX or CA"),
         ("country", "Country, mostly USA"),
         ("latitude", "Latitude in degrees (north is higher)"),
         ("longitude", "Longitude in degrees (west is lower)")),
    ),
    DemoTable(
        "iowa_electricity", "iowa-electricity.csv",
        'SELECT CAST("year" AS DATE) AS "year", source, CAST(net_generation AS INTEGER) AS net_generation '
        "FROM {src}",
        "Net electricity generation in Iowa by energy source, 2001 to 2017: one row per year and source.",
        (("year", "Year of generation, as January 1st of that year"),
         ("source", "Energy source: Fossil Fuels, Nuclear Energy or Renewables"),
         ("net_generation", "Net electricity generated that year, in thousand megawatt hours")),
    ),
    DemoTable(
        "us_employment", "us-employment.csv",
        "SELECT CAST(month AS DATE) AS month, "
        "CAST(COLUMNS(* EXCLUDE (month, trade_transportation_utilties)) AS DOUBLE), "
        "CAST(trade_transportation_utilties AS DOUBLE) AS trade_transportation_utilities FROM {src}",
        "US employment by industry, monthly and seasonally adjusted, 2006 to 2015, in thousands of jobs.",
        (("month", "First day of the month"),
         ("nonfarm", "Total nonfarm employment (all payroll jobs), thousands"),
         ("private", "Private-sector employment, thousands"),
         ("goods_producing", "Goods-producing industries, thousands of jobs"),
         ("service_providing", "Service-providing industries, thousands of jobs"),
         ("private_service_providing", "Private service-providing industries, thousands of jobs"),
         ("mining_and_logging", "Mining and logging jobs, thousands"),
         ("construction", "Construction jobs, thousands"),
         ("manufacturing", "Manufacturing jobs, thousands"),
         ("durable_goods", "Durable goods manufacturing jobs, thousands"),
         ("nondurable_goods", "Nondurable goods manufacturing jobs, thousands"),
         ("trade_transportation_utilities", "Trade, transportation and utilities jobs, thousands"),
         ("wholesale_trade", "Wholesale trade jobs, thousands"),
         ("retail_trade", "Retail trade jobs, thousands"),
         ("transportation_and_warehousing", "Transportation and warehousing jobs, thousands"),
         ("utilities", "Utilities jobs, thousands"),
         ("information", "Information industry jobs, thousands"),
         ("financial_activities", "Financial activities jobs, thousands"),
         ("professional_and_business_services", "Professional and business services jobs, thousands"),
         ("education_and_health_services", "Education and health services jobs, thousands"),
         ("leisure_and_hospitality", "Leisure and hospitality jobs, thousands"),
         ("other_services", "Other services jobs, thousands"),
         ("government", "Government jobs, thousands"),
         ("nonfarm_change", "Change in nonfarm employment from the previous month, thousands of jobs")),
    ),
)


def data_folder() -> Path:
    """The folder of vega-datasets' bundled files, found without importing the package (it needs pandas)."""
    spec = importlib.util.find_spec("vega_datasets")
    if spec is None or not spec.submodule_search_locations:
        raise FailedPrecondition("the vega-datasets package is not installed; `pip install vega-datasets`")
    folder = Path(next(iter(spec.submodule_search_locations))) / "_data"
    if not folder.is_dir():
        raise FailedPrecondition(f"vega-datasets has no data folder at {folder}")
    return folder


def _reader(table: DemoTable, folder: Path) -> str:
    path = str(folder / table.file).replace("'", "''")
    return _json(path) if table.file.endswith(".json") else _csv(path)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _load(connection: duckdb.DuckDBPyConnection, table: DemoTable, folder: Path) -> None:
    select = table.select.replace("{src}", _reader(table, folder))
    connection.execute(f'CREATE TABLE "{table.name}" AS {select}')
    connection.execute(f'COMMENT ON TABLE "{table.name}" IS {_quote(table.description)}')
    for column, description in table.columns:
        connection.execute(f'COMMENT ON COLUMN "{table.name}"."{column}" IS {_quote(description)}')


def build_demo_database(path: Path) -> Path:
    """Build the demo DuckDB file at ``path`` and return it. The file is written beside ``path`` under a
    temporary name and renamed into place, so a reader never sees half a database and building again
    simply replaces it."""
    folder = data_folder()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    os.unlink(temporary)  # DuckDB refuses to open an existing empty file as a database
    try:
        connection = duckdb.connect(temporary)
        try:
            for table in TABLES:
                _load(connection, table, folder)
            connection.execute("CHECKPOINT")
        finally:
            connection.close()
        os.replace(temporary, path)
    finally:
        for leftover in (temporary, temporary + ".wal"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return path
