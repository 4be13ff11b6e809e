"""Python callables named by apps (python agents and tools), and running them under a deadline.

An app names a callable as ``module.path:qualified.name``. Apps are created over MCP by callers the
operator does not vet, so naming a callable is a security boundary: only modules the operator listed in
``CONVENER_PYTHON_MODULES`` (``Settings.python_modules``), and their submodules, may be imported, and the
callable must be defined in one of them. Otherwise ``os:system`` — or ``allowed.module:os.system``, or
``allowed.module:system`` after a ``from os import system`` — would let any caller run commands.
"""

from __future__ import annotations

import importlib
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from convener.api.errors import InvalidArgument
from convener.ces.runtime.failures import ToolFailure

T = TypeVar("T")

MAX_SPEC_LENGTH = 300
"""Longer specs are certainly not a module path and a name; refusing them keeps messages short."""

MAX_FAILURE_MESSAGE = 500


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def module_allowed(module: str, allowed: Sequence[str]) -> bool:
    """Whether ``module`` is one of the ``allowed`` modules or a submodule of one.

    ``a.b`` allows ``a.b`` and ``a.b.c``, but not ``a.bc``: the match is on whole dotted parts.
    """
    return any(module == name or module.startswith(f"{name}.") for name in allowed if name)


def load_entry_point(spec: str, allowed_modules: Sequence[str], field: str) -> Callable[..., Any]:
    """The callable ``spec`` (``module.path:qualified.name``) names, checked against the allow-list.

    Raises ``InvalidArgument`` naming ``field`` when the spec is malformed, names a module that is not
    allowed, cannot be imported, lacks the attribute, or names something that is not callable. The
    allow-list is checked before anything is imported, so a refused module's import-time code never runs.
    The qualified name may not pass through private or dunder attributes or through another module, and the
    callable found must be defined (its ``__module__``) in an allowed module, so a re-export such as
    ``from os import system`` cannot be named.
    """
    spec = spec.strip()
    module_name, colon, qualname = spec.partition(":")
    if len(spec) > MAX_SPEC_LENGTH or not colon or not _dotted(module_name) or not _dotted(qualname):
        raise InvalidArgument(
            f'{field} "{_clip(spec)}" must look like package.module:function or package.module:Class.method'
        )
    if not module_allowed(module_name, allowed_modules):
        listed = ", ".join(allowed_modules) or "none"
        raise InvalidArgument(
            f'{field}: module "{module_name}" is not allowed (allowed: {_clip(listed)}); '
            "the operator can add it to CONVENER_PYTHON_MODULES"
        )
    parts = qualname.split(".")
    if any(part.startswith("_") for part in parts):
        raise InvalidArgument(f'{field}: "{qualname}" names a private attribute; name a public callable')
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as error:
        raise InvalidArgument(f'{field}: cannot import "{module_name}": {_clip(str(error))}') from None
    except Exception as error:  # the module's own code failed while importing
        raise InvalidArgument(
            f'{field}: importing "{module_name}" failed: {type(error).__name__}: {_clip(str(error))}'
        ) from None
    for depth, part in enumerate(parts):
        try:
            target = getattr(target, part)
        except AttributeError:
            where = ".".join([module_name, *parts[:depth]])
            raise InvalidArgument(f'{field}: "{where}" has no attribute "{part}"') from None
        except Exception as error:  # a property or __getattr__ that raises
            raise InvalidArgument(f'{field}: reading "{part}" failed: {type(error).__name__}') from None
        if isinstance(target, types.ModuleType):
            raise InvalidArgument(
                f'{field}: "{qualname}" passes through a module; name that module before the colon instead'
            )
    if not callable(target):
        raise InvalidArgument(f'{field}: "{spec}" is a {type(target).__name__}, not a callable')
    defined_in = getattr(target, "__module__", None)
    if isinstance(defined_in, str) and not module_allowed(defined_in, allowed_modules):
        raise InvalidArgument(
            f'{field}: "{spec}" is defined in module "{defined_in}", which is not allowed; name it where '
            "it is defined, or the operator can add that module to CONVENER_PYTHON_MODULES"
        )
    return target


def call_with_deadline(function: Callable[[], T], timeout: float, what: str) -> T:
    """``function()``, on a daemon worker thread, waited for at most ``timeout`` seconds.

    A deadline keeps a slow or hung callable from holding up the session. Python cannot kill a thread, so on
    timeout the worker is abandoned, not stopped: it runs on in the background until the callable returns
    (being a daemon, it does not keep the process alive), and whatever it returns then is dropped.

    Raises ``ToolFailure`` DEADLINE_EXCEEDED on timeout, and INTERNAL with the exception's type and message
    (never its traceback) when the callable raises; a ``ToolFailure`` the callable raises itself passes
    through as it is, so a tool can choose its own message and code.
    """
    outcome: list[tuple[bool, Any]] = []
    finished = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: a thread must not die silently
            outcome.append((False, error))
        finally:
            finished.set()

    worker = threading.Thread(target=run, name=f"convener-call:{_clip(what, 60)}", daemon=True)
    worker.start()
    if not finished.wait(max(timeout, 0.0)):
        raise ToolFailure(f"{what} did not finish within {timeout:g} s", code="DEADLINE_EXCEEDED")
    succeeded, value = outcome[0]
    if succeeded:
        return value  # type: ignore[no-any-return]
    if isinstance(value, ToolFailure):
        raise value
    message = f"{what} failed: {type(value).__name__}: {value}"[:MAX_FAILURE_MESSAGE]
    raise ToolFailure(message, code="INTERNAL") from value
