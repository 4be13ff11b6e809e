"""How the writer gets an export's conversations: read here, or, for a large export, in a second process.

Reading an export (its JSON) and converting each message's text take most of an import's time, and in one
process they take turns with the inserts on the interpreter's lock. For a large export a second process
reads and converts while this one writes: two cores instead of one, the store touched by this process alone,
in the export's order.

What the second process sends back is what the writer would have computed, checked: a text is converted
there with the names (users, linked channels) known when the conversations began, each name it looked up is
recorded with what it found, and the writer uses the conversion only if every one of those names is still
what it was (a user made on the way, a channel imported since, changes the text), converting it again
otherwise. Problems the reader reports come back in the order they were met, between the messages.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pickle
import signal
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, NamedTuple

from convener.chat import markdown
from convener.chat.records import ChatExport, ImportedConversation, ImportedMessage, ImportProblem, \
    MalformedConversation, Report

LARGE_EXPORT_BYTES = 32 * 2**20
"""An export at least this large (its files, uncompressed) is read in a second process when the machine
has two cores or more: starting one costs about 0.4 s, and an export of this size (some 40,000 messages)
takes about 2.5 s to import in one process, of which the second process saves about a quarter."""
CHUNK = 500
"""Messages sent back together: one pickle and one pipe write for each."""
PIPE_BYTES = 2**20
"""How much the second process may have sent that the writer has not read yet: ~5 chunks."""

LookedUp = tuple[bool, str, str | None]
"""A name a conversion asked for: (a channel, not a user; the reference; what it was told)."""


class Prepared(NamedTuple):
    """A message as the writer takes it: read, and its text converted unless ``text`` is None."""

    message: ImportedMessage
    text: markdown.Converted | None = None
    looked_up: tuple[LookedUp, ...] = ()
    """The names the conversion asked for: ``text`` holds if each still reads the same."""


class PreparedConversation(NamedTuple):
    conversation: ImportedConversation
    """Its ``messages`` are not to be read: ``messages`` below holds them."""
    messages: Iterator[Prepared]


def converted(prepared: Prepared, names: markdown.Names) -> markdown.Converted:
    """The message's text converted with ``names``: the second process's conversion if it saw the same."""
    if prepared.text is not None and all(
            (names.channel(ref) if channel else names.user(ref)) == found
            for channel, ref, found in prepared.looked_up):
        return prepared.text
    message = prepared.message
    return markdown.convert(message.text, message.text_format, names)


def read_in_second_process(export: ChatExport, wanted: bool | None) -> bool:
    """Whether to: as ``wanted`` says, else when the export is large and the machine has a second core."""
    if export.path is None:  # records given in memory: nothing to open again
        return False
    if wanted is not None:
        return wanted
    return (os.cpu_count() or 1) > 1 and _size(export.path) >= LARGE_EXPORT_BYTES


def _size(path: Path) -> int:
    """The export's bytes, uncompressed."""
    if path.is_dir():
        return sum(found.stat().st_size for found in path.rglob("*") if found.is_file())
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return sum(member.file_size for member in archive.infolist())
    return path.stat().st_size


def read_here(export: ChatExport, report: Report) -> Iterator[PreparedConversation]:
    for conversation in export.conversations(report):
        yield PreparedConversation(conversation, (Prepared(message) for message in conversation.messages))


@contextmanager
def read_elsewhere(export: ChatExport, names: markdown.Names, report: Report
                   ) -> Iterator[Iterator[PreparedConversation]]:
    """The export's conversations, read and converted by a second process that opens the export again
    (``type(export)(export.path)``) and converts with ``names`` (pickled: the names known now). The
    process is stopped on leaving, whether or not everything was read.

    The process is this interpreter run anew (not a ``multiprocessing`` child, which would import the
    caller's main module again); it writes its records, pickled, to a pipe of its own, whose buffer bounds
    how far it reads ahead of the writer."""
    assert export.path is not None  # read_in_second_process says no otherwise
    read_end, write_end = os.pipe()
    _widen(write_end)
    try:
        process = subprocess.Popen([sys.executable, "-c", _SECOND_PROCESS, str(write_end)],
                                   stdin=subprocess.PIPE, pass_fds=(write_end,))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as received:
            assert process.stdin is not None
            with process.stdin as task:
                pickle.dump((type(export), export.path, names), task)
            yield _Received(received, process, report).conversations()
    finally:
        if process.poll() is None:  # left before the end: nothing more is wanted from it
            process.kill()
        process.wait()


