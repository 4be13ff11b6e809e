"""How a data agent answers one question, showing its work as seed-exact ``Message``s as it goes.

    schema resolution → data query → example-query match or SQL (planned offline, or generated and
    repaired by a model) → validation and read-only execution → result → optional Python analysis →
    chart → final response with follow-up questions and citations

Each step's messages share a ``groupId``. Every message is handed to ``emit`` the moment it exists (the
MCP tool turns them into progress notifications), and the whole list is returned at the end.

Without a model provider the answer is made offline: an example query matched with its parameters, or the
rule-based planner; the final response says so. With one, the model writes the SQL from the schema,
glossary and examples, and an error from validation or execution goes back to it, at most three times.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from convener.analytics import charts
from convener.analytics.engines import DataEngine
from convener.analytics.examples import Example, Parameter, match_example
from convener.analytics.models import (
    AnalysisEvent,
    AnalysisMessage,
    AnalysisQuery,
    Blob,
    ChartMessage,
    ChartQuery,
    ChartResult,
    Citation,
    CitationAnchor,
    CitationSource,
    Context,
    DataMessage,
    DataQuery,
    DataResult,
    Datasource,
    ErrorMessage,
    ExampleQueries,
    ExampleQuery,
    GlossaryTerm,
    MatchedQuery,
    Message,
    QueryParameterValues,
    Schema,
    SchemaField,
    SchemaMessage,
    SchemaQuery,
    SchemaResult,
    SystemMessage,
    TableReference,
    TextMessage,
    TextMessageCitationAnchor,
    TextType,
    UserMessage,
)
from convener.analytics.planner import Guess, KeysOf, NoPlan, Relationship, Term, plan_question, quoted_table
from convener.analytics.planner.base import MAX_VALUES_PER_COLUMN
from convener.analytics.sandbox import run_analysis
from convener.analytics.shapes import NUMBER_TYPES, TIME_TYPES, QueryResult, TableInfo
from convener.api.errors import ApiError, DeadlineExceeded, InvalidArgument, ResourceExhausted
from convener.api.protojson import Timestamp
from convener.llm.base import ChatMessage, ModelProvider

logger = logging.getLogger(__name__)

MAX_QUESTION = 10_000
REPAIRS = 3
SHOWN_ROWS = 5
MAX_GROUPS = 30
"""At most this many values in a column a follow-up question suggests grouping by."""
"""Rows named in an offline final response; the rest are in the data result."""

OFFLINE_NOTE = "(Answered offline, without a language model: "
OVER_LIMIT = (DeadlineExceeded, ResourceExhausted)
"""A query past its deadline or its memory or value limit ends the question with that error: neither another
attempt nor a repair by the model would cost less, and an answer without the data would only mislead."""
KEYS_NAMED = 50
"""At most this many names (and keys of the rows they name) in one of the planner's look-ups."""
Emit = Callable[[Message], None]


@dataclass(frozen=True)
class Table:
    """A table the question may use: where it is, what it holds, and the engine that runs SQL on it."""

    source: str
    info: TableInfo
    engine: DataEngine


@dataclass
class Answer:
    """What a step found, kept for the steps after it."""

    sql: str | None = None
    result: QueryResult | None = None
    result_name: str = "result"
    explanation: str = ""
    offline_by: str | None = None
    example: ExampleQuery | None = None
    terms: list[GlossaryTerm] = field(default_factory=list)
    table: Table | None = None
    unaccounted: tuple[str, ...] = ()
    """Words of the question the answer does not account for: the final response says so first."""
    guessed: tuple[Guess, ...] = ()
    """Words the planner read as the longer names they are a word of ("Boston": Boston Back Bay Station)."""
    unmatched: list[Guess] = field(default_factory=list)
    """Of ``guessed``, those whose names no row has, where the answer is nothing: it says so first."""


class Turn:
    """The messages of one answer, stamped and grouped as they are made."""

    def __init__(self, emit: Emit | None) -> None:
        self.messages: list[Message] = []
        self.group = 0
        self._emit = emit

    def user(self, text: str) -> None:
        self._add(Message(user_message=UserMessage(text=text)))

    def next_group(self) -> None:
        self.group += 1

    def system(self, **kind: Any) -> SystemMessage:
        message = SystemMessage(group_id=self.group, **kind)
        self._add(Message(system_message=message))
        return message

    def text(self, text_type: TextType, *parts: str, citation: Citation | None = None) -> None:
        self.system(text=TextMessage(parts=list(parts), text_type=text_type), citation=citation)

    def _add(self, message: Message) -> None:
        message = message.model_copy(update={"timestamp": Timestamp.now(), "message_id": uuid.uuid4().hex})
        self.messages.append(message)
        if self._emit is not None:
            self._emit(message)


