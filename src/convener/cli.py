"""The ``convener`` command: thin adapters over the library (parse flags, call one method, render)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from convener import collector

# Start-up: `convener --help` and each command import only what they use, so the library's modules (and the
# store, the model clients, the analytics and knowledge engines behind them) are imported inside the commands.
# tests/test_startup_imports.py keeps it so.
if TYPE_CHECKING:
    from convener.ces.evaluation.junit import ResultSummary
    from convener.ces.evaluation.models import EvaluationRun, UserFact
    from convener.ces.evaluation.service import EvaluationService
    from convener.ces.evaluation.simulated_user import Exchange
    from convener.ces.names import (
        AppName,
        AppVersionName,
        EvaluationDatasetName,
        EvaluationName,
        EvaluationPersonaName,
    )
    from convener.config import Settings
    from convener.longrunning.models import Operation
    from convener.services import Services

app = typer.Typer(help="Convener: Google's agent-platform MCP tools on your own machine.", no_args_is_help=True)
import_app = typer.Typer(help="Import data in the formats users have.", no_args_is_help=True)
auth_app = typer.Typer(help="API keys for HTTP callers.", no_args_is_help=True)
apps_app = typer.Typer(help="Apps as YAML files: export and import.", no_args_is_help=True)
eval_app = typer.Typer(help="Golden and scenario evaluations: run them (for CI too) and import ADK eval sets.",
                       no_args_is_help=True)
app.add_typer(import_app, name="import")
app.add_typer(auth_app, name="auth")
app.add_typer(apps_app, name="apps")
app.add_typer(eval_app, name="eval")
knowledge_app = typer.Typer(help="Documentation corpora: ingest, search, ask.", no_args_is_help=True)
app.add_typer(knowledge_app, name="knowledge")
data_app = typer.Typer(help="Data agents over SQL data: sources, questions, agents.", no_args_is_help=True)
app.add_typer(data_app, name="data")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", envvar="CONVENER_DATA_DIR", show_envvar=True, help="Data directory."),
]
DatabaseUrl = Annotated[
    str | None,
    typer.Option("--database-url", envvar="CONVENER_DATABASE_URL", show_envvar=True, help="SQLAlchemy database URL."),
]


def _fail(code: str, message: str, exit_code: int = 1) -> typer.Exit:
    """Print ``CODE: message`` (never as markup: messages quote user input) and give the exit to raise."""
    err.print(f"{code}: {message}", markup=False, highlight=False)
    return typer.Exit(exit_code)


def _settings(data_dir: Path | None, database_url: str | None, **overrides: Any) -> Settings:
    from pydantic import ValidationError

    from convener.config import Settings

    given = {"data_dir": data_dir, "database_url": database_url, **overrides}
    try:
        return Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as error:
        raise _fail("INVALID_ARGUMENT", str(error.errors()[0]["msg"]).removeprefix("Value error, "), 2) from None


@contextmanager
def _services(settings: Settings, api_error_exit: int = 1) -> Iterator[Services]:
    """Open the store; render any ApiError as ``CODE: message`` and exit with ``api_error_exit``."""
    from convener.api.errors import ApiError
    from convener.services import Services

    try:
        services = Services.open(settings)
    except ApiError as error:  # e.g. CONVENER_JOBS=procrastinate on a SQLite store
        raise _fail(error.code.name, error.message, 2) from None
    collector.started()
    try:
        yield services
    except ApiError as error:
        raise _fail(error.code.name, error.message, api_error_exit) from None
    finally:
        services.close()


@app.command()
def serve(
    transport: Annotated[str, typer.Option(help="http or stdio.")] = "http",
    host: Annotated[str | None, typer.Option(help="Address to listen on (http).")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on (http).")] = None,
    services: Annotated[str | None, typer.Option(help="Comma-separated services to serve, e.g. ces.")] = None,
    demo: Annotated[bool, typer.Option("--demo", help="Load the demo workspace first (idempotent).")] = False,
    allow_anonymous: Annotated[
        bool | None,
        typer.Option("--allow-anonymous/--require-key", help="Serve loopback HTTP callers without an API key."),
    ] = None,
    act_as: Annotated[str | None, typer.Option(
        "--as", help="stdio: the user every call acts as, e.g. users/alice or users/alice@example.com.")] = None,
    toolsets: Annotated[str | None, typer.Option(
        help="Comma-separated toolsets /mcp and stdio serve when a client chooses none: conversations, agents, "
             "evaluations, operations, chat, knowledge, analytics, admin, all or default.")] = None,
    read_only: Annotated[bool | None, typer.Option(
        "--read-only/--read-write", help="Serve read-only tools alone, on every endpoint.")] = None,
    worker: Annotated[bool | None, typer.Option(
        "--worker/--no-worker", help="Run jobs (evaluation results, ingests) in this process too; with "
                                     "--no-worker, convener worker processes run them.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the MCP tools over Streamable HTTP (/mcp, /<service>/mcp) or stdio."""
    import anyio

    from convener.auth.caller import LOCAL_USER, Caller
    from convener.auth.keys import PRINCIPAL

    settings = _settings(
        data_dir, database_url, transport=transport, host=host, port=port, services=services,
        allow_anonymous=allow_anonymous, toolsets=toolsets, read_only=read_only, worker=worker,
    )
    with _services(settings) as opened:
        if demo:
            from convener.demo import load_demo

            summary = load_demo(opened)
            err.print(f"demo workspace: {summary}", markup=False)
            if settings.transport != "stdio":
                err.print(f"Chat acts as a user: connect to http://{settings.host}:{settings.port}/mcp with a key "
                          'above as the header "Authorization: Bearer <key>"', markup=False, highlight=False)
            elif act_as is None:
                err.print("Chat acts as a user: serve stdio with --as users/ana", markup=False, highlight=False)
        if settings.transport == "stdio":
            from convener.server import serve_stdio

            caller = LOCAL_USER
            if act_as is not None:
                if not PRINCIPAL.fullmatch(act_as):
                    raise _fail("INVALID_ARGUMENT", f'--as "{act_as[:80]}" must look like users/alice', 2)
                caller = Caller(act_as)
            anyio.run(serve_stdio, opened, caller)
            return
        if act_as is not None:
            raise _fail("INVALID_ARGUMENT", "--as is for stdio; HTTP callers are whom their API key says", 2)
        import uvicorn

        from convener.server import build_app

        err.print(f"Convener serving {', '.join(settings.services)} at http://{settings.host}:{settings.port}/mcp")
        if settings.console:
            err.print(f"Console: http://{settings.host}:{settings.port}/console/"
                      + ("" if settings.allow_anonymous else " (sign in with an API key)"),
                      markup=False, highlight=False)
        if not settings.allow_anonymous:
            err.print("HTTP callers need an API key: convener auth create-key users/you")
        uvicorn.run(build_app(opened), host=settings.host, port=settings.port, log_level="warning")


