"""The garbage collector and what lives as long as the process.

A command's start-up (parsing it, importing what it uses, opening the store) and each service built on first use
make objects that live until the process ends. The collector's passes over them free nothing, and every full
collection walks them all again: in ``convener eval run`` a tenth of the process's CPU. So, in a process that
``convener``'s own entry point started (never in a host that imports Convener, such as the tests, where services
come and go and frozen objects would never be collected), the collector is paused while they are made, and what
they made is then frozen: left out of every later collection.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_owned = False
"""Whether this process is a command's own (``convener.cli.main``): only then is anything frozen."""
_starting = False
"""Whether the command's start-up is still under way (the collector paused since ``start_up``)."""


def start_up() -> None:
    """The command starts: pause the collector until ``started``."""
    global _owned, _starting
    _owned = _starting = True
    gc.disable()


def started() -> None:
    """Start-up is over (the store is open): freeze what it made, and collect again from now on. Once."""
    global _starting
    if _starting:
        _starting = False
        gc.freeze()
        gc.enable()


def exiting() -> None:
    """The command is done: the interpreter's collections at exit would walk every object its modules made (a
    tenth of a second after ``eval run``) before freeing them; frozen, they are freed without the walk."""
    if _owned:
        gc.freeze()
        started()


@contextmanager
def long_lived() -> Iterator[None]:
    """Make something that lives as long as the process (a service and the modules it imports) with the collector
    paused, then freeze it. Nothing happens in a process that is not a command's own, nor when the collector is
    paused already (start-up, or an outer build: that one freezes)."""
    if not _owned or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
