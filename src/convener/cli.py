"""The ``convener`` command: thin adapters over the library (parse flags, call one method, render)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from convener.api.errors import ApiError
from convener.auth.caller import LOCAL_USER
from convener.auth.keys import ApiKeys
from convener.ces.importing import import_conversations
from convener.ces.names import AppName
from convener.config import Settings
from convener.services import Services

app = typer.Typer(help="Convener: Google's agent-platform MCP tools on your own machine.", no_args_is_help=True)
import_app = typer.Typer(help="Import data in the formats users have.", no_args_is_help=True)
auth_app = typer.Typer(help="API keys for HTTP callers.", no_args_is_help=True)
apps_app = typer.Typer(help="Apps as YAML files: export and import.", no_args_is_help=True)
app.add_typer(import_app, name="import")
app.add_typer(auth_app, name="auth")
app.add_typer(apps_app, name="apps")

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
    given = {"data_dir": data_dir, "database_url": database_url, **overrides}
    try:
        return Settings(**{key: value for key, value in given.items() if value is not None})
    except ValidationError as error:
        raise _fail("INVALID_ARGUMENT", str(error.errors()[0]["msg"]), 2) from None


@contextmanager
def _services(settings: Settings) -> Iterator[Services]:
    """Open the store; render any ApiError as ``CODE: message`` and exit non-zero."""
    services = Services.open(settings)
    try:
        yield services
    except ApiError as error:
        raise _fail(error.code.name, error.message) from None
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
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Serve the MCP tools over Streamable HTTP (/mcp, /<service>/mcp) or stdio."""
    settings = _settings(
        data_dir, database_url, transport=transport, host=host, port=port, services=services,
        allow_anonymous=allow_anonymous,
    )
    with _services(settings) as opened:
        if demo:
            from convener.demo import load_demo

            summary = load_demo(opened)
            err.print(f"demo workspace: {summary}", markup=False)
        if settings.transport == "stdio":
            from convener.server import serve_stdio

            anyio.run(serve_stdio, opened)
            return
        import uvicorn

        from convener.server import build_app

        err.print(f"Convener serving {', '.join(settings.services)} at http://{settings.host}:{settings.port}/mcp")
        if not settings.allow_anonymous:
            err.print("HTTP callers need an API key: convener auth create-key users/you")
        uvicorn.run(build_app(opened), host=settings.host, port=settings.port, log_level="warning")


@app.command()
def demo(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """Load the demo workspace (projects/demo/locations/global) into the store; safe to repeat."""
    from convener.demo import load_demo

    with _services(_settings(data_dir, database_url)) as opened:
        out.print(f"demo workspace: {load_demo(opened)}", markup=False)


@import_app.command("conversations")
def import_conversations_command(
    file: Annotated[Path, typer.Argument(help="JSON Lines file, one Conversation per line ('-' for stdin).")],
    app_name: Annotated[str, typer.Option("--app", help="projects/{project}/locations/{location}/apps/{app}")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Import recorded conversations; bad lines are reported and skipped, re-imports change nothing."""
    with _services(_settings(data_dir, database_url)) as opened:
        target = AppName.parse(app_name, "--app")
        if str(file) == "-":
            report = import_conversations(opened.apps, opened.conversations, sys.stdin.buffer, target)
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
                    opened.apps, opened.conversations, lines, target,
                    on_line=lambda size: progress.advance(task, size),
                )
        for problem in report.errors:
            err.print(f"line {problem.line}: {problem.reason}", highlight=False, markup=False)
        out.print(f"{report.created} imported, {report.unchanged} already present, {len(report.errors)} failed")
        if report.errors:
            raise typer.Exit(1)


@apps_app.command("export")
def export_app(
    app_name: Annotated[str, typer.Argument(help="projects/{project}/locations/{location}/apps/{app}")],
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Write an app's settings, agents, tools and toolsets to stdout as YAML."""
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
    if str(file) != "-" and not file.is_file():
        raise _fail("NOT_FOUND", f"no such file {file}")
    content = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    with _services(_settings(data_dir, database_url)) as opened:
        imported = opened.runtime.bundles.import_(parent, app_id or (file.stem if str(file) != "-" else None), content,
                                                  replace, LOCAL_USER)
        out.print(f"imported {imported.name}", markup=False)


@app.command()
def chat(
    app_name: Annotated[str, typer.Argument(help="projects/{project}/locations/{location}/apps/{app}")],
    session: Annotated[str | None, typer.Option(help="Session ID, to continue a session; new when unset.")] = None,
    agent: Annotated[str | None, typer.Option(help="ID of the agent to start with; the app's root agent when unset.")] = None,
    version: Annotated[str | None, typer.Option(help="ID of the app version to run; the draft when unset.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Talk to an app's agents in the terminal; every turn is recorded as a conversation."""
    from convener.chat import Chat

    with _services(_settings(data_dir, database_url)) as opened:
        target = AppName.parse(app_name, "APP_NAME")
        Chat(opened, target, session=session, entry_agent=agent, version=version, ask=input,
             show=lambda text: out.print(text, markup=False, highlight=False)).loop()


@auth_app.command("create-key")
def create_key(
    principal: Annotated[str, typer.Argument(help="Who the key stands for, e.g. users/alice.")],
    scope: Annotated[list[str] | None, typer.Option(help="A service the key may use (repeatable); default all.")] = None,
    data_dir: DataDir = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Create an API key; it is printed once and only its hash is kept."""
    with _services(_settings(data_dir, database_url)) as opened:
        key, secret = ApiKeys(opened.database).create(principal, tuple(scope) if scope else ("*",))
        err.print(f"key {key.key_id} for {key.principal} (scopes: {', '.join(key.scopes)}):", markup=False)
        typer.echo(secret)


@auth_app.command("list-keys")
def list_keys(data_dir: DataDir = None, database_url: DatabaseUrl = None) -> None:
    """List API keys (never their secrets)."""
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
    with _services(_settings(data_dir, database_url)) as opened:
        ApiKeys(opened.database).revoke(key_id)
        out.print(f"revoked {key_id}", markup=False)


def main() -> None:
    app()
