"""Playbook agents: definitions, intent matching, slot filling, steps, and hostile definitions and inputs."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml

from convener.api.errors import InvalidArgument
from convener.ces.runtime import playbook as playbooks
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.playbook import (
    AwaitingClient,
    EndSession,
    Outcome,
    Playbook,
    PlaybookDefinition,
    Reply,
    ToolCalled,
    Transfer,
    VariablesSet,
)

FIELD = "agent.playbookAgent"
ACTIONS = "callTool, reply, setVariables, transfer, endSession"

ORDERS_YAML = r"""
intents:
  - name: order_status
    patterns: ['order (?P<order_id>[A-Z]{2}-\d{4})']
    keywords: [order, status]
    examples: ["where is my order", "track my package"]
    slots:
      - name: order_id
        pattern: '[A-Z]{2}-\d{4}'
        required: true
        prompt: "What is your order number?"
        reprompt: "Order numbers look like AB-1234. What is yours?"
    steps:
      - callTool: {tool: lookup_order, args: {order_id: "{{ slots.order_id | upper }}"}, as: order}
      - when: "{{ results.order.error is defined }}"
        reply: "I could not find order {{ slots.order_id | upper }}."
      - when: results.order.error is defined
        endSession: {reason: "order {{ slots.order_id | upper }} not found"}
      - setVariables: {last_order: "{{ slots.order_id | upper }}"}
      - reply: "Order {{ slots.order_id | upper }} is {{ results.order.output.status }}."
  - name: refund
    keywords: [refund]
    examples: ["i want my money back"]
    steps:
      - transfer: refunds
events:
  welcome: [{reply: "Hi! How can I help?"}]
fallback: [{reply: "Sorry, I can help with orders and refunds."}]
exampleThreshold: 0.5
"""


def parse(data: Any) -> PlaybookDefinition:
    return PlaybookDefinition.parse(data, FIELD)


def book(data: Any) -> Playbook:
    return Playbook(parse(yaml.safe_load(data) if isinstance(data, str) else data))


class Tools:
    """A ToolPort that records calls and answers from a table (None: a client tool)."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        self.calls.append((tool, copy.deepcopy(args)))
        answer = self.answers.get(tool, {"output": {"ok": True}})
        if isinstance(answer, Exception):
            raise answer
        return answer(args) if callable(answer) else copy.deepcopy(answer)


def orders_tools() -> Tools:
    def lookup(args: dict[str, Any]) -> dict[str, Any]:
        if args["order_id"] == "ZZ-0000":
            return {"error": "no such order"}
        return {"output": {"status": "shipped"}}

    return Tools({"lookup_order": lookup})


class Conversation:
    """Drives a playbook as a session would: the state and variables go through JSON between calls."""

    def __init__(
        self, playbook: Playbook, tools: Tools | None = None, variables: dict[str, Any] | None = None
    ):
        self.playbook = playbook
        self.tools = tools or Tools()
        self.state: dict[str, Any] = {}
        self.variables: dict[str, Any] = variables or {}
        self.outcomes: list[Outcome] = []

    def _keep(self, outcome: Outcome) -> Outcome:
        self.state = json.loads(json.dumps(outcome.state))
        self.variables = json.loads(json.dumps(outcome.variables))
        self.outcomes.append(outcome)
        return outcome

    def say(self, text: str) -> Outcome:
        return self._keep(self.playbook.on_text(self.state, text, self.variables, self.tools))

    def event(self, name: str) -> Outcome:
        return self._keep(self.playbook.on_event(self.state, name, self.variables, self.tools))

    def respond(self, response: dict[str, Any]) -> Outcome:
        return self._keep(self.playbook.on_tool_response(self.state, response, self.variables, self.tools))


def replies(outcome: Outcome) -> list[str]:
    return [action.text for action in outcome.actions if isinstance(action, Reply)]


@contextmanager
def quick(seconds: float = 2.0) -> Iterator[None]:
    start = time.perf_counter()
    yield
    assert time.perf_counter() - start < seconds


def intent(name: str, **matchers: Any) -> dict[str, Any]:
    return {"name": name, **matchers, "steps": [{"reply": name}]}


# -- the definition ----------------------------------------------------------------------------------


def test_the_documented_example_parses_and_names_its_references() -> None:
    definition = parse(yaml.safe_load(ORDERS_YAML))
    assert [i.name for i in definition.intents] == ["order_status", "refund"]
    assert definition.tool_ids() == ["lookup_order"]
    assert definition.agent_ids() == ["refunds"]
    assert definition.example_threshold == 0.5 and definition.max_reprompts == 2


def test_references_are_listed_once_in_order_of_first_use() -> None:
    definition = parse(
        {
            "intents": [
                {
                    "name": "a",
                    "keywords": ["a"],
                    "steps": [
                        {"callTool": {"tool": "t2"}},
                        {"callTool": {"tool": "t1"}},
                        {"transfer": "x"},
                    ],
                }
            ],
            "events": {"welcome": [{"callTool": {"tool": "t2"}}, {"transfer": "y"}]},
            "fallback": [{"callTool": {"tool": "t3"}}, {"transfer": "x"}],
        }
    )
    assert definition.tool_ids() == ["t2", "t1", "t3"]
    assert definition.agent_ids() == ["x", "y"]


