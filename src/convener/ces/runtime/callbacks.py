"""Agent callbacks: an app's own Python code run at stages of an agent's work, each a USER_CALLBACK span.

A callback is a callable named by ``entryPoint`` (in a module the operator allows, as for python tools). It
gets one dict and returns None (carry on) or a dict. A dict may *override* what happens next (answer
instead of the agent or the model, skip a tool, replace a reply or a response: the remaining callbacks of
the list are then skipped, as in CES) or *update* what the next callbacks and the agent see (session
variables, a tool's arguments). docs/agents.md lists what each stage gets and may return.

Callbacks are the app's own code, not the session's: one that raises, runs out of time or returns
something unusable is recorded on its span's ``errorInfo`` and counts as having returned None, so the
turn goes on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from convener.api.errors import ApiError
from convener.api.protojson import check_storable_json
from convener.ces.definitions import Callback
from convener.ces.runtime.entrypoints import call_with_deadline
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.tracing import Trace
from convener.config import Settings
from convener.outside.callables import load_callable

DEFAULT_CALLBACK_TIMEOUT = 10.0
MAX_RESULT_CHARS = 200_000
_TYPES: dict[str, type] = {"text": str, "variables": dict, "args": dict, "response": dict}


def _json_copy(value: Any) -> Any:
    """A JSON copy of what a callback is given: it cannot reach into the session's own state."""
    return json.loads(json.dumps(value, default=str))


def call(settings: Settings, callback: Callback, payload: dict[str, Any], what: str) -> Any:
    """Run one callback on a copy of ``payload``; its result as JSON. Raises ``ToolFailure`` when the
    callable cannot be loaded, raises, runs out of time, or returns what JSON cannot hold."""
    spec = callback.entry_point or ""
    try:
        function = load_callable(spec, settings.python_callables, f"{what}.entryPoint")
    except ApiError as error:  # a callable no longer registered since the agent was written
        raise ToolFailure(error.message, code=error.code.name) from None
    argument = _json_copy(payload)
    timeout = callback.timeout.seconds() if callback.timeout is not None else DEFAULT_CALLBACK_TIMEOUT
    result = call_with_deadline(lambda: function(argument), timeout, f"callback {spec}")
    try:
        text = json.dumps(result, allow_nan=False)
        check_storable_json(result, "the callback's result")
    except (TypeError, ValueError):
        raise ToolFailure(f"callback {spec} returned a value JSON cannot hold", code="INVALID_ARGUMENT") from None
    except ApiError as error:
        raise ToolFailure(error.message, code="INVALID_ARGUMENT") from None
    if len(text) > MAX_RESULT_CHARS:
        raise ToolFailure(f"callback {spec} returned more than {MAX_RESULT_CHARS} characters", code="OUT_OF_RANGE")
    return json.loads(text)


@dataclass
class Outcome:
    override: Any = None
    """The value under the stage's override key, when a callback returned one; None otherwise."""
    updates: dict[str, Any] = field(default_factory=dict)
    """What callbacks updated: ``variables`` merged over the list, ``args`` as the last one set them."""


def _checked(result: Any, spec: str, allowed: Sequence[str]) -> dict[str, Any] | None:
    if result is None:
        return None
    if not isinstance(result, dict):
        raise ToolFailure(f"callback {spec} returned a {type(result).__name__}; return None or a dict",
                          code="INVALID_ARGUMENT")
    unknown = sorted(set(result) - set(allowed))
    if unknown:
        raise ToolFailure(f"callback {spec} returned unknown keys {', '.join(unknown)[:200]}; this stage takes "
                          f"{', '.join(allowed)}", code="INVALID_ARGUMENT")
    for key, value in result.items():
        if not isinstance(value, _TYPES[key]):
            raise ToolFailure(f"callback {spec} returned {key} as a {type(value).__name__}, not a "
                              f"{'string' if _TYPES[key] is str else 'dict'}", code="INVALID_ARGUMENT")
    return result


def run(trace: Trace, settings: Settings, callbacks: Sequence[Callback] | None, stage: str, field: str,
        payload: dict[str, Any], *, override: str, updates: Sequence[str] = ()) -> Outcome:
    """Run a list of callbacks in order, each in a USER_CALLBACK span, until one returns ``override``.

    ``payload`` is what each callback gets; the ``updates`` a callback returns are applied to it (merged,
    for ``variables``) before the next one runs, and collected in the outcome for the caller to apply.
    """
    outcome = Outcome()
    allowed = (override, *updates)
    for index, callback in enumerate(callbacks or ()):
        if callback.disabled:
            continue
        spec = callback.entry_point or ""
        with trace.span("USER_CALLBACK", stage=stage, entryPoint=spec, index=index) as span:
            try:
                result = _checked(call(settings, callback, payload, f"{field}[{index}]"), spec, allowed)
            except ToolFailure as failure:
                span.fail(failure.code, failure.message)
                result = None
            span.attributes["overridden"] = result is not None and override in result
        if result is None:
            continue
        for key in updates:
            if key not in result:
                continue
            if key == "variables":
                outcome.updates.setdefault("variables", {}).update(result[key])
                payload["variables"] = {**payload.get("variables", {}), **result[key]}
            else:
                outcome.updates[key] = payload[key] = result[key]
        if override in result:
            outcome.override = result[override]
            break
    return outcome