@dataclass(frozen=True)
class Drawing:
    """A chart being made: its spec, and its picture (None when the caller asked for none) or the reason it
    could not be made (an ApiError), once checked and drawn."""

    spec: dict[str, Any]
    image_format: str | None
    image: Future[Blob | None]


def _drawn(spec: dict[str, Any], image_format: str | None) -> Blob | None:
    """Checked (``render`` checks what it draws), and drawn in the format asked for."""
    if image_format is None:
        charts.validate_spec(spec)
        return None
    data = charts.render(spec, "svg" if image_format == "image/svg+xml" else "png")
    return Blob(mime_type=image_format, data=_b64(data))


_DRAWING_POOL: ThreadPoolExecutor | None = None
_DRAWING_POOL_LOCK = threading.Lock()


def _drawing_pool() -> ThreadPoolExecutor:
    """One thread draws the charts begun in the background (the renderer draws one chart at a time anyway)."""
    global _DRAWING_POOL
    with _DRAWING_POOL_LOCK:
        if _DRAWING_POOL is None:
            _DRAWING_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analytics-chart")
        return _DRAWING_POOL


@dataclass
class Pipeline:
    provider: Callable[[], ModelProvider | None]
    row_limit: int = 1000
    timeout_seconds: float = 30.0

    def run(self, question: str, tables: Sequence[Table], context: Context, history: Sequence[Message] = (),
            emit: Emit | None = None) -> list[Message]:
        if not question or not question.strip():
            raise InvalidArgument("user_query_with_context is required")
        if len(question) > MAX_QUESTION:
            raise InvalidArgument(f"user_query_with_context is {len(question)} characters; at most {MAX_QUESTION}")
        if not tables:
            raise InvalidArgument("no tables to answer from: give table references or an agent with datasources")
        turn = Turn(emit)
        turn.user(question)
        relevant = self._resolve_schema(turn, question, tables)
        answer = self._query(turn, question, relevant, tables, context, history)
        if answer.result is None:
            _suggest_examples(turn, context)
            return turn.messages
        analysing = _python_enabled(context) and _wants_analysis(question)
        # The chart depends on the rows alone: drawn while the analysis (a sandboxed process) runs, if one does.
        drawing = self._draw_chart(question, answer, context, background=analysing)
        if analysing:
            self._analyse(turn, question, answer)
        if drawing is not None:
            self._chart(turn, question, answer, drawing)
        self._respond(turn, question, answer, tables)
        return turn.messages

    # --- steps ------------------------------------------------------------------------------------------

    def _resolve_schema(self, turn: Turn, question: str, tables: Sequence[Table]) -> list[Table]:
        turn.next_group()
        turn.system(schema_=SchemaMessage(query=SchemaQuery(question=question)))
        relevant = _rank_tables(question, tables)
        turn.system(schema_=SchemaMessage(result=SchemaResult(datasources=[datasource_of(t) for t in relevant])))
        return relevant

    def _query(self, turn: Turn, question: str, relevant: Sequence[Table], tables: Sequence[Table],
               context: Context, history: Sequence[Message]) -> Answer:
        turn.next_group()
        turn.system(data=DataMessage(query=DataQuery(question=question, name=_snake(question),
                                                     datasources=[datasource_of(t) for t in relevant])))
        provider = self.provider()
        answer = self._match_example(turn, question, relevant, tables, context)
        if answer is None:
            if provider is not None:
                answer = self._generate(turn, provider, question, tables, context, history)
            else:
                answer = self._plan(turn, question, relevant, tables, context, history)
        return answer

    def _match_example(self, turn: Turn, question: str, relevant: Sequence[Table], tables: Sequence[Table],
                       context: Context) -> Answer | None:
        examples = [e for e in context.example_queries or [] if e.sql_query and e.natural_language_question]
        if not examples or not relevant:
            return None
        table = relevant[0]
        match = match_example(question, [_example(e) for e in examples], dialect=table.engine.dialect,
                              values_of=_values_of(relevant))
        if match is None:
            return None
        used = examples[match.index]
        turn.system(data=DataMessage(matched_query=MatchedQuery(
            example_query=used,
            query_parameter_values=[QueryParameterValues(name=k, value=v) for k, v in match.values.items()])))
        answer = Answer(sql=match.sql, result_name=_snake(used.natural_language_question or question),
                        explanation=f'It matches the example question "{used.natural_language_question}"',
                        offline_by="a matching example query", example=used, table=table)
        turn.system(data=DataMessage(generated_sql=match.sql))
        return self._execute(turn, answer, table, tables)

    def _plan(self, turn: Turn, question: str, relevant: Sequence[Table], tables: Sequence[Table],
              context: Context, history: Sequence[Message]) -> Answer:
        terms = [Term(t.display_name, t.description or "", tuple(t.labels or ())) for t in context.glossary_terms or []]
        infos = [t.info for t in relevant]
        dialect = relevant[0].engine.dialect
        # Tables on the same engine may be joined to the one queried, though the question names none of them.
        joinable = [t for t in tables if t.engine is relevant[0].engine]
        relationships = _relationships(context)
        attempts = [question]
        previous = _previous_question(history)
        if previous:
            attempts.append(f"{previous} {question}")  # a follow-up refines the question before it
        reason = ""
        for attempt in attempts:
            try:
                plan = plan_question(attempt, infos, terms, dialect=dialect, values_of=_values_of(joinable),
                                     keys_of=self._keys_of(joinable),
                                     relationships=relationships, related=[t.info for t in joinable],
                                     span_of=_span_of(joinable))
                break
            except NoPlan as refused:
                reason = reason or str(getattr(refused, "reason", refused))
            except Exception:  # noqa: BLE001 - rules over any wording: a question they stumble on is declined
                logger.exception("the offline planner failed on a question")
                reason = reason or "the rule-based planner could not read this question (an internal error, logged)"
        else:
            turn.system(error=ErrorMessage(text=f"Could not answer offline: {reason}"))
            return Answer()
        table = next(t for t in joinable if t.info.name == plan.tables[0])
        turn.text(TextType.THOUGHT, plan.explanation)
        turn.system(data=DataMessage(generated_sql=plan.sql))
        used_terms = [t for t in context.glossary_terms or [] if t.display_name in plan.terms_used]
        answer = Answer(sql=plan.sql, result_name=plan.result_name, explanation=plan.explanation,
                        offline_by="the rule-based planner", terms=used_terms, table=table,
                        unaccounted=plan.unaccounted, guessed=plan.guessed)
        return self._execute(turn, answer, table, tables)

    def _generate(self, turn: Turn, provider: ModelProvider, question: str, tables: Sequence[Table],
                  context: Context, history: Sequence[Message]) -> Answer:
        prompt = [ChatMessage("system", _sql_prompt(tables, context)), *_history_prompt(history),
                  ChatMessage("user", question)]
        for attempt in range(REPAIRS + 1):
            try:
                completion = provider.complete(prompt, response_schema=SQL_SCHEMA, temperature=0)
            except ApiError as failure:
                turn.system(error=ErrorMessage(text=f"The model could not be reached ({failure}); trying offline."))
                return self._plan(turn, question, _rank_tables(question, tables), tables, context, history)
            reply = completion.structured if isinstance(completion.structured, dict) else {}
            sql = str(reply.get("sql") or "").strip()
            table = _table_of(sql, tables) if sql else None
            if table is None:
                problem = "the reply held no SQL"
            else:
                turn.system(data=DataMessage(generated_sql=sql))
                answer = Answer(sql=sql, result_name=_snake(str(reply.get("result_name") or question)),
                                explanation=str(reply.get("explanation") or ""), table=table,
                                terms=_terms_named(sql + " " + question, context))
                try:
                    answer.result = self._run(sql, table, tables)
                except OVER_LIMIT:
                    raise
                except ApiError as failure:
                    problem = failure.message
                else:
                    turn.system(data=DataMessage(result=_data_result(answer.result_name, answer.result)))
                    return answer
            turn.system(error=ErrorMessage(text=f"Attempt {attempt + 1}: {problem}"))
            prompt += [ChatMessage("assistant", completion.text or ""),
                       ChatMessage("user", f"That failed: {problem}. Reply with corrected SQL.")]
        return Answer()

    def _run(self, sql: str, table: Table, tables: Sequence[Table]) -> QueryResult:
        """Runs SQL on the table's engine, reading only the tables the question was given on that engine
        (an agent's references), not every table of the source."""
        given = [t.info.name for t in tables if t.engine is table.engine]
        return table.engine.execute(sql, row_limit=self.row_limit, timeout_seconds=self.timeout_seconds,
                                    only=given)

    def _execute(self, turn: Turn, answer: Answer, table: Table, tables: Sequence[Table]) -> Answer:
        assert answer.sql is not None
        try:
            answer.result = self._run(answer.sql, table, tables)
        except OVER_LIMIT:
            raise
        except ApiError as failure:
            turn.system(error=ErrorMessage(text=failure.message))
            answer.result = None
            return answer
        turn.system(data=DataMessage(result=_data_result(answer.result_name, answer.result)))
        if answer.guessed and _nothing_found(answer.result):
            # an answer of nothing may only say that no row has the names a word was guessed to mean
            answer.unmatched = [guess for guess in answer.guessed if not self._has_rows(guess, table, tables)]
        elif any(guess.listed for guess in answer.guessed):
            # "in 2014 compared with 2013": rows of 2013 are no answer about 2014, where none falls
            answer.unmatched = [guess for guess in answer.guessed
                                if guess.listed and not self._has_rows(guess, table, tables)]
        return answer

    def _keys_of(self, tables: Sequence[Table]) -> KeysOf:
        """The planner's look-up of the keys of the rows a name names (``KeysOf``): a query of one table with a
        small row limit, the names in it as literals; a look-up that fails finds nothing."""
        by_name = {t.info.name: t for t in tables}
        known: dict[tuple[str, str, str, tuple[str, ...]], Sequence[str]] = {}

        def keys_of(table: str, key: str, column: str, names: Sequence[str]) -> Sequence[str]:
            asked = (table, key, column, tuple(names))
            if asked not in known:
                known[asked] = look_up(table, key, column, names)
            return known[asked]

        def look_up(table: str, key: str, column: str, names: Sequence[str]) -> Sequence[str]:
            found = by_name.get(table)
            if found is None or not names:
                return ()
            literals = [exp.Literal.string(name) for name in names[:KEYS_NAMED]]
            named = exp.column(column, quoted=True).isin(*literals)
            query = exp.select(exp.column(key, quoted=True)).distinct().from_(quoted_table(table)).where(named)
            try:
                result = found.engine.execute(query.sql(dialect=found.engine.dialect), row_limit=KEYS_NAMED,
                                              timeout_seconds=self.timeout_seconds, only=[table])
            except OVER_LIMIT:
                raise
            except ApiError:
                return ()
            return [str(row[0]) for row in result.rows if row[0] is not None]

        return keys_of

    def _has_rows(self, guess: Guess, table: Table, tables: Sequence[Table]) -> bool:
        """Whether any row has the names ``guess`` read a word as; a check that fails leaves the answer as it
        is (a limit reached still ends the question, as it does for the answer's own query)."""
        try:
            return _any_row(self._run(guess.check, table, tables))
        except OVER_LIMIT:
            raise
        except ApiError:
            return True

    def _analyse(self, turn: Turn, question: str, answer: Answer) -> None:
        assert answer.result is not None
        turn.next_group()
        turn.system(analysis=AnalysisMessage(query=AnalysisQuery(question=question,
                                                                 data_result_names=[answer.result_name])))
        code = _summary_code(answer.result_name)
        turn.system(analysis=AnalysisMessage(progress_event=AnalysisEvent(
            planner_reasoning="Offline analysis: summary statistics of every numeric column, and their "
                              "correlation when there are two or more.")))
        turn.system(analysis=AnalysisMessage(progress_event=AnalysisEvent(code=code)))
        run = run_analysis(code, {answer.result_name: answer.result})
        if run.output:
            turn.system(analysis=AnalysisMessage(progress_event=AnalysisEvent(execution_output=run.output)))
        if run.error:
            turn.system(analysis=AnalysisMessage(progress_event=AnalysisEvent(execution_error=run.error)))
        if run.result_text:
            turn.system(analysis=AnalysisMessage(progress_event=AnalysisEvent(
                result_natural_language=run.result_text)))

    def _draw_chart(self, question: str, answer: Answer, context: Context, *, background: bool) -> Drawing | None:
        """The chart's spec, and its checking and drawing begun (on another thread when ``background``)."""
        assert answer.result is not None
        spec = charts.choose_chart(answer.result, title=_title(question), instructions=question)
        if spec is None:
            return None
        image_format = _image_format(context)
        if background:
            return Drawing(spec, image_format, _drawing_pool().submit(_drawn, spec, image_format))
        done: Future[Blob | None] = Future()
        try:
            done.set_result(_drawn(spec, image_format))
        except ApiError as failure:
            done.set_exception(failure)
        return Drawing(spec, image_format, done)

    def _chart(self, turn: Turn, question: str, answer: Answer, drawing: Drawing) -> None:
        turn.next_group()
        turn.system(chart=ChartMessage(query=ChartQuery(instructions=question, data_result_name=answer.result_name)))
        try:
            image = drawing.image.result()
        except ApiError as failure:
            turn.system(error=ErrorMessage(text=f"The chart could not be made: {failure.message}"))
            return
        turn.system(chart=ChartMessage(result=ChartResult(vega_config=drawing.spec, image=image)))

    def _respond(self, turn: Turn, question: str, answer: Answer, tables: Sequence[Table]) -> None:
        assert answer.result is not None
        turn.next_group()
        text = _describe(answer.result) + _cut_note(answer.result, self.row_limit)
        if answer.unaccounted:
            text = _unaccounted_note(answer.unaccounted) + text
        if answer.unmatched:
            text = _unmatched_note(answer.unmatched) + text
        if answer.offline_by:
            text += f"\n\n{OFFLINE_NOTE}{answer.offline_by}. {answer.explanation}.)".replace("..)", ".)")
        citation = _citation(text, answer)
        turn.text(TextType.FINAL_RESPONSE, text, citation=citation)
        followups = _followups(answer, tables)
        if followups:
            turn.text(TextType.FOLLOWUP_QUESTIONS, *followups)