def test_an_empty_definition_is_valid_and_does_nothing() -> None:
    outcome = Playbook(parse({})).on_text({}, "hello", {}, Tools())
    assert outcome.actions == [] and outcome.state == {} and outcome.intent is None


def bad(data: Any, message: str) -> None:
    with quick(), pytest.raises(InvalidArgument) as caught:
        parse(data)
    assert message in caught.value.message, caught.value.message


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], f"{FIELD}: expected an object, not an array"),
        ("intents: []", f"{FIELD}: expected an object, not a string"),
        (None, f"{FIELD}: expected an object, not null"),
        ({"intent": []}, f"{FIELD}.intent: Extra inputs are not permitted"),
        (
            {"intents": [{"name": "a", "keywords": ["a"], "steps": [{"reply": "x", "colour": 1}]}]},
            f"{FIELD}.intents[0].steps[0].colour: Extra inputs are not permitted",
        ),
        (
            {"intents": [{"name": "a", "keywords": ["a"], "steps": [{"reply": "x", "transfer": "b"}]}]},
            f"{FIELD}.intents[0].steps[0]: a step needs exactly one of {ACTIONS}; got reply, transfer",
        ),
        (
            {"intents": [{"name": "a", "keywords": ["a"], "steps": [{"when": "true"}]}]},
            f"{FIELD}.intents[0].steps[0]: a step needs exactly one of",
        ),
        (
            {"intents": [{"name": "a", "keywords": ["a"], "steps": [{"reply": 5}]}]},
            f"{FIELD}.intents[0].steps[0].reply: Input should be a valid string",
        ),
        (
            {
                "intents": [
                    intent("a", keywords=["x"]),
                    intent("b", keywords=["y"]),
                    {"name": "c", "keywords": ["z"], "steps": [{"reply": "ok"}, {"reply": "{{ oops"}]},
                ]
            },
            f"{FIELD}.intents[2].steps[1].reply: bad template: ",
        ),
        (
            {"intents": [intent("a", patterns=["ok", "(unclosed"])]},
            f"{FIELD}.intents[0].patterns[1]: bad regular expression: missing ), unterminated subpattern",
        ),
        (
            {"intents": [intent("a", patterns=["x" * 301])]},
            f"{FIELD}.intents[0].patterns[0]: a regular expression has at most 300 characters",
        ),
        (
            {"intents": [intent("a", patterns=["(a+)+$"])]},
            f"{FIELD}.intents[0].patterns[0]: regular expression refused: a repeat holds another repeat",
        ),
        (
            {"intents": [intent("a", patterns=[r"\s*\s*x"])]},
            f"{FIELD}.intents[0].patterns[0]: regular expression refused: two repeats",
        ),
        (
            {"intents": [intent("a", patterns=[r"(a)b\1"])]},
            f"{FIELD}.intents[0].patterns[0]: regular expression refused: backreferences",
        ),
        (
            {"intents": [intent("a", keywords=["x"]), intent("a", keywords=["y"])]},
            f"{FIELD}.intents[1].name: another intent is already named 'a'",
        ),
        ({"intents": [intent("no spaces", keywords=["x"])]}, f"{FIELD}.intents[0].name: an intent name must"),
        (
            {"intents": [{"name": "a", "steps": []}]},
            f"{FIELD}.intents[0]: an intent needs patterns, keywords or examples",
        ),
        ({"intents": [intent("a", keywords=["!!"])]}, f"{FIELD}.intents[0].keywords[0]: a phrase needs"),
        (
            {"intents": [{**intent("a", keywords=["x"]), "slots": [{"name": "s", "required": True}]}]},
            f"{FIELD}.intents[0].slots[0].prompt: a required slot needs a prompt",
        ),
        (
            {"intents": [{**intent("a", keywords=["x"]), "slots": [{"name": "s"}, {"name": "s"}]}]},
            f"{FIELD}.intents[0].slots[1].name: another slot is already named 's'",
        ),
        (
            {"intents": [{**intent("a", keywords=["x"]), "slots": [{"name": "s", "pattern": "a*a*b"}]}]},
            f"{FIELD}.intents[0].slots[0].pattern: regular expression refused",
        ),
        (
            {
                "intents": [
                    {
                        **intent("a", keywords=["x"]),
                        "slots": [{"name": "s", "prompt": "{% macro m() %}{% endmacro %}"}],
                    }
                ]
            },
            f"{FIELD}.intents[0].slots[0].prompt: bad template: macros are not supported",
        ),
        (
            {
                "intents": [
                    {
                        **intent("a", keywords=["x"]),
                        "slots": [{"name": "s", "values": {"big": ["large"], "huge": ["Large"]}}],
                    }
                ]
            },
            f"{FIELD}.intents[0].slots[0].values.huge[0]: 'Large' already stands for 'big'",
        ),
        (
            {
                "intents": [
                    {
                        **intent("a", keywords=["x"]),
                        "slots": [{"name": "s", "type": "integer", "values": {"one": []}}],
                    }
                ]
            },
            f"{FIELD}.intents[0].slots[0].values: values are for string slots",
        ),
        (
            {"intents": [{**intent("a", keywords=["x"]), "slots": [{"name": "s", "type": "date"}]}]},
            f"{FIELD}.intents[0].slots[0].type: Input should be 'string', 'integer' or 'number'",
        ),
        (
            {"fallback": [{"callTool": {"tool": "../etc"}}]},
            f"{FIELD}.fallback[0].callTool.tool: '../etc' is not a tool ID",
        ),
        ({"fallback": [{"transfer": "a/b"}]}, f"{FIELD}.fallback[0].transfer: 'a/b' is not an agent ID"),
        (
            {"fallback": [{"when": "{{ a }} and {{ b }}", "reply": "x"}]},
            f"{FIELD}.fallback[0].when: must be a single",
        ),
        ({"fallback": [{"when": "a ==", "reply": "x"}]}, f"{FIELD}.fallback[0].when: bad template"),
        (
            {"fallback": [{"callTool": {"tool": "t", "args": {"a": ["{{ x y }}"]}}}]},
            f"{FIELD}.fallback[0].callTool.args.a[0]: bad template",
        ),
        (
            {"fallback": [{"callTool": {"tool": "t", "as": "not valid"}}]},
            f"{FIELD}.fallback[0].callTool.as: a result name",
        ),
        (
            {"fallback": [{"setVariables": {"x": {"y": "{% for %}"}}}]},
            f"{FIELD}.fallback[0].setVariables.x.y: bad template",
        ),
        ({"events": {"welcome": [{"reply": "{{ 1 +}}"}]}}, f"{FIELD}.events.welcome[0].reply: bad template"),
        ({"events": {"bad name": []}}, f"{FIELD}.events.bad name: an event name must"),
        ({"exampleThreshold": 0}, f"{FIELD}.exampleThreshold: Input should be greater than 0"),
        ({"maxReprompts": 99}, f"{FIELD}.maxReprompts: Input should be less than or equal to 10"),
    ],
)
def test_bad_definitions_name_the_field(data: Any, message: str) -> None:
    bad(data, message)


