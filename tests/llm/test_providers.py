"""Choosing a provider from the settings, and the Gemini provider as far as it goes without Google.

The Gemini SDK is an optional extra: without it the provider must refuse clearly; the message mapping is
pure and tested either way; with it, the provider is driven against a local fake Gemini endpoint.
"""

from __future__ import annotations

import base64
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import pytest
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from convener.api.errors import FailedPrecondition, ResourceExhausted
from convener.config import Settings
from convener.llm import (
    PROVIDERS,
    UNPARSED_ARGUMENTS,
    ChatMessage,
    GeminiProvider,
    ModelProvider,
    OpenAICompatibleProvider,
    ToolDeclaration,
    ToolInvocation,
    close_provider,
    provider_from_settings,
)
from convener.llm.gemini import (
    GENERATED_ID_PREFIX,
    MISSING_PACKAGE,
    completion_from_gemini,
    to_gemini_request,
)
from tests.llm.fake_openai import FakeOpenAI, serving_asgi

GENAI_INSTALLED = (
    importlib.util.find_spec("google") is not None and importlib.util.find_spec("google.genai") is not None
)
WEATHER = ToolDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(data_dir=tmp_path, **values)


# ---------------------------------------------------------------- provider_from_settings


def test_none_means_no_provider(tmp_path: Path) -> None:
    assert provider_from_settings(settings(tmp_path, llm_provider="none")) is None


def test_every_configurable_provider_is_registered() -> None:
    names = set(get_args(Settings.model_fields["llm_provider"].annotation))
    assert names - {"none"} == set(PROVIDERS)


