"""Gemini through Google's ``google-genai`` SDK, an optional extra (``pip install 'convener[gemini]'``).

The SDK is imported inside the provider's constructor, so Convener installs and type-checks without it:
everything here that touches SDK values treats them as ``Any``. The request is built as plain dicts (the
SDK accepts its TypedDict forms everywhere), which keeps the message mapping a pure function that can be
tested without the SDK or the network.
"""

from __future__ import annotations

import importlib
import json
import random
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from convener.api.errors import (
    ApiError,
    DeadlineExceeded,
    FailedPrecondition,
    ResourceExhausted,
    Unavailable,
)
from convener.llm.base import (
    ChatMessage,
    ClosesOnExit,
    Completion,
    ToolDeclaration,
    ToolInvocation,
    Usage,
    parse_structured,
    parse_tool_arguments,
    redact,
)

MISSING_PACKAGE = "the gemini provider needs: pip install 'convener[gemini]'"
DEFAULT_MODEL = "gemini-2.5-flash"
GENERATED_ID_PREFIX = "convener-call-"
"""Prefix of the ids made up for function calls that Gemini sent without one; those are never sent back."""

RETRY_STATUS_CODES = (408, 429, 500, 502, 503, 504)
_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_MAX_SIGNATURES = 10_000
_MAX_DETAIL = 300
_TIMEOUT_NAMES = frozenset({"TimeoutException", "TimeoutError"})
_NETWORK_NAMES = frozenset({"TransportError", "NetworkError", "ConnectError", "ConnectionError"})
_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
"""Gemini's finish reasons in OpenAI's words, so callers can check one vocabulary; others are lower-cased."""

T = TypeVar("T")


