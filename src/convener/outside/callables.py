"""Python callables a caller may name (python tools, python agents, callbacks): only registered ones.

A caller names a callable as ``module.path:qualified.name``. Naming one is running code on the server, so a
module being importable, or even trusted, is not enough: a module also holds helpers that write files. A
callable is nameable only when it was registered:

* by ``@registered`` in a module Convener loads for that purpose: its own ``OWN_MODULES`` (the demo's pure
  tools) and every module an installed package lists in the ``convener.callables`` entry-point group
  (``[project.entry-points."convener.callables"]`` in its ``pyproject.toml``; an entry ``name = "pkg.mod"``
  imports the module so its decorators run, ``name = "pkg.mod:function"`` registers that callable); or
* by the operator, in ``CONVENER_PYTHON_CALLABLES`` (``module:qualname``, comma-separated), for their own code.
  That list may not name Convener's own package: what Convener offers, it registers itself.

The registration is checked before anything is imported, so an unregistered module's import-time code never
runs on a caller's word.
"""

from __future__ import annotations

import importlib
import logging
import threading
import types
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, TypeVar

from convener.api.errors import InvalidArgument, PermissionDenied
from convener.outside.limits import GATE_CALLABLE

SETTING = "CONVENER_PYTHON_CALLABLES"
GROUP = "convener.callables"
OWN_PACKAGE = "convener"
OWN_MODULES = ("convener.demo.tools",)
"""Convener's modules whose ``@registered`` callables are nameable. Listed here as well as being importable so
that no stale package metadata (an editable install made before the group existed) can drop them."""
MAX_SPEC = GATE_CALLABLE

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger(__name__)

_registry: dict[str, Callable[..., Any]] = {}
_loaded = False
_lock = threading.RLock()


def spec_of(function: Callable[..., Any]) -> str:
    return f"{function.__module__}:{function.__qualname__}"


def registered(function: F) -> F:
    """Make ``function`` nameable as ``module:qualname`` by apps. Only for module-level functions (or methods of
    module-level classes) with no side effects a caller could aim: no file writes, no commands."""
    name = spec_of(function)
    if "<locals>" in name or "<lambda>" in name:
        raise TypeError(f"{name}: only functions defined at module level can be registered")
    with _lock:
        _registry[name] = function
    return function


def _load_registrations() -> None:
    """Import Convener's own modules and those of the entry-point group, once, so their decorators run."""
    global _loaded
    with _lock:
        if _loaded:
            return
        _loaded = True
        for module in OWN_MODULES:
            importlib.import_module(module)
        for entry in entry_points(group=GROUP):
            try:
                loaded = entry.load()  # a module (its decorators register) or one callable
            except Exception:  # noqa: BLE001 - one broken package must not take every python tool down
                logger.warning("entry point %s = %s of group %s cannot be loaded; its callables are not registered",
                               entry.name, entry.value, GROUP, exc_info=True)
                continue
            if not isinstance(loaded, types.ModuleType) and callable(loaded) and not _own(entry.module):
                _registry[f"{entry.module}:{entry.attr}"] = loaded  # Convener's own register by decorator only


def _own(module: str) -> bool:
    return module == OWN_PACKAGE or module.startswith(f"{OWN_PACKAGE}.")


def registered_specs() -> frozenset[str]:
    """Every callable registered by decorator or entry point (not counting an operator's list)."""
    _load_registrations()
    with _lock:
        return frozenset(_registry)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _well_formed(spec: str, field: str) -> tuple[str, str]:
    module, colon, qualname = spec.partition(":")
    dotted = all(part.isidentifier() for part in (*module.split("."), *qualname.split(".")))
    if len(spec) > MAX_SPEC or not colon or not module or not qualname or not dotted:
        raise InvalidArgument(f'{field} "{_clip(spec)}" must look like package.module:function or '
                              "package.module:Class.method")
    return module, qualname


def check_operator_list(specs: Sequence[str], setting: str = SETTING) -> tuple[str, ...]:
    """The operator's list, each entry well formed and outside Convener's own package."""
    for spec in specs:
        try:
            module, _ = _well_formed(spec, setting)
        except InvalidArgument as error:
            raise ValueError(error.message) from None
        if _own(module):
            raise ValueError(f"{setting} may not name {spec}: Convener's own callables are registered by Convener")
    return tuple(specs)


def load_callable(spec: str, operator_list: Sequence[str], field: str) -> Callable[..., Any]:
    """The registered callable ``spec`` names. INVALID_ARGUMENT naming ``field`` when malformed or when a
    listed callable cannot be imported; PERMISSION_DENIED when it is not registered."""
    spec = spec.strip()
    module, qualname = _well_formed(spec, field)
    found = registered_specs()
    if spec in found:
        with _lock:
            return _registry[spec]
    if spec not in operator_list or _own(module):
        raise PermissionDenied(f'{field}: "{_clip(spec)}" is not a registered callable; the operator can add it to '
                               f"{SETTING}")
    return _import(module, qualname, spec, field)


def _import(module_name: str, qualname: str, spec: str, field: str) -> Callable[..., Any]:
    """The callable an operator listed, imported; problems are the definition's to fix, so INVALID_ARGUMENT."""
    try:
        target: object = importlib.import_module(module_name)
    except ImportError as error:
        raise InvalidArgument(f'{field}: cannot import "{module_name}": {_clip(str(error))}') from None
    except Exception as error:  # the module's own code failed while importing
        raise InvalidArgument(f'{field}: importing "{module_name}" failed: {type(error).__name__}') from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise InvalidArgument(f'{field}: "{module_name}" has no attribute "{qualname}"') from None
        except Exception as error:  # a property or __getattr__ that raises
            raise InvalidArgument(f'{field}: reading "{part}" failed: {type(error).__name__}') from None
    if not callable(target):
        raise InvalidArgument(f'{field}: "{_clip(spec)}" is a {type(target).__name__}, not a callable')
    return target