def test_catastrophic_sizes_are_refused_quickly() -> None:
    bad(
        {"intents": [intent(f"i{n}", keywords=["x"]) for n in range(10_000)]},
        f"{FIELD}.intents: List should have at most 200 items",
    )
    bad({"fallback": [{"reply": "x"}] * 51}, f"{FIELD}.fallback: List should have at most 50 items")
    bad(
        {"intents": [intent("a", patterns=["a"] * 21)]},
        f"{FIELD}.intents[0].patterns: List should have at most 20",
    )
    bad(
        {"intents": [intent(f"i{n}", patterns=[f"p{k}" for k in range(11)]) for n in range(20)]},
        f"{FIELD}.intents: at most 200 regular expressions",
    )
    bad(
        {"fallback": [{"reply": "x" * 10_001}]},
        f"{FIELD}.fallback[0].reply: a template may have at most 10000",
    )
    deep: Any = "leaf"
    for _ in range(30):
        deep = [deep]
    bad(
        {"fallback": [{"setVariables": {"x": deep}}]},
        f"{FIELD}.fallback[0].setVariables: values may be nested at most",
    )
    bad(
        {"intents": [intent("a", keywords=["x" * 201])]},
        f"{FIELD}.intents[0].keywords[0]: at most 200 characters",
    )


def test_parse_names_the_field_it_is_given() -> None:
    with pytest.raises(InvalidArgument, match=r"^INVALID_ARGUMENT: somewhere\.else\.fallback\[0\]\.reply"):
        PlaybookDefinition.parse({"fallback": [{"reply": "{{"}]}, "somewhere.else")


def test_python_names_are_accepted_too() -> None:
    definition = parse({"fallback": [{"set_variables": {"a": 1}}, {"call_tool": {"tool": "t", "as": "r"}}]})
    assert (
        definition.fallback[1].call_tool is not None and definition.fallback[1].call_tool.result_name == "r"
    )


# -- intent matching --------------------------------------------------------------------------------


def test_intents_match_by_pattern_keywords_or_examples() -> None:
    playbook = book(ORDERS_YAML)
    tools = orders_tools()
    assert (
        Conversation(playbook, tools).say("ORDER ab-1234 please").intent == "order_status"
    )  # case-insensitive
    assert Conversation(playbook, tools).say("what's the status of my order?").intent == "order_status"
    assert Conversation(playbook, tools).say("track my package").intent == "order_status"
    assert Conversation(playbook, tools).say("I'd like a refund").intent == "refund"
    assert Conversation(playbook, tools).say("I want my money back!").intent == "refund"
    unknown = Conversation(playbook, tools).say("tell me a joke")
    assert unknown.intent is None and replies(unknown) == ["Sorry, I can help with orders and refunds."]