class GeminiProvider(ClosesOnExit):
    """A :class:`~convener.llm.base.ModelProvider` over ``google.genai.Client.models.generate_content``.

    Retries: the SDK's own (``HttpRetryOptions``: exponential backoff with jitter on 408, 429 and 5xx and on
    transient network errors) when the installed SDK has them, else a small loop here doing the same.

    Gemini 3 models require the ``thought_signature`` they attach to a function call to come back with that
    call in the history. :class:`~convener.llm.base.ToolInvocation` has no room for it, so the provider
    remembers the signatures by call id (a bounded map) and puts them back when the call is replayed.
    """

    name = "gemini"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_seconds: float = 60.0,
        max_retries: int = 3,
        retry_initial_delay: float = 1.0,
    ) -> None:
        try:
            genai = importlib.import_module("google.genai")
            types = importlib.import_module("google.genai.types")
            self._errors: Any = importlib.import_module("google.genai.errors")
        except ImportError:
            raise FailedPrecondition(MISSING_PACKAGE) from None
        self.model = model
        self._api_key = api_key or None
        self._max_retries = max_retries
        self._retry_initial_delay = retry_initial_delay
        http_options: dict[str, Any] = {"timeout": max(1, int(timeout_seconds * 1000))}
        if base_url:
            http_options["base_url"] = base_url
        self._sdk_retries = "retry_options" in getattr(types.HttpOptions, "model_fields", {})
        if self._sdk_retries:
            http_options["retry_options"] = {
                "attempts": max_retries + 1,
                "initial_delay": retry_initial_delay,
                "jitter": retry_initial_delay,  # the SDK's default adds up to a whole second to every wait
                "http_status_codes": list(RETRY_STATUS_CODES),
            }
        self._json_schema = "parameters_json_schema" in getattr(types.FunctionDeclaration, "model_fields", {})
        self._signatures: OrderedDict[str, bytes] = OrderedDict()
        self._signatures_lock = threading.Lock()  # one provider serves every agent thread
        try:
            # No key here lets the SDK fall back to GOOGLE_API_KEY / GEMINI_API_KEY or Vertex settings.
            self._client: Any = genai.Client(api_key=self._api_key, http_options=http_options)
        except ValueError as error:
            raise FailedPrecondition(
                f"the gemini provider could not start: {redact(str(error), self._api_key)}"
                " (set CONVENER_LLM_API_KEY or GOOGLE_API_KEY)"
            ) from None

    def close(self) -> None:
        """Close the SDK's HTTP client (older SDKs have no close; they are left to the garbage collector)."""
        close = getattr(self._client, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"GeminiProvider(model={self.model!r})"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDeclaration] = (),
        response_schema: dict[str, Any] | None = None,
        model: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """One generate_content call; see :class:`~convener.llm.base.ModelProvider` for the errors raised."""
        used_model = model or self.model
        with self._signatures_lock:
            known = {
                call.id: self._signatures[call.id]
                for m in messages
                for call in m.tool_calls
                if call.id in self._signatures
            }
        contents, config = to_gemini_request(
            messages,
            tools=tools,
            response_schema=response_schema,
            temperature=temperature,
            signatures=known,
            json_schema=self._json_schema,
        )
        started = time.perf_counter()
        try:
            response = self._call(
                lambda: self._client.models.generate_content(
                    model=used_model, contents=contents, config=config
                )
            )
        except Exception as error:
            translated = self._translate(error)
            if translated is None:
                raise
            raise translated from None
        latency = time.perf_counter() - started
        completion, signatures = completion_from_gemini(
            response, model=used_model, latency_seconds=latency, structured=response_schema is not None
        )
        with self._signatures_lock:
            for call_id, signature in signatures.items():
                self._signatures[call_id] = signature
                self._signatures.move_to_end(call_id)
            while len(self._signatures) > _MAX_SIGNATURES:
                self._signatures.popitem(last=False)
        return completion

    def _call(self, request: Callable[[], T]) -> T:
        """``request()``, retried here only when the SDK cannot retry by itself."""
        if self._sdk_retries:
            return request()
        attempt = 0
        while True:
            try:
                return request()
            except Exception as error:
                if attempt >= self._max_retries or not self._retryable(error):
                    raise
                delay = min(self._retry_initial_delay * 2**attempt, 30.0)
                time.sleep(delay * (1 - 0.25 * random.random()))
                attempt += 1

    def _retryable(self, error: Exception) -> bool:
        if isinstance(error, self._errors.APIError):
            return getattr(error, "code", None) in RETRY_STATUS_CODES
        names = _class_names(error)
        return bool(names & (_TIMEOUT_NAMES | _NETWORK_NAMES))

    def _translate(self, error: Exception) -> ApiError | None:
        """The ApiError for an SDK failure (naming provider and status, never the key), or None if unknown."""
        where = "the gemini provider"
        if isinstance(error, self._errors.APIError):
            code = getattr(error, "code", None)
            status = getattr(error, "status", None)
            detail = " ".join(str(getattr(error, "message", None) or "").split())[:_MAX_DETAIL]
            said = f"{where} answered HTTP {code}" + (f" {status}" if status else "")
            said = redact(said + (f": {detail}" if detail else ""), self._api_key)
            if code == 429:
                return ResourceExhausted(said)
            if status == "DEADLINE_EXCEEDED" or code == 408:
                return DeadlineExceeded(said)
            if isinstance(code, int) and code >= 500:
                return Unavailable(said)
            if code in (401, 403):
                return FailedPrecondition(f"{said} (check the API key)")
            return FailedPrecondition(said)
        names = _class_names(error)
        if names & _TIMEOUT_NAMES:
            return DeadlineExceeded(f"{where} did not answer in time")
        if names & _NETWORK_NAMES:
            return Unavailable(f"{where} could not be reached")
        if isinstance(error, (ValueError, TypeError)):
            # The SDK validates requests locally (e.g. a field this API version lacks) with these.
            return FailedPrecondition(f"{where} refused the request: {redact(str(error), self._api_key)}")
        return None


def _class_names(error: BaseException) -> set[str]:
    """Names along the exception's class hierarchy: httpx and httpx2 errors are matched without importing."""
    return {cls.__name__ for cls in type(error).__mro__}


