"""Turn a Google ADK eval file into golden Evaluations (a pure function: no database, no MCP).

Three file shapes are read, as ADK's own loaders read them (``google/adk-python``,
``src/google/adk/evaluation/eval_set.py``, ``eval_case.py`` and ``local_eval_sets_manager.py``):

* an **EvalSet** (``*.evalset.json``): ``{eval_set_id, name, description, eval_cases: [EvalCase]}``.
  ADK's eval models and google.genai's types read keys in snake_case or camelCase (pydantic
  aliases: ``adk eval`` writes snake_case, the adk web API camelCase); this reader takes either
  spelling of every key, and a JSON ``null`` as absent (ADK writes ``"id": null``, ``"text": null``).
  An Invocation's ``intermediate_data`` is either ``{tool_uses, tool_responses, intermediate_responses}``
  or the newer ``{invocation_events: [{author, content}]}``, whose parts carry ``function_call`` and
  ``function_response``.
* the older **test file** (``*.test.json``): a list of turns ``{query, expected_tool_use: [{tool_name,
  tool_input}], expected_intermediate_agent_responses: [{author, text}], reference}``; the whole file
  is one conversation, so one evaluation, named after the file (``source``).
* the older **eval set** list ``[{name, data: [turns as in a test file], initial_session: {state}}]``,
  which ADK still converts on load: one evaluation per item.

Mapping (``{app}`` is the app's resource name):

==========================================  ==============================================================
ADK                                         Convener golden Evaluation
==========================================  ==============================================================
EvalCase                                    one Evaluation with a golden
``eval_id``                                 ``displayName`` (must be unique in the file). The evaluation
                                            ID is ``eval_id`` when that is a valid ID, else ``eval_id``
                                            with each run of characters outside ``[A-Za-z0-9._~-]`` as
                                            ``-``, leading ``. _ ~ -`` and trailing ``-`` dropped, cut to
                                            128 (``case-N``, N counting from 1, when nothing is left);
                                            then made unique with ``-2``, ``-3``…
``eval_set_id``, ``source``                 ``description`` ("Imported from ADK eval set …") and
                                            ``tags: ["adk", eval_set_id]``
``session_input.state``                     a leading ``userInput {variables: state}`` step of turn 1
                                            (nothing when the state is empty)
Invocation                                  one GoldenTurn
``user_content`` text parts                 ``userInput {text}``, the parts joined with a newline
``tool_uses[i]`` / ``function_call``        ``expectation.toolCall {tool: {app}/tools/{name}, args}``
``transfer_to_agent(agent_name=A)``         ``expectation.agentTransfer {targetAgent: {app}/agents/{A}}``
``tool_responses[i]`` /                     ``expectation.mockToolResponse {tool: {app}/tools/{name},
``function_response``                       response}``, right after the call it answers
``final_response`` text parts               ``expectation.agentResponse {role: "agent", chunks: [{text}]}``
                                            (``comparisonType`` unset: semantic similarity), the parts
                                            joined with a newline as ADK's response metrics join them
older test file                             one Evaluation; ``displayName``, ID and tag from the file
                                            name without ``.test.json`` (``adk-test`` with no ``source``)
``query``                                   ``userInput {text}``
``expected_tool_use[i]``                    ``toolCall {tool: {app}/tools/{tool_name}, args: tool_input}``
                                            (``transfer_to_agent``: ``agentTransfer``, as above)
``reference``                               ``agentResponse``, as ``final_response``
older eval set item ``name``                as ``eval_id``; ``initial_session.state`` as
                                            ``session_input.state``; the eval set ID is the file name
==========================================  ==============================================================

The tool and agent IDs are ADK's function and agent names as they are: the app must have tools and
agents with those IDs for the evaluation to be valid. ADK's own ``transfer_to_agent`` function
becomes an ``agentTransfer`` expectation, since a Convener app transfers without a tool.

Tool calls keep ADK's order (with ``invocation_events``, calls and responses keep the events' order).
From ``tool_uses``/``tool_responses``, a response is paired with the call of the same ``id`` or,
failing that, the first unanswered call of the same name, and follows it; one that answers no call
follows all the calls. So a turn's mocks of one tool come in the order of its calls, which is the
order the replay hands them out in. Call IDs are not copied: a replay makes new ones.

Why recorded tool responses become ``mockToolResponse``: an eval case records what the tools
returned when the expected final response was written, and that response is only reproducible
from the same tool results ("I rolled a 17-sided die twice: 13 and 4" needs the die to say 13 and
4 again). Mocking them makes the replay deterministic while ``toolCall`` expectations still check
what the agent asked for, which is all ADK's trajectory metric scores. They are not ``toolResponse``
expectations: ADK's trajectory and response metrics never score a tool's output, and checking a
mocked response against itself would prove nothing. The older formats record no tool responses, so their tools run for real.

Not imported, with a count in the evaluation's description: intermediate responses (sub-agents'
progress text, which ADK's default metrics do not score), parts of agent responses or tool
traffic that are not text (inline data, files, code), ``thought`` parts (skipped silently in user
content), tool responses without a ``response`` object, rubrics (no counterpart short of creating
evaluation expectations), and the expected ``final_session_state`` (an ``updatedVariables``
expectation checks one turn's changes, not the final state). ``session_input.app_name`` and
``user_id`` have no counterpart and are dropped.

Rejected with INVALID_ARGUMENT naming the place (e.g. ``eval_cases[3].conversation[1].user_content``):
anything that is not ADK's shape, user content that is not text (an image, a file or a function
response sent by the user: dropping it would change what the agent is asked), an eval case with a
``conversation_scenario`` or no conversation (a golden replays a fixed conversation), more than
1,000 eval cases, more than 100 invocations in a case, an invocation that makes more than 200
golden steps (the limits the evaluation service checks), content over 10 MB, and JSON nested more
than 128 levels deep (pydantic stops at 255, and a stored golden wraps the values in a few more).
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from convener.api.errors import InvalidArgument, describe_validation
from convener.api.json_text import load_json_text
from convener.api.names import ID_PATTERN, check_id
from convener.api.protojson import check_storable_json
from convener.ces.evaluation.models import Evaluation, Golden, GoldenExpectation, GoldenTurn, Step
from convener.ces.models import AgentTransfer, Chunk, Message, ToolCall, ToolResponse
from convener.ces.names import AppName
from convener.ces.session_models import SessionInput
from convener.outside.limits import ADK_CONTENT_BYTES

MAX_CONTENT_BYTES = ADK_CONTENT_BYTES
MAX_CASES = 1000
MAX_TURNS = 100  # these three as the evaluation service checks a golden (definitions.py)
MAX_STEPS = 200
MAX_TAG_LENGTH = 128
MAX_DISPLAY_NAME = 512
MAX_DESCRIPTION = 16_384
MAX_ID = 128
MAX_DEPTH = 128

TRANSFER_TOOL = "transfer_to_agent"
"""ADK's built-in function an LLM agent calls to hand the conversation to another agent."""