def test_keywords_are_whole_words_and_phrases_are_contiguous() -> None:
    playbook = book({"intents": [intent("a", keywords=["order status"])], "fallback": [{"reply": "?"}]})
    assert Conversation(playbook).say("my order status?").intent == "a"
    assert Conversation(playbook).say("status of my order").intent is None
    assert Conversation(playbook).say("orders statuses").intent is None


def test_patterns_beat_keywords_beat_examples_whatever_the_order() -> None:
    playbook = book(
        {
            "intents": [
                intent("by_example", examples=["cancel my booking"]),
                intent("by_keyword", keywords=["cancel"]),
                intent("by_pattern", patterns=[r"cancel \w+"]),
            ]
        }
    )
    assert Conversation(playbook).say("cancel my booking").intent == "by_pattern"
    assert Conversation(playbook).say("cancel").intent == "by_keyword"
    assert Conversation(playbook).say("booking for me cancel").intent == "by_keyword"


def test_scores_then_definition_order_break_ties() -> None:
    playbook = book(
        {
            "intents": [
                intent("short", patterns=["book"]),
                intent("long", patterns=["book a (table|room)"]),
                intent("short_again", patterns=["book"]),
                intent("one_word", keywords=["pay"]),
                intent("two_words", keywords=["pay", "bill"]),
                intent("first_example", examples=["weather today"]),
                intent("second_example", examples=["weather today"]),
                intent("better_example", examples=["weather forecast for tomorrow"]),
            ]
        }
    )
    assert Conversation(playbook).say("book a room").intent == "long"  # the longer match
    assert Conversation(playbook).say("book it").intent == "short"  # same length: the first defined
    assert Conversation(playbook).say("pay the bill").intent == "two_words"  # more keyword words
    assert Conversation(playbook).say("pay now").intent == "one_word"
    assert Conversation(playbook).say("weather today").intent == "first_example"
    assert Conversation(playbook).say("weather forecast tomorrow").intent == "better_example"


def test_examples_below_the_threshold_do_not_match() -> None:
    data = {
        "intents": [intent("weather", examples=["what is the weather like today"])],
        "exampleThreshold": 0.6,
    }
    assert Conversation(book(data)).say("what is the weather like").intent == "weather"  # 2*5/(5+6) = 0.91
    assert Conversation(book(data)).say("what is love").intent is None  # 2*2/(3+6) = 0.44


# -- slots ----------------------------------------------------------------------------------------


SLOTS_YAML = r"""
intents:
  - name: book
    patterns: ['book (?P<count>\d+) (?P<kind>tickets?|seats?)', 'reserve (?P<extra>\w+)']
    keywords: [book]
    slots:
      - {name: count, type: integer}
      - {name: kind}
      - {name: city, values: {"New York": ["nyc", "big apple", "new york city"], "Paris": ["paname"]}}
      - {name: date, pattern: 'on (?P<date>\d{4}-\d{2}-\d{2})'}
      - {name: time, pattern: 'at (\d{1,2}):(\d{2})'}
      - {name: code, pattern: '#[A-Z]{3}'}
      - {name: price, type: number}
    steps:
      - reply: "{{ slots | tojson }}"
"""


def slots_of(text: str) -> dict[str, Any]:
    outcome = Conversation(book(SLOTS_YAML)).say(text)
    return json.loads(replies(outcome)[0])  # type: ignore[no-any-return]


def test_named_groups_fill_slots_with_their_types() -> None:
    assert slots_of("Book 2 seats in NYC") == {
        "count": 2,
        "kind": "seats",
        "city": "New York",
        "date": None,
        "time": None,
        "code": None,
        "price": 2,
    }


def test_slot_patterns_use_the_slot_group_then_the_first_group_then_the_match() -> None:
    found = slots_of("book on 2024-05-01 at 9:30 with #abc")
    assert found["date"] == "2024-05-01"
    assert found["time"] == "9"
    assert found["code"] == "#abc"
    assert found["count"] == 2024  # a number slot without a pattern takes the first number


def test_number_slots_keep_fractions_and_whole_numbers() -> None:
    assert slots_of("book for 12.5")["price"] == 12.5
    assert slots_of("book for -3")["price"] == -3 and isinstance(slots_of("book for -3")["price"], int)


def test_synonyms_give_the_canonical_value_and_prefer_the_longest_phrase() -> None:
    assert slots_of("book for the Big  Apple")["city"] == "New York"
    assert slots_of("book paname")["city"] == "Paris"
    assert slots_of("book New York City")["city"] == "New York"
    assert slots_of("book something in new yorkshire")["city"] is None  # whole words only


def test_named_groups_that_are_no_declared_slot_still_reach_templates() -> None:
    assert slots_of("reserve everything")["extra"] == "everything"


