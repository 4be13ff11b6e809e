"""Benchmark of the analytics pipeline on the demo data: offline execution accuracy through the whole
pipeline, its time per question against running the same SQL directly on DuckDB, and chart rendering.

Run from the repository root::

    .venv/bin/python benchmarks/analytics.py [--repeat 3] [--limit N]

For every question of ``tests/analytics/gold.json`` the demo data agent (``demo-data``, offline: no model)
answers through ``AnalyticsService.ask_agent``, in a fresh store:

* accuracy - the SQL the pipeline ran (``data.generatedSql``), run again on the demo DuckDB file, gives the
             reference SQL's rows (as ``tests/analytics/test_gold.py`` compares them); out-of-scope questions
             are right when no SQL ran.
* time     - per answered question, the median of ``--repeat`` pipeline runs (schema resolution, example
             matching or planning, checking, execution, result formatting, chart choice, validation and PNG
             rendering, final response), divided by the median of running its SQL directly on a read-only
             DuckDB connection in this process. The ratio is the price of everything around the query.
* charts   - ``charts.render`` of each chart made, PNG and SVG, median ms.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
from backends import median_ms

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from convener.analytics import charts
from convener.auth.caller import LOCAL_USER
from convener.config import Settings
from convener.demo.analytics import AGENT, install_analytics
from convener.services import Services
from tests.analytics.test_gold import ordered, run, same_result

GOLD = Path(__file__).resolve().parents[1] / "tests" / "analytics" / "gold.json"


def generated_sql(messages: list[Any]) -> str | None:
    sqls = [m.system_message.data.generated_sql for m in messages
            if m.system_message and m.system_message.data and m.system_message.data.generated_sql]
    ran = [m for m in messages if m.system_message and m.system_message.data and m.system_message.data.result]
    return sqls[-1] if sqls and ran else None


def chart_specs(messages: list[Any]) -> list[dict[str, Any]]:
    return [m.system_message.chart.result.vega_config for m in messages
            if m.system_message and m.system_message.chart and m.system_message.chart.result]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    items = json.loads(GOLD.read_text("utf-8"))
    items = items.get("questions", items) if isinstance(items, dict) else items
    items = items[: args.limit] if args.limit else items

    with tempfile.TemporaryDirectory() as folder:
        services = Services.open(Settings(data_dir=Path(folder), knowledge_embeddings="off"))
        try:
            install_analytics(services)
            copy = shutil.copy(Path(folder) / "demo.duckdb", Path(folder) / "direct.duckdb")  # its own config
            direct = duckdb.connect(str(copy), read_only=True)
            right, ratios, pipeline_ms, direct_ms, specs = 0, [], [], [], []
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
                whole = median_ms(lambda q=item["question"]: services.analytics.ask_agent(
                    AGENT, q, None, False, LOCAL_USER), args.repeat)
                alone = median_ms(lambda s=sql: direct.execute(s).fetchall(), args.repeat)
                pipeline_ms.append(whole)
                direct_ms.append(alone)
                ratios.append(whole / alone if alone else float("inf"))
            png = [median_ms(lambda s=spec: charts.render(s, "png"), args.repeat) for spec in specs[:20]]
            svg = [median_ms(lambda s=spec: charts.render(s, "svg"), args.repeat) for spec in specs[:20]]
        finally:
            services.close()

    print(f"questions: {len(items)} ({sum(bool(i.get('refuse')) for i in items)} out of scope)")
    print(f"offline execution accuracy through the pipeline: {right / len(items):.3f} ({right}/{len(items)})")
    print(f"pipeline per question: median {statistics.median(pipeline_ms):.1f} ms; the same SQL on DuckDB: "
          f"median {statistics.median(direct_ms):.2f} ms; ratio median {statistics.median(ratios):.0f}x, "
          f"p90 {statistics.quantiles(ratios, n=10)[-1]:.0f}x")
    print(f"chart rendering ({len(png)} charts): PNG median {statistics.median(png):.0f} ms, "
          f"SVG median {statistics.median(svg):.0f} ms")


if __name__ == "__main__":
    main()