# --- schema -------------------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 2}


def _rank_tables(question: str, tables: Sequence[Table]) -> list[Table]:
    """Tables by how many of the question's words their names, columns and samples hold; all when none."""
    asked = _words(question)

    def score(table: Table) -> int:
        return len(asked & _table_words(table.info))

    scored = sorted(((score(t), i, t) for i, t in enumerate(tables)), key=lambda s: (-s[0], s[1]))
    return [t for points, _, t in scored if points > 0] or list(tables)


@lru_cache(maxsize=512)
def _table_words(info: TableInfo) -> frozenset[str]:
    """The words of a table's name, columns, samples and synonyms. A source's schema is kept a minute
    (sources.py), so the same TableInfo comes back question after question: its words are worked out once."""
    return frozenset(_words(info.name.replace("_", " ")) | set().union(*(
        _words(c.name.replace("_", " ")) | _words(" ".join(c.samples)) | _words(" ".join(c.synonyms))
        for c in info.columns)))


def datasource_of(table: Table) -> Datasource:
    info = table.info
    return Datasource(
        bigquery_table_reference=TableReference(project_id="convener", dataset_id=table.source, table_id=info.name),
        schema_=Schema(description=info.description, synonyms=list(info.synonyms) or None, fields=[
            SchemaField(name=c.name, type=c.type, description=c.description, synonyms=list(c.synonyms) or None,
                        tags=[f"sample:{s}" for s in c.samples[:3]] or None)
            for c in info.columns]))