# Members of google.genai's Part that carry content; the others (thought_signature, video_metadata,
# part_metadata, media_resolution…) only describe it.
_PART_KINDS = ("text", "function_call", "function_response", "inline_data", "file_data", "executable_code",
               "code_execution_result", "tool_call", "tool_response")

_NOT_ID = re.compile(r"[^A-Za-z0-9._~-]+")

_SKIPPED = {  # what the description says was left out: (one, more)
    "intermediate": ("intermediate response", "intermediate responses"),
    "non_text": ("non-text part of a response", "non-text parts of responses"),
    "thought": ("thought part", "thought parts"),
    "empty_response": ("tool response without a response body", "tool responses without a response body"),
    "rubric": ("rubric", "rubrics"),
    "final_state": ("expected final session state", "expected final session states"),
}


@dataclass(frozen=True)
class AdkEvaluation:
    """An evaluation to create, with the ID to create it under."""

    evaluation_id: str
    evaluation: Evaluation


def evaluations_from_adk(content: str | bytes, app: AppName, *, source: str = "") -> list[AdkEvaluation]:
    """The golden evaluations of an ADK eval file (an EvalSet, or the older list formats).

    ``source`` is the file's name, for descriptions and to name an older test file's evaluation.
    Raises InvalidArgument, naming where, for anything that cannot be imported.
    """
    data = _load(content)
    try:
        if isinstance(data, dict):
            cases = _eval_set(_Obj(data, ""), app, source)
        elif isinstance(data, list):
            cases = _older(data, app, source)
        else:
            raise InvalidArgument(
                f"an ADK eval file holds a JSON object (an EvalSet) or a list (the older test format), not {json_kind(data)}"
            )
        return _evaluations(cases)
    except ValidationError as error:  # not expected: every value is checked on the way in
        raise InvalidArgument(_clip(describe_validation(error), 500)) from None


