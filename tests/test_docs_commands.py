"""The shell commands of README.md and docs/*.md work as written, after ``make demo``, from the clone's root.

Every fenced ``sh`` block is read. A block marked runnable, by the HTML comment ``<!-- runnable -->`` (or
``<!-- runnable: exit N -->`` when its last command is meant to fail) on the line before its fence, is run as
a reader runs it: its commands in order, from a folder that holds the repository's ``examples/`` and
``tests/data/``, against a data directory holding the demo workspace (built once per module, copied for each
document, so one document's commands never see another's). ``.venv/bin/convener`` commands run in-process
through the CLI (starting the interpreter for each would cost seconds a command); ``curl`` blocks run in a
real shell against the real server on a free loopback port, ``127.0.0.1:8080`` rewritten to it.

The other blocks need what a test does not have (a model, an interactive terminal, an install, the MCP
client of a person). Their commands are still checked: each ``convener`` command parses against the CLI
(command, options, arguments), each file it names exists in the repository, and nothing else than the
programs a reader has is called. Every command must call Convener as ``.venv/bin/convener``, the one form the
README uses. The local embedding model is off, as on a fresh ``make demo``, which does not install it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from convener.cli import app as cli
from convener.config import Settings
from convener.demo import load_demo
from convener.services import Services
from tests.conftest import serving

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONVENER = ".venv/bin/convener"
OTHER_PROGRAMS = {"make", "curl", "pip", "pipx", "uv"}
"""What a reader has besides Convener: make and curl, and the installers of the README's install section."""
SHARED = ("examples", "tests/data")
"""Folders of the repository the commands name, linked into the folder they run in."""
MARKER = re.compile(r"<!-- runnable(?:: exit (?P<exit>\d+))? -->")
QUIET = {"CONVENER_KNOWLEDGE_EMBEDDINGS": "off", "CONVENER_DATABASE_URL": None, "CONVENER_CONFIG": None}

pytestmark = pytest.mark.xdist_group("docs")  # under --dist loadgroup, one worker builds the one demo store


@dataclass(frozen=True)
class Command:
    env: dict[str, str]
    program: str
    args: list[str]
    redirect: str | None
    """The file ``> FILE`` writes the command's output to."""
    text: str


@dataclass
class Block:
    document: Path
    line: int
    text: str
    runnable: bool
    exit_code: int = 0
    commands: list[Command] = field(default_factory=list)

    @property
    def where(self) -> str:
        shown = self.document.relative_to(ROOT) if self.document.is_relative_to(ROOT) else self.document
        return f"{shown}:{self.line}"


def blocks(document: Path) -> Iterator[Block]:
    """The document's ``sh`` blocks, with the runnable marker of each."""
    lines = document.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```sh":
            marker = MARKER.fullmatch(lines[index - 1].strip()) if index else None
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            text = "\n".join(lines[index + 1:end])
            block = Block(document, index + 1, text, marker is not None,
                          int(marker["exit"] or 0) if marker else 0)
            block.commands = commands(text, block.where)
            yield block
            index = end
        index += 1


def _lines(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each command line of a block with its words: backslash continuations joined, and a quoted string
    that runs over several lines (a curl body) kept whole."""
    pending = ""
    for line in text.replace("\\\n", " ").splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            tokens = shlex.split(pending, comments=True)
        except ValueError:  # a quotation still open: the command goes on
            continue
        yield pending, tokens
        pending = ""
    assert not pending, f"a quotation is never closed: {pending}"


def commands(text: str, where: str) -> list[Command]:
    found = []
    for line, tokens in _lines(text):
        if not tokens:
            continue
        env: dict[str, str] = {}
        while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
            name, _, value = tokens.pop(0).partition("=")
            env[name] = value
        redirect = None
        if ">" in tokens:
            at = tokens.index(">")
            assert at == len(tokens) - 2, f"{where}: only `> FILE` at the end of a command is understood"
            redirect = tokens[-1]
            tokens = tokens[:at]
        assert tokens, f"{where}: a line with no command: {line}"
        found.append(Command(env, tokens[0], tokens[1:], redirect, line.strip()))
    return found


ALL_BLOCKS = [block for document in DOCUMENTS for block in blocks(document)]


def test_the_documents_have_blocks_and_runnable_ones() -> None:
    assert len(ALL_BLOCKS) >= 20
    runnable = [block for block in ALL_BLOCKS if block.runnable]
    assert len(runnable) >= 15
    assert {block.document.name for block in runnable} >= {"README.md", "agents.md", "analytics.md", "chat.md",
                                                            "evaluations.md", "knowledge.md"}


def test_the_block_reader_understands_markers_continuations_env_and_redirects(tmp_path: Path) -> None:
    document = tmp_path / "doc.md"
    document.write_text("<!-- runnable: exit 1 -->\n```sh\nA=1 B='x y' \\\n  prog --flag 'a b'  # note\n"
                        "prog two > out.txt\n```\n\n```sh\nthree\n```\n", encoding="utf-8")

    first, second = blocks(document)

    assert (first.line, first.runnable, first.exit_code, second.runnable) == (2, True, 1, False)
    assert first.commands[0].env == {"A": "1", "B": "x y"}
    assert (first.commands[0].program, first.commands[0].args) == ("prog", ["--flag", "a b"])
    assert first.commands[1].redirect == "out.txt" and first.commands[1].args == ["two"]


