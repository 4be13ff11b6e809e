"""examples/docker-compose.yml, the scale-out example: PostgreSQL, two servers that run no jobs, three workers,
jobs on procrastinate. Docker does not run here; the file is read, and every command in it is parsed by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
import yaml

from convener.cli import app
from convener.config import Settings

COMPOSE = Path(__file__).parents[2] / "examples" / "docker-compose.yml"


def services() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    found: dict[str, Any] = loaded["services"]
    return found


def parsed(command: list[str]) -> tuple[str, dict[str, Any]]:
    """The CLI command a service runs and its parameters, as the real CLI parses them (unknown options fail)."""
    assert command[0] == "convener", command
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert command[1] in commands, f"convener has no command {command[1]}"
    sub = commands[command[1]]
    with sub.make_context(command[1], list(command[2:])) as context:
        return command[1], dict(context.params)


def test_the_example_runs_two_servers_without_workers_and_three_workers_on_postgresql() -> None:
    defined = services()
    assert defined["postgres"]["image"].startswith("postgres:")
    servers = {name: parsed(body["command"]) for name, body in defined.items() if name.startswith("server")}
    workers = {name: parsed(body["command"]) for name, body in defined.items() if name.startswith("worker")}
    assert len(servers) == 2 and len(workers) == 3
    for command, params in servers.values():
        assert command == "serve" and params["worker"] is False, "servers run no jobs: serve --no-worker"
    for command, params in workers.values():
        assert command == "worker"
        assert params["queues"] is None or set(params["queues"].split(",")) <= {"evaluations", "ingests"}
    for name in (*servers, *workers):
        environment = defined[name]["environment"]
        assert environment["CONVENER_JOBS"] == "procrastinate"
        assert environment["CONVENER_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert "postgres" in defined[name]["depends_on"]
        settings = Settings(jobs=environment["CONVENER_JOBS"], database_url=environment["CONVENER_DATABASE_URL"])
        assert settings.jobs == "procrastinate"


def test_a_misspelt_command_would_be_caught() -> None:
    """The check above fails for an option the CLI does not have."""
    try:
        parsed(["convener", "serve", "--no-workers"])
    except Exception as error:  # the CLI's click raises its UsageError (typer may bring a click of its own)
        assert "No such option" in str(error) and "--no-workers" in str(error), error
    else:
        raise AssertionError("serve --no-workers was accepted")