# -- reading JSON ---------------------------------------------------------------------------------


def _load(content: str | bytes) -> Any:
    data = load_json_text(content, MAX_CONTENT_BYTES, "the content")
    check_storable_json(data, "content")
    _check_depth(data)
    return data


def _check_depth(data: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH: pydantic gives up at 255 levels, and a stored golden adds some."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidArgument(f"the JSON is nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, dict):
            stack.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            stack.extend((child, depth + 1) for child in value)


def json_kind(value: Any) -> str:
    """What a JSON value is, as an error message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _at(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class _Obj:
    """A JSON object of ADK's, whose keys may be spelt in snake_case or camelCase; null is absent.

    Getters take the snake_case key; errors name the key as the file spells it.
    """

    def __init__(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise InvalidArgument(f"{where or 'content'}: expected an object, got {json_kind(value)}")
        self.data: dict[str, Any] = value
        self.where = where

    def find(self, snake: str) -> tuple[str, Any] | None:
        """(the key as spelt, its value), or None when absent or null."""
        camel = _camel(snake)
        present = [key for key in dict.fromkeys((snake, camel)) if self.data.get(key) is not None]
        if len(present) > 1 and self.data[snake] != self.data[camel]:
            raise InvalidArgument(f"{self.where or 'content'}: {snake} and {camel} are both set, to different values")
        return (present[0], self.data[present[0]]) if present else None

    def has(self, snake: str) -> bool:
        return self.find(snake) is not None

    def need(self, snake: str) -> tuple[str, Any]:
        found = self.find(snake)
        if found is None:
            raise InvalidArgument(f"{self.where or 'content'}: {snake} is required")
        return found

    def text(self, snake: str) -> str | None:
        found = self.find(snake)
        return None if found is None else self._text(*found)

    def need_text(self, snake: str) -> str:
        return self._text(*self.need(snake))

    def _text(self, key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidArgument(f"{_at(self.where, key)}: expected a string, got {json_kind(value)}")
        return value

    def obj(self, snake: str) -> _Obj | None:
        found = self.find(snake)
        return None if found is None else _Obj(found[1], _at(self.where, found[0]))

    def need_obj(self, snake: str) -> _Obj:
        key, value = self.need(snake)
        return _Obj(value, _at(self.where, key))

    def struct(self, snake: str) -> dict[str, Any] | None:
        """A google.protobuf.Struct: any JSON object."""
        found = self.find(snake)
        if found is None:
            return None
        key, value = found
        if not isinstance(value, dict):
            raise InvalidArgument(f"{_at(self.where, key)}: expected an object, got {json_kind(value)}")
        return value

    def items(self, snake: str) -> list[tuple[str, Any]]:
        """The list's members with their places; empty when absent."""
        found = self.find(snake)
        return [] if found is None else self._items(*found)

    def need_items(self, snake: str) -> list[tuple[str, Any]]:
        return self._items(*self.need(snake))

    def _items(self, key: str, value: Any) -> list[tuple[str, Any]]:
        if not isinstance(value, list):
            raise InvalidArgument(f"{_at(self.where, key)}: expected a list, got {json_kind(value)}")
        return [(_at(_at(self.where, key), index), item) for index, item in enumerate(value)]