MULTI_YAML = r"""
intents:
  - name: transfer_money
    keywords: [send]
    slots:
      - {name: amount, type: number, required: true, prompt: "How much?"}
      - {name: to, required: true, prompt: "Who should get {{ slots.amount }}?"}
      - {name: note}
    steps:
      - reply: >-
          Sending {{ slots.amount }} to {{ slots.to }}{{ ' (' ~ slots.note ~ ')' if slots.note else '' }}.
  - name: balance
    keywords: [balance]
    steps: [{reply: "You have 10."}]
fallback: [{reply: "I did not get that."}]
"""


def test_required_slots_are_asked_for_in_turn() -> None:
    talk = Conversation(book(MULTI_YAML))
    assert replies(talk.say("send money")) == ["How much?"]
    assert talk.state["pending"] == "slot" and talk.state["slot"] == "amount"
    assert replies(talk.say("12.50 please")) == ["Who should get 12.5?"]
    assert replies(talk.say("  Alice  ")) == ["Sending 12.5 to Alice."]  # a free-text slot takes the answer
    assert talk.state == {}


def test_slots_already_given_are_not_asked_for() -> None:
    talk = Conversation(book(MULTI_YAML))
    assert replies(talk.say("send 30")) == ["Who should get 30?"]


def test_an_answer_that_misses_is_asked_again_then_the_fallback_runs() -> None:
    talk = Conversation(book(MULTI_YAML))
    talk.say("send")
    assert replies(talk.say("lots")) == ["How much?"]
    assert talk.state["reprompts"] == 1
    assert replies(talk.say("heaps")) == ["How much?"]
    assert talk.state["reprompts"] == 2
    final = talk.say("I said heaps")
    assert replies(final) == ["I did not get that."] and final.intent == "transfer_money"
    assert talk.state == {}
    assert replies(talk.say("balance?")) == ["You have 10."]


def test_the_reprompt_template_is_used_when_there_is_one() -> None:
    talk = Conversation(book(ORDERS_YAML), orders_tools())
    assert replies(talk.say("where is my order")) == ["What is your order number?"]
    assert replies(talk.say("no idea")) == ["Order numbers look like AB-1234. What is yours?"]
    assert replies(talk.say("it is ab-1234")) == ["Order AB-1234 is shipped."]


def test_max_reprompts_zero_goes_straight_to_the_fallback() -> None:
    data = yaml.safe_load(MULTI_YAML) | {"maxReprompts": 0}
    talk = Conversation(book(data))
    talk.say("send")
    assert replies(talk.say("lots")) == ["I did not get that."]


def test_asking_for_something_else_leaves_the_slot() -> None:
    talk = Conversation(book(MULTI_YAML))
    talk.say("send")
    outcome = talk.say("what is my balance")
    assert outcome.intent == "balance" and replies(outcome) == ["You have 10."] and talk.state == {}


def test_other_slots_found_in_a_missed_answer_are_kept() -> None:
    data = yaml.safe_load(MULTI_YAML)
    data["intents"][0]["slots"][2] = {"name": "note", "pattern": "note: (.+)"}
    talk = Conversation(book(data))
    talk.say("send")
    talk.say("note: rent")
    assert talk.state["slots"] == {"note": "rent"}
    assert replies(talk.say("40")) == ["Who should get 40?"]
    assert replies(talk.say("Bob")) == ["Sending 40 to Bob (rent)."]


# -- steps -----------------------------------------------------------------------------------------


def test_tool_results_feed_later_steps() -> None:
    tools = orders_tools()
    talk = Conversation(book(ORDERS_YAML), tools, variables={"existing": 1})
    outcome = talk.say("order ab-1234")
    assert outcome.actions == [
        ToolCalled("lookup_order", {"order_id": "AB-1234"}, {"output": {"status": "shipped"}}),
        VariablesSet({"last_order": "AB-1234"}),
        Reply("Order AB-1234 is shipped."),
    ]
    assert outcome.variables == {"existing": 1, "last_order": "AB-1234"}
    assert tools.calls == [("lookup_order", {"order_id": "AB-1234"})]


def test_when_skips_steps_and_end_session_stops() -> None:
    outcome = Conversation(book(ORDERS_YAML), orders_tools()).say("order zz-0000")
    assert outcome.actions[1:] == [
        Reply("I could not find order ZZ-0000."),
        EndSession("order ZZ-0000 not found"),
    ]
    assert outcome.state == {} and outcome.variables == {}


def test_end_session_may_escalate_to_a_human_agent() -> None:
    data = {"intents": [{"name": "a", "keywords": ["person"], "steps": [
        {"endSession": {"reason": "asked for {{ input.text }}", "sessionEscalated": True}}]}]}
    assert Conversation(book(data)).say("a person").actions == [EndSession("asked for a person", True)]


def test_transfer_stops_the_steps() -> None:
    data = {
        "intents": [{"name": "a", "keywords": ["go"], "steps": [{"transfer": "other"}, {"reply": "never"}]}]
    }
    outcome = Conversation(book(data)).say("go")
    assert outcome.actions == [Transfer("other")] and outcome.state == {}


