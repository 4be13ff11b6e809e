"""Benchmark of the analytics pipeline on the demo data: offline execution accuracy through the whole
pipeline, its time per question against a budget set by running the same SQL directly on DuckDB, and chart
rendering.

Run from the repository root::

    .venv/bin/python benchmarks/analytics.py [--repeat 3] [--limit N] [--backend sqlite|postgresql|both]

For every question of ``tests/analytics/gold.json`` the demo data agent (``demo-data``, offline: no model)
answers through ``AnalyticsService.ask_agent``, in a fresh store of each engine (the agent, its conversations
and the built-in ``convener`` tables it also references live in the store):

* accuracy - the SQL the pipeline ran (``data.generatedSql``), run again on the demo DuckDB file, gives the
             reference SQL's rows (as ``tests/analytics/test_gold.py`` compares them); out-of-scope questions
             are right when no SQL ran.
* time     - per answered question, the median of ``--repeat`` pipeline runs (schema resolution, example
             matching or planning, checking, execution, result formatting, chart choice, validation and PNG
             rendering, final response, storing the conversation), against its budget. Each run draws its
             chart afresh (the pictures the pipeline keeps are forgotten first), so a charted question pays
             for its drawing every time: the median of running
             its SQL directly on a read-only DuckDB connection in this process, × 1.2 + 50 ms. The ratio to
             the direct run is printed too: the price of everything around the query.
* charts   - ``charts.render`` of each chart made, PNG and SVG, drawn afresh, median ms (validation included);
             and the PNG asked for again (kept by the pipeline).

``--limit 3 --repeat 1`` is a smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
from backends import add_arguments, each_backend, median_ms, postgres_reachable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from convener.analytics import charts
from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.demo.analytics import AGENT, install_analytics
from convener.services import Services
from tests.analytics.test_gold import ordered, run, same_result

GOLD = Path(__file__).resolve().parents[1] / "tests" / "analytics" / "gold.json"
BUDGET_FACTOR = 1.2
BUDGET_MS = 50.0
"""A question's budget: the same SQL run directly on DuckDB × BUDGET_FACTOR + BUDGET_MS."""


@dataclass(frozen=True)
class Timed:
    question: str
    pipeline_ms: float
    direct_ms: float

    @property
    def budget_ms(self) -> float:
        return self.direct_ms * BUDGET_FACTOR + BUDGET_MS

    @property
    def within(self) -> bool:
        return self.pipeline_ms <= self.budget_ms


def generated_sql(messages: list[Any]) -> str | None:
    sqls = [m.system_message.data.generated_sql for m in messages
            if m.system_message and m.system_message.data and m.system_message.data.generated_sql]
    ran = [m for m in messages if m.system_message and m.system_message.data and m.system_message.data.result]
    return sqls[-1] if sqls and ran else None


def chart_specs(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.system_message.chart.result.vega_config for m in messages
            if m.system_message and m.system_message.chart and m.system_message.chart.result]


def drawn_afresh(spec: dict[str, Any], fmt: Literal["png", "svg"]) -> bytes:
    charts.forget_drawn()
    return charts.render(spec, fmt)