# -- every block -----------------------------------------------------------------------------------------


def _resolve(args: list[str]) -> tuple[Any, str, list[str]]:
    """The CLI command the words name, its name, and the rest of the arguments."""
    command: Any = typer.main.get_command(cli)
    name = "convener"
    rest = list(args)
    while getattr(command, "commands", None) and rest and not rest[0].startswith("-"):
        word = rest.pop(0)
        assert word in command.commands, f"`{name} {word}` is no command; {name} has {sorted(command.commands)}"
        command, name = command.commands[word], f"{name} {word}"
    assert not getattr(command, "commands", None), f"`{name}` needs a subcommand"
    return command, name, rest


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.where for block in ALL_BLOCKS])
def test_every_command_parses_and_names_files_that_exist(block: Block) -> None:
    assert block.commands, f"{block.where}: an empty block"
    for command in block.commands:
        where = f"{block.where}: {command.text}"
        assert command.program != "convener", f"{where}: write {CONVENER}, the one form the docs use"
        assert command.program == CONVENER or command.program in OTHER_PROGRAMS, f"{where}: unknown program"
        for word in command.args:
            assert not word.startswith("~"), f"{where}: a file that is not in the repository"
            if re.match(r"(examples|tests|docs|src)/", word):
                assert (ROOT / word).exists(), f"{where}: {word} does not exist"
        if command.program == CONVENER:
            target, name, rest = _resolve(command.args)
            try:
                target.make_context(name, rest)
            except Exception as error:  # the CLI's usage errors, whatever click the CLI ships
                pytest.fail(f"{where}: {type(error).__name__}: {error}")


def test_a_command_that_does_not_exist_or_misuses_an_option_is_caught() -> None:
    with pytest.raises(AssertionError, match="is no command"):
        _resolve(["knowledge", "injest", "examples/docs"])
    target, name, rest = _resolve(["data", "ask", "q", "--tables", "shop.orders"])
    with pytest.raises(Exception, match="tables"):
        target.make_context(name, rest)


# -- runnable blocks ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the demo workspace loaded, as ``make demo`` leaves it."""
    data_dir = tmp_path_factory.mktemp("demo") / "data"
    services = Services.open(Settings(data_dir=data_dir, knowledge_embeddings="off"))
    try:
        load_demo(services)
    finally:
        services.close()
    return data_dir


@dataclass
class Reader:
    """Someone following a document: a folder to run in, a data directory of their own, a server."""

    folder: Path
    data_dir: Path
    url: str

    def run(self, block: Block) -> None:
        if all(command.program == "curl" for command in block.commands):
            self._curl(block)
            return
        for position, command in enumerate(block.commands):
            where = f"{block.where}: {command.text}"
            assert command.program == CONVENER, f"{where}: a runnable block runs {CONVENER} or curl, not both"
            result = CliRunner().invoke(cli, command.args, env={**QUIET, "CONVENER_DATA_DIR": str(self.data_dir),
                                                                **command.env})
            expected = block.exit_code if position == len(block.commands) - 1 else 0
            assert result.exit_code == expected, f"{where}: exit {result.exit_code}\n{result.output}"
            assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
            if command.redirect:
                (self.folder / command.redirect).write_text(result.stdout, encoding="utf-8")

    def _curl(self, block: Block) -> None:
        script = block.text.replace("http://127.0.0.1:8080", self.url)
        done = subprocess.run(["bash", "-c", script], cwd=self.folder, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == block.exit_code, f"{block.where}: {done.stderr}"
        answer = json.loads(done.stdout)
        assert "result" in answer and not answer["result"].get("isError"), f"{block.where}: {done.stdout[:500]}"


@pytest.fixture
def reader(demo_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Reader]:
    folder = tmp_path / "clone"
    for shared in SHARED:
        (folder / shared).parent.mkdir(parents=True, exist_ok=True)
        (folder / shared).symlink_to(ROOT / shared, target_is_directory=True)
    data_dir = tmp_path / "data"
    shutil.copytree(demo_store, data_dir)
    monkeypatch.chdir(folder)
    for variable in ("CONVENER_DATABASE_URL", "CONVENER_DATA_DIR", "CONVENER_CONFIG"):
        monkeypatch.delenv(variable, raising=False)
    # As `make demo` serves it: every service, loopback callers without a key.
    services = Services.open(Settings(data_dir=data_dir, allow_anonymous=True, knowledge_embeddings="off"))
    try:
        with serving(services) as url:
            yield Reader(folder, data_dir, url)
    finally:
        services.close()


RUNNABLE = [document for document in DOCUMENTS if any(block.runnable for block in blocks(document))]


@pytest.mark.slow
@pytest.mark.parametrize("document", RUNNABLE, ids=[str(document.relative_to(ROOT)) for document in RUNNABLE])
def test_the_runnable_blocks_of_a_document_run_in_order_after_make_demo(reader: Reader, document: Path) -> None:
    for block in blocks(document):
        if block.runnable:
            reader.run(block)