def test_tool_args_keep_their_types() -> None:
    data = {
        "intents": [
            {
                "name": "a",
                "patterns": [r"buy (?P<n>\d+)"],
                "slots": [{"name": "n", "type": "integer"}],
                "steps": [
                    {
                        "callTool": {
                            "tool": "shop",
                            "args": {
                                "n": "{{ slots.n }}",
                                "double": "{{ slots.n * 2 }}",
                                "label": "{{ slots.n }} units",
                                "flags": {
                                    "gift": "{{ variables.gift }}",
                                    "list": ["{{ variables.tags }}", 1.5, None],
                                },
                                "literal": True,
                            },
                        }
                    }
                ],
            }
        ]
    }
    tools = Tools()
    Conversation(book(data), tools, variables={"gift": False, "tags": ["a", "b"]}).say("buy 3")
    assert tools.calls == [
        (
            "shop",
            {
                "n": 3,
                "double": 6,
                "label": "3 units",
                "flags": {"gift": False, "list": [["a", "b"], 1.5, None]},
                "literal": True,
            },
        )
    ]


def test_results_are_kept_under_the_tool_id_without_as() -> None:
    data = {"fallback": [{"callTool": {"tool": "weather"}}, {"reply": "{{ results.weather.output.ok }}"}]}
    assert replies(Conversation(book(data)).say("hi")) == ["True"]


def test_a_failing_tool_becomes_an_error_response() -> None:
    data = {"fallback": [{"callTool": {"tool": "t", "as": "r"}}, {"reply": "{{ results.r.error }}"}]}
    tools = Tools({"t": ToolFailure("backend down", code="UNAVAILABLE")})
    outcome = Conversation(book(data), tools).say("x")
    assert outcome.actions == [ToolCalled("t", {}, {"error": "backend down"}), Reply("backend down")]


def test_a_failing_template_ends_the_steps_with_the_error_reply() -> None:
    data = {
        "intents": [
            {
                "name": "a",
                "keywords": ["go"],
                "steps": [{"reply": "one"}, {"reply": "{{ results.nothing.output }}"}, {"reply": "never"}],
            }
        ],
        "errorReply": "Oops.",
    }
    outcome = Conversation(book(data)).say("go")
    assert replies(outcome) == ["one", "Oops."] and outcome.state == {}
    assert outcome.error == "intents[0].steps[1].reply: 'dict object' has no attribute 'nothing'"


def test_failing_conditions_arguments_and_prompts_are_reported_too() -> None:
    base: dict[str, Any] = {"intents": [{"name": "a", "keywords": ["go"], "steps": []}]}
    cases = [
        ({"when": "missing.thing", "reply": "x"}, "intents[0].steps[0].when: "),
        ({"callTool": {"tool": "t", "args": {"a": "{{ 1 / 0 }}"}}}, "intents[0].steps[0].callTool.args: "),
        ({"setVariables": {"a": "{{ ''.__class__ }}"}}, "intents[0].steps[0].setVariables: not allowed"),
        ({"endSession": {"reason": "{{ nope }}"}}, "intents[0].steps[0].endSession.reason: "),
    ]
    for step, where in cases:
        data = copy.deepcopy(base)
        data["intents"][0]["steps"] = [step]
        outcome = Conversation(book(data)).say("go")
        assert replies(outcome) == [playbooks.DEFAULT_ERROR_REPLY]
        assert outcome.error is not None and outcome.error.startswith(where), outcome.error
    data = {
        "intents": [
            {
                "name": "a",
                "keywords": ["go"],
                "slots": [{"name": "s", "required": True, "prompt": "{{ nope }}"}],
                "steps": [],
            }
        ]
    }
    outcome = Conversation(book(data)).say("go")
    assert outcome.error is not None and outcome.error.startswith("intents[0].slots[0].prompt: ")
    assert outcome.state == {}


def test_a_reply_that_renders_to_nothing_is_left_out() -> None:
    data = {
        "fallback": [
            {"reply": "{% if variables.get('vip') %}Welcome back!{% endif %}"},
            {"reply": "How can I help?"},
        ]
    }
    assert replies(Conversation(book(data)).say("hi")) == ["How can I help?"]
    assert replies(Conversation(book(data), variables={"vip": True}).say("hi")) == [
        "Welcome back!",
        "How can I help?",
    ]


def test_an_answer_can_fill_the_slot_through_the_intent_pattern() -> None:
    data = {
        "intents": [
            {
                "name": "status",
                "patterns": [r"order (?P<id>\d+)"],
                "keywords": ["status"],
                "slots": [{"name": "id", "type": "integer", "required": True, "prompt": "Which order?"}],
                "steps": [{"reply": "{{ slots.id + 1 }}"}],
            }
        ]
    }
    talk = Conversation(book(data))
    assert replies(talk.say("status please")) == ["Which order?"]
    assert replies(talk.say("it is order 41")) == ["42"]


def test_templates_see_the_input() -> None:
    data = {
        "fallback": [{"reply": "You said: {{ input.text }}"}],
        "events": {"e": [{"reply": "{{ input.event }}"}]},
    }
    talk = Conversation(book(data))
    assert replies(talk.say("hello")) == ["You said: hello"]
    assert replies(talk.event("e")) == ["e"]