# -- the intermediate form ------------------------------------------------------------------------


@dataclass
class _Case:
    eval_id: str
    where: str
    eval_set_id: str
    origin: str
    turns: list[GoldenTurn]
    skipped: Counter[str] = field(default_factory=Counter)


def _evaluations(cases: list[_Case]) -> list[AdkEvaluation]:
    if len(cases) > MAX_CASES:
        raise InvalidArgument(f"the file holds {len(cases)} eval cases; at most {MAX_CASES} can be imported at once")
    seen: dict[str, str] = {}
    taken: set[str] = set()
    result = []
    for number, case in enumerate(cases, 1):
        if case.eval_id in seen:
            raise InvalidArgument(f'{case.where}: eval_id "{_clip(case.eval_id)}" is also the ID of {seen[case.eval_id]}')
        seen[case.eval_id] = case.where
        evaluation_id = _unique(_sanitise(case.eval_id) or f"case-{number}", taken)
        taken.add(evaluation_id)
        description = f'Imported from {case.origin}, eval case "{case.eval_id}".'
        left_out = [f"{count} {names[count != 1]}" for what, names in _SKIPPED.items() if (count := case.skipped[what])]
        if left_out:
            description += f" Not imported: {', '.join(left_out)}."
        evaluation = Evaluation(
            display_name=case.eval_id,
            description=_clip(description, MAX_DESCRIPTION),
            tags=list(dict.fromkeys(("adk", _clip(case.eval_set_id, MAX_TAG_LENGTH)))),
            golden=Golden(turns=case.turns),
        )
        result.append(AdkEvaluation(evaluation_id, evaluation))
    return result


def _sanitise(eval_id: str) -> str:
    """The eval_id as an evaluation ID: unchanged when it is one, else with each run of other characters as "-"."""
    if ID_PATTERN.fullmatch(eval_id):
        return eval_id
    return _NOT_ID.sub("-", eval_id).strip("-").lstrip("._~")[:MAX_ID].rstrip("-")


def _unique(base: str, taken: set[str]) -> str:
    candidate, number = base, 1
    while candidate in taken:
        number += 1
        suffix = f"-{number}"
        candidate = base[: MAX_ID - len(suffix)] + suffix
    return candidate


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _case(eval_id: Any, where: str, key: str, eval_set_id: str, origin: str) -> _Case:
    if not isinstance(eval_id, str):
        raise InvalidArgument(f"{_at(where, key)}: expected a string, got {json_kind(eval_id)}")
    if not eval_id.strip():
        raise InvalidArgument(f"{_at(where, key)}: must not be empty")
    if len(eval_id) > MAX_DISPLAY_NAME:
        raise InvalidArgument(f"{_at(where, key)}: longer than {MAX_DISPLAY_NAME} characters")
    return _Case(eval_id, where, eval_set_id, origin, [])


def _check_turns(case: _Case, where: str) -> None:
    if not case.turns:
        raise InvalidArgument(f"{where}: the conversation is empty; a golden needs at least one turn")
    if len(case.turns) > MAX_TURNS:
        raise InvalidArgument(f"{where}: {len(case.turns)} turns; a golden has at most {MAX_TURNS}")


def _turn(steps: list[Step], where: str) -> GoldenTurn:
    if len(steps) > MAX_STEPS:
        raise InvalidArgument(f"{where}: makes {len(steps)} golden steps; a turn has at most {MAX_STEPS}")
    return GoldenTurn(steps=steps)


def _with_state(turns: list[GoldenTurn], state: dict[str, Any] | None, where: str) -> None:
    """Set the session state first: a leading ``userInput {variables}`` step of the first turn."""
    if state and turns:
        turns[0] = _turn([Step(user_input=SessionInput(variables=state)), *(turns[0].steps or [])], where)


