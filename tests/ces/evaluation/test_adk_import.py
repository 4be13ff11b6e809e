"""Importing Google ADK eval files (*.evalset.json, the older *.test.json) as golden evaluations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from convener.api.errors import InvalidArgument
from convener.ces.evaluation.adk import AdkEvaluation, evaluations_from_adk
from convener.ces.names import AppName

APP = AppName("demo", "us", "dice")
TOOLS = "projects/demo/locations/us/apps/dice/tools"
AGENTS = "projects/demo/locations/us/apps/dice/agents"

# An EvalSet as `adk eval` and the eval sets manager write it: snake_case, nulls for unset fields.
SNAKE_EVALSET = """
{
  "eval_set_id": "dice_regression",
  "name": "dice_regression",
  "description": null,
  "eval_cases": [
    {
      "eval_id": "roll_and_check_prime",
      "conversation": [
        {
          "invocation_id": "e-1",
          "user_content": {"parts": [{"text": "Hi, what can you do?"}], "role": "user"},
          "final_response": {
            "parts": [{"text": "I can roll dice of any size and check whether numbers are prime."}],
            "role": "model"
          },
          "intermediate_data": {"tool_uses": [], "tool_responses": [], "intermediate_responses": []},
          "creation_timestamp": 1747000000.5
        },
        {
          "invocation_id": "e-2",
          "user_content": {
            "parts": [{"text": "Roll a 6-sided die"}, {"text": "and tell me if the result is prime."}],
            "role": "user"
          },
          "final_response": {
            "parts": [
              {"text": "Let me think about it.", "thought": true},
              {"text": "I rolled a 5, and 5 is a prime number."}
            ],
            "role": "model"
          },
          "intermediate_data": {
            "tool_uses": [
              {"id": "adk-1", "args": {"sides": 6}, "name": "roll_die"},
              {"id": "adk-2", "args": {"nums": [5]}, "name": "check_prime"}
            ],
            "tool_responses": [
              {"id": "adk-2", "name": "check_prime", "response": {"result": "5 are prime numbers."}},
              {"id": "adk-1", "name": "roll_die", "response": {"result": 5}}
            ],
            "intermediate_responses": [["dice_agent", [{"text": "Rolling the die now."}]]]
          },
          "creation_timestamp": 1747000001.0
        }
      ],
      "session_input": {"app_name": "hello_world", "user_id": "user", "state": {"user_tier": "gold"}},
      "creation_timestamp": 1747000000.0
    },
    {
      "eval_id": "greeting case?",
      "conversation": [
        {
          "invocation_id": "e-3",
          "user_content": {"parts": [{"text": "hello"}], "role": "user"},
          "final_response": {"parts": [{"text": "Hello! Want me to roll a die?"}], "role": "model"},
          "intermediate_data": null
        }
      ],
      "session_input": {"app_name": "hello_world", "user_id": "user", "state": {}},
      "final_session_state": {"greeted": true}
    }
  ],
  "creation_timestamp": 1747000000.0
}
"""

# The same eval set as the adk web API serialises it: camelCase aliases.
CAMEL_EVALSET = """
{
  "evalSetId": "dice_regression",
  "name": "dice_regression",
  "evalCases": [
    {
      "evalId": "roll_and_check_prime",
      "conversation": [
        {
          "invocationId": "e-1",
          "userContent": {"parts": [{"text": "Hi, what can you do?"}], "role": "user"},
          "finalResponse": {
            "parts": [{"text": "I can roll dice of any size and check whether numbers are prime."}],
            "role": "model"
          },
          "intermediateData": {"toolUses": [], "toolResponses": [], "intermediateResponses": []},
          "creationTimestamp": 1747000000.5
        },
        {
          "invocationId": "e-2",
          "userContent": {
            "parts": [{"text": "Roll a 6-sided die"}, {"text": "and tell me if the result is prime."}],
            "role": "user"
          },
          "finalResponse": {
            "parts": [
              {"text": "Let me think about it.", "thought": true},
              {"text": "I rolled a 5, and 5 is a prime number."}
            ],
            "role": "model"
          },
          "intermediateData": {
            "toolUses": [
              {"id": "adk-1", "args": {"sides": 6}, "name": "roll_die"},
              {"id": "adk-2", "args": {"nums": [5]}, "name": "check_prime"}
            ],
            "toolResponses": [
              {"id": "adk-2", "name": "check_prime", "response": {"result": "5 are prime numbers."}},
              {"id": "adk-1", "name": "roll_die", "response": {"result": 5}}
            ],
            "intermediateResponses": [["dice_agent", [{"text": "Rolling the die now."}]]]
          }
        }
      ],
      "sessionInput": {"appName": "hello_world", "userId": "user", "state": {"user_tier": "gold"}}
    },
    {
      "evalId": "greeting case?",
      "conversation": [
        {
          "userContent": {"parts": [{"text": "hello"}], "role": "user"},
          "finalResponse": {"parts": [{"text": "Hello! Want me to roll a die?"}], "role": "model"}
        }
      ],
      "sessionInput": {"appName": "hello_world", "userId": "user", "state": {}},
      "finalSessionState": {"greeted": true}
    }
  ]
}
"""

ROLL_AND_CHECK = {
    "displayName": "roll_and_check_prime",
    "description": 'Imported from ADK eval set "dice_regression" (evals/dice_regression.evalset.json), '
                   'eval case "roll_and_check_prime". Not imported: 1 intermediate response, 1 thought part.',
    "tags": ["adk", "dice_regression"],
    "golden": {
        "turns": [
            {
                "steps": [
                    {"userInput": {"variables": {"user_tier": "gold"}}},
                    {"userInput": {"text": "Hi, what can you do?"}},
                    {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                        {"text": "I can roll dice of any size and check whether numbers are prime."}]}}},
                ]
            },
            {
                "steps": [
                    {"userInput": {"text": "Roll a 6-sided die\nand tell me if the result is prime."}},
                    {"expectation": {"toolCall": {"tool": f"{TOOLS}/roll_die", "args": {"sides": 6}}}},
                    {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/roll_die", "response": {"result": 5}}}},
                    {"expectation": {"toolCall": {"tool": f"{TOOLS}/check_prime", "args": {"nums": [5]}}}},
                    {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/check_prime",
                                                          "response": {"result": "5 are prime numbers."}}}},
                    {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                        {"text": "I rolled a 5, and 5 is a prime number."}]}}},
                ]
            },
        ]
    },
}

GREETING = {
    "displayName": "greeting case?",
    "description": 'Imported from ADK eval set "dice_regression" (evals/dice_regression.evalset.json), '
                   'eval case "greeting case?". Not imported: 1 expected final session state.',
    "tags": ["adk", "dice_regression"],
    "golden": {
        "turns": [
            {
                "steps": [
                    {"userInput": {"text": "hello"}},
                    {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                        {"text": "Hello! Want me to roll a die?"}]}}},
                ]
            }
        ]
    },
}


def _import(content: str | bytes | Any, source: str = "evals/dice_regression.evalset.json") -> list[AdkEvaluation]:
    if not isinstance(content, str | bytes):
        content = json.dumps(content)
    return evaluations_from_adk(content, APP, source=source)


def _rejects(content: str | bytes | Any, message: str) -> str:
    with pytest.raises(InvalidArgument) as caught:
        _import(content)
    assert message in caught.value.message, caught.value.message
    return caught.value.message


def _eval_set(*cases: Any, **extra: Any) -> dict[str, Any]:
    return {"eval_set_id": "s", "eval_cases": list(cases), **extra}


def _case(*invocations: Any, eval_id: Any = "c", **extra: Any) -> dict[str, Any]:
    return {"eval_id": eval_id, "conversation": list(invocations), **extra}


def _invocation(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"user_content": {"parts": [{"text": text}], "role": "user"}, **extra}


# --- the EvalSet format ----------------------------------------------------------------------


def test_a_snake_case_eval_set_becomes_one_golden_per_eval_case() -> None:
    imported = _import(SNAKE_EVALSET)

    assert [item.evaluation_id for item in imported] == ["roll_and_check_prime", "greeting-case"]
    assert imported[0].evaluation.to_json() == ROLL_AND_CHECK
    assert imported[1].evaluation.to_json() == GREETING


def test_a_camel_case_eval_set_gives_the_same_evaluations() -> None:
    snake = _import(SNAKE_EVALSET)
    camel = _import(CAMEL_EVALSET)

    assert [item.evaluation_id for item in camel] == [item.evaluation_id for item in snake]
    assert [item.evaluation.to_json() for item in camel] == [ROLL_AND_CHECK, GREETING]


def test_bytes_with_a_byte_order_mark_are_read_as_utf8() -> None:
    imported = _import(b"\xef\xbb\xbf" + SNAKE_EVALSET.encode())

    assert imported[0].evaluation.to_json() == ROLL_AND_CHECK


def test_invocation_events_map_calls_responses_and_transfers_in_order() -> None:
    content = _eval_set(_case(
        {
            "userContent": {"parts": [{"text": "Book me a table for two"}], "role": "user"},
            "finalResponse": {"parts": [{"text": "Your table for two is booked for 7 pm."}], "role": "model"},
            "intermediateData": {"invocationEvents": [
                {"author": "host", "content": {"role": "model", "parts": [
                    {"text": "planning", "thought": True},
                    {"functionCall": {"id": "t-1", "name": "transfer_to_agent",
                                      "args": {"agent_name": "booking_agent"}}},
                ]}},
                {"author": "host", "content": {"role": "user", "parts": [
                    {"functionResponse": {"id": "t-1", "name": "transfer_to_agent", "response": {}}},
                ]}},
                {"author": "booking_agent", "content": {"role": "model", "parts": [
                    {"text": "Checking availability."},
                    {"function_call": {"name": "find_table", "args": {"party_size": 2}}},
                ]}},
                {"author": "booking_agent", "content": {"role": "user", "parts": [
                    {"function_response": {"name": "find_table", "response": {"slot": "19:00"}}},
                ]}},
                {"author": "booking_agent", "content": {"role": "model", "parts": [
                    {"executableCode": {"code": "print(1)", "language": "PYTHON"}},
                ]}},
            ]},
        },
        eval_id="book_table",
    ))

    [imported] = _import(content, source="")

    assert imported.evaluation_id == "book_table"
    assert imported.evaluation.to_json() == {
        "displayName": "book_table",
        "description": 'Imported from ADK eval set "s", eval case "book_table". '
                       "Not imported: 1 intermediate response, 1 non-text part of a response, 1 thought part.",
        "tags": ["adk", "s"],
        "golden": {"turns": [{"steps": [
            {"userInput": {"text": "Book me a table for two"}},
            {"expectation": {"agentTransfer": {"targetAgent": f"{AGENTS}/booking_agent"}}},
            {"expectation": {"toolCall": {"tool": f"{TOOLS}/find_table", "args": {"party_size": 2}}}},
            {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/find_table", "response": {"slot": "19:00"}}}},
            {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                {"text": "Your table for two is booked for 7 pm."}]}}},
        ]}]},
    }


def test_tool_responses_pair_with_calls_by_id_then_by_name_and_unanswered_ones_follow() -> None:
    content = _eval_set(_case(_invocation(
        "roll twice and look up the weather",
        intermediate_data={
            "tool_uses": [
                {"name": "roll_die", "args": {"sides": 6}},
                {"name": "roll_die", "args": {"sides": 20}},
                {"name": "get_weather"},
            ],
            "tool_responses": [
                {"name": "roll_die", "response": {"result": 4}},
                {"name": "roll_die", "response": {"result": 17}},
                {"name": "log_event", "response": {"ok": True}},
                {"name": "get_weather"},
            ],
        },
    )))

    [imported] = _import(content)

    steps = imported.evaluation.to_json()["golden"]["turns"][0]["steps"]
    assert steps == [
        {"userInput": {"text": "roll twice and look up the weather"}},
        {"expectation": {"toolCall": {"tool": f"{TOOLS}/roll_die", "args": {"sides": 6}}}},
        {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/roll_die", "response": {"result": 4}}}},
        {"expectation": {"toolCall": {"tool": f"{TOOLS}/roll_die", "args": {"sides": 20}}}},
        {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/roll_die", "response": {"result": 17}}}},
        {"expectation": {"toolCall": {"tool": f"{TOOLS}/get_weather"}}},
        {"expectation": {"mockToolResponse": {"tool": f"{TOOLS}/log_event", "response": {"ok": True}}}},
    ]
    assert "1 tool response without a response body" in (imported.evaluation.description or "")


def test_an_invocation_without_a_final_response_expects_only_its_tool_calls() -> None:
    content = _eval_set(_case(_invocation(
        "start indexing",
        final_response={"parts": [{"text": None}], "role": "model"},
        intermediate_data={"tool_uses": [{"id": None, "args": {}, "name": "start_indexing"}]},
    )))

    [imported] = _import(content)

    assert imported.evaluation.to_json()["golden"]["turns"] == [{"steps": [
        {"userInput": {"text": "start indexing"}},
        {"expectation": {"toolCall": {"tool": f"{TOOLS}/start_indexing", "args": {}}}},
    ]}]


def test_rubrics_are_counted_in_the_description() -> None:
    rubric = {"rubric_id": "r1", "rubric_content": {"text_property": "Is polite."}}
    content = _eval_set(_case(_invocation(rubrics=[rubric]), rubrics=[rubric, rubric]))

    [imported] = _import(content)

    assert imported.evaluation.description == (
        'Imported from ADK eval set "s" (evals/dice_regression.evalset.json), eval case "c". Not imported: 3 rubrics.')


def test_an_empty_eval_set_imports_nothing() -> None:
    assert _import('{"eval_set_id": "evalset49e1df", "name": "evalset49e1df", "description": null, '
                   '"eval_cases": [], "creation_timestamp": 1754018129.043422}') == []
    assert _import("[]") == []


@pytest.mark.parametrize(
    ("eval_ids", "evaluation_ids"),
    [
        (["tests/fixture/flow.test.json"], ["tests-fixture-flow.test.json"]),
        (["a b", "a/b", "a-b"], ["a-b", "a-b-2", "a-b-3"]),
        (["???", "日本語のケース", "--x--"], ["case-1", "case-2", "x"]),
        (["_private", "~tilde", ".dot"], ["private", "tilde", "dot"]),
        (["x" * 200], ["x" * 128]),
        (["x" * 200, "x" * 201], ["x" * 128, "x" * 126 + "-2"]),
        (["ok.id~v1_2-3"], ["ok.id~v1_2-3"]),
    ],
)
def test_evaluation_ids_are_eval_ids_made_safe_and_unique(eval_ids: list[str], evaluation_ids: list[str]) -> None:
    imported = _import(_eval_set(*(_case(_invocation(), eval_id=eval_id) for eval_id in eval_ids)))

    assert [item.evaluation_id for item in imported] == evaluation_ids
    assert [item.evaluation.display_name for item in imported] == eval_ids


# --- the older formats -----------------------------------------------------------------------


OLD_TEST_FILE = """
[
  {
    "query": "hi",
    "expected_tool_use": [],
    "expected_intermediate_agent_responses": [],
    "reference": "Hello! What can I do for you?\\n"
  },
  {
    "query": "Turn off device_2 in the Bedroom.",
    "expected_tool_use": [
      {"tool_name": "transfer_to_agent", "tool_input": {"agent_name": "device_agent"}},
      {"tool_name": "set_device_info", "tool_input": {"location": "Bedroom", "device_id": "device_2", "status": "OFF"}}
    ],
    "expected_intermediate_agent_responses": [{"author": "root_agent", "text": "Handing over to the device agent."}],
    "reference": "I have set the device_2 status to off."
  },
  {
    "query": "What's the status of device_2?",
    "expected_tool_use": [{"tool_name": "get_device_info", "tool_input": {"device_id": "device_2"}}],
    "expected_intermediate_agent_responses": []
  }
]
"""


def test_an_older_test_file_is_one_evaluation_named_after_the_file() -> None:
    [imported] = _import(OLD_TEST_FILE, source="tests/fixture/home_automation_agent/simple_test.test.json")

    assert imported.evaluation_id == "simple_test"
    assert imported.evaluation.to_json() == {
        "displayName": "simple_test",
        "description": 'Imported from the ADK test file tests/fixture/home_automation_agent/simple_test.test.json, '
                       'eval case "simple_test". Not imported: 1 intermediate response.',
        "tags": ["adk", "simple_test"],
        "golden": {"turns": [
            {"steps": [
                {"userInput": {"text": "hi"}},
                {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                    {"text": "Hello! What can I do for you?\n"}]}}},
            ]},
            {"steps": [
                {"userInput": {"text": "Turn off device_2 in the Bedroom."}},
                {"expectation": {"agentTransfer": {"targetAgent": f"{AGENTS}/device_agent"}}},
                {"expectation": {"toolCall": {"tool": f"{TOOLS}/set_device_info", "args": {
                    "location": "Bedroom", "device_id": "device_2", "status": "OFF"}}}},
                {"expectation": {"agentResponse": {"role": "agent", "chunks": [
                    {"text": "I have set the device_2 status to off."}]}}},
            ]},
            {"steps": [
                {"userInput": {"text": "What's the status of device_2?"}},
                {"expectation": {"toolCall": {"tool": f"{TOOLS}/get_device_info", "args": {"device_id": "device_2"}}}},
            ]},
        ]},
    }


def test_an_older_test_file_without_a_source_is_called_adk_test() -> None:
    [imported] = _import('[{"query": "hi", "reference": "Hello"}]', source="")

    assert imported.evaluation_id == "adk-test"
    assert imported.evaluation.display_name == "adk-test"
    assert imported.evaluation.description == 'Imported from an ADK test file, eval case "adk-test".'


def test_an_older_eval_set_list_is_one_evaluation_per_named_session() -> None:
    content = [
        {
            "name": "roll_17_sided_dice_twice",
            "data": [
                {"query": "What can you do?", "expected_tool_use": [], "reference": "I can roll dice."},
                {"query": "Roll a 17 sided dice twice for me",
                 "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 17}},
                                       {"tool_name": "roll_die", "tool_input": {"sides": 17}}],
                 "reference": "I rolled 13 and 4."},
            ],
            "initial_session": {"state": {"lang": "en"}, "app_name": "hello_world", "user_id": "user"},
        },
        {"name": "greet", "data": [{"query": "hello"}], "initial_session": {}},
    ]

    imported = _import(content, source="eval_data1.evalset.json")

    assert [item.evaluation_id for item in imported] == ["roll_17_sided_dice_twice", "greet"]
    assert imported[0].evaluation.to_json() == {
        "displayName": "roll_17_sided_dice_twice",
        "description": 'Imported from ADK eval set "eval_data1" (eval_data1.evalset.json), '
                       'eval case "roll_17_sided_dice_twice".',
        "tags": ["adk", "eval_data1"],
        "golden": {"turns": [
            {"steps": [
                {"userInput": {"variables": {"lang": "en"}}},
                {"userInput": {"text": "What can you do?"}},
                {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "I can roll dice."}]}}},
            ]},
            {"steps": [
                {"userInput": {"text": "Roll a 17 sided dice twice for me"}},
                {"expectation": {"toolCall": {"tool": f"{TOOLS}/roll_die", "args": {"sides": 17}}}},
                {"expectation": {"toolCall": {"tool": f"{TOOLS}/roll_die", "args": {"sides": 17}}}},
                {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "I rolled 13 and 4."}]}}},
            ]},
        ]},
    }
    assert imported[1].evaluation.to_json()["golden"] == {"turns": [{"steps": [{"userInput": {"text": "hello"}}]}]}


# --- hostile input ---------------------------------------------------------------------------

MB = 1024 * 1024


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the content is empty"),
        ("  \n", "the content is empty"),
        ("eval_set_id: x", "not JSON: Expecting value at line 1 column 1"),
        ('{"eval_set_id": "s", "eval_cases": [', "not JSON"),
        (b"\xff\xfe{}", "not UTF-8: invalid byte at offset 0"),
        ("42", "an ADK eval file holds a JSON object (an EvalSet) or a list (the older test format), not a number"),
        ('"evalset"', "not a string"),
        ("{}", "content: not an ADK EvalSet (eval_set_id and eval_cases are required)"),
        ('{"eval_id": "c", "conversation": []}', "this is a single EvalCase"),
        ('{"eval_cases": []}', "content: eval_set_id is required"),
        ('{"eval_set_id": 7, "eval_cases": []}', "eval_set_id: expected a string, got a number"),
        ('{"eval_set_id": " ", "eval_cases": []}', "eval_set_id: must not be empty"),
        ('{"eval_set_id": "s", "eval_cases": {}}', "eval_cases: expected a list, got an object"),
        ('{"eval_set_id": "s", "eval_cases": [null]}', "eval_cases[0]: expected an object, got null"),
        ('{"eval_set_id": "s", "evalSetId": "t", "eval_cases": []}',
         "content: eval_set_id and evalSetId are both set, to different values"),
        ('{"eval_set_id": "s", "eval_cases": [], "x": NaN}', "not JSON: NaN is not a JSON number"),
        ('{"eval_set_id": "s", "eval_cases": [], "x": -Infinity}', "not JSON: -Infinity is not a JSON number"),
        ('{"eval_set_id": "s", "eval_cases": [], "x": 1e999}', "content.x: numbers must be finite"),
        ('{"eval_set_id": "s\\u0000", "eval_cases": []}', "content.eval_set_id: text must not contain NUL"),
        ('{"eval_set_id": "\\ud800", "eval_cases": []}', "a lone surrogate was found"),
        ("[" * 100_000 + "]" * 100_000, "the content is nested too deeply"),
        ("[1, 2]", "[0]: expected an object, got a number"),
    ],
)
def test_malformed_files_are_rejected_with_the_place_and_reason(content: str | bytes, message: str) -> None:
    _rejects(content, message)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ({"conversation": [_invocation()]}, "eval_cases[0]: eval_id is required"),
        (_case(_invocation(), eval_id=12), "eval_cases[0].eval_id: expected a string, got a number"),
        (_case(_invocation(), eval_id=""), "eval_cases[0].eval_id: must not be empty"),
        (_case(_invocation(), eval_id="x" * 513), "eval_cases[0].eval_id: longer than 512 characters"),
        ({"eval_id": "c"}, "eval_cases[0]: conversation is required"),
        ({"eval_id": "c", "conversation": None}, "eval_cases[0]: conversation is required"),
        (_case(), "eval_cases[0].conversation: the conversation is empty; a golden needs at least one turn"),
        ({"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}},
         "eval_cases[0]: conversation scenarios (a simulated user) are not imported"),
        ({"eval_id": "c", "conversation": "hi"}, "eval_cases[0].conversation: expected a list, got a string"),
        (_case(*[_invocation()] * 101), "eval_cases[0].conversation: 101 invocations; a golden has at most 100"),
        (_case({"final_response": {"parts": [{"text": "x"}]}}), "eval_cases[0].conversation[0]: user_content is required"),
        (_case({"userContent": "hi"}), "eval_cases[0].conversation[0].userContent: expected an object, got a string"),
        (_case({"user_content": {"parts": {"text": "hi"}}}),
         "eval_cases[0].conversation[0].user_content.parts: expected a list, got an object"),
        (_case({"user_content": {"parts": []}}),
         "eval_cases[0].conversation[0].user_content: has no text; each invocation needs what the user said"),
        (_case({"user_content": {"parts": [{"text": 3}]}}),
         "eval_cases[0].conversation[0].user_content.parts[0].text: expected a string, got a number"),
        (_case({"user_content": {"parts": [{"text": "look"}, {"inline_data": {"mime_type": "image/png", "data": "AA=="}}]}}),
         "eval_cases[0].conversation[0].user_content.parts[1]: inline_data parts are not supported in user content"),
        (_case({"user_content": {"parts": [{"functionResponse": {"name": "ask", "response": {}}}]}}),
         "user_content.parts[0]: function_response parts are not supported in user content"),
        (_case({"user_content": {"parts": [{"text": "hi", "functionCall": {"name": "f"}}]}}),
         "user_content.parts[0]: a part holds one of text, function_call…; this one has text, function_call"),
        (_case({"user_content": {"parts": [{"text": "hi", "thought": "yes"}]}}),
         "user_content.parts[0].thought: expected a boolean, got a string"),
        (_case(_invocation(intermediate_data={"tool_uses": [{"name": "roll die", "args": {}}]})),
         'eval_cases[0].conversation[0].intermediate_data.tool_uses[0].name "roll die" must be 1 to 128 letters'),
        (_case(_invocation(intermediate_data={"tool_uses": [{"args": {}}]})),
         "eval_cases[0].conversation[0].intermediate_data.tool_uses[0]: name is required"),
        (_case(_invocation(intermediate_data={"tool_uses": [{"name": "f", "args": [1]}]})),
         "intermediate_data.tool_uses[0].args: expected an object, got a list"),
        (_case(_invocation(intermediate_data={"tool_responses": [{"name": "f", "response": "ok"}]})),
         "intermediate_data.tool_responses[0].response: expected an object, got a string"),
        (_case(_invocation(intermediate_data={"tool_uses": [{"name": "transfer_to_agent", "args": {}}]})),
         "tool_uses[0]: a transfer_to_agent call needs the argument agent_name, a string"),
        (_case(_invocation(intermediate_data={"tool_uses": [{"name": "transfer_to_agent",
                                                             "args": {"agent_name": "../x"}}]})),
         'tool_uses[0]: agent_name "../x" must be 1 to 128 letters'),
        (_case(_invocation(intermediate_data={"intermediate_responses": [["agent"]]})),
         "intermediate_data.intermediate_responses[0]: expected [author, [parts]]"),
        (_case(_invocation(intermediate_data={"invocation_events": [{"content": {"parts": []}}]})),
         "intermediate_data.invocation_events[0]: author is required"),
        (_case(_invocation(intermediate_data={"invocation_events": [], "tool_uses": [{"name": "f"}]})),
         "holds both invocation_events and tool_uses/tool_responses; ADK reads only one"),
        (_case(_invocation(final_response="done")),
         "eval_cases[0].conversation[0].final_response: expected an object, got a string"),
        (_case(_invocation(), session_input={"app_name": "a", "user_id": "u", "state": [1]}),
         "eval_cases[0].session_input.state: expected an object, got a list"),
        (_case(_invocation(), rubrics={"r": 1}), "eval_cases[0].rubrics: expected a list, got an object"),
    ],
)
def test_malformed_eval_cases_are_rejected_with_the_place_and_reason(case: Any, message: str) -> None:
    _rejects(_eval_set(case), message)


def test_duplicate_eval_ids_are_rejected() -> None:
    _rejects(_eval_set(_case(_invocation(), eval_id="a"), _case(_invocation(), eval_id="b"),
                       _case(_invocation(), eval_id="a")),
             'eval_cases[2]: eval_id "a" is also the ID of eval_cases[0]')


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ([{"query": "hi"}, {"reference": "x"}], "[1]: query is required"),
        ([{"query": ""}], "[0].query: must not be empty"),
        ([{"query": "hi", "expected_tool_use": [{"tool_input": {}}]}], "[0].expected_tool_use[0]: tool_name is required"),
        ([{"query": "hi", "expected_tool_use": [{"tool_name": "f", "tool_input": "x"}]}],
         "[0].expected_tool_use[0].tool_input: expected an object, got a string"),
        ([{"query": "hi", "expected_intermediate_agent_responses": ["x"]}],
         "[0].expected_intermediate_agent_responses[0]: expected an object, got a string"),
        ([{"query": "hi", "reference": ["x"]}], "[0].reference: expected a string, got a list"),
        ([{"query": "hi"}] * 101, "the test file lists 101 turns; a golden has at most 100"),
        ([{"name": "a", "data": []}], "[0].data: the conversation is empty"),
        ([{"name": "a", "data": [{"query": "hi"}]}, {"name": "b"}], "[1]: data is required"),
        ([{"data": [{"query": "hi"}]}], "[0]: name is required"),
        ([{"name": "a", "data": [{"query": "hi"}], "initial_session": {"state": "x"}}],
         "[0].initial_session.state: expected an object, got a string"),
    ],
)
def test_malformed_older_files_are_rejected_with_the_place_and_reason(content: Any, message: str) -> None:
    _rejects(content, message)


def test_more_than_a_thousand_eval_cases_are_rejected() -> None:
    _rejects(_eval_set(*(_case(_invocation(), eval_id=f"c{index}") for index in range(1001))),
             "eval_cases lists 1001 cases; at most 1000 can be imported at once")
    assert len(_import(_eval_set(*(_case(_invocation(), eval_id=f"c{index}") for index in range(1000))))) == 1000


def test_a_hundred_invocations_are_allowed() -> None:
    [imported] = _import(_eval_set(_case(*[_invocation()] * 100)))

    assert len(imported.evaluation.to_json()["golden"]["turns"]) == 100


def test_an_invocation_that_makes_more_than_200_steps_is_rejected() -> None:
    calls = [{"name": "f", "args": {"n": index}} for index in range(199)]
    [imported] = _import(_eval_set(_case(_invocation(intermediate_data={"tool_uses": calls}))))
    assert len(imported.evaluation.to_json()["golden"]["turns"][0]["steps"]) == 200

    _rejects(_eval_set(_case(_invocation(intermediate_data={"tool_uses": calls}),
                             session_input={"app_name": "a", "user_id": "u", "state": {"k": 1}})),
             "eval_cases[0].conversation[0]: makes 201 golden steps; a turn has at most 200")
    _rejects(_eval_set(_case(_invocation(), _invocation(intermediate_data={"tool_uses": [*calls, calls[0]]}))),
             "eval_cases[0].conversation[1]: makes 201 golden steps; a turn has at most 200")
    _rejects([{"query": "hi", "expected_tool_use": [{"tool_name": "f", "tool_input": {}}] * 200}],
             "[0]: makes 201 golden steps; a turn has at most 200")


def test_a_long_eval_set_id_is_clipped_to_a_tag() -> None:
    [imported] = _import({"eval_set_id": "s" * 300, "eval_cases": [_case(_invocation())]})

    assert imported.evaluation.tags == ["adk", "s" * 127 + "…"]


def test_content_over_ten_megabytes_is_rejected_before_it_is_parsed() -> None:
    padding = " " * (10 * MB)
    _rejects(padding + "[]", "the content is larger than 10 MB")
    _rejects((padding + "[]").encode(), "the content is larger than 10 MB")
    _rejects("é" * (5 * MB + 1), "the content is larger than 10 MB")  # fewer characters than bytes
    assert _import(" " * (10 * MB - 2) + "[]") == []


def _nested(depth: int) -> Any:
    args: Any = {}
    for _ in range(depth):
        args = {"a": args}
    return args


def test_nested_tool_arguments_are_kept() -> None:
    args = _nested(100)
    [imported] = _import(_eval_set(_case(_invocation(intermediate_data={"tool_uses": [{"name": "f", "args": args}]}))))

    assert imported.evaluation.to_json()["golden"]["turns"][0]["steps"][1]["expectation"]["toolCall"]["args"] == args


@pytest.mark.parametrize("depth", [130, 300, 900])
def test_json_nested_past_what_can_be_stored_is_rejected(depth: int) -> None:
    _rejects(_eval_set(_case(_invocation(intermediate_data={"tool_uses": [{"name": "f", "args": _nested(depth)}]}))),
             "the JSON is nested more than 128 levels deep")
