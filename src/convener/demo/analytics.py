"""The demo's data agent: the bundled vega_datasets tables in a DuckDB file, registered as the SQL source
``demo``, and the agent ``demo-data`` over them and over Convener's own records, with example queries and
glossary terms from ``analytics_agent.yaml``, published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from convener.analytics.builtin import BUILTIN_SOURCE
from convener.analytics.models import (
    ChartImageOptions,
    ChartOptions,
    Context,
    ConversationOptions,
    DataAgent,
    DataAnalyticsAgent,
)
from convener.analytics.service import references
from convener.api.errors import NotFound
from convener.auth.caller import LOCAL_USER
from convener.demo.analytics_data import build_demo_database
from convener.services import Services

SOURCE = "demo"
AGENT = "demo-data"
CONVENER_TABLES = ("conversations", "evaluation_results", "chat_messages")


def demo_context(tables: list[str]) -> Context:
    document: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "analytics_agent.yaml").read_text("utf-8"))
    context = Context.model_validate(document)
    refs = references({SOURCE: tables, BUILTIN_SOURCE: CONVENER_TABLES})
    options = ConversationOptions(chart=ChartOptions(image=ChartImageOptions()))
    return context.model_copy(update={"datasource_references": refs, "options": context.options or options})


def install_analytics(services: Services) -> str:
    path = build_demo_database(services.settings.data_dir / "demo.duckdb")
    sources = services.analytics.sources
    if not any(source.name == SOURCE for source in sources.all()):
        sources.add(SOURCE, str(path), "Bundled sample datasets (vega_datasets): cars, weather, stocks, …")
    tables = [table.name for table in sources.tables(SOURCE, LOCAL_USER)]
    context = demo_context(tables)
    agent = DataAgent(display_name="Demo data agent", description="Answers questions about the demo datasets "
                      "and about Convener's own conversations, evaluations and chat.",
                      data_analytics_agent=DataAnalyticsAgent(staging_context=context, published_context=context))
    try:
        services.analytics.agents.get(AGENT)
        services.analytics.agents.update(AGENT, agent, None, publish=False)
    except NotFound:
        services.analytics.agents.create(AGENT, agent, LOCAL_USER)
    return (f"analytics: source {SOURCE} ({len(tables)} tables) and data agent {AGENT}; try ask_data_agent "
            f'"What is the average horsepower by origin?"')