def _values_of(tables: Sequence[Table]) -> Callable[[str, str], Sequence[str]]:
    by_name = {t.info.name: t for t in tables}
    cache: dict[tuple[str, str], Sequence[str]] = {}

    def values_of(table: str, column: str) -> Sequence[str]:
        if (table, column) not in cache:
            found = by_name.get(table)
            # As many values as the planner matches: a limit below it would leave out the names sorted last.
            cache[table, column] = found.engine.distinct_values(table, column, MAX_VALUES_PER_COLUMN) if found else ()
        return cache[table, column]

    return values_of


def _span_of(tables: Sequence[Table]) -> Callable[[str, str], tuple[str, str] | None]:
    """The least and greatest value of a column of one of ``tables``, read once per question and column."""
    by_name = {t.info.name: t for t in tables}

    @cache
    def span_of(table: str, column: str) -> tuple[str, str] | None:
        found = by_name.get(table)
        return found.engine.value_span(table, column) if found else None

    return span_of


def _table_of(sql: str, tables: Sequence[Table]) -> Table:
    """The given table whose engine runs the SQL (a query's tables live on one engine): the first one it
    reads. SQL that does not parse, or reads no given table, goes to the first table's engine, whose check
    then tells the model exactly what is wrong (the parse error, or the table it may not read)."""
    try:
        read = {t.name.lower() for t in sqlglot.parse_one(sql, read=tables[0].engine.dialect).find_all(exp.Table)}
    except (SqlglotError, RecursionError):
        return tables[0]
    return next((t for t in tables if t.info.name.lower() in read), tables[0])