def _widen(pipe: int) -> None:
    """Linux: a pipe buffer of ``PIPE_BYTES`` (64 KB by default: not one chunk), so that the second process
    can read ahead while the writer writes; elsewhere, or past the system's limit, the pipe stays as it is."""
    widen = getattr(fcntl, "F_SETPIPE_SZ", None)
    if widen is None:
        return
    try:
        fcntl.fcntl(pipe, widen, PIPE_BYTES)
    except OSError:
        pass


_SECOND_PROCESS = "import sys; from convener.chat.importing.reading import serve; serve(int(sys.argv[1]))"


def serve(fd: int) -> None:
    """The second process: reads what to read from its standard input, and sends the export's conversations
    to ``fd``, as the writer would read them, in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupted import is stopped by its writer
    reader, path, names = pickle.load(sys.stdin.buffer)
    with os.fdopen(fd, "wb") as out:
        def send(item: _Sent) -> None:
            pickle.dump(item, out, protocol=pickle.HIGHEST_PROTOCOL)

        try:
            export = reader(path)
            try:
                _send(export, _RecordingNames(names), send)
            finally:
                export.close()
        except Exception as error:  # noqa: BLE001  (sent to the writer, which raises it)
            send(_Raised(_picklable(error)))
            return
        send(_Done())


# ---------------------------------------------------------------- what the second process sends


@dataclass(frozen=True)
class _Begun:
    conversation: ImportedConversation
    """With no messages: they follow."""


@dataclass(frozen=True)
class _Messages:
    prepared: list[Prepared]


@dataclass(frozen=True)
class _Ended:
    """The conversation's messages are all sent."""


@dataclass(frozen=True)
class _Raised:
    error: BaseException
    """Raised by the reader: a ``MalformedConversation`` ends its conversation (the next one follows);
    anything else ends the reading."""


@dataclass(frozen=True)
class _Done:
    """Every conversation sent."""


_Sent = _Begun | _Messages | _Ended | _Raised | _Done | ImportProblem


class _RecordingNames:
    """``names``, remembering what each conversion asked of it."""

    def __init__(self, names: markdown.Names) -> None:
        self._names = names
        self.asked: list[LookedUp] = []

    def user(self, ref: str) -> str | None:
        found = self._names.user(ref)
        self.asked.append((False, ref, found))
        return found

    def channel(self, ref: str) -> str | None:
        found = self._names.channel(ref)
        self.asked.append((True, ref, found))
        return found

    def prepare(self, message: ImportedMessage) -> Prepared:
        self.asked = []
        text = markdown.convert(message.text, message.text_format, self)
        return Prepared(message, text, tuple(self.asked))


def _send(export: ChatExport, recording: _RecordingNames, send: Callable[[_Sent], None]) -> None:
    for _ in export.users(lambda problem: None):  # the writer's process read them and reported theirs
        pass
    for conversation in export.conversations(send):
        send(_Begun(replace(conversation, messages=iter(()))))
        messages = iter(conversation.messages)
        try:
            while chunk := list(itertools.islice(messages, CHUNK)):
                send(_Messages([recording.prepare(message) for message in chunk]))
        except MalformedConversation as error:
            send(_Raised(error))
            continue
        send(_Ended())


def _picklable(error: Exception) -> Exception:
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


class _Received:
    """The writer's side: what the second process sends, as conversations whose messages are read on
    demand. A conversation the writer leaves before its end has the rest of its messages skipped."""

    def __init__(self, received: IO[bytes], process: subprocess.Popen[bytes], report: Report) -> None:
        self._received = received
        self._process = process
        self._report = report
        self._in_conversation = False

    def conversations(self) -> Iterator[PreparedConversation]:
        while True:
            if self._in_conversation:  # the writer left the last one early: skip the rest of it
                for _ in self._messages():
                    pass
            item = self._next()
            if isinstance(item, _Done):
                return
            if isinstance(item, _Raised):
                raise item.error
            if not isinstance(item, _Begun):
                raise RuntimeError(f"the import's reading process sent {type(item).__name__} between conversations")
            self._in_conversation = True
            yield PreparedConversation(item.conversation, self._messages())

    def _messages(self) -> Iterator[Prepared]:
        while self._in_conversation:
            item = self._next()
            if isinstance(item, _Messages):
                yield from item.prepared
                continue
            self._in_conversation = False
            if isinstance(item, _Raised):
                raise item.error
            if not isinstance(item, _Ended):
                raise RuntimeError(f"the import's reading process sent {type(item).__name__} inside a conversation")

    def _next(self) -> _Sent:
        """The next thing sent that is not a problem (problems are reported as they come)."""
        while True:
            try:
                item: _Sent = pickle.load(self._received)
            except EOFError:
                raise RuntimeError("the import's reading process ended without finishing "
                                   f"(exit code {self._process.wait()})") from None
            if isinstance(item, ImportProblem):
                self._report(item)
                continue
            return item
