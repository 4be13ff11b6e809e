"""The one small, synchronous interface every model provider implements, and the values it speaks in.

Agents talk to a :class:`ModelProvider` only; each provider maps these provider-neutral values onto its own
SDK and maps the SDK's failures onto :mod:`convener.api.errors`, so no SDK type or exception leaks past it.
The values are frozen dataclasses so that a conversation history can be shared and kept without copying.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Protocol, Self, runtime_checkable

Role = Literal["system", "user", "assistant", "tool"]

UNPARSED_ARGUMENTS = "_unparsed"
"""Key under which a tool call's raw argument text is kept when the model sent something that is not a
JSON object. Models do emit broken JSON now and then; failing the whole turn for it would be worse than
letting the tool (or the agent loop) see the text and report the problem back to the model."""


@dataclass(frozen=True)
class ToolDeclaration:
    """A tool the model may call; ``parameters`` is a JSON Schema of type object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolInvocation:
    """A call the model asked for. ``arguments`` is ``{"_unparsed": raw}`` when the model's JSON was bad."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation.

    ``tool_calls`` is set on assistant messages that asked for tools; ``tool_call_id`` (and, for providers
    that match results by name, ``name``) on the tool message that answers one of those calls.
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[ToolInvocation, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Completion:
    """What one model call produced.

    ``latency_seconds`` covers the whole call, retries included, as the caller experienced it.
    ``structured`` is the parsed JSON of ``text`` when a ``response_schema`` was asked for (None if the
    model's text did not parse).
    """

    text: str | None
    tool_calls: tuple[ToolInvocation, ...]
    usage: Usage | None
    latency_seconds: float
    model: str
    finish_reason: str | None
    structured: Any = None


@runtime_checkable
class ModelProvider(Protocol):
    """A chat model behind one blocking call.

    Implementations raise only :class:`convener.api.errors.ApiError` subclasses: ``ResourceExhausted`` when
    rate limits outlast the retries, ``Unavailable`` for server and connection failures, ``DeadlineExceeded``
    on timeout, ``FailedPrecondition`` for requests the provider refuses (bad request, bad key).
    """

    name: str
    model: str

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDeclaration] = (),
        response_schema: dict[str, Any] | None = None,
        model: str | None = None,
        temperature: float | None = None,
    ) -> Completion: ...


class ClosesOnExit:
    """``with provider:`` closes the provider's HTTP client on leaving, for the providers that own one."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def close_provider(provider: ModelProvider) -> None:
    """Release a provider's connections, if it holds any.

    ``close`` is not part of :class:`ModelProvider` so that test doubles and stateless providers need not
    grow one; the real providers have it (and are context managers).
    """
    close = getattr(provider, "close", None)
    if callable(close):
        close()


def parse_tool_arguments(raw: object) -> dict[str, Any]:
    """A tool call's argument text as a dict, keeping bad text under ``_unparsed`` instead of raising.

    Some lenient servers send the arguments as an already-decoded object; that is accepted as it is.
    """
    if isinstance(raw, dict):
        return {str(key): value for key, value in raw.items()}
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return {UNPARSED_ARGUMENTS: json.dumps(raw, default=str)}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {UNPARSED_ARGUMENTS: raw}
    if not isinstance(parsed, dict):
        return {UNPARSED_ARGUMENTS: raw}
    return parsed


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)


def parse_structured(text: str | None) -> Any:
    """The JSON value of a structured reply, or None when it does not parse.

    Some local models wrap JSON in a Markdown code fence even when asked for JSON output; the fence is
    stripped rather than treating the reply as unparsable.
    """
    if text is None:
        return None
    fenced = _FENCE.match(text)
    candidate = fenced.group(1) if fenced else text
    try:
        return json.loads(candidate)
    except ValueError:
        return None


_FENCED = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)


def json_candidates(text: str | None, structured: Any = None) -> list[Any]:
    """Every JSON value a model's reply may hold, most likely first: the provider's parsed structured output,
    the whole text (fenced or not), each fenced block, then each JSON object embedded in prose. Models asked
    for JSON do wrap it in prose or fences now and then; readers take the first candidate that fits."""
    found: list[Any] = [structured, parse_structured(text)]
    if text:
        found.extend(parse_structured(block) for block in _FENCED.findall(text))
        decoder = json.JSONDecoder()
        for start in (index for index, char in enumerate(text) if char == "{"):
            try:
                found.append(decoder.raw_decode(text, start)[0])
            except ValueError:
                continue
    return found


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` masked: provider error bodies may echo the API key."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text