# --- results ------------------------------------------------------------------------------------------


def _text(value: Any) -> Any:
    """Seed 003: simple values are strings in ``data``; nested ones stay lists and structs."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_text(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _text(v) for k, v in value.items()}
    return str(value)


def _formatted(value: Any, column: str = "") -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, int) and _names_period(column):
        return str(value)  # the year 2013, not 2,013
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float | Decimal):
        number = float(value)
        return f"{number:,.2f}" if abs(number) >= 1 or number == 0 else f"{number:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M") if (value.hour, value.minute) != (0, 0) else value.strftime("%Y-%m-%d")
    return _text(value)


def _names_period(column: str) -> bool:
    """Whether a column's name says it counts time (``year``, ``order_month``), whose numbers are labels."""
    name = column.lower()
    return name in charts.PERIOD_NAMES or any(name.endswith("_" + period) for period in charts.PERIOD_NAMES)


def _data_result(name: str, result: QueryResult) -> DataResult:
    """Values as strings; ``formattedData`` only when formatting changes some value (numbers, dates,
    booleans): the seed leaves it empty when no formatting applies."""
    names = [c.name for c in result.columns]
    data = [dict(zip(names, (_text(v) for v in row), strict=True)) for row in result.rows]
    formatted = [dict(zip(names, (_formatted(v, n) for n, v in zip(names, row, strict=True)), strict=True))
                 for row in result.rows]
    return DataResult(
        name=name,
        schema_=Schema(fields=[SchemaField(name=c.name, type=c.type, mode="NULLABLE") for c in result.columns]),
        data=data, formatted_data=formatted if formatted != data else None)