# -- the EvalSet format ---------------------------------------------------------------------------


def _eval_set(root: _Obj, app: AppName, source: str) -> list[_Case]:
    if not root.has("eval_cases"):
        if root.has("eval_id"):
            raise InvalidArgument("content: this is a single EvalCase; import the EvalSet file that holds it")
        raise InvalidArgument("content: not an ADK EvalSet (eval_set_id and eval_cases are required)")
    eval_set_id = root.need_text("eval_set_id")
    if not eval_set_id.strip():
        raise InvalidArgument("eval_set_id: must not be empty")
    if len(eval_set_id) > MAX_DISPLAY_NAME:
        raise InvalidArgument(f"eval_set_id: longer than {MAX_DISPLAY_NAME} characters")
    root.text("name")
    root.text("description")
    origin = f'ADK eval set "{eval_set_id}"' + (f" ({source})" if source else "")
    members = root.need_items("eval_cases")
    if len(members) > MAX_CASES:
        raise InvalidArgument(f"eval_cases lists {len(members)} cases; at most {MAX_CASES} can be imported at once")
    return [_eval_case(_Obj(item, where), app, eval_set_id, origin) for where, item in members]


def _eval_case(case_obj: _Obj, app: AppName, eval_set_id: str, origin: str) -> _Case:
    where = case_obj.where
    key, eval_id = case_obj.need("eval_id")
    case = _case(eval_id, where, key, eval_set_id, origin)
    if case_obj.has("conversation_scenario"):
        raise InvalidArgument(
            f"{where}: conversation scenarios (a simulated user) are not imported; only fixed conversations are")
    if not case_obj.has("conversation"):
        raise InvalidArgument(f"{where}: conversation is required")
    invocations = case_obj.need_items("conversation")
    if len(invocations) > MAX_TURNS:
        raise InvalidArgument(f"{where}.conversation: {len(invocations)} invocations; a golden has at most {MAX_TURNS}")
    case.turns = [_invocation(_Obj(item, at), app, case.skipped) for at, item in invocations]
    _check_turns(case, _at(where, "conversation"))
    session_input = case_obj.obj("session_input")
    if session_input is not None:
        session_input.text("app_name")
        session_input.text("user_id")
        _with_state(case.turns, session_input.struct("state"), invocations[0][0])
    if case_obj.struct("final_session_state"):
        case.skipped["final_state"] += 1
    case.skipped["rubric"] += len(case_obj.items("rubrics"))
    return case


def _invocation(invocation: _Obj, app: AppName, skipped: Counter[str]) -> GoldenTurn:
    user = _user_text(invocation.need_obj("user_content"))
    steps = [Step(user_input=SessionInput(text=user))]
    intermediate = invocation.obj("intermediate_data")
    if intermediate is not None:
        steps += _intermediate(intermediate, app, skipped)
    final = invocation.obj("final_response")
    if final is not None:
        text = _response_text(final, skipped)
        if text:
            steps.append(Step(expectation=GoldenExpectation(
                agent_response=Message(role="agent", chunks=[Chunk(text=text)]))))
    skipped["rubric"] += len(invocation.items("rubrics"))
    return _turn(steps, invocation.where)


@dataclass(frozen=True)
class _Part:
    """One part of a genai Content: its kind (None when it carries nothing) and its text or member object."""

    where: str
    kind: str | None
    text: str | None = None
    member: _Obj | None = None
    thought: bool = False