def test_openai_is_built_from_the_settings_and_works(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    configured = settings(
        tmp_path,
        llm_provider="openai",
        llm_base_url=fake_openai.base_url,
        llm_model="local-llama",
        llm_api_key=SecretStr("sk-from-settings"),
        llm_timeout_seconds=5,
        llm_max_retries=1,
    )
    fake_openai.reply(text="hi")

    provider = provider_from_settings(configured)
    assert isinstance(provider, OpenAICompatibleProvider)
    assert isinstance(provider, ModelProvider)
    try:
        assert provider.name == "openai" and provider.model == "local-llama"
        assert provider.base_url == fake_openai.base_url
        assert provider.complete([ChatMessage(role="user", content="hello")]).text == "hi"
    finally:
        close_provider(provider)
    assert fake_openai.headers[0]["authorization"] == "Bearer sk-from-settings"
    assert fake_openai.last_request["model"] == "local-llama"
    assert "sk-from-settings" not in repr(provider)


def test_openai_retries_come_from_the_settings(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    configured = settings(
        tmp_path,
        llm_provider="openai",
        llm_base_url=fake_openai.base_url,
        llm_max_retries=1,
        llm_timeout_seconds=5,
    )
    fake_openai.fail(status=429, times=2)
    provider = provider_from_settings(configured)
    assert provider is not None
    try:
        with pytest.raises(ResourceExhausted):
            provider.complete([ChatMessage(role="user", content="hello")])
    finally:
        close_provider(provider)
    assert len(fake_openai.requests) == 2


# ---------------------------------------------------------------- gemini without the SDK


@pytest.mark.skipif(GENAI_INSTALLED, reason="google-genai is installed")
def test_gemini_without_its_package_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(FailedPrecondition) as raised:
        provider_from_settings(settings(tmp_path, llm_provider="gemini", llm_api_key=SecretStr("k")))
    assert (
        raised.value.message == MISSING_PACKAGE == "the gemini provider needs: pip install 'convener[gemini]'"
    )

    with pytest.raises(FailedPrecondition, match="convener\\[gemini\\]"):
        GeminiProvider(api_key="k")


def test_the_conversation_becomes_gemini_contents() -> None:
    call = ToolInvocation(id="fc-1", name="get_weather", arguments={"city": "Paris"})
    other = ToolInvocation(id=f"{GENERATED_ID_PREFIX}abc", name="get_time", arguments={})
    contents, config = to_gemini_request(
        [
            ChatMessage(role="system", content="Be brief."),
            ChatMessage(role="system", content="Answer in English."),
            ChatMessage(role="user", content="Weather and time in Paris?"),
            ChatMessage(role="assistant", content="Looking.", tool_calls=(call, other)),
            ChatMessage(role="tool", tool_call_id="fc-1", content='{"temp": 21}'),
            ChatMessage(role="tool", tool_call_id=other.id, name="get_time", content="noon"),
            ChatMessage(role="assistant", content="21 degrees at noon."),
        ],
        tools=[WEATHER, ToolDeclaration(name="get_time", description="Now.", parameters={})],
        temperature=0.3,
        signatures={"fc-1": b"sig"},
    )

    assert contents == [
        {"role": "user", "parts": [{"text": "Weather and time in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Looking."},
                {
                    "function_call": {"name": "get_weather", "args": {"city": "Paris"}, "id": "fc-1"},
                    "thought_signature": b"sig",
                },
                {"function_call": {"name": "get_time", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"function_response": {"name": "get_weather", "response": {"temp": 21}, "id": "fc-1"}},
                {"function_response": {"name": "get_time", "response": {"output": "noon"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "21 degrees at noon."}]},
    ]
    assert config == {
        "system_instruction": "Be brief.\n\nAnswer in English.",
        "tools": [
            {
                "function_declarations": [
                    {
                        "name": "get_weather",
                        "description": WEATHER.description,
                        "parameters_json_schema": WEATHER.parameters,
                    },
                    {
                        "name": "get_time",
                        "description": "Now.",
                        "parameters_json_schema": {"type": "object", "properties": {}},
                    },
                ]
            }
        ],
        "temperature": 0.3,
    }


def test_structured_output_asks_gemini_for_json() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}

    _, config = to_gemini_request([ChatMessage(role="user", content="n?")], response_schema=schema)
    _, legacy = to_gemini_request(
        [ChatMessage(role="user", content="n?")], response_schema=schema, json_schema=False
    )

    assert config == {"response_mime_type": "application/json", "response_json_schema": schema}
    assert legacy == {"response_mime_type": "application/json", "response_schema": schema}


def test_a_gemini_response_becomes_a_completion() -> None:
    response = SimpleNamespace(
        candidates=[
            SimpleNamespace(
                content=SimpleNamespace(
                    parts=[
                        SimpleNamespace(text="pondering", thought=True, function_call=None),
                        SimpleNamespace(text='{"n": ', thought=None, function_call=None),
                        SimpleNamespace(text="7}", thought=None, function_call=None),
                        SimpleNamespace(
                            text=None,
                            thought=None,
                            function_call=SimpleNamespace(id=None, name="get_weather", args={"city": "Oslo"}),
                            thought_signature=b"sig",
                        ),
                    ]
                ),
                finish_reason=SimpleNamespace(name="STOP"),
            )
        ],
        usage_metadata=SimpleNamespace(
            prompt_token_count=10, candidates_token_count=4, thoughts_token_count=6
        ),
        model_version="gemini-2.5-flash-001",
    )

    completion, signatures = completion_from_gemini(
        response, model="gemini-2.5-flash", latency_seconds=0.5, structured=True
    )

    assert completion.text == '{"n": 7}'
    assert completion.structured == {"n": 7}
    (call,) = completion.tool_calls
    assert (
        call.id.startswith(GENERATED_ID_PREFIX)
        and call.name == "get_weather"
        and call.arguments == {"city": "Oslo"}
    )
    assert signatures == {call.id: b"sig"}
    assert completion.finish_reason == "tool_calls"
    assert completion.usage is not None and (
        completion.usage.input_tokens,
        completion.usage.output_tokens,
    ) == (10, 10)
    assert completion.model == "gemini-2.5-flash-001"


def test_a_blocked_gemini_prompt_is_an_empty_completion() -> None:
    response = SimpleNamespace(
        candidates=None, prompt_feedback=SimpleNamespace(block_reason="SAFETY"), usage_metadata=None
    )

    completion, _ = completion_from_gemini(response, model="g", latency_seconds=0.1, structured=False)

    assert (completion.text, completion.tool_calls, completion.finish_reason) == (None, (), "content_filter")


@pytest.mark.parametrize(("args", "kept"), [("oops", "oops"), (["a"], '["a"]')])
def test_gemini_bad_arguments_are_kept(args: object, kept: str) -> None:
    part = SimpleNamespace(text=None, function_call=SimpleNamespace(id="x", name="f", args=args))
    candidate = SimpleNamespace(content=SimpleNamespace(parts=[part]), finish_reason=None)

    completion, _ = completion_from_gemini(
        SimpleNamespace(candidates=[candidate]), model="g", latency_seconds=0.1, structured=False
    )

    assert completion.tool_calls[0].arguments == {UNPARSED_ARGUMENTS: kept}


# ---------------------------------------------------------------- gemini with the SDK, against a local fake


@pytest.fixture
def fake_gemini() -> Iterator[tuple[str, list[tuple[int, dict[str, Any]]], list[dict[str, Any]]]]:
    """A local generateContent endpoint: yields (base URL, script of (status, body) answers, bodies seen)."""
    script: list[tuple[int, dict[str, Any]]] = []
    seen: list[dict[str, Any]] = []

    async def generate(request: Request) -> JSONResponse:
        seen.append(await request.json())
        status, body = (
            script.pop(0) if script else (500, {"error": {"code": 500, "message": "nothing scripted"}})
        )
        return JSONResponse(body, status_code=status)

    with serving_asgi(Starlette(routes=[Route("/{rest:path}", generate, methods=["POST"])])) as url:
        yield url, script, seen


@pytest.mark.skipif(not GENAI_INSTALLED, reason="needs the gemini extra (google-genai)")
def test_gemini_round_trip_with_the_sdk(
    fake_gemini: tuple[str, list[tuple[int, dict[str, Any]]], list[dict[str, Any]]],
) -> None:
    url, script, seen = fake_gemini
    signature = base64.b64encode(b"signed").decode()
    script.append(
        (
            200,
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {
                                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                                    "thoughtSignature": signature,
                                }
                            ],
                        },
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
            },
        )
    )
    script.append((429, {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}))
    script.append(
        (
            200,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": "Sunny."}]}, "finishReason": "STOP"}
                ]
            },
        )
    )
    script.append(
        (401, {"error": {"code": 401, "message": "bad key AIza-secret-key", "status": "UNAUTHENTICATED"}})
    )

    with GeminiProvider(
        model="gemini-test",
        api_key="AIza-secret-key",
        base_url=url,
        timeout_seconds=5,
        max_retries=1,
        retry_initial_delay=0.01,
    ) as provider:
        history = [
            ChatMessage(role="system", content="Brief."),
            ChatMessage(role="user", content="Weather in Paris?"),
        ]
        first = provider.complete(history, tools=[WEATHER])
        assert [(call.name, call.arguments) for call in first.tool_calls] == [
            ("get_weather", {"city": "Paris"})
        ]
        assert first.usage is not None and first.usage.input_tokens == 7
        assert seen[0]["systemInstruction"]["parts"] == [{"text": "Brief."}]

        history += [
            ChatMessage(role="assistant", tool_calls=first.tool_calls),
            ChatMessage(role="tool", tool_call_id=first.tool_calls[0].id, content="sunny"),
        ]
        second = provider.complete(history, tools=[WEATHER])
        assert second.text == "Sunny."
        assert len(seen) == 3, "the 429 was retried"
        replayed = seen[-1]["contents"][1]["parts"][0]
        assert replayed["thoughtSignature"] == signature
        assert seen[-1]["contents"][2]["parts"][0]["functionResponse"]["response"] == {"output": "sunny"}

        with pytest.raises(FailedPrecondition) as raised:
            provider.complete(history)
        assert "401" in raised.value.message and "AIza-secret-key" not in str(raised.value)