def _describe(result: QueryResult) -> str:
    """An offline final response that states what the rows say, without inventing anything."""
    rows, columns = result.rows, result.columns
    if not rows and result.truncated:
        return "The query returned rows, but none fits in the limits of an answer."
    if not rows:
        return "The query returned no rows: nothing in the data matches the question."
    if len(rows) == 1 and len(columns) == 1:
        return f"The {_label(columns[0].name)} is {_formatted(rows[0][0], columns[0].name)}."
    if len(rows) == 1:
        pairs = ", ".join(f"{_label(c.name)} {_formatted(v, c.name)}" for c, v in zip(columns, rows[0], strict=True))
        return f"The result is one row: {pairs}."
    shown = "; ".join(", ".join(str(_formatted(v, c.name)) for c, v in zip(columns, row, strict=True))
                      for row in rows[:SHOWN_ROWS])
    more = f" ({len(rows)} rows.)"
    header = ", ".join(_label(c.name) for c in columns)
    return f"{len(rows)} rows of {header}. The first: {shown}.{more if len(rows) > SHOWN_ROWS else ''}".strip()


def _unaccounted_note(words: Sequence[str]) -> str:
    """What an answer leaves out of the question, said before the answer: nothing in the data matched these
    words, so what follows is computed without them and is not the answer to the whole question."""
    named = " or ".join(f"'{word}'" for word in words)
    return (f"I could not use {named}: nothing in the data matches it, so the result below does not account "
            f"for that part of the question and is not the answer to it. Without it: ")


def _nothing_found(result: QueryResult) -> bool:
    """Whether a result says nothing was found: no rows, or one row of nothing but NULL, zero or false."""
    if not result.rows:
        return not result.truncated
    return len(result.rows) == 1 and all(value is None or value is False
                                         or type(value) in (int, float, Decimal) and value == 0
                                         for value in result.rows[0])


def _any_row(result: QueryResult) -> bool:
    return bool(result.rows) and bool(result.rows[0][0])


def _unmatched_note(guesses: Sequence[Guess]) -> str:
    """An answer of nothing that rests on names no row has, said before it: the word was read as those names
    by a guess, and most likely means something else."""
    named = " or ".join(f"'{guess.said}'" for guess in guesses)
    read = "; ".join(f"'{guess.said}' as {' or '.join(guess.names)}" for guess in guesses)
    return (f"I could not use {named}: I read {read}, and no row in the data has that, so the result below "
            f"may well not be the answer to the question. As read: ")