@app.command("worker")
def worker_command(
    queues: Annotated[str | None, typer.Option(
        help="Comma-separated queues to take jobs from: evaluations, ingests (default: every queue).")] = None,
    concurrency: Annotated[int | None, typer.Option(
        min=1, max=64, help="Jobs run at once (default: worker_concurrency, 4).")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Run jobs without serving MCP, until Ctrl-C or SIGTERM; run as many as you like, on any machine."""
    import logging
    import signal
    import threading

    settings = _settings(data_dir, database_url, worker_concurrency=concurrency)
    chosen = frozenset(part.strip() for part in queues.split(",") if part.strip()) if queues else None
    shown = logging.StreamHandler(sys.stderr)  # each job's start and end; not every library's chatter
    shown.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    logging.getLogger("convener").addHandler(shown)
    logging.getLogger("convener").setLevel(logging.INFO)
    stopping = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):  # finish the running jobs, then stop
        signal.signal(number, lambda *_: stopping.set())
    with _services(settings) as opened:
        unknown = sorted((chosen or frozenset()) - opened.jobs.queues)
        if unknown:
            raise _fail("INVALID_ARGUMENT", f"--queues: no queue named {', '.join(unknown)[:200]}; the queues are "
                                            f"{', '.join(sorted(opened.jobs.queues))}", 2)
        err.print(f"convener worker {opened.jobs.worker} taking jobs ({settings.jobs}) from "
                  f"{', '.join(sorted(chosen)) if chosen else 'every queue'}, {settings.worker_concurrency} at once",
                  markup=False, highlight=False)
        opened.jobs.work(queues=chosen, stopping=stopping)


@app.command("jobs")
def jobs_command(
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Jobs to show at most, oldest first.")] = 100,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Jobs not yet finished: queued, running (on which worker) or stalled (to be taken over)."""
    settings = _settings(data_dir, database_url, worker=False)
    with _services(settings) as opened:
        holdings = opened.jobs.holdings(limit)
    for held in holdings:  # one line each, whole (operation names are long), to read or to grep
        holder = f"on {held.worker}" if held.worker else "waiting for a worker"
        out.print(f"{held.id}  {held.task}  {held.state}  attempts {held.attempts}  {holder}  since "
                  f"{held.since or '-'}  {held.operation}", markup=False, highlight=False)
    out.print(f"{len(holdings)} unfinished jobs ({settings.jobs})", markup=False, highlight=False)


@app.command("tools")
def tools_command(
    toolsets: Annotated[str | None, typer.Option(help="Comma-separated toolsets, as serve --toolsets.")] = None,
    read_only: Annotated[bool | None, typer.Option("--read-only/--read-write", help="Read-only tools alone.")] = None,
    services: Annotated[str | None, typer.Option(help="Comma-separated services, as serve --services.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """List the tools /mcp serves with these settings: toolset, and bytes each takes in a client's context."""
    from rich.table import Table

    from convener.tooling import listed_size, served, specs_of

    settings = _settings(data_dir, database_url, toolsets=toolsets, read_only=read_only, services=services)
    with _services(settings) as opened:
        specs = specs_of(opened.registries().values())
        chosen = served(specs, settings.selection)
    table = Table(show_edge=False, pad_edge=False)
    for column, justify in (("Tool", "left"), ("Service", "left"), ("Toolset", "left"), ("Bytes", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    services_of = {spec.name: service for service, spec in specs}
    for spec in chosen:
        table.add_row(spec.name, services_of[spec.name], spec.toolset + (" (read-only)" if spec.read_only else ""),
                      f"{listed_size(spec.definition):,}")
    out.print(table)
    total = sum(listed_size(spec.definition) for spec in chosen)
    out.print(f"{len(chosen)} tools, {total:,} bytes (toolsets: {', '.join(sorted(settings.selection.toolsets))}"
              f"{'; read-only' if settings.read_only else ''})", markup=False, highlight=False)


@app.command()
def demo(
    reissue_keys: Annotated[bool, typer.Option(
        "--reissue-keys", help="Revoke the demo users' keys and issue new ones (else the keys of the last "
                               "load are kept while they work).")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Load the demo workspace (projects/demo/locations/global) into the store; safe to repeat."""
    from convener.demo import load_demo

    with _services(_settings(data_dir, database_url)) as opened:
        out.print(f"demo workspace: {load_demo(opened, reissue_keys)}", markup=False)


@import_app.command("conversations")
def import_conversations_command(
    file: Annotated[Path, typer.Argument(help="JSON Lines file, one Conversation per line ('-' for stdin).")],
    app_name: Annotated[str, typer.Option("--app", help="projects/{project}/locations/{location}/apps/{app}")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Import recorded conversations; bad lines are reported and skipped, re-imports change nothing."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from convener.ces.importing import import_conversations
    from convener.ces.names import AppName
    from convener.outside.bounded_reading import bounded_lines
    from convener.outside.limits import CONVERSATION_LINE_BYTES

    with _services(_settings(data_dir, database_url)) as opened:
        target = AppName.parse(app_name, "--app")
        if str(file) == "-":
            report = import_conversations(opened.apps, opened.conversations,
                                          bounded_lines(sys.stdin.buffer, CONVERSATION_LINE_BYTES), target)
        else:
            if not file.is_file():
                raise _fail("NOT_FOUND", f"no such file {file}")
            with (
                file.open("rb") as lines,
                Progress(
                    TextColumn("importing"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                    console=err, transient=True,
                ) as progress,
            ):
                task = progress.add_task("import", total=file.stat().st_size)
                report = import_conversations(
                    opened.apps, opened.conversations, bounded_lines(lines, CONVERSATION_LINE_BYTES), target,
                    on_line=lambda size: progress.advance(task, size),
                )
        for problem in report.errors:
            err.print(f"line {problem.line}: {problem.reason}", highlight=False, markup=False)
        out.print(f"{report.created} imported, {report.unchanged} already present, {len(report.errors)} failed")
        if report.errors:
            raise typer.Exit(1)


@import_app.command("chat")
def import_chat_command(
    format_name: Annotated[str, typer.Argument(
        metavar="FORMAT", help="slack (workspace export), google-chat (Google Takeout) or mattermost (bulk export).")],
    path: Annotated[Path, typer.Argument(help="The export: a folder or a zip (Mattermost: the .jsonl file).")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Import a team's chat history; each conversation is written whole or not at all, re-imports change nothing."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from convener.chat.importing import ChatImporter, ImportProgress, open_export

    with _services(_settings(data_dir, database_url)) as opened, closing(open_export(format_name, path)) as export:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} conversations"),
            TextColumn("{task.fields[messages]} messages"), TimeRemainingColumn(), console=err, transient=True,
        ) as progress:
            task = progress.add_task("importing", total=export.conversation_count(), messages=0)

            def show(step: ImportProgress) -> None:
                progress.update(task, completed=step.conversations_done, messages=step.messages,
                                description=step.conversation[:30])

            summary = ChatImporter(opened.database).run(export, show)
        for problem in summary.problems:
            err.print(str(problem), highlight=False, markup=False)
        if summary.problem_count > len(summary.problems):
            err.print(f"… and {summary.problem_count - len(summary.problems)} more problems", highlight=False)
        out.print(
            f"{summary.users} users, {summary.conversations} conversations from {summary.source}:"
            f" {summary.added} messages imported, {summary.updated} updated, {summary.unchanged} unchanged;"
            f" {summary.failed_conversations} conversations failed, {summary.problem_count} problems",
            highlight=False,
        )
        if summary.problem_count:
            raise typer.Exit(1)


@apps_app.command("export")
def export_app(
    app_name: Annotated[str, typer.Argument(help="projects/{project}/locations/{location}/apps/{app}")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write an app's settings, agents, tools and toolsets to stdout as YAML."""
    from convener.auth.caller import LOCAL_USER

    with _services(_settings(data_dir, database_url)) as opened:
        typer.echo(opened.runtime.bundles.export(app_name, LOCAL_USER), nl=False)


@apps_app.command("import")
def import_app_command(
    file: Annotated[Path, typer.Argument(help="YAML as `convener apps export` writes it ('-' for stdin).")],
    parent: Annotated[str, typer.Option(help="projects/{project}/locations/{location}")] = "projects/demo/locations/global",
    app_id: Annotated[str | None, typer.Option("--app-id", help="ID of the app; the file's id when unset.")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite an existing app's definition.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create (or with --replace, overwrite) an app from a YAML file, all or nothing."""
    from convener.auth.caller import LOCAL_USER

    if str(file) != "-" and not file.is_file():
        raise _fail("NOT_FOUND", f"no such file {file}")
    with _services(_settings(data_dir, database_url)) as opened:
        content = _app_file_text(file)
        imported = opened.runtime.bundles.import_(parent, app_id or (file.stem if str(file) != "-" else None), content,
                                                  replace, LOCAL_USER)
        out.print(f"imported {imported.name}", markup=False)


def _app_file_text(file: Path) -> str:
    from convener.api.errors import InvalidArgument
    from convener.outside.bounded_reading import read_at_most

    if str(file) == "-":
        raw = read_at_most(sys.stdin.buffer, "ces.app_content", "the app file")
    else:
        with file.open("rb") as stream:
            raw = read_at_most(stream, "ces.app_content", "the app file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidArgument(f"the app file is not UTF-8: invalid byte at offset {error.start}") from None


@app.command()
def chat(
    app_name: Annotated[str, typer.Argument(help="projects/{project}/locations/{location}/apps/{app}")],
    session: Annotated[str | None, typer.Option(help="Session ID, to continue a session; new when unset.")] = None,
    agent: Annotated[str | None, typer.Option(help="ID of the agent to start with; the app's root agent when unset.")] = None,
    version: Annotated[str | None, typer.Option(help="ID of the app version to run; the draft when unset.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Talk to an app's agents in the terminal; every turn is recorded as a conversation.

    Exit codes: 0 when you leave or the session ends, 2 when the app, agent or version does not exist.
    """
    from convener.ces.names import AppName
    from convener.ces.terminal import Chat

    with _services(_settings(data_dir, database_url), USAGE_ERROR) as opened:
        target = AppName.parse(app_name, "APP_NAME")
        Chat(opened, target, session=session, entry_agent=agent, version=version, ask=input,
             show=lambda text: out.print(text, markup=False, highlight=False)).loop()


@auth_app.command("create-key")
def create_key(
    principal: Annotated[str | None, typer.Argument(help="Who the key stands for, e.g. users/alice.")] = None,
    user: Annotated[str | None, typer.Option(
        "--user", help="Who the key stands for: users/ID or users/EMAIL (the same as the argument).")] = None,
    scope: Annotated[list[str] | None, typer.Option(
        help="A scope (repeatable): *, a service (ces, chat) or a Google scope such as chat.messages.readonly; "
        "default *.")] = None,
    scopes: Annotated[str | None, typer.Option(help="Scopes, comma-separated (the same as --scope).")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create an API key; it is printed once and only its hash is kept."""
    from convener.auth.keys import ApiKeys

    if (principal is None) == (user is None):
        raise _fail("INVALID_ARGUMENT", "name the key's user once: convener auth create-key --user users/alice", 2)
    given = scope is not None or scopes is not None
    wanted = [*(scope or []), *(part for part in (scopes or "").split(",") if part.strip())]
    if given and not wanted:
        raise _fail("INVALID_ARGUMENT", "--scope/--scopes name no scope; leave them out for every scope (*)", 2)
    with _services(_settings(data_dir, database_url)) as opened:
        key, secret = ApiKeys(opened.database).create(str(principal or user), tuple(wanted) if wanted else ("*",))
        err.print(f"key {key.key_id} for {key.principal} (scopes: {', '.join(key.scopes)}):", markup=False)
        typer.echo(secret)


@auth_app.command("list-keys")
def list_keys(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List API keys (never their secrets)."""
    from convener.auth.keys import ApiKeys

    with _services(_settings(data_dir, database_url)) as opened:
        for key in ApiKeys(opened.database).list():
            typer.echo(f"{key.key_id}\t{key.principal}\t{','.join(key.scopes)}\t{key.create_time}")


@auth_app.command("revoke-key")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key's ID, as list-keys shows it.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke an API key at once."""
    from convener.auth.keys import ApiKeys

    with _services(_settings(data_dir, database_url)) as opened:
        ApiKeys(opened.database).revoke(key_id)
        out.print(f"revoked {key_id}", markup=False)

# -- evaluations -------------------------------------------------------------------------------------

USAGE_ERROR = 2
INTERRUPTED = 130


class RunMethod(StrEnum):
    STABLE = "STABLE"
    NAIVE = "NAIVE"


def _child(app_name: AppName,
           kind: type[AppVersionName | EvaluationName | EvaluationDatasetName | EvaluationPersonaName],
           value: str) -> str:
    """A part of the app given by ID (``status``) or by full name (left to the service to check)."""
    return value if "/" in value else str(app_name.child(kind, value))


def _all_evaluations(service: EvaluationService, app_name: AppName) -> list[str]:
    """Every evaluation of the app, golden and scenario, by name."""
    from convener.auth.caller import LOCAL_USER
    from convener.ces.evaluation.requests import ListEvaluationsRequest

    names: list[str] = []
    token: str | None = None
    while True:
        page, token = service.list_evaluations(ListEvaluationsRequest(
            parent=str(app_name), page_size=500, page_token=token, order_by="name"), LOCAL_USER)
        names.extend(evaluation.name or "" for evaluation in page)
        if not token:
            break
    if not names:
        raise _fail("FAILED_PRECONDITION", f"the app {app_name} has no evaluations", USAGE_ERROR)
    return names


def _wait_for_run(services: Services, operation: Operation) -> Operation:
    """Wait for the run's operation to finish, showing its progress (finished of total) on stderr."""
    from convener.auth.caller import LOCAL_USER

    # Not drawn when stderr is no terminal: a transient bar shows nothing there, and redrawing it ten times a
    # second cost a run of quick evaluations a twentieth of its CPU (and importing rich's progress display a
    # hundredth of a second more).
    if not err.is_terminal:
        while not operation.done:
            operation = services.runtime.operations.wait(operation.name or "", "600s", LOCAL_USER)
        return operation

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(), console=err, transient=True,
    ) as progress:
        task = progress.add_task("evaluating", total=None, tally="")

        def show(current: Operation) -> None:
            counts = (current.metadata or {}).get("progress") or {}
            passed, failed, errors = (int(counts.get(key) or 0) for key in ("passedCount", "failedCount", "errorCount"))
            progress.update(task, total=int(counts.get("totalCount") or 0) or None,
                            completed=int(counts.get("completedCount") or 0) + errors,
                            tally=f"{passed} passed, {failed} failed, {errors} errors")

        while not operation.done:
            operation = services.runtime.operations.wait(operation.name or "", "600s", LOCAL_USER, progress=show)
    return operation


def _run_summaries(service: EvaluationService, app_name: AppName, run: EvaluationRun) -> list[ResultSummary]:
    """The run's results in the run's order (repetition by repetition), summarised."""
    from collections import Counter

    from convener.api.errors import NotFound
    from convener.auth.caller import LOCAL_USER
    from convener.ces.evaluation.junit import summarise
    from convener.ces.evaluation.models import EvaluationResult
    from convener.ces.evaluation.requests import ListEvaluationResultsRequest
    from convener.ces.names import EvaluationResultName

    results: list[EvaluationResult] = []
    token: str | None = None
    while True:
        page, token = service.list_results(ListEvaluationResultsRequest(
            parent=f"{app_name}/evaluations/-", filter=f'evaluation_run = "{run.name}"', page_size=500,
            page_token=token), LOCAL_USER)
        results.extend(page)
        if not token:
            break
    order = {name: index for index, name in enumerate(run.evaluation_results or [])}
    results.sort(key=lambda result: order.get(result.name or "", len(order)))
    repetitions: dict[str, int] = {}
    counts = Counter(EvaluationResultName.parse(result.name or "").evaluation for result in results)
    try:
        display_names = service.display_names(str(app_name), sorted(counts), LOCAL_USER)
    except NotFound:  # the app was deleted since the run started
        display_names = {}
    summaries = []
    for result in results:
        parsed = EvaluationResultName.parse(result.name or "")
        repeated = counts[parsed.evaluation] > 1  # a golden run once beside scenarios run five times: no "#1"
        repetitions[parsed.evaluation] = repetitions.get(parsed.evaluation, 0) + 1
        label = f" #{repetitions[parsed.evaluation]}" if repeated else ""
        # An evaluation deleted since the run started, or without a display name, is shown by its ID.
        summaries.append(summarise(result, (display_names.get(parsed.evaluation) or parsed.evaluation) + label))
    return summaries


_STATUS_STYLES = {"PASS": "green", "FAIL": "red", "ERROR": "magenta", "CANCELLED": "yellow"}


_SUMMARY_COLUMNS = ("Evaluation", "Status", "Turns", "First failure", "Latency")
_RIGHT_ALIGNED = frozenset({"Turns", "Latency"})


def _show_summaries(summaries: list[ResultSummary]) -> None:
    """A table of the results: drawn by rich on a terminal; elsewhere (a pipe, a CI log) one plain line a result,
    which grep can read, and which costs a large run a hundredth of what laying out rich's table did."""
    rows = [(summary.display_name, summary.status,
             f"{summary.turns_passed}/{summary.turns_total}" if summary.turns_total else "-",
             summary.reason, f"{summary.mean_latency:.3f}s" if summary.mean_latency is not None else "-")
            for summary in summaries]
    if not out.is_terminal:
        out.file.write(_plain_table(rows))
        out.file.flush()
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, pad_edge=False)
    for column in _SUMMARY_COLUMNS:
        table.add_column(column, overflow="fold", justify="right" if column in _RIGHT_ALIGNED else "left")
    for row in rows:
        table.add_row(*(Text(cell, style=_STATUS_STYLES.get(cell, "") if index == 1 else "")
                        for index, cell in enumerate(row)))
    out.print(table)


def _plain_table(rows: Sequence[tuple[str, ...]]) -> str:
    """``rows`` under ``_SUMMARY_COLUMNS``, columns as wide as their widest cell, two spaces apart; a cell's line
    breaks become spaces, so that each row is one line."""
    cells = [_SUMMARY_COLUMNS, *(tuple(" ".join(cell.split()) for cell in row) for row in rows)]
    widths = [max(len(row[index]) for row in cells) for index in range(len(_SUMMARY_COLUMNS))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(cell.rjust(width) if column in _RIGHT_ALIGNED else cell.ljust(width)
                         for cell, width, column in zip(row, widths, _SUMMARY_COLUMNS)).rstrip() + "\n"

    return line(cells[0]) + line(tuple("-" * width for width in widths)) + "".join(line(row) for row in cells[1:])


@eval_app.command("run")
def eval_run(
    app_name: Annotated[str, typer.Option("--app", help="projects/{project}/locations/{location}/apps/{app}")],
    evaluation: Annotated[list[str] | None, typer.Option(
        "--evaluation", help="An evaluation to run, by ID or full name (repeatable); every evaluation of the "
                             "app when neither this nor --dataset is given.")] = None,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="Run the evaluations of this evaluation dataset (ID or full name).")] = None,
    app_version: Annotated[str | None, typer.Option(
        "--app-version", help="The app version to evaluate (ID or full name); the draft when unset.")] = None,
    run_count: Annotated[int | None, typer.Option(
        "--run-count", min=1, max=100,
        help="How many times to run each evaluation; by default a golden once and a scenario 5 times.")] = None,
    method: Annotated[RunMethod, typer.Option(
        "--method", case_sensitive=False,
        help="STABLE replays each turn in a fresh session from the golden's history; NAIVE replays the "
             "conversation in one session.")] = RunMethod.STABLE,
    fake_tools: Annotated[bool, typer.Option(
        "--fake-tools", help="Run no tool: answer tool calls from the goldens' mock and expected responses.")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Also write the results to this file as JUnit XML.")] = None,
    fail_under: Annotated[float, typer.Option(
        "--fail-under", min=0.0, max=1.0,
        help="Exit 1 when the pass rate (passed / results) is below this; 1.0: every result must pass.")] = 1.0,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Run evaluations (golden replays and scenario simulations) against an app, show the results, and exit 0
    when enough of them passed.

    Exit codes: 0 pass rate reached, 1 not reached, 2 bad usage or an API error, 130 interrupted
    (the run is cancelled).
    """
    from convener.auth.caller import LOCAL_USER
    from convener.ces.evaluation.junit import junit_xml, write_junit
    from convener.ces.evaluation.models import EvaluationConfig
    from convener.ces.evaluation.requests import RunEvaluationRequest
    from convener.ces.models import EvaluationToolCallBehaviour, GoldenRunMethod
    from convener.ces.names import AppName, AppVersionName, EvaluationDatasetName, EvaluationName

    if evaluation and dataset:
        raise _fail("INVALID_ARGUMENT", "give --evaluation or --dataset, not both", USAGE_ERROR)
    if junit is not None and not junit.parent.is_dir():
        raise _fail("INVALID_ARGUMENT", f"--junit: no such directory {junit.parent}", USAGE_ERROR)
    settings = _settings(data_dir, database_url)
    with _services(settings, USAGE_ERROR) as opened:
        service = opened.runtime.evaluations
        target = AppName.parse(app_name, "--app")
        request = RunEvaluationRequest(
            app=str(target),
            app_version=_child(target, AppVersionName, app_version) if app_version else None,
            run_count=run_count, golden_run_method=GoldenRunMethod(method.value),
            config=EvaluationConfig(tool_call_behaviour=EvaluationToolCallBehaviour.FAKE) if fake_tools else None,
        )
        if dataset:
            request.evaluation_dataset = _child(target, EvaluationDatasetName, dataset)
        elif evaluation:
            request.evaluations = [_child(target, EvaluationName, value) for value in evaluation]
        else:
            request.evaluations = _all_evaluations(service, target)
        operation = service.run(request, LOCAL_USER)
        run_name = str((operation.metadata or {}).get("evaluationRun") or "")
        err.print(f"evaluation run {run_name}", markup=False, highlight=False)
        try:
            operation = _wait_for_run(opened, operation)
            run = service.get_run(run_name, LOCAL_USER)
            summaries = _run_summaries(service, target, run)
        except KeyboardInterrupt:
            opened.runtime.operations.cancel(operation.name or "", LOCAL_USER)
            err.print(f"interrupted: cancelled {run_name} (results already running finish first)",
                      markup=False, highlight=False)
            raise typer.Exit(INTERRUPTED) from None
        _show_summaries(summaries)
        if junit is not None:
            properties = {"evaluationRun": run_name, "displayName": run.display_name or "",
                          "state": run.state.value if run.state else "", "runCount": str(run.run_count or 1),
                          "goldenRunMethod": run.golden_run_method.value if run.golden_run_method else "",
                          "toolCallBehaviour": "FAKE" if fake_tools else "REAL"}
            if run.app_version:
                properties["appVersion"] = run.app_version
            tree = junit_xml(run_name, str(target), summaries, properties,
                             timestamp=str(run.create_time) if run.create_time else None)
            try:
                write_junit(junit, tree)
            except OSError as error:
                raise _fail("INVALID_ARGUMENT", f"--junit: cannot write {junit}: {error.strerror}", USAGE_ERROR) from None
        passed = sum(1 for summary in summaries if summary.status == "PASS")
        failed = sum(1 for summary in summaries if summary.status == "FAIL")
        errors = sum(1 for summary in summaries if summary.status == "ERROR")
        cancelled = len(summaries) - passed - failed - errors
        rate = passed / len(summaries) if summaries else 0.0
        out.print(
            f"{len(summaries)} result{'s' if len(summaries) != 1 else ''}: {passed} passed, {failed} failed, "
            f"{errors} error{'s' if errors != 1 else ''}" + (f", {cancelled} cancelled" if cancelled else "")
            + f"; pass rate {rate:.1%} (required {fail_under:.1%})", markup=False, highlight=False)
        if junit is not None:
            err.print(f"JUnit XML written to {junit}", markup=False, highlight=False)
        if rate < fail_under:
            raise typer.Exit(1)


def _fact(value: str) -> UserFact:
    from convener.ces.evaluation.models import UserFact

    name, sep, fact = value.partition("=")
    if not sep or not name.strip():
        raise _fail("INVALID_ARGUMENT", f'--fact "{value[:80]}": write it as name=value', USAGE_ERROR)
    return UserFact(name=name.strip(), value=fact.strip())


@app.command()
def simulate(
    app_name: Annotated[str, typer.Argument(help="projects/{project}/locations/{location}/apps/{app}")],
    task: Annotated[str, typer.Option("--task", help="What the simulated user wants, e.g. \"You want a refund for "
                                                     "order AC-1001, which arrived broken\".")],
    fact: Annotated[list[str] | None, typer.Option(
        "--fact", help="name=value: something the user knows and tells when asked (repeatable).")] = None,
    persona: Annotated[str | None, typer.Option(
        "--persona", help="An evaluation persona of the app (ID or full name) the user plays.")] = None,
    max_turns: Annotated[int | None, typer.Option(
        "--max-turns", min=1, max=100, help="Stop after this many turns (default 100).")] = None,
    version: Annotated[str | None, typer.Option(help="ID of the app version to run; the draft when unset.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Watch a simulated user pursue a task against an app's agents, turn by turn, then read the verdict.

    The user is the configured model (CONVENER_LLM_PROVIDER), or else the offline simulator, which opens
    with the task and answers the agent's questions from the facts. The conversation is recorded with
    source SIMULATOR.
    """
    from rich.text import Text

    from convener.auth.caller import LOCAL_USER
    from convener.ces.evaluation.models import Scenario
    from convener.ces.evaluation.scenario_scoring import report as simulation_report
    from convener.ces.names import AppName, AppVersionName, EvaluationPersonaName

    scenario = Scenario(task=task, user_facts=[_fact(value) for value in fact or ()] or None, max_turns=max_turns)
    with _services(_settings(data_dir, database_url), USAGE_ERROR) as opened:
        target = AppName.parse(app_name, "APP_NAME")

        def show(said: Exchange, replies: Sequence[Exchange]) -> None:
            out.print(Text("user: ", style="bold cyan") + Text(said.text))
            for reply in replies:
                out.print(Text("agent: ", style="bold green") + Text(reply.text))

        simulation, score = opened.runtime.evaluations.simulate(
            str(target), scenario, LOCAL_USER, persona=_child(target, EvaluationPersonaName, persona) if persona else None,
            app_version=_child(target, AppVersionName, version) if version else None, on_turn=show)
        for line in simulation_report(simulation, score):
            err.print(line, markup=False, highlight=False)


@eval_app.command("import-adk")
def eval_import_adk(
    file: Annotated[Path, typer.Argument(help="A Google ADK *.evalset.json or *.test.json file ('-' for stdin).")],
    app_name: Annotated[str, typer.Option("--app", help="projects/{project}/locations/{location}/apps/{app}")],
    criteria: Annotated[Path | None, typer.Option(
        "--criteria", help="The ADK EvalConfig (test_config.json) to score the evaluations with; default: the "
                           "test_config.json beside FILE, as ADK's AgentEvaluator finds it, else ADK's default "
                           "criteria.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create golden evaluations from an ADK eval file, all or none, scored with its ADK criteria; prints the
    names of those created, and on stderr the criteria that were not applied."""
    from convener.auth.caller import LOCAL_USER
    from convener.api.errors import ApiError
    from convener.ces.evaluation.adk_criteria import CONFIG_FILE, MAX_CONFIG_BYTES, parse_criteria

    stdin = str(file) == "-"
    if not stdin and not file.is_file():
        raise _fail("NOT_FOUND", f"no such file {file}", USAGE_ERROR)
    raw = sys.stdin.buffer.read() if stdin else file.read_bytes()
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _fail("INVALID_ARGUMENT", f"{file} is not UTF-8 text (byte {error.start})", USAGE_ERROR) from None
    config = criteria
    if config is None and not stdin and (file.parent / CONFIG_FILE).is_file():
        config = file.parent / CONFIG_FILE
    if config is not None and not config.is_file():
        raise _fail("NOT_FOUND", f"no such file {config}", USAGE_ERROR)
    try:
        if config is not None:
            with config.open("rb") as handle:  # a byte past the cap is enough to refuse a huge file
                chosen = parse_criteria(handle.read(MAX_CONFIG_BYTES + 1), str(config))
        else:
            chosen = None
    except ApiError as error:
        raise _fail(error.code.name, error.message, USAGE_ERROR) from None
    with _services(_settings(data_dir, database_url), USAGE_ERROR) as opened:
        done = opened.runtime.evaluations.import_adk(app_name, content, None if stdin else file.name, LOCAL_USER,
                                                     chosen)
        for evaluation in done.evaluations:
            out.print(evaluation.name, markup=False, highlight=False)
        for warning in done.warnings:
            err.print(f"warning: {warning}", markup=False, highlight=False)
        count = len(done.evaluations)
        err.print(f"{count} evaluation{'s' if count != 1 else ''} imported, scored with "
                  f"{config if config is not None else 'ADK default criteria'}", markup=False)


@knowledge_app.command("ingest")
def knowledge_ingest(
    path: Annotated[Path, typer.Argument(help="A folder, a zip or tar archive, or a file of Markdown, HTML, "
                                              "reStructuredText or text (a saved website mirror too).")],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="URL the documents' URIs are made from with their paths; default: file:// paths.")] = None,
    data_source: Annotated[str | None, typer.Option(
        "--data-source", help="Data source name; default: the base URL's host.")] = None,
    keep_removed: Annotated[bool, typer.Option(
        "--keep-removed", help="Keep documents whose files are gone from the source.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Index documentation incrementally: unchanged files are skipped, so an interrupted ingest resumes."""
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from convener.api.errors import Code
    from convener.auth.caller import LOCAL_USER
    from convener.knowledge.ingest import IngestPlan
    from convener.knowledge.models import IngestSummary

    with _services(_settings(data_dir, database_url)) as opened:
        plan = IngestPlan.make(opened.knowledge.check_readable(path, remote=False), base_url, data_source,
                               keep_removed)
        with Progress(TextColumn("ingesting {task.fields[source]}"), TextColumn("{task.completed} files"),
                      TextColumn("{task.fields[indexed]} indexed"), TimeElapsedColumn(), console=err,
                      transient=True) as progress:
            task = progress.add_task("ingest", total=None, source=plan.data_source, indexed=0)

            def show(summary: IngestSummary) -> None:
                progress.update(task, completed=summary.files_seen or 0,
                                indexed=(summary.added or 0) + (summary.updated or 0))

            operation = opened.ingests.ingest(plan, LOCAL_USER, show)
        if not operation.done:
            raise _fail("DEADLINE_EXCEEDED", f"the ingest is still running; follow it with its operation "
                                             f"{operation.name} (convener jobs shows which worker holds it)", 1)
        if operation.error is not None:
            raise _fail(Code(operation.error.code).name, operation.error.message or "", 1)
        summary = IngestSummary.model_validate(
            {k: v for k, v in (operation.response or {}).items() if k != "@type"})
        for problem in summary.problems or []:
            err.print(f"{problem.path}: {problem.reason}", highlight=False, markup=False)
        out.print(
            f"{plan.data_source}: {summary.files_seen} files, {summary.added} added, {summary.updated} updated, "
            f"{summary.unchanged} unchanged, {summary.removed} removed, {summary.chunks_written} chunks written, "
            f"{len(summary.problems or [])} problems ({operation.name})", highlight=False, markup=False)


@knowledge_app.command("search")
def knowledge_search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    filter_text: Annotated[str | None, typer.Option("--filter", help='AIP-160, e.g. data_source = "x"')] = None,
    page_size: Annotated[int, typer.Option("--page-size", help="How many chunks.")] = 5,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Print the most relevant chunks, with their documents."""
    from convener.auth.caller import LOCAL_USER

    with _services(_settings(data_dir, database_url)) as opened:
        page = opened.knowledge.search(query, page_size, None, filter_text, LOCAL_USER)
        for chunk in page.results:
            out.print(f"{chunk.relevance_score:.3f}  {chunk.parent}", highlight=False, markup=False)
            out.print(f"       {(chunk.content or '').strip()[:200]}", highlight=False, markup=False)


@knowledge_app.command("ask")
def knowledge_ask(
    question: Annotated[str, typer.Argument(help="A question about the indexed documentation.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Answer a question from the documentation, with the documents it comes from."""
    with _services(_settings(data_dir, database_url)) as opened:
        answer = opened.knowledge.answer(question)
        out.print(answer.text, highlight=False, markup=False)
        for reference in answer.references:
            out.print(f"- {reference}", highlight=False, markup=False)


@knowledge_app.command("sources")
def knowledge_sources(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List the ingested data sources."""
    with _services(_settings(data_dir, database_url)) as opened:
        for source in opened.knowledge.list_data_sources():
            out.print(f"{source.name}: {source.document_count} documents from {source.base_url}, "
                      f"{source.embedding_model or 'lexical only'}, updated {source.update_time}",
                      highlight=False, markup=False)


@knowledge_app.command("delete")
def knowledge_delete(
    data_source: Annotated[str, typer.Argument(help="The data source to delete, with all its documents.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Delete a data source and its documents."""
    with _services(_settings(data_dir, database_url)) as opened:
        count = opened.knowledge.delete_documents(None, data_source)
        out.print(f"{data_source}: {count} documents deleted", highlight=False, markup=False)


@data_app.command("add-source")
def data_add_source(
    name: Annotated[str, typer.Argument(help="The source's name (datasetId in table references).")],
    location: Annotated[str, typer.Argument(help="A DuckDB or SQLite file, a CSV/Parquet/JSON file or folder, or "
                                                 "a database URL such as postgresql://reader@host/db.")],
    description: Annotated[str | None, typer.Option("--description", help="What the data is.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Register a SQL source; it is only ever read."""
    from convener.auth.caller import LOCAL_USER

    with _services(_settings(data_dir, database_url)) as opened:
        source = opened.analytics.sources.add(name, location, description)
        tables = opened.analytics.sources.tables(name, LOCAL_USER)
        out.print(f"{source.name}: {source.kind} {source.location}, {len(tables)} tables: "
                  f"{', '.join(t.name for t in tables)}", highlight=False, markup=False)


@data_app.command("sources")
def data_sources(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List the SQL sources, with the built-in convener source."""
    with _services(_settings(data_dir, database_url)) as opened:
        for source in opened.analytics.sources.all():
            out.print(f"{source.name}: {source.kind} {source.location}", highlight=False, markup=False)


@data_app.command("describe")
def data_describe(
    name: Annotated[str, typer.Argument(help="The SQL source.")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Show a source's tables and columns, with types and sample values."""
    from convener.auth.caller import LOCAL_USER

    with _services(_settings(data_dir, database_url)) as opened:
        for table in opened.analytics.sources.tables(name, LOCAL_USER):
            out.print(f"{table.name}" + (f"  ({table.row_count} rows)" if table.row_count is not None else ""),
                      highlight=False, markup=False)
            for column in table.columns:
                samples = f"  e.g. {', '.join(column.samples[:3])}" if column.samples else ""
                out.print(f"    {column.name} {column.type}{samples}", highlight=False, markup=False)


@data_app.command("remove-source")
def data_remove_source(
    name: Annotated[str, typer.Argument(help="The SQL source to unregister (its data is not touched).")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Unregister a SQL source."""
    with _services(_settings(data_dir, database_url)) as opened:
        opened.analytics.sources.remove(name)
        out.print(f"{name}: removed", highlight=False, markup=False)


@data_app.command("ask")
def data_ask(
    question: Annotated[str, typer.Argument(help="A question about the data, in plain language.")],
    table: Annotated[list[str] | None, typer.Option(
        "--table", help="SOURCE.TABLE to answer from (repeatable); or use --agent.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Ask this data agent instead.")] = None,
    conversation: Annotated[str | None, typer.Option(
        "--conversation", help="Continue this conversation with the agent (a follow-up question).")] = None,
    chart: Annotated[Path | None, typer.Option("--chart", help="Write the chart's image to this file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the messages as JSON lines.")] = False,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Ask a question; each step of the answer (schema, SQL, rows, chart, response) prints as it is made."""
    import base64
    import json

    from convener.analytics.models import Message, TableReference
    from convener.auth.caller import LOCAL_USER
    from convener.analytics.rendering import message_lines

    if bool(table) == bool(agent):
        raise _fail("INVALID_ARGUMENT", "give --table SOURCE.TABLE (one or more) or --agent ID", USAGE_ERROR)

    def show(message: Message) -> None:
        if as_json:
            out.print(json.dumps(message.to_json(), ensure_ascii=False), highlight=False, markup=False,
                      soft_wrap=True)
            return
        for line in message_lines(message):
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        image = message.system_message.chart.result.image if (
            message.system_message and message.system_message.chart and message.system_message.chart.result) else None
        if chart is not None and image is not None:
            chart.write_bytes(base64.b64decode(image.data))
            err.print(f"chart written to {chart}", highlight=False, markup=False)

    with _services(_settings(data_dir, database_url)) as opened:
        if agent:
            asked = opened.analytics.ask_agent(agent, question, conversation, False, LOCAL_USER, show)
            err.print(f"conversation: {asked.conversation}", highlight=False, markup=False)
            return
        references = []
        for item in table or []:
            source, _, name = item.partition(".")
            if not source or not name:
                raise _fail("INVALID_ARGUMENT", f"--table {item}: expected SOURCE.TABLE", USAGE_ERROR)
            references.append(TableReference(dataset_id=source, table_id=name))
        opened.analytics.ask_inline(question, references, LOCAL_USER, show)


@data_app.command("agents")
def data_agents(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List the data agents."""
    from convener.auth.caller import LOCAL_USER

    with _services(_settings(data_dir, database_url)) as opened:
        page = opened.analytics.agents.list(1000, None, LOCAL_USER)
        for agent in page.data_agents or []:
            out.print(f"{agent.name}: {agent.display_name or ''}", highlight=False, markup=False)


def main() -> None:
    collector.start_up()  # paused until the store is open (``_services``): see ``convener.collector``
    try:
        app()
    finally:
        collector.exiting()