def ask_afresh(services: Services, question: str) -> None:
    """The question as if its chart had never been drawn: the pipeline keeps the pictures it drew (a question
    asked again is not drawn again), which would hide the cost of drawing from every run but the first."""
    charts.forget_drawn()
    services.analytics.ask_agent(AGENT, question, None, False, LOCAL_USER)


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def measure(backend: str, url: str, items: list[dict[str, Any]], repeat: int) -> None:
    print(f"\n=== {backend}: {len(items)} questions, median of {repeat} runs each ===")
    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(Settings(data_dir=Path(folder), database_url=url, knowledge_embeddings="off"))
        try:
            install_analytics(services)
            copy = shutil.copy(Path(folder) / "demo.duckdb", Path(folder) / "direct.duckdb")  # its own config
            direct = duckdb.connect(str(copy), read_only=True)
            right, timed, specs, cpu_ms = 0, [], [], []
            for item in items:
                asked = services.analytics.ask_agent(AGENT, item["question"], None, False, LOCAL_USER)
                sql = generated_sql(asked.messages)
                if item.get("refuse"):
                    right += sql is None
                    continue
                if sql is None:
                    continue
                try:
                    answer = run(direct, sql)
                except duckdb.Error:
                    continue
                right += same_result(run(direct, item["sql"]), answer, ordered(item["sql"]), item.get("order_key", -1))
                specs += chart_specs(asked.messages)
                cpu_before = time.process_time()
                whole = median_ms(lambda q=item["question"]: ask_afresh(services, q), repeat)
                cpu_ms.append((time.process_time() - cpu_before) * 1000 / repeat)
                alone = median_ms(lambda s=sql: direct.execute(s).fetchall(), repeat)
                timed.append(Timed(item["question"], whole, alone))
                mark = "within" if timed[-1].within else "OVER"
                print(f"  {whole:7.1f} ms  budget {timed[-1].budget_ms:6.1f} ms ({alone:6.2f} ms direct, "
                      f"{whole / alone if alone else float('inf'):5.0f}x)  {mark:6}  {item['question'][:70]}")
            png = [median_ms(lambda s=spec: drawn_afresh(s, "png"), repeat) for spec in specs[:20]]
            svg = [median_ms(lambda s=spec: drawn_afresh(s, "svg"), repeat) for spec in specs[:20]]
            again = [median_ms(lambda s=spec: charts.render(s, "png"), repeat) for spec in specs[:20]
                     if charts.render(spec, "png")]  # drawn once first, then asked for again
            direct.close()
        finally:
            services.close()

    print(f"questions: {len(items)} ({sum(bool(i.get('refuse')) for i in items)} out of scope)")
    print(f"offline execution accuracy through the pipeline: {right / len(items):.3f} ({right}/{len(items)})")
    if not timed:
        print("no question was answered: nothing to time")
        return
    pipeline = [t.pipeline_ms for t in timed]
    direct_ms = [t.direct_ms for t in timed]
    budgets = [t.budget_ms for t in timed]
    over = [t.pipeline_ms / t.budget_ms for t in timed]
    ratios = [t.pipeline_ms / t.direct_ms if t.direct_ms else float("inf") for t in timed]
    within = sum(t.within for t in timed)
    median_within = statistics.median(over) <= 1.0
    print(f"pipeline per question: median {statistics.median(pipeline):.1f} ms, p90 {p90(pipeline):.1f} ms; "
          f"the same SQL on DuckDB: median {statistics.median(direct_ms):.2f} ms, p90 {p90(direct_ms):.2f} ms; "
          f"ratio median {statistics.median(ratios):.0f}x, p90 {p90(ratios):.0f}x")
    print(f"CPU of this process per question: median {statistics.median(cpu_ms):.1f} ms, p90 {p90(cpu_ms):.1f} ms "
          f"(the chart renderer's own process not counted; wall times above include waiting for a core)")
    print(f"budget (DuckDB x {BUDGET_FACTOR} + {BUDGET_MS:.0f} ms): median {statistics.median(budgets):.1f} ms; "
          f"pipeline / budget median {statistics.median(over):.2f}, p90 {p90(over):.2f}; within budget "
          f"{within}/{len(timed)} questions; median question {'within' if median_within else 'OVER'} budget")
    if png:
        print(f"chart rendering ({len(png)} charts, validation included): PNG median {statistics.median(png):.0f} ms, "
              f"SVG median {statistics.median(svg):.0f} ms; the same PNG again (kept): "
              f"median {statistics.median(again):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="Ask only the first N questions (a smoke run).")
    add_arguments(parser)
    args = parser.parse_args()
    items = json.loads(GOLD.read_text("utf-8"))
    items = items.get("questions", items) if isinstance(items, dict) else items
    items = items[: args.limit] if args.limit else items
    if args.backend != "sqlite" and not postgres_reachable(args.postgres_url):
        print(f"PostgreSQL at {args.postgres_url} cannot be reached: its run is skipped.")
        if args.backend == "postgresql":
            return
        args.backend = "sqlite"
    for backend, url in each_backend(args):
        measure(backend, url, items, args.repeat)


if __name__ == "__main__":
    main()
