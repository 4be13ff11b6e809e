"""The ``convener`` command: help everywhere, and the API key commands against a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from convener.auth.keys import ApiKeys
from convener.cli import app
from convener.store.database import Database


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=input)


def store_options(database_url: str, tmp_path: Path) -> list[str]:
    return ["--data-dir", str(tmp_path / "data"), "--database-url", database_url]


def assert_clean_failure(result: Result, code: str) -> None:
    """Failed with ``CODE: message`` on stderr, a non-zero exit and no Python traceback."""
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.stderr.strip().startswith(f"{code}: "), result.stderr


@pytest.fixture
def database(database_url: str) -> Iterator[Database]:
    """The store the CLI writes to, opened alongside it (the CLI migrates it on first use)."""
    opened = Database(database_url)
    opened.migrate()
    yield opened
    opened.dispose()


# --- help -----------------------------------------------------------------------------------------


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = [path for path, _ in _commands(typer.main.get_command(app))]


def test_the_command_tree_is_the_expected_one() -> None:
    assert set(COMMANDS) == {
        (),
        ("serve",),
        ("tools",),
        ("worker",),
        ("jobs",),
        ("demo",),
        ("simulate",),
        ("import",),
        ("import", "conversations"),
        ("import", "chat"),
        ("auth",),
        ("auth", "create-key"),
        ("auth", "list-keys"),
        ("auth", "revoke-key"),
        ("apps",),
        ("apps", "export"),
        ("apps", "import"),
        ("chat",),
        ("eval",),
        ("eval", "run"),
        ("eval", "import-adk"),
        ("knowledge",),
        ("knowledge", "ingest"),
        ("knowledge", "search"),
        ("knowledge", "ask"),
        ("knowledge", "sources"),
        ("knowledge", "delete"),
        ("data",),
        ("data", "add-source"),
        ("data", "sources"),
        ("data", "describe"),
        ("data", "remove-source"),
        ("data", "ask"),
        ("data", "agents"),
    }


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "convener")
def test_every_command_has_working_help(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert "Usage:" in result.stdout


def test_every_command_option_and_argument_has_help_text() -> None:
    missing = []
    for path, command in _commands(typer.main.get_command(app)):
        where = " ".join(("convener", *path))
        if not (command.help or "").strip():
            missing.append(where)
        for parameter in command.params:
            if not (getattr(parameter, "help", None) or "").strip():
                missing.append(f"{where} {parameter.name}")
    assert missing == []


def test_the_help_of_a_command_shows_its_description_and_options() -> None:
    result = run("import", "conversations", "--help")
    for text in ("Import recorded conversations", "file", "JSON Lines file", "--app", "--data-dir", "--database-url"):
        assert text in result.stdout


@pytest.mark.parametrize("path", [("demo",), ("serve",), ("import", "conversations"), ("auth", "list-keys")])
def test_the_help_names_the_environment_variables_of_the_store_options(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert "CONVENER_DATA_DIR" in result.stdout
    assert "CONVENER_DATABASE_URL" in result.stdout


def test_no_arguments_shows_help() -> None:
    result = run()
    assert "Usage:" in result.output
    for command in ("serve", "demo", "import", "auth"):
        assert command in result.output


def test_an_unknown_command_fails_without_a_traceback() -> None:
    result = run("frobnicate")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- API keys -------------------------------------------------------------------------------------


def create_key(database_url: str, tmp_path: Path, principal: str = "users/alice", *extra: str) -> str:
    result = run("auth", "create-key", principal, *extra, *store_options(database_url, tmp_path))
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert "\n" not in secret
    return secret


def test_create_key_prints_a_key_that_resolves_to_the_principal(
    database_url: str, tmp_path: Path, database: Database
) -> None:
    result = run("auth", "create-key", "users/alice", *store_options(database_url, tmp_path))
    assert result.exit_code == 0, result.output
    secret = result.stdout.strip()
    assert secret.startswith("cnv_")
    assert "users/alice" in result.stderr
    assert secret not in result.stderr
    caller = ApiKeys(database).caller(secret)
    assert caller is not None
    assert caller.principal == "users/alice"
    assert caller.scopes == frozenset({"*"})
    assert caller.may_use("ces")


def test_create_key_with_scopes_limits_the_key(database_url: str, tmp_path: Path, database: Database) -> None:
    secret = create_key(database_url, tmp_path, "users/bob", "--scope", "ces")
    caller = ApiKeys(database).caller(secret)
    assert caller is not None
    assert caller.scopes == frozenset({"ces"})
    assert caller.may_use("ces")
    assert not caller.may_use("other")


def test_every_key_is_different(database_url: str, tmp_path: Path, database: Database) -> None:
    first = create_key(database_url, tmp_path)
    second = create_key(database_url, tmp_path)
    assert first != second
    keys = ApiKeys(database)
    assert keys.caller(first) == keys.caller(second)


def test_list_keys_shows_each_key_without_its_secret(database_url: str, tmp_path: Path, database: Database) -> None:
    alice = create_key(database_url, tmp_path, "users/alice")
    bob = create_key(database_url, tmp_path, "users/bob", "--scope", "ces")
    result = run("auth", "list-keys", *store_options(database_url, tmp_path))
    assert result.exit_code == 0, result.output
    assert alice not in result.output
    assert bob not in result.output
    rows = [line.split() for line in result.stdout.splitlines()]
    assert len(rows) == 2
    ids = {key.key_id: key for key in ApiKeys(database).list()}
    assert {row[0] for row in rows} == set(ids)
    by_principal = {row[1]: row for row in rows}
    assert by_principal["users/alice"][2] == "*"
    assert by_principal["users/bob"][2] == "ces"
    for row in rows:
        assert row[3] == str(ids[row[0]].create_time)
        assert row[0] in (alice if row[1] == "users/alice" else bob)


def test_list_keys_columns_are_tab_separated(database_url: str, tmp_path: Path) -> None:
    create_key(database_url, tmp_path, "users/alice")
    result = run("auth", "list-keys", *store_options(database_url, tmp_path))
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()[0].split("\t")) == 4


def test_list_keys_of_an_empty_store_prints_nothing(database_url: str, tmp_path: Path) -> None:
    result = run("auth", "list-keys", *store_options(database_url, tmp_path))
    assert result.exit_code == 0
    assert result.stdout == ""


def test_revoke_key_revokes_it_at_once(database_url: str, tmp_path: Path, database: Database) -> None:
    doomed = create_key(database_url, tmp_path, "users/alice")
    kept = create_key(database_url, tmp_path, "users/alice")
    keys = ApiKeys(database)
    doomed_id = next(key.key_id for key in keys.list() if key.key_id in doomed)

    result = run("auth", "revoke-key", doomed_id, *store_options(database_url, tmp_path))
    assert result.exit_code == 0, result.output
    assert doomed_id in result.stdout

    assert keys.caller(doomed) is None
    assert keys.caller(kept) is not None
    listed = run("auth", "list-keys", *store_options(database_url, tmp_path)).stdout
    assert doomed_id not in listed
    assert len(listed.splitlines()) == 1


def test_revoking_a_missing_key_is_not_found(database_url: str, tmp_path: Path) -> None:
    result = run("auth", "revoke-key", "0123456789ab", *store_options(database_url, tmp_path))
    assert_clean_failure(result, "NOT_FOUND")
    assert "0123456789ab" in result.stderr


@pytest.mark.parametrize(
    "principal",
    ["alice", "users/", "users/-alice", "groups/admins", "users/alice bob", "users/alice/keys", "", "users/" + "a" * 200],
)
def test_a_bad_principal_is_invalid_argument_without_a_traceback(
    database_url: str, tmp_path: Path, database: Database, principal: str
) -> None:
    result = run("auth", "create-key", principal, *store_options(database_url, tmp_path))
    assert_clean_failure(result, "INVALID_ARGUMENT")
    assert "users/alice" in result.stderr
    assert ApiKeys(database).list() == []


def test_a_principal_that_looks_like_markup_is_invalid_argument_without_a_traceback(
    database_url: str, tmp_path: Path
) -> None:
    result = run("auth", "create-key", "users/[/b]", *store_options(database_url, tmp_path))
    assert_clean_failure(result, "INVALID_ARGUMENT")


def test_keys_presented_wrongly_resolve_to_nobody(database_url: str, tmp_path: Path, database: Database) -> None:
    secret = create_key(database_url, tmp_path)
    keys = ApiKeys(database)
    for wrong in (secret[:-1], secret + "x", secret.upper(), "", "cnv_", secret.removeprefix("cnv_"), "x" * 300):
        assert keys.caller(wrong) is None


# --- jobs and workers -------------------------------------------------------------------------------


def test_jobs_lists_what_waits_and_a_worker_refuses_an_unknown_queue(database: Database, database_url: str,
                                                                     tmp_path: Path) -> None:
    from convener.jobs.tables import jobs

    with database.transaction() as connection:
        connection.execute(jobs.insert(), [{
            "task": "knowledge.ingest", "queue": "ingests", "operation": "projects/knowledge/locations/global/"
            "operations/abc", "payload": {}, "attempts": 1, "worker": "host:1:dead", "lease_until_us": 1,
            "since_us": 1_000_000}])
    listed = run("jobs", *store_options(database_url, tmp_path))
    assert listed.exit_code == 0, listed.output
    assert "knowledge.ingest" in listed.output and "stalled" in listed.output and "host:1:dead" in listed.output
    assert "1 unfinished jobs (inline)" in listed.output

    assert_clean_failure(run("worker", "--queues", "evaluations,nope", *store_options(database_url, tmp_path)),
                         "INVALID_ARGUMENT")


def test_procrastinate_on_a_sqlite_store_is_a_clear_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVENER_JOBS", "procrastinate")
    result = run("jobs", "--data-dir", str(tmp_path / "data"))
    assert_clean_failure(result, "FAILED_PRECONDITION")
    assert "needs a PostgreSQL store" in result.stderr