def to_gemini_request(
    messages: Sequence[ChatMessage],
    *,
    tools: Sequence[ToolDeclaration] = (),
    response_schema: dict[str, Any] | None = None,
    temperature: float | None = None,
    signatures: Mapping[str, bytes] | None = None,
    json_schema: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``contents`` and ``config`` for generate_content, as the SDK's dict forms.

    System messages become the ``system_instruction``; assistant turns are role ``model``; tool results are
    ``function_response`` parts of a user turn, consecutive ones merged into one turn as Gemini expects for
    parallel calls. A tool message without ``name`` gets the name of the call it answers. ``json_schema``
    picks the SDK fields that take JSON Schema as it is (newer SDKs) over the OpenAPI-subset ones.
    """
    signatures = signatures or {}
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    for message in messages:
        if message.role == "system":
            if message.content:
                system.append(message.content)
        elif message.role == "user":
            contents.append({"role": "user", "parts": [{"text": message.content or ""}]})
        elif message.role == "assistant":
            parts: list[dict[str, Any]] = []
            if message.content:
                parts.append({"text": message.content})
            for call in message.tool_calls:
                call_names[call.id] = call.name
                function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
                if not call.id.startswith(GENERATED_ID_PREFIX):
                    function_call["id"] = call.id
                part: dict[str, Any] = {"function_call": function_call}
                if call.id in signatures:
                    part["thought_signature"] = signatures[call.id]
                parts.append(part)
            contents.append({"role": "model", "parts": parts or [{"text": ""}]})
        else:
            call_id = message.tool_call_id or ""
            function_response: dict[str, Any] = {
                "name": message.name or call_names.get(call_id, "tool"),
                "response": _tool_result(message.content),
            }
            if call_id and not call_id.startswith(GENERATED_ID_PREFIX):
                function_response["id"] = call_id
            result_part = {"function_response": function_response}
            previous = contents[-1] if contents else None
            if previous is not None and previous.get("role") == "user" and _all_responses(previous):
                previous["parts"].append(result_part)
            else:
                contents.append({"role": "user", "parts": [result_part]})
    config: dict[str, Any] = {}
    if system:
        config["system_instruction"] = "\n\n".join(system)
    if tools:
        schema_field = "parameters_json_schema" if json_schema else "parameters"
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": tool.name,
                        "description": tool.description,
                        schema_field: tool.parameters or _EMPTY_OBJECT_SCHEMA,
                    }
                    for tool in tools
                ]
            }
        ]
    if response_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema" if json_schema else "response_schema"] = response_schema
    if temperature is not None:
        config["temperature"] = temperature
    return contents, config


def _all_responses(content: dict[str, Any]) -> bool:
    return all("function_response" in part for part in content["parts"])


def _tool_result(content: str | None) -> dict[str, Any]:
    """A tool's text as the object Gemini wants: a JSON object as it is, anything else under ``output``."""
    if content is None:
        return {"output": None}
    try:
        parsed = json.loads(content)
    except ValueError:
        return {"output": content}
    return parsed if isinstance(parsed, dict) else {"output": parsed}


def completion_from_gemini(
    response: Any, *, model: str, latency_seconds: float, structured: bool
) -> tuple[Completion, dict[str, bytes]]:
    """The Completion for a GenerateContentResponse, and the thought signatures of its function calls.

    Thought parts (the model's reasoning summary) are not part of the answer and are left out of ``text``.
    A response without candidates (a blocked prompt) is a completion with no text and finish reason
    ``content_filter``, not an error: the agent decides what to tell the user.
    """
    candidates = getattr(response, "candidates", None) or []
    texts: list[str] = []
    calls: list[ToolInvocation] = []
    signatures: dict[str, bytes] = {}
    finish_reason: str | None = None
    if candidates:
        candidate = candidates[0]
        content = getattr(candidate, "content", None)
        for part in getattr(content, "parts", None) or []:
            function_call = getattr(part, "function_call", None)
            if function_call is not None:
                call_id = (
                    getattr(function_call, "id", None) or f"{GENERATED_ID_PREFIX}{uuid.uuid4().hex[:16]}"
                )
                calls.append(
                    ToolInvocation(
                        id=call_id,
                        name=getattr(function_call, "name", None) or "",
                        arguments=parse_tool_arguments(getattr(function_call, "args", None)),
                    )
                )
                signature = getattr(part, "thought_signature", None)
                if isinstance(signature, bytes):
                    signatures[call_id] = signature
            elif getattr(part, "text", None) and not getattr(part, "thought", False):
                texts.append(part.text)
        finish_reason = _finish_reason(getattr(candidate, "finish_reason", None), bool(calls))
    elif getattr(getattr(response, "prompt_feedback", None), "block_reason", None) is not None:
        finish_reason = "content_filter"
    usage = None
    metadata = getattr(response, "usage_metadata", None)
    if metadata is not None:
        usage = Usage(
            input_tokens=getattr(metadata, "prompt_token_count", None) or 0,
            output_tokens=(getattr(metadata, "candidates_token_count", None) or 0)
            + (getattr(metadata, "thoughts_token_count", None) or 0),
        )
    text = "".join(texts) if texts else None
    completion = Completion(
        text=text,
        tool_calls=tuple(calls),
        usage=usage,
        latency_seconds=latency_seconds,
        model=getattr(response, "model_version", None) or model,
        finish_reason=finish_reason,
        structured=parse_structured(text) if structured else None,
    )
    return completion, signatures


def _finish_reason(reason: Any, called: bool) -> str | None:
    if reason is None:
        return None
    name = str(getattr(reason, "name", reason))
    if name == "STOP" and called:
        return "tool_calls"
    return _FINISH_REASONS.get(name, name.lower())