def test_the_step_backstop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(playbooks, "MAX_STEPS_PER_TURN", 3)
    data = {"fallback": [{"reply": str(n)} for n in range(5)]}
    outcome = Conversation(book(data)).say("x")
    assert replies(outcome) == ["0", "1", "2", playbooks.DEFAULT_ERROR_REPLY]
    assert outcome.error == "fallback[3]: more than 3 steps in one turn"


# -- client tools -------------------------------------------------------------------------------------


CLIENT_YAML = r"""
intents:
  - name: locate
    keywords: [where]
    slots: [{name: place, values: {"home": ["house"]}}]
    steps:
      - reply: "Let me check."
      - callTool: {tool: gps, args: {precise: "{{ slots.place == 'home' }}"}, as: position}
      - reply: >-
          You are at {{ results.position.output.lat }}, {{ results.position.output.lng }} ({{ input.text }}).
      - setVariables: {located: true}
"""


def test_a_client_tool_pauses_the_steps_until_its_response() -> None:
    talk = Conversation(book(CLIENT_YAML), Tools({"gps": None}))
    first = talk.say("where is my house")
    assert first.actions == [Reply("Let me check."), AwaitingClient("gps", {"precise": True})]
    assert talk.state["pending"] == "tool" and talk.state["step"] == 1
    second = talk.respond({"output": {"lat": 1.5, "lng": 2}})
    assert second.actions == [
        Reply("You are at 1.5, 2 (where is my house)."),
        VariablesSet({"located": True}),
    ]
    assert second.intent == "locate" and talk.state == {} and talk.variables == {"located": True}


def test_a_tool_response_with_nothing_pending_does_nothing() -> None:
    talk = Conversation(book(CLIENT_YAML))
    outcome = talk.respond({"output": 1})
    assert outcome.actions == [] and outcome.state == {}


def test_new_text_gives_up_a_pending_client_tool() -> None:
    talk = Conversation(book(CLIENT_YAML), Tools({"gps": None}))
    talk.say("where am I")
    outcome = talk.say("never mind")
    assert outcome.intent is None and talk.state == {}
    assert talk.respond({"output": {}}).actions == []


def test_a_client_tool_in_an_event_keeps_the_slot_being_asked_for() -> None:
    data = yaml.safe_load(MULTI_YAML)
    data["events"] = {"ping": [{"callTool": {"tool": "beep"}}, {"reply": "still there?"}]}
    talk = Conversation(book(data), Tools({"beep": None}))
    talk.say("send")
    assert talk.event("ping").actions == [AwaitingClient("beep", {})]
    assert replies(talk.respond({"output": "ok"})) == ["still there?"]
    assert talk.state["pending"] == "slot" and talk.state["slot"] == "amount"
    assert replies(talk.say("5")) == ["Who should get 5?"]


# -- events and fallback ---------------------------------------------------------------------------


def test_events_run_their_steps_and_unknown_events_do_nothing() -> None:
    talk = Conversation(book(ORDERS_YAML), orders_tools())
    assert replies(talk.event("welcome")) == ["Hi! How can I help?"]
    talk.say("where is my order")
    pending = talk.state
    unknown = talk.event("no_such_event")
    assert unknown.actions == [] and talk.state == pending
    assert replies(talk.event("welcome")) == ["Hi! How can I help?"]
    assert talk.state == pending  # the question still stands
    assert replies(talk.say("AB-1234")) == ["Order AB-1234 is shipped."]


def test_fallback_without_steps_does_nothing() -> None:
    assert Conversation(book({"intents": [intent("a", keywords=["a"])]})).say("b").actions == []


# -- determinism and state --------------------------------------------------------------------------


def script(playbook: Playbook) -> list[Outcome]:
    talk = Conversation(playbook, orders_tools())
    talk.event("welcome")
    talk.say("hello there")
    talk.say("track my package")
    talk.say("hmm")
    talk.say("AB-1234")
    talk.say("order zz-0000")
    talk.say("refund please")
    return talk.outcomes


def test_the_same_inputs_give_the_same_conversation() -> None:
    first = script(book(ORDERS_YAML))
    second = script(book(ORDERS_YAML))
    assert first == second
    assert [json.dumps(o.state, sort_keys=True) for o in first] == [
        json.dumps(o.state, sort_keys=True) for o in second
    ]
    assert first[-1].actions == [Transfer("refunds")]


def test_the_engine_does_not_mutate_its_inputs() -> None:
    playbook = book(MULTI_YAML)
    state: dict[str, Any] = {}
    variables = {"a": {"b": [1]}}
    outcome = playbook.on_text(state, "send", variables, Tools())
    snapshot_state, snapshot_vars = copy.deepcopy(outcome.state), copy.deepcopy(variables)
    playbook.on_text(outcome.state, "12", variables, Tools())
    assert outcome.state == snapshot_state and variables == snapshot_vars and state == {}