def _relationships(context: Context) -> list[Relationship]:
    """The context's schema relationships as the planner reads them (tables by their own name, the part of
    ``source.table`` after the source)."""
    found = []
    for relationship in context.schema_relationships or []:
        left, right = relationship.left_schema_paths, relationship.right_schema_paths
        found.append(Relationship(left.table_fqn.split(".", 1)[-1], tuple(left.paths),
                                  right.table_fqn.split(".", 1)[-1], tuple(right.paths)))
    return found


def _cut_note(result: QueryResult, row_limit: int) -> str:
    """What the answer leaves out when a limit cut the result, said whatever the number of rows."""
    if result.cut_at_bytes is not None:
        rows = f"only its first {len(result.rows)} rows are" if result.rows else "not even its first row is"
        return (f"\n\n(The result was cut off at the limit of {result.cut_at_bytes:,} bytes per result "
                f"(CONVENER_ANALYTICS_RESULT_BYTES): {rows} here; ask for fewer or shorter columns, or fewer rows.)")
    if result.truncated:
        return f"\n\n(The result was cut off at the limit of {row_limit:,} rows (CONVENER_ANALYTICS_ROW_LIMIT).)"
    return ""


def _label(name: str) -> str:
    return name.replace("_", " ").strip()


def _citation(text: str, answer: Answer) -> Citation | None:
    """Cites the example query and glossary terms the answer relied on, anchored on the whole response."""
    sources = []
    if answer.example is not None:
        sources.append(CitationSource(id="1", title=answer.example.natural_language_question,
                                      example_query=answer.example))
    for term in answer.terms:
        sources.append(CitationSource(id=str(len(sources) + 1), title=term.display_name, glossary_term=term))
    if not sources:
        return None
    anchor = TextMessageCitationAnchor(part_index=0, start_offset_bytes=0, end_offset_bytes=len(text.encode()),
                                       source_ids=[s.id for s in sources if s.id])
    return Citation(sources=sources, anchors=[CitationAnchor(text_message_anchor=anchor)])


def _followups(answer: Answer, tables: Sequence[Table]) -> list[str]:
    """Questions the same data can answer next: by another category, over time, or the top values."""
    table = answer.table or (tables[0] if tables else None)
    if table is None or answer.result is None:
        return []
    used = {c.name.lower() for c in answer.result.columns}
    unused_text = (c for c in table.info.columns if c.type == "STRING" and c.name.lower() not in used)
    category = next((c for c in unused_text if _groups_well(table, c.name)), None)
    numbers = [c for c in table.info.columns if c.type in NUMBER_TYPES]
    times = [c for c in table.info.columns if c.type in TIME_TYPES]
    questions = []
    if numbers and category is not None:
        questions.append(f"What is the average {_label(numbers[0].name)} by {_label(category.name)}?")
    if numbers and times:
        questions.append(f"How does the average {_label(numbers[-1].name)} change per year?")
    if numbers:
        questions.append(f"Which 5 rows of {table.info.name} have the highest {_label(numbers[0].name)}?")
    return questions[:3]


def _groups_well(table: Table, column: str) -> bool:
    """Whether a column has few enough values to group by (a name or an ID column does not)."""
    try:
        return 1 < len(table.engine.distinct_values(table.info.name, column, MAX_GROUPS + 1)) <= MAX_GROUPS
    except ApiError:
        return False


def _suggest_examples(turn: Turn, context: Context) -> None:
    """After a question that could not be answered: what the agent can answer, from its example queries."""
    examples = [e for e in context.example_queries or [] if e.natural_language_question]
    if examples:
        turn.system(example_queries=ExampleQueries(example_queries=examples[:5]))
    text = "I could not answer that from the data."
    if examples:
        text += " Questions I can answer include: " + "; ".join(
            f'"{e.natural_language_question}"' for e in examples[:5]) + "."
    turn.text(TextType.FINAL_RESPONSE, text)


# --- options, prompts and small helpers -----------------------------------------------------------------


def _python_enabled(context: Context) -> bool:
    options = context.options
    return bool(options and options.analysis and options.analysis.python and options.analysis.python.enabled)


ANALYSIS_WORDS = ("correlat", "statistic", "distribution", "analy", "spread", "variance", "deviation", "outlier")


