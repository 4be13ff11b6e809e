"""Messages as a person reads them in a terminal: one short block per message, the rows as a small table."""

from __future__ import annotations

from convener.analytics.models import DataResult, Message

SHOWN_ROWS = 20


def message_lines(message: Message) -> list[str]:
    if message.user_message is not None:
        return [f"? {message.user_message.text}"]
    system = message.system_message
    if system is None:
        return []
    if system.text is not None:
        label = (system.text.text_type or "TEXT").lower().replace("_", " ")
        return [f"[{label}] {part}" for part in system.text.parts or []]
    if system.schema_ is not None:
        if system.schema_.result is not None:
            tables = [f"{d.bigquery_table_reference.dataset_id}.{d.bigquery_table_reference.table_id}"
                      for d in system.schema_.result.datasources or [] if d.bigquery_table_reference]
            return [f"[schema] {', '.join(tables)}"]
        return []
    if system.data is not None:
        data = system.data
        if data.generated_sql:
            return ["[sql]", *("    " + line for line in data.generated_sql.splitlines())]
        if data.matched_query is not None:
            example = data.matched_query.example_query
            values = ", ".join(f"{v.name}={v.value}" for v in data.matched_query.query_parameter_values or [])
            question = example.natural_language_question if example else ""
            return [f'[example] "{question}"' + (f" with {values}" if values else "")]
        if data.result is not None:
            return _table(data.result)
        return []
    if system.analysis is not None and system.analysis.progress_event is not None:
        event = system.analysis.progress_event
        text = event.result_natural_language or event.execution_error or event.execution_output
        return [f"[analysis] {text}"] if text else []
    if system.chart is not None and system.chart.result is not None:
        spec = system.chart.result.vega_config or {}
        mark = spec.get("mark")
        kind = mark.get("type") if isinstance(mark, dict) else mark
        return [f"[chart] {kind or 'chart'}" + (" (image attached)" if system.chart.result.image else "")]
    if system.error is not None:
        return [f"[error] {system.error.text}"]
    if system.example_queries is not None:
        return [f"[example] {e.natural_language_question}" for e in system.example_queries.example_queries or []]
    return []


def _table(result: DataResult) -> list[str]:
    names = [f.name or "" for f in (result.schema_.fields if result.schema_ else None) or []]
    rows = [[str((row or {}).get(name, "")) for name in names] for row in (result.formatted_data or [])]
    widths = [max([len(name), *(len(row[i]) for row in rows[:SHOWN_ROWS])]) for i, name in enumerate(names)]
    lines = ["  ".join(name.ljust(width) for name, width in zip(names, widths, strict=True))]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows[:SHOWN_ROWS]]
    if len(rows) > SHOWN_ROWS:
        lines.append(f"… {len(rows) - SHOWN_ROWS} more rows")
    return ["[rows]", *("    " + line for line in lines)]