def test_a_state_that_no_longer_fits_the_definition_is_ignored() -> None:
    talk = Conversation(book(MULTI_YAML))
    talk.say("send")
    renamed = yaml.safe_load(MULTI_YAML)
    renamed["intents"][0]["name"] = "pay"
    outcome = book(renamed).on_text(talk.state, "balance", {}, Tools())
    assert replies(outcome) == ["You have 10."]
    for junk in (
        {"pending": "slot"},
        {"pending": "tool", "block": "intent:nope", "step": 0},
        {"x": 1},
        {"pending": 3},
    ):
        assert book(MULTI_YAML).on_text(junk, "zzz", {}, Tools()).actions == [Reply("I did not get that.")]
        assert book(CLIENT_YAML).on_tool_response(junk, {"output": 1}, {}, Tools()).actions == []


# -- hostile input --------------------------------------------------------------------------------


def test_huge_inputs_are_cut_and_handled_quickly() -> None:
    playbook = book(
        {
            "intents": [
                intent("p", patterns=[r"\w+ order", r"order.*(?P<id>\d+)", r"(?P<x>\w+)\s+(?P<y>\w+)!"]),
                {**intent("s", keywords=["zzz"]), "slots": [{"name": "v", "pattern": r"[a-z]+\d+x"}]},
            ],
            "fallback": [{"reply": "{{ input.text | length }}"}],
        }
    )
    for text in ("a" * 100_000, "a" * 50_000 + "!", "order " * 20_000, "a1" * 50_000, "é " * 50_000):
        with quick():
            outcome = Conversation(playbook).say(text)
        assert replies(outcome) == [str(playbooks.MAX_INPUT_TEXT)] or outcome.intent is not None


def test_catastrophic_patterns_never_reach_the_matcher() -> None:
    with quick():
        bad({"intents": [intent("a", patterns=["(a+)+$"])]}, "regular expression refused")
    # The same shape made safe with an atomic group: no backtracking, however long the input.
    playbook = book({"intents": [intent("a", patterns=["(?>a+)+b"])], "fallback": [{"reply": "no"}]})
    with quick():
        assert replies(Conversation(playbook).say("a" * 50_000)) == ["no"]
        assert replies(Conversation(playbook).say("a" * 500 + "!")) == ["no"]
        assert Conversation(playbook).say("a" * 500 + "b").intent == "a"


def test_patterns_see_only_the_start_of_a_long_input() -> None:
    playbook = book({"intents": [intent("late", patterns=["needle"])], "fallback": [{"reply": "no"}]})
    assert Conversation(playbook).say("x " * 400 + "needle").intent == "late"
    assert Conversation(playbook).say("x " * 600 + "needle").intent is None


def test_slot_answers_are_capped_too() -> None:
    talk = Conversation(book(MULTI_YAML))
    talk.say("send 5")
    outcome = talk.say("x" * 100_000)
    assert replies(outcome) == ["Sending 5 to " + "x" * playbooks.MAX_INPUT_TEXT + "."]


def test_a_definition_read_to_run_it_compiles_its_templates_as_they_are_first_rendered() -> None:
    from convener.ces.runtime import templates

    reply = "{{ 'lazily compiled ' ~ slots.what }}"
    unused = "{{ 'never rendered' }}"
    data = {"intents": [{"name": "a", "patterns": [r"go (?P<what>\w+)"], "steps": [{"reply": reply}]},
                        {"name": "b", "keywords": ["other"], "steps": [{"reply": unused}]}]}
    templates._compile_template.cache_clear()
    definition = PlaybookDefinition.parse(data, FIELD, compile_templates=False)
    assert templates._compile_template.cache_info().currsize == 0
    assert replies(Conversation(Playbook(definition)).say("go now")) == ["lazily compiled now"]
    assert templates._compile_template.cache_info().currsize == 1, "the template rendered, not the other one"
    with pytest.raises(InvalidArgument, match=r"intents\[1\]\.steps\[0\]\.reply: bad template"):
        PlaybookDefinition.parse({**data, "intents": [data["intents"][0], {
            "name": "b", "keywords": ["other"], "steps": [{"reply": "{{"}]}]}, FIELD)


def test_a_bad_template_read_back_unchecked_fails_its_render_with_the_error_reply() -> None:
    # As a definition written before a check existed would be: its regular expressions are checked again all
    # the same (not its templates), and a template that cannot compile fails the turn that renders it.
    data = {"intents": [{"name": "a", "keywords": ["go"], "steps": [{"reply": "one"}, {"reply": "{{"}]}],
            "errorReply": "Oops."}
    outcome = Conversation(Playbook(PlaybookDefinition.parse(data, FIELD, compile_templates=False))).say("go")
    assert replies(outcome) == ["one", "Oops."]
    assert outcome.error is not None and "bad template" in outcome.error
    with pytest.raises(InvalidArgument, match="regular expression refused"):
        PlaybookDefinition.parse({"intents": [{"name": "a", "patterns": ["(a+)+$"], "steps": []}]}, FIELD,
                                 compile_templates=False)
