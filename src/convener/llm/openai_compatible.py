"""Any chat.completions endpoint: OpenAI itself, Ollama, vLLM, llama.cpp's server, LM Studio, proxies.

Built on the official ``openai`` SDK's synchronous client. Only the chat.completions API is used because it
is the one every OpenAI-compatible server implements.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam, ChatCompletionToolParam

from convener.api.errors import (
    ApiError,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
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

NO_API_KEY = "unused"
"""Sent when no key is configured: local servers (Ollama, llama.cpp) need none, but the SDK insists on one."""

_MAX_DETAIL = 300
"""How much of a provider's own error message is passed on: enough to say what was wrong, no more."""


class OpenAICompatibleProvider(ClosesOnExit):
    """A :class:`~convener.llm.base.ModelProvider` over the OpenAI SDK's chat.completions.

    Retries are the SDK's: it retries 408, 409, 429, 5xx and connection failures ``max_retries`` times with
    exponential backoff and jitter (honouring ``Retry-After``), so this class does not loop itself. Only the
    error that survives the retries is translated.
    """

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        self.model = model
        self._api_key = api_key or None
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or NO_API_KEY,
            timeout=timeout_seconds,
            max_retries=max_retries,
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAICompatibleProvider(model={self.model!r}, base_url={self.base_url!r})"

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolDeclaration] = (),
        response_schema: dict[str, Any] | None = None,
        model: str | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """One chat completion; see :class:`~convener.llm.base.ModelProvider` for the errors raised."""
        used_model = model or self.model
        # strict=False: strict mode demands additionalProperties=false and every property required, which
        # ordinary schemas (and most local servers) do not meet.
        response_format: Any = (
            {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": response_schema, "strict": False},
            }
            if response_schema is not None
            else openai.omit
        )
        started = time.perf_counter()
        try:
            response = self._client.chat.completions.create(
                model=used_model,
                messages=cast("list[ChatCompletionMessageParam]", to_openai_messages(messages)),
                tools=cast("list[ChatCompletionToolParam]", to_openai_tools(tools)) if tools else openai.omit,
                response_format=response_format,
                temperature=temperature if temperature is not None else openai.omit,
            )
        except openai.OpenAIError as error:
            raise self._translate(error) from None
        latency = time.perf_counter() - started
        return self._completion(response, used_model, latency, structured=response_schema is not None)

    def _completion(
        self, response: ChatCompletion, used_model: str, latency: float, *, structured: bool
    ) -> Completion:
        choices = response.choices
        if not choices:
            raise Unavailable(f"the {self.name} provider at {self.base_url} returned no choices")
        choice = choices[0]
        message = choice.message
        calls = []
        for index, call in enumerate(message.tool_calls or ()):
            if call.type != "function":  # a "custom" (free-form) tool call: we never declare those
                continue
            calls.append(
                ToolInvocation(
                    id=call.id or f"call_{index}",
                    name=call.function.name,
                    arguments=parse_tool_arguments(call.function.arguments),
                )
            )
        usage = None
        if response.usage is not None:
            usage = Usage(
                input_tokens=response.usage.prompt_tokens or 0,
                output_tokens=response.usage.completion_tokens or 0,
            )
        text = message.content
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            usage=usage,
            latency_seconds=latency,
            model=response.model or used_model,
            finish_reason=choice.finish_reason,
            structured=parse_structured(text) if structured else None,
        )

    def _translate(self, error: openai.OpenAIError) -> ApiError:
        """The ApiError for an SDK failure, naming provider and status but never the key."""
        where = f"the {self.name} provider at {self.base_url}"
        if isinstance(error, openai.APITimeoutError):
            return DeadlineExceeded(f"{where} did not answer in time")
        if isinstance(error, openai.APIConnectionError):
            return Unavailable(f"{where} could not be reached")
        if isinstance(error, openai.APIStatusError):
            status = error.status_code
            detail = redact(_error_detail(error), self._api_key)
            said = f"{where} answered HTTP {status}" + (f": {detail}" if detail else "")
            if status == 429:
                return ResourceExhausted(said)
            if status >= 500:
                return Unavailable(said)
            if status == 408:
                return DeadlineExceeded(said)
            if status == 401:
                return FailedPrecondition(f"{said} (check the API key)")
            return FailedPrecondition(said)
        return Unavailable(f"{where} sent a response that could not be read ({type(error).__name__})")


def _error_detail(error: openai.APIStatusError) -> str:
    """The provider's own message from an error body (``{"error": {"message": ...}}``), shortened."""
    body = error.body
    message: object = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    elif isinstance(body, str):
        message = body
    text = " ".join(str(message).split()) if message else ""
    return text[:_MAX_DETAIL] + ("…" if len(text) > _MAX_DETAIL else "")


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Chat.completions message dicts.

    Tool messages carry only ``tool_call_id``: OpenAI's schema has no ``name`` there, and the id is what
    ties a result to its call.
    """
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            if not message.tool_call_id:
                raise InvalidArgument("a tool message needs the tool_call_id of the call it answers")
            converted.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content or ""}
            )
        elif message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                    for call in message.tool_calls
                ]
            converted.append(item)
        else:
            converted.append({"role": message.role, "content": message.content or ""})
    return converted


def to_openai_tools(tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
    """Function tools; an empty ``parameters`` becomes the empty object schema, which some servers require."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]