def _parts(content: _Obj | None) -> list[_Part]:
    if content is None:
        return []
    content.text("role")
    found = []
    for where, item in content.items("parts"):
        part = _Obj(item, where)
        kinds = [kind for kind in _PART_KINDS if part.has(kind)]
        if len(kinds) > 1:
            raise InvalidArgument(f"{where}: a part holds one of text, function_call…; this one has {', '.join(kinds)}")
        thought = part.data.get("thought")
        if thought is not None and not isinstance(thought, bool):
            raise InvalidArgument(f"{_at(where, 'thought')}: expected a boolean, got {json_kind(thought)}")
        if not kinds:
            found.append(_Part(where, None))
        elif kinds[0] == "text":
            found.append(_Part(where, "text", text=part.text("text"), thought=bool(thought)))
        else:
            found.append(_Part(where, kinds[0], member=part.obj(kinds[0]), thought=bool(thought)))
    return found


def _user_text(content: _Obj) -> str:
    texts = []
    for part in _parts(content):
        if part.kind is None or part.thought:
            continue
        if part.kind != "text":
            raise InvalidArgument(f"{part.where}: {part.kind} parts are not supported in user content; "
                                  "only text can be replayed as user input")
        texts.append(part.text or "")
    text = "\n".join(text for text in texts if text)
    if not text.strip():
        raise InvalidArgument(f"{content.where}: has no text; each invocation needs what the user said")
    return text


def _response_text(content: _Obj, skipped: Counter[str]) -> str:
    texts = []
    for part in _parts(content):
        if part.kind is None:
            continue
        if part.thought:
            skipped["thought"] += 1
        elif part.kind == "text":
            texts.append(part.text or "")
        else:
            skipped["non_text"] += 1
    return "\n".join(text for text in texts if text)


def _intermediate(data: _Obj, app: AppName, skipped: Counter[str]) -> list[Step]:
    if data.has("invocation_events"):
        if data.has("tool_uses") or data.has("tool_responses") or data.has("intermediate_responses"):
            raise InvalidArgument(
                f"{data.where}: holds both invocation_events and tool_uses/tool_responses; ADK reads only one")
        return _events(data, app, skipped)
    calls = [_Obj(item, where) for where, item in data.items("tool_uses")]
    responses = [_Obj(item, where) for where, item in data.items("tool_responses")]
    for where, item in data.items("intermediate_responses"):
        if not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], list):
            raise InvalidArgument(f"{where}: expected [author, [parts]]")
        skipped["intermediate"] += 1
    call_ids = [call.text("id") for call in calls]
    names = [_tool_name(call) for call in calls]
    answers: dict[int, list[Step]] = {}
    unanswered: list[Step] = []
    for response in responses:
        response_id = response.text("id")
        name = _tool_name(response)
        mock = _mock(response, name, app, skipped)
        index = next((i for i, call_id in enumerate(call_ids) if response_id and call_id == response_id
                      and i not in answers), None)
        if index is None:
            index = next((i for i, call_name in enumerate(names) if call_name == name and i not in answers), None)
        if index is None:
            unanswered += mock
        else:
            answers[index] = mock
    steps = []
    for index, call in enumerate(calls):
        steps.append(_call(names[index], call.struct("args"), call.where, app))
        steps += answers.get(index, [])
    return steps + unanswered


def _events(data: _Obj, app: AppName, skipped: Counter[str]) -> list[Step]:
    steps = []
    for where, item in data.items("invocation_events"):
        event = _Obj(item, where)
        event.need_text("author")
        for part in _parts(event.obj("content")):
            if part.kind is None:
                continue
            if part.thought:
                skipped["thought"] += 1
            elif part.member is not None and part.kind == "function_call":
                steps.append(_call(_tool_name(part.member), part.member.struct("args"), part.member.where, app))
            elif part.member is not None and part.kind == "function_response":
                steps += _mock(part.member, _tool_name(part.member), app, skipped)
            elif part.kind == "text":
                skipped["intermediate"] += bool(part.text)
            else:
                skipped["non_text"] += 1
    return steps


def _tool_name(call: _Obj) -> str:
    name = call.need_text("name")
    return check_id(name, _at(call.where, "name"))


