"""The OpenAI-compatible provider against a real HTTP server speaking chat.completions.

Nothing of ours is mocked: the real ``openai`` SDK sends real requests to the scripted fake, so request
shapes, the SDK's retries and its timeouts are what production sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from convener.api.errors import DeadlineExceeded, FailedPrecondition, ResourceExhausted, Unavailable
from convener.llm import (
    UNPARSED_ARGUMENTS,
    ChatMessage,
    OpenAICompatibleProvider,
    ToolDeclaration,
    ToolInvocation,
)
from tests.llm.fake_openai import FakeOpenAI, Reply

WEATHER = ToolDeclaration(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@pytest.fixture
def provider(fake_openai: FakeOpenAI) -> Iterator[OpenAICompatibleProvider]:
    with OpenAICompatibleProvider(
        model="fake-model", base_url=fake_openai.base_url, timeout_seconds=5, max_retries=2
    ) as opened:
        yield opened


def test_a_text_reply(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="Hello there.")

    completion = provider.complete(
        [ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="Hi")]
    )

    assert completion.text == "Hello there."
    assert completion.tool_calls == ()
    assert completion.finish_reason == "stop"
    assert completion.model == "fake-model"
    assert completion.structured is None
    body = fake_openai.last_request
    assert body["model"] == "fake-model"
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert "tools" not in body and "response_format" not in body and "temperature" not in body


def test_usage_and_latency_are_filled(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="ok", usage=(12, 3))
    fake_openai.delay(0.05)

    completion = provider.complete([ChatMessage(role="user", content="Hi")])

    assert completion.usage is not None
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 3)
    assert completion.latency_seconds >= 0.05


def test_model_and_temperature_can_be_chosen_per_call(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(text="ok")

    completion = provider.complete([ChatMessage(role="user", content="Hi")], model="other", temperature=0.2)

    assert fake_openai.last_request["model"] == "other"
    assert fake_openai.last_request["temperature"] == 0.2
    assert completion.model == "other"


def test_tool_calls_round_trip(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})])
    fake_openai.reply(text="Sunny in Paris, snow in Oslo.")
    history = [ChatMessage(role="user", content="Weather in Paris and Oslo?")]

    first = provider.complete(history, tools=[WEATHER])

    assert first.text is None
    assert first.finish_reason == "tool_calls"
    assert [(call.name, call.arguments) for call in first.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    assert fake_openai.last_request["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": WEATHER.description,
                "parameters": WEATHER.parameters,
            },
        }
    ]

    history.append(ChatMessage(role="assistant", tool_calls=first.tool_calls))
    for call, result in zip(first.tool_calls, ["sunny", "snow"], strict=True):
        history.append(ChatMessage(role="tool", tool_call_id=call.id, name=call.name, content=result))
    second = provider.complete(history, tools=[WEATHER])

    assert second.text == "Sunny in Paris, snow in Oslo."
    sent = fake_openai.last_request["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": f'{{"city": "{city}"}}'},
            }
            for call, city in zip(first.tool_calls, ["Paris", "Oslo"], strict=True)
        ],
    }
    assert sent[2:] == [
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "sunny"},
        {"role": "tool", "tool_call_id": first.tool_calls[1].id, "content": "snow"},
    ]


@pytest.mark.parametrize("raw", ['{"city": "Par', "[1, 2]", '"Paris"'])
def test_malformed_tool_arguments_are_kept_not_fatal(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI, raw: str
) -> None:
    fake_openai.reply(tool_calls=[("get_weather", raw)])

    completion = provider.complete([ChatMessage(role="user", content="Weather?")], tools=[WEATHER])

    assert completion.tool_calls[0].name == "get_weather"
    assert completion.tool_calls[0].arguments == {UNPARSED_ARGUMENTS: raw}


def test_empty_tool_arguments_are_an_empty_object(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(tool_calls=[("get_weather", "")])

    completion = provider.complete([ChatMessage(role="user", content="Weather?")], tools=[WEATHER])

    assert completion.tool_calls[0].arguments == {}


def test_structured_output_is_requested_and_parsed(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    fake_openai.reply(text='{"answer": 42}')

    completion = provider.complete([ChatMessage(role="user", content="6*7?")], response_schema=schema)

    assert completion.structured == {"answer": 42}
    assert fake_openai.last_request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": False},
    }


@pytest.mark.parametrize(
    ("text", "structured"),
    [('```json\n{"answer": 1}\n```', {"answer": 1}), ("not json", None), (None, None)],
)
def test_structured_output_tolerates_fences_and_garbage(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI, text: str | None, structured: object
) -> None:
    fake_openai.reply(text=text)

    completion = provider.complete(
        [ChatMessage(role="user", content="?")], response_schema={"type": "object"}
    )

    assert completion.structured == structured


def test_the_responder_computes_replies_from_the_request(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.responder = lambda body: Reply(text=f"echo: {body['messages'][-1]['content']}")

    assert provider.complete([ChatMessage(role="user", content="one")]).text == "echo: one"
    assert provider.complete([ChatMessage(role="user", content="two")]).text == "echo: two"


def test_rate_limits_are_retried_by_the_sdk(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(status=429, times=2)
    fake_openai.reply(text="finally")

    completion = provider.complete([ChatMessage(role="user", content="Hi")])

    assert completion.text == "finally"
    assert len(fake_openai.requests) == 3


def test_rate_limits_beyond_the_retries_are_resource_exhausted(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(status=429, times=3)

    with pytest.raises(ResourceExhausted, match="openai provider .* HTTP 429"):
        provider.complete([ChatMessage(role="user", content="Hi")])
    assert len(fake_openai.requests) == 3


def test_server_errors_beyond_the_retries_are_unavailable(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(status=500, times=3, message="the model crashed")

    with pytest.raises(Unavailable, match="HTTP 500: the model crashed"):
        provider.complete([ChatMessage(role="user", content="Hi")])
    assert len(fake_openai.requests) == 3


def test_a_slow_reply_is_deadline_exceeded(fake_openai: FakeOpenAI) -> None:
    fake_openai.delay(1.0)
    fake_openai.reply(text="too late")

    with (
        OpenAICompatibleProvider(
            model="fake-model", base_url=fake_openai.base_url, timeout_seconds=0.2, max_retries=0
        ) as provider,
        pytest.raises(DeadlineExceeded, match="did not answer in time"),
    ):
        provider.complete([ChatMessage(role="user", content="Hi")])


def test_an_unreachable_server_is_unavailable() -> None:
    with (
        OpenAICompatibleProvider(
            model="m", base_url="http://127.0.0.1:9/v1", timeout_seconds=2, max_retries=0
        ) as provider,
        pytest.raises(Unavailable, match="could not be reached"),
    ):
        provider.complete([ChatMessage(role="user", content="Hi")])


def test_a_refused_key_is_failed_precondition_without_the_key(fake_openai: FakeOpenAI) -> None:
    secret = "sk-test-0123456789abcdef"
    fake_openai.fail(status=401, message=f"Incorrect API key provided: {secret}.")

    with (
        OpenAICompatibleProvider(
            model="fake-model",
            base_url=fake_openai.base_url,
            api_key=secret,
            timeout_seconds=5,
            max_retries=2,
        ) as provider,
        pytest.raises(FailedPrecondition) as raised,
    ):
        provider.complete([ChatMessage(role="user", content="Hi")])

    assert "openai" in raised.value.message and "401" in raised.value.message
    assert secret not in str(raised.value)
    assert len(fake_openai.requests) == 1, "a 401 is not retried"
    assert fake_openai.headers[0]["authorization"] == f"Bearer {secret}"


def test_a_bad_request_is_failed_precondition(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.fail(status=400, message="model 'nope' not found")

    with pytest.raises(FailedPrecondition, match="HTTP 400: model 'nope' not found"):
        provider.complete([ChatMessage(role="user", content="Hi")], model="nope")


def test_no_key_sends_a_placeholder(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply(text="ok")

    provider.complete([ChatMessage(role="user", content="Hi")])

    assert fake_openai.headers[0]["authorization"] == "Bearer unused"


def test_an_empty_queue_fails_loudly(provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI) -> None:
    with pytest.raises(Unavailable, match="no reply queued"):
        provider.complete([ChatMessage(role="user", content="Hi")])
    assert len(fake_openai.requests) == 1, "the fake's own complaint is not retried"


def test_a_tool_message_needs_its_call_id(provider: OpenAICompatibleProvider) -> None:
    from convener.api.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="tool_call_id"):
        provider.complete([ChatMessage(role="tool", content="result")])


def test_assistant_text_with_tool_calls_is_sent_back_together(
    provider: OpenAICompatibleProvider, fake_openai: FakeOpenAI
) -> None:
    fake_openai.reply(text="done")
    call = ToolInvocation(id="call_x", name="get_weather", arguments={UNPARSED_ARGUMENTS: "{bad"})

    provider.complete(
        [
            ChatMessage(role="user", content="Weather?"),
            ChatMessage(role="assistant", content="Let me look.", tool_calls=(call,)),
            ChatMessage(role="tool", tool_call_id="call_x", content="error: bad arguments"),
        ]
    )

    assistant = fake_openai.last_request["messages"][1]
    assert assistant["content"] == "Let me look."
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"_unparsed": "{bad"}'