def _wants_analysis(question: str) -> bool:
    lowered = question.lower()
    return any(word in lowered for word in ANALYSIS_WORDS)


def _image_format(context: Context) -> str | None:
    image = context.options.chart.image if context.options and context.options.chart else None
    if image is not None and image.no_image is not None:
        return None
    if image is not None and image.svg is not None:
        return "image/svg+xml"
    return "image/png"


def _summary_code(name: str) -> str:
    return f'''import statistics
rows = tables[{name!r}]
numeric = [c for c in (rows[0] if rows else {{}}) if all(isinstance(r[c], (int, float)) for r in rows if r[c] is not None)]
lines = []
for column in numeric:
    values = [r[column] for r in rows if r[column] is not None]
    if len(values) > 1:
        lines.append(f"{{column}}: mean {{statistics.mean(values):.4g}}, median {{statistics.median(values):.4g}}, "
                     f"stdev {{statistics.stdev(values):.4g}}, min {{min(values):.4g}}, max {{max(values):.4g}}")
for i, a in enumerate(numeric):
    for b in numeric[i + 1:]:
        pairs = [(r[a], r[b]) for r in rows if r[a] is not None and r[b] is not None]
        if len(pairs) > 2:
            xs, ys = zip(*pairs)
            lines.append(f"correlation of {{a}} and {{b}}: {{statistics.correlation(xs, ys):.3f}}")
print("\\n".join(lines))
answer("; ".join(lines) if lines else "No numeric columns to summarise.")
'''


def _example(query: ExampleQuery) -> Example:
    return Example(question=query.natural_language_question or "", sql=query.sql_query or "",
                   parameters=tuple(Parameter(p.name, p.data_type, p.description or "")
                                    for p in query.parameters or []))


def _terms_named(text: str, context: Context) -> list[GlossaryTerm]:
    lowered = text.lower()
    return [t for t in context.glossary_terms or []
            if any(name.lower() in lowered for name in [t.display_name, *(t.labels or [])])]


def _previous_question(history: Sequence[Message]) -> str | None:
    asked = [m.user_message.text for m in history if m.user_message and m.user_message.text]
    return asked[-1] if asked else None


def _snake(text: str) -> str:
    words = [w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split()][:8]
    return "_".join(words) or "result"


def _title(question: str) -> str:
    return question if len(question) <= 80 else question[:77] + "…"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


SQL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sql": {"type": "string", "description": "One SELECT statement answering the question."},
        "result_name": {"type": "string", "description": "snake_case name of the result."},
        "explanation": {"type": "string", "description": "One sentence: what the query computes."},
    },
    "required": ["sql"],
}


def _sql_prompt(tables: Sequence[Table], context: Context) -> str:
    lines = ["You write one read-only SQL SELECT statement that answers the user's question over these tables.",
             f"SQL dialect: {tables[0].engine.dialect}. Reply with JSON: sql, result_name, explanation."]
    if context.system_instruction:
        lines.append(f"Instructions from the data's owners: {context.system_instruction}")
    lines.append("Tables:")
    for table in tables:
        lines.append(f"- {table.info.name}" + (f": {table.info.description}" if table.info.description else ""))
        for column in table.info.columns:
            samples = f" e.g. {', '.join(column.samples[:3])}" if column.samples else ""
            about = f" — {column.description}" if column.description else ""
            lines.append(f"    {column.name} {column.type}{about}{samples}")
    for relationship in context.schema_relationships or []:
        left, right = relationship.left_schema_paths, relationship.right_schema_paths
        lines.append(f"Join {left.table_fqn}({', '.join(left.paths)}) = {right.table_fqn}({', '.join(right.paths)})")
    for term in context.glossary_terms or []:
        lines.append(f"Glossary: {term.display_name} ({', '.join(term.labels or [])}): {term.description or ''}")
    for example in context.example_queries or []:
        lines.append(f"Example: {example.natural_language_question}\n    {example.sql_query}")
    return "\n".join(lines)


def _history_prompt(history: Sequence[Message]) -> list[ChatMessage]:
    turns: list[ChatMessage] = []
    for message in history:
        if message.user_message and message.user_message.text:
            turns.append(ChatMessage("user", message.user_message.text))
        elif message.system_message and message.system_message.data and message.system_message.data.generated_sql:
            turns.append(ChatMessage("assistant", json.dumps({"sql": message.system_message.data.generated_sql})))
    return turns