def _call(name: str, args: dict[str, Any] | None, where: str, app: AppName) -> Step:
    if name == TRANSFER_TOOL:
        agent = (args or {}).get("agent_name")
        if not isinstance(agent, str):
            raise InvalidArgument(f"{where}: a transfer_to_agent call needs the argument agent_name, a string")
        agent = check_id(agent, f"{where}: agent_name")
        return Step(expectation=GoldenExpectation(agent_transfer=AgentTransfer(target_agent=f"{app}/agents/{agent}")))
    return Step(expectation=GoldenExpectation(tool_call=ToolCall(tool=f"{app}/tools/{name}", args=args)))


def _mock(response: _Obj, name: str, app: AppName, skipped: Counter[str]) -> list[Step]:
    if name == TRANSFER_TOOL:
        return []  # the transfer itself is the expectation
    body = response.struct("response")
    if body is None:
        skipped["empty_response"] += 1
        return []
    return [Step(expectation=GoldenExpectation(
        mock_tool_response=ToolResponse(tool=f"{app}/tools/{name}", response=body)))]


# -- the older formats ----------------------------------------------------------------------------


def _stem(source: str) -> str:
    name = posixpath.basename(source.replace("\\", "/"))
    for suffix in (".test.json", ".evalset.json", ".json"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name.removesuffix(suffix)
    return name


def _older(data: list[Any], app: AppName, source: str) -> list[_Case]:
    if not data:
        return []
    first = data[0]
    stem = _stem(source)
    if isinstance(first, dict) and "data" in first:
        eval_set_id = _clip(stem, MAX_DISPLAY_NAME) if stem else "adk-evalset"
        origin = f'ADK eval set "{eval_set_id}"' + (f" ({source})" if source else "")
        if len(data) > MAX_CASES:
            raise InvalidArgument(f"the file lists {len(data)} cases; at most {MAX_CASES} can be imported at once")
        cases = []
        for index, item in enumerate(data):
            entry = _Obj(item, f"[{index}]")
            key, name = entry.need("name")
            case = _case(name, entry.where, key, eval_set_id, origin)
            turns = entry.need_items("data")
            if len(turns) > MAX_TURNS:
                raise InvalidArgument(f"{_at(entry.where, 'data')}: {len(turns)} turns; a golden has at most {MAX_TURNS}")
            case.turns = [_old_turn(_Obj(turn, where), app, case.skipped) for where, turn in turns]
            _check_turns(case, _at(entry.where, "data"))
            session = entry.obj("initial_session")
            if session is not None:
                _with_state(case.turns, session.struct("state"), turns[0][0])
            cases.append(case)
        return cases
    eval_set_id = _clip(stem, MAX_DISPLAY_NAME) if stem else "adk-test"
    origin = f"the ADK test file {source}" if source else "an ADK test file"
    case = _Case(eval_set_id, "content", eval_set_id, origin, [])
    if len(data) > MAX_TURNS:
        raise InvalidArgument(f"the test file lists {len(data)} turns; a golden has at most {MAX_TURNS}")
    case.turns = [_old_turn(_Obj(item, f"[{index}]"), app, case.skipped) for index, item in enumerate(data)]
    return [case]


def _old_turn(turn: _Obj, app: AppName, skipped: Counter[str]) -> GoldenTurn:
    query = turn.need_text("query")
    if not query.strip():
        raise InvalidArgument(f"{_at(turn.where, 'query')}: must not be empty")
    steps = [Step(user_input=SessionInput(text=query))]
    for where, item in turn.items("expected_tool_use"):
        use = _Obj(item, where)
        name = check_id(use.need_text("tool_name"), _at(where, "tool_name"))
        steps.append(_call(name, use.struct("tool_input"), where, app))
    for where, item in turn.items("expected_intermediate_agent_responses"):
        response = _Obj(item, where)
        response.text("author")
        response.text("text")
        skipped["intermediate"] += 1
    reference = turn.text("reference")
    if reference:
        steps.append(Step(expectation=GoldenExpectation(
            agent_response=Message(role="agent", chunks=[Chunk(text=reference)]))))
    return _turn(steps, turn.where)
