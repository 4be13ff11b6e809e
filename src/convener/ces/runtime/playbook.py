"""Playbook agents: conversations run from a declarative definition, with no model.

A definition (the ``playbookAgent`` of an agent resource, parsed from YAML or JSON) lists intents,
each recognised by regular expressions, keywords or example phrases, with slots to fill from what
the user says and steps to run once they are filled: call a tool, set variables, reply from a
template, transfer to another agent, end the session. Events (``welcome``...) and a fallback have
steps too.

The engine is a pure function of its inputs: no I/O, no clock, no randomness, so the same inputs
give the same conversation. Tools are reached through a ``ToolPort`` callback, and the little the
engine must remember between user inputs (the intent whose slot it asked for, the step a client
tool paused) travels in a JSON ``state`` that the session stores and hands back.

Definitions are written by app authors and run on text from end users, so both sides are bounded:
sizes and counts are capped, regular expressions that could backtrack for ages are refused when the
definition is parsed (see ``_RegexShapes``), regular expressions only ever see the first
``MAX_MATCH_TEXT`` characters of an input, and templates run in ``templates``' sandbox.
"""

from __future__ import annotations

import copy
import functools
import importlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import Field, JsonValue, ValidationError, model_validator

from convener.api.errors import InvalidArgument
from convener.api.names import ID_PATTERN
from convener.api.protojson import ProtoModel
from convener.ces.runtime import templates
from convener.ces.runtime.failures import ToolFailure
from convener.ces.runtime.templates import TemplateFailure

MAX_INTENTS = 200
MAX_STEPS = 50
"""Steps in one intent, event or fallback."""
MAX_EVENTS = 50
MAX_SLOTS = 20
"""Slots of one intent."""
MAX_PATTERNS = 20
"""Regular expressions of one intent."""
MAX_TOTAL_PATTERNS = 200
"""Regular expressions in a whole definition, intents' and slots' together: each is tried on every input."""
MAX_PATTERN_LENGTH = 300
MAX_PHRASES = 100
"""Keywords or examples of one intent."""
MAX_SYNONYMS = 200
"""Canonical values and synonyms of one slot, together."""
MAX_PHRASE_LENGTH = 200
MAX_VALUE_DEPTH = 20
"""Nesting of tool arguments and variable values in a definition."""
MAX_INPUT_TEXT = 4_000
"""Characters of a user input that the engine keeps (``input.text``, free-text slots); the rest is cut."""
MAX_MATCH_TEXT = 1_000
"""Characters of an input that regular expressions see. Even a harmless pattern such as ``\\w+ order``
costs time quadratic in the text when it fails; 1,000 characters keep that to milliseconds."""
MAX_STEPS_PER_TURN = 100
"""Steps one call of the engine may run; blocks are short and linear, so this is a backstop."""

DEFAULT_ERROR_REPLY = "Sorry, something went wrong on my side and I can't continue with that."

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORD = re.compile(r"\w+")


# ---------------------------------------------------------------------------------------------------
# The definition


class CallToolSpec(ProtoModel):
    """``callTool``: the tool (its ID in the app), arguments (templates anywhere inside), and the name
    its response is kept under in ``results`` (the tool ID when ``as`` is not given)."""

    tool: str = Field(max_length=128)
    args: dict[str, JsonValue] = Field(default_factory=dict, max_length=100)
    as_: str | None = Field(None, alias="as", max_length=64)

    @property
    def result_name(self) -> str:
        return self.as_ or self.tool


class EndSessionSpec(ProtoModel):
    reason: str | None = Field(None, max_length=1_000, description="A template.")
    session_escalated: bool | None = Field(None, description="The user is handed over to a human agent.")


_ACTIONS = ("call_tool", "reply", "set_variables", "transfer", "end_session")


class Step(ProtoModel):
    """One step: exactly one action, run only when ``when`` (an expression) is truthy."""

    when: str | None = Field(None, max_length=2_000, description='An expression, "{{ }}" optional.')
    call_tool: CallToolSpec | None = None
    reply: str | None = Field(None, description="A template.")
    set_variables: dict[str, JsonValue] | None = Field(None, max_length=100)
    transfer: str | None = Field(None, max_length=128, description="The ID of an agent of the app.")
    end_session: EndSessionSpec | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        present = [name for name in _ACTIONS if getattr(self, name) is not None]
        if len(present) != 1:
            names = ", ".join(type(self).model_fields[name].alias or name for name in _ACTIONS)
            got = ", ".join(type(self).model_fields[name].alias or name for name in present) or "none"
            raise ValueError(f"a step needs exactly one of {names}; got {got}")
        return self


class Slot(ProtoModel):
    """A value to extract from what the user says.

    Filled, in order, from a named group of the intent pattern that matched, from ``values`` (the
    canonical value of the first phrase found), from ``pattern`` (its group named like the slot, else
    its first group, else the whole match) and, when ``type`` is a number, from the first number. A
    slot the engine asked for and that has none of these takes the user's whole answer.
    """

    name: str = Field(max_length=64)
    type: Literal["string", "integer", "number"] = "string"
    pattern: str | None = None
    values: dict[str, list[str]] = Field(default_factory=dict, description="canonical value -> synonyms")
    required: bool = False
    prompt: str | None = Field(None, description="A template; asked when a required slot is missing.")
    reprompt: str | None = Field(None, description="A template; asked when an answer did not fill it.")


class Intent(ProtoModel):
    name: str = Field(max_length=64)
    patterns: list[str] = Field(default_factory=list, max_length=MAX_PATTERNS)
    keywords: list[str] = Field(default_factory=list, max_length=MAX_PHRASES)
    examples: list[str] = Field(default_factory=list, max_length=MAX_PHRASES)
    slots: list[Slot] = Field(default_factory=list, max_length=MAX_SLOTS)
    steps: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)


class PlaybookDefinition(ProtoModel):
    """The ``playbookAgent`` of an agent. Build it with ``parse``, which checks what pydantic cannot.

    For example::

        intents:
          - name: order_status
            patterns: ['order (?P<order_id>[A-Z]{2}-\\d{4})']   # case-insensitive; named groups fill slots
            keywords: [order, status]                            # every one present, as words
            examples: ["where is my order"]                      # word-overlap similarity
            slots:
              - {name: order_id, pattern: '[A-Z]{2}-\\d{4}', required: true, prompt: "Your order number?"}
            steps:
              - callTool: {tool: lookup_order, args: {id: "{{ slots.order_id }}"}, as: order}
              - when: results.order.error is defined
                reply: "I could not find order {{ slots.order_id }}."
              - setVariables: {last_order: "{{ slots.order_id }}"}
              - reply: "Order {{ slots.order_id }} is {{ results.order.output.status }}."
              - when: "'refund' in input.text.lower()"            # a bare expression: braces optional
                transfer: refunds                                # ends the steps, as endSession does
              - endSession: {reason: resolved}
        events: {welcome: [{reply: "Hi! How can I help?"}]}
        fallback: [{reply: "Sorry, I can help with orders."}]
        exampleThreshold: 0.5
        maxReprompts: 2
        errorReply: "Sorry, something went wrong."

    Templates see ``slots`` (every declared slot, ``none`` until filled), ``variables``, ``results``
    (tool responses by ``as``) and ``input`` (``text``, and ``event`` for events). Undefined names are
    errors, so test optional data with ``is defined`` or ``.get()``.
    """

    intents: list[Intent] = Field(default_factory=list, max_length=MAX_INTENTS)
    events: dict[str, list[Step]] = Field(default_factory=dict, max_length=MAX_EVENTS)
    fallback: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)
    example_threshold: float = Field(0.5, gt=0, le=1, description="Least similarity for an example to match.")
    max_reprompts: int = Field(2, ge=0, le=10, description="Times a slot is asked again before the fallback.")
    error_reply: str = Field(DEFAULT_ERROR_REPLY, min_length=1, max_length=1_000, description="Plain text.")

    @classmethod
    def parse(cls, data: Any, field: str, *, compile_templates: bool = True) -> PlaybookDefinition:
        """Validate ``data`` (a parsed YAML or JSON object); InvalidArgument names the offending field
        below ``field`` (e.g. ``agent.playbookAgent.intents[2].steps[0].reply``).

        ``compile_templates=False``: a definition read back to run it, which was checked whole when it was
        written: its templates are compiled when first rendered (``templates.render`` reports a bad one as
        that render's failure), so a process compiles those its turns use, not every one of them (compiling
        a template costs about half a millisecond; the demo's agents have seventy). Everything else is
        checked again, its regular expressions' shapes first of all."""
        if not isinstance(data, dict):
            raise InvalidArgument(f"{field}: expected an object, not {_json_type(data)}")
        try:
            definition = cls.model_validate(data)
        except ValidationError as error:
            raise InvalidArgument(_describe_validation(error, field)) from None
        _check_definition(definition, field, compile_templates)
        return definition

    def tool_ids(self) -> list[str]:
        """The IDs of the tools the steps call, each once, in order of first use."""
        return list(dict.fromkeys(step.call_tool.tool for step in self._all_steps() if step.call_tool))

    def agent_ids(self) -> list[str]:
        """The IDs of the agents the steps transfer to, each once, in order of first use."""
        return list(dict.fromkeys(step.transfer for step in self._all_steps() if step.transfer))

    def _all_steps(self) -> list[Step]:
        steps = [step for intent in self.intents for step in intent.steps]
        steps += [step for event_steps in self.events.values() for step in event_steps]
        return steps + self.fallback


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return "null" if value is None else type(value).__name__


def _describe_validation(error: ValidationError, field: str) -> str:
    problems = []
    for item in error.errors(include_url=False, include_input=False, include_context=False)[:3]:
        where = field + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    more = error.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def _check_definition(definition: PlaybookDefinition, field: str, compile_templates: bool) -> None:
    """What the models' types cannot say: names, regular expressions, templates, sizes, references."""
    total_patterns = sum(len(intent.patterns) + sum(1 for slot in intent.slots if slot.pattern)
                         for intent in definition.intents)
    if total_patterns > MAX_TOTAL_PATTERNS:
        raise InvalidArgument(
            f"{field}.intents: at most {MAX_TOTAL_PATTERNS} regular expressions (patterns of intents and "
            f"slots together) are allowed; got {total_patterns}"
        )
    names: set[str] = set()
    for i, intent in enumerate(definition.intents):
        where = f"{field}.intents[{i}]"
        _check_name(intent.name, f"{where}.name", _NAME, "an intent name")
        if intent.name in names:
            raise InvalidArgument(f"{where}.name: another intent is already named {intent.name!r}")
        names.add(intent.name)
        if not (intent.patterns or intent.keywords or intent.examples):
            raise InvalidArgument(f"{where}: an intent needs patterns, keywords or examples to be recognised")
        for j, pattern in enumerate(intent.patterns):
            _check_pattern(pattern, f"{where}.patterns[{j}]")
        for kind, phrases in (("keywords", intent.keywords), ("examples", intent.examples)):
            for j, phrase in enumerate(phrases):
                _check_phrase(phrase, f"{where}.{kind}[{j}]")
        slot_names: set[str] = set()
        for j, slot in enumerate(intent.slots):
            _check_slot(slot, f"{where}.slots[{j}]", compile_templates)
            if slot.name in slot_names:
                raise InvalidArgument(f"{where}.slots[{j}].name: another slot is already named {slot.name!r}")
            slot_names.add(slot.name)
        _check_steps(intent.steps, f"{where}.steps", compile_templates)
    for event, steps in definition.events.items():
        _check_name(event, f"{field}.events.{event[:64]}", _NAME, "an event name")
        _check_steps(steps, f"{field}.events.{event}", compile_templates)
    _check_steps(definition.fallback, f"{field}.fallback", compile_templates)


def _check_name(value: str, where: str, pattern: re.Pattern[str], what: str) -> None:
    if not pattern.fullmatch(value):
        raise InvalidArgument(
            f"{where}: {what} must start with a letter or _ and have at most 64 letters, digits"
            f"{', _, . or -' if pattern is _NAME else ' or _'}"
        )


def _check_phrase(phrase: str, where: str) -> None:
    if len(phrase) > MAX_PHRASE_LENGTH:
        raise InvalidArgument(f"{where}: at most {MAX_PHRASE_LENGTH} characters are allowed")
    if not _tokens(phrase):
        raise InvalidArgument(f"{where}: a phrase needs at least one word")


def _check_slot(slot: Slot, where: str, compile_templates: bool) -> None:
    _check_name(slot.name, f"{where}.name", _IDENTIFIER, "a slot name")
    if slot.pattern is not None:
        _check_pattern(slot.pattern, f"{where}.pattern")
    if slot.values and slot.type != "string":
        raise InvalidArgument(f"{where}.values: values are for string slots; this one is {slot.type}")
    owners: dict[str, str] = {}
    count = 0
    for canonical, synonyms in slot.values.items():
        for k, phrase in enumerate([canonical, *synonyms]):
            path = f"{where}.values.{canonical[:64]}" + (f"[{k - 1}]" if k else "")
            count += 1
            if count > MAX_SYNONYMS:
                raise InvalidArgument(f"{where}.values: at most {MAX_SYNONYMS} values and synonyms together")
            _check_phrase(phrase, path)
            key = _phrase_key(phrase)
            if owners.setdefault(key, canonical) != canonical:
                raise InvalidArgument(f"{path}: {phrase!r} already stands for {owners[key]!r}")
    if slot.required and slot.prompt is None:
        raise InvalidArgument(f"{where}.prompt: a required slot needs a prompt to ask for it")
    for name in ("prompt", "reprompt"):
        text = getattr(slot, name)
        if text is not None and compile_templates:
            templates.check_template(text, f"{where}.{name}")


def _check_steps(steps: list[Step], where: str, compile_templates: bool) -> None:
    if len(steps) > MAX_STEPS:
        raise InvalidArgument(f"{where}: at most {MAX_STEPS} steps are allowed")
    for k, step in enumerate(steps):
        path = f"{where}[{k}]"
        if step.when is not None and compile_templates:
            condition = _condition(step.when)
            templates.check_template(condition, f"{path}.when")
            if not templates.is_expression(condition):
                raise InvalidArgument(
                    f'{path}.when: must be a single expression, such as "{{{{ slots.count > 1 }}}}"'
                )
        if step.reply is not None and compile_templates:
            templates.check_template(step.reply, f"{path}.reply")
        if step.call_tool is not None:
            if not ID_PATTERN.fullmatch(step.call_tool.tool):
                raise InvalidArgument(f"{path}.callTool.tool: {step.call_tool.tool[:130]!r} is not a tool ID")
            if step.call_tool.as_ is not None:
                _check_name(step.call_tool.as_, f"{path}.callTool.as", _IDENTIFIER, "a result name")
            _check_value(step.call_tool.args, f"{path}.callTool.args", compile_templates)
        if step.set_variables is not None:
            for name in step.set_variables:
                if not 0 < len(name) <= 128:
                    raise InvalidArgument(f"{path}.setVariables: variable names have 1 to 128 characters")
            _check_value(step.set_variables, f"{path}.setVariables", compile_templates)
        if step.transfer is not None and not ID_PATTERN.fullmatch(step.transfer):
            raise InvalidArgument(f"{path}.transfer: {step.transfer[:130]!r} is not an agent ID")
        if step.end_session is not None and step.end_session.reason is not None and compile_templates:
            templates.check_template(step.end_session.reason, f"{path}.endSession.reason")


def _check_value(value: Any, where: str, compile_templates: bool) -> None:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_VALUE_DEPTH:
            raise InvalidArgument(f"{where}: values may be nested at most {MAX_VALUE_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    if compile_templates:
        templates.check_value(value, where)


def _condition(when: str) -> str:
    """``when`` as a template: the braces are optional, so wrap a bare expression in them."""
    return when if "{{" in when or "{%" in when else "{{ " + when + " }}"


# ---------------------------------------------------------------------------------------------------
# Regular expressions: compiled case-insensitively, and refused when their shape can backtrack
# for a very long time.


@functools.lru_cache(maxsize=4096)
def _compile_pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _check_pattern(pattern: str, where: str) -> None:
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise InvalidArgument(f"{where}: a regular expression has at most {MAX_PATTERN_LENGTH} characters")
    try:
        _compile_pattern(pattern)
    except (re.error, RecursionError, OverflowError) as error:
        raise InvalidArgument(f"{where}: bad regular expression: {error}") from None
    hazard = _regex_hazard(pattern)
    if hazard is not None:
        raise InvalidArgument(f"{where}: regular expression refused: {hazard}")


def check_regex(pattern: str, where: str) -> re.Pattern[str]:
    """The pattern compiled case-insensitively, or INVALID_ARGUMENT naming ``where``: a bad expression,
    one longer than ``MAX_PATTERN_LENGTH``, or one whose shape could backtrack catastrophically. Other
    parts of an app that match user text (guardrails' content filters) hold to the same rules."""
    _check_pattern(pattern, where)
    return _compile_pattern(pattern)


_SAMPLE_CHARS = "".join(map(chr, range(32, 127))) + (
    "\t\n\r\x0b\x0c\x00\x85\xa0\u2028\u3000éßİıKſяЯ中١²ǅ\U0001f600"
)
"""Characters standing in for all of Unicode when comparing character classes: ASCII, kinds of
space and digit beyond ASCII, letters whose case folding is odd. The pattern's own literals join them."""

_SAFE_HINT = (
    "; write it so there is one way to match, or use a possessive quantifier (a*+) or an atomic group (?>...)"
)


@dataclass(frozen=True)
class _Shape:
    """What the hazard check needs to know of a piece of a regular expression."""

    chars: int  # bit set over the sample alphabet: characters the piece can consume
    first: int  # characters it can start with
    nullable: bool  # can match the empty string
    growing: bool  # holds a backtracking repeat that can take a variable number (>1) of items
    variable: bool  # holds a backtracking repeat of variable count, or an ambiguous alternation


_EMPTY = _Shape(0, 0, True, False, False)


class _RegexHazard(Exception):
    pass


class _RegexShapes:
    """Static check for the shapes that make Python's backtracking matcher slow on a failing input.

    * Nested repetition, ``(a+)+`` or ``(\\w+\\s?)*``: exponential. A repeat that can run more than
      once may not hold a variable repeat or an alternation whose branches start alike.
    * Adjacent repetition that can trade characters, ``\\s*\\s*x`` or ``.*\\d+$``: polynomial, one
      degree per repeat (``a*a*a*b`` on 1,000 characters runs for minutes). Two variable repeats that
      can trade characters (the second can start with one the first can take), with nothing between
      them that pins where the first stops, are refused when anything after them can still fail.
    * Backreferences: they make matching NP-hard and intents do not need them.

    Character classes are compared on a sample alphabet, so the check is a strong guard rather than a
    proof; possessive quantifiers and atomic groups, which never backtrack, are the authors' way out.
    """

    def __init__(self, tree: Any) -> None:
        literals: set[str] = set()
        self._collect(tree, literals)
        alphabet = dict.fromkeys(_SAMPLE_CHARS)
        for char in sorted(literals):
            for variant in _case_variants(char):
                alphabet.setdefault(variant)
        self.alphabet = list(alphabet)
        self.all = (1 << len(self.alphabet)) - 1
        self._sets: dict[Any, int] = {}

    def _collect(self, items: Any, literals: set[str]) -> None:
        for op, arg in items:
            name = str(op)
            if name in ("LITERAL", "NOT_LITERAL"):
                literals.add(chr(arg))
            elif name == "RANGE":
                literals.update((chr(arg[0]), chr(arg[1]), chr((arg[0] + arg[1]) // 2)))
            elif name == "IN":
                self._collect(arg, literals)
            elif name in ("SUBPATTERN",):
                self._collect(arg[3], literals)
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                self._collect(arg[2], literals)
            elif name == "BRANCH":
                for branch in arg[1]:
                    self._collect(branch, literals)
            elif name in ("ASSERT", "ASSERT_NOT"):
                self._collect(arg[1], literals)
            elif name == "ATOMIC_GROUP":
                self._collect(arg, literals)

    def sequence(self, items: Any, top: bool) -> _Shape:
        flat = self._flatten(items)
        shapes = [self.item(op, arg) for op, arg in flat]
        for i, left in enumerate(shapes):
            if left.growing:
                self._check_pair(flat, shapes, i, top)
        return _Shape(
            chars=functools.reduce(lambda a, s: a | s.chars, shapes, 0),
            first=_first(shapes),
            nullable=all(shape.nullable for shape in shapes),
            growing=any(shape.growing for shape in shapes),
            variable=any(shape.variable for shape in shapes),
        )

    def _flatten(self, items: Any) -> list[tuple[Any, Any]]:
        """The items with plain groups opened up: a group does not change how its contents match."""
        flat: list[tuple[Any, Any]] = []
        for op, arg in items:
            if str(op) == "SUBPATTERN":
                flat.extend(self._flatten(arg[3]))
            else:
                flat.append((op, arg))
        return flat

    def _check_pair(self, flat: list[tuple[Any, Any]], shapes: list[_Shape], i: int, top: bool) -> None:
        left = shapes[i]
        for j in range(i + 1, len(shapes)):
            right = shapes[j]
            if right.growing and right.first & left.chars:
                later = shapes[j + 1 :]
                can_fail = not top or any(
                    not shape.nullable or str(op) in ("AT", "ASSERT", "ASSERT_NOT")
                    for shape, (op, _) in zip(later, flat[j + 1 :], strict=True)
                )
                if can_fail:
                    raise _RegexHazard(
                        "two repeats next to each other can match the same characters (like \\s*\\s*x or "
                        ".*\\d+$), which takes time growing with a power of the input's length" + _SAFE_HINT
                    )
            if not right.nullable and not right.first & left.chars:
                return  # it cannot start with the left repeat's characters: it pins where that repeat ends

    def item(self, op: Any, arg: Any) -> _Shape:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            chars = self._charset(name, arg)
            return _Shape(chars, chars, False, False, False)
        if name == "AT":
            return _EMPTY
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, high, body = arg
            inner = self.sequence(body, top=False)
            possessive = name == "POSSESSIVE_REPEAT"
            if high > 1 and not possessive and inner.variable:
                raise _RegexHazard(
                    "a repeat holds another repeat or an alternation (like (a+)+ or (a|ab)*), which can take "
                    "time exponential in the input's length" + _SAFE_HINT
                )
            if possessive:
                return _Shape(inner.chars, inner.first, low == 0 or inner.nullable, False, False)
            return _Shape(
                chars=inner.chars,
                first=inner.first,
                nullable=low == 0 or inner.nullable,
                growing=(high > 1 and high != low) or inner.growing,
                variable=low != high or inner.variable,
            )
        if name == "BRANCH":
            branches = [self.sequence(branch, top=False) for branch in arg[1]]
            overlapping = any(
                a.first & b.first or a.nullable or b.nullable
                for k, a in enumerate(branches)
                for b in branches[k + 1 :]
            )
            return _Shape(
                chars=functools.reduce(lambda a, s: a | s.chars, branches, 0),
                first=functools.reduce(lambda a, s: a | s.first, branches, 0),
                nullable=any(branch.nullable for branch in branches),
                growing=any(branch.growing for branch in branches),
                variable=overlapping or any(branch.variable for branch in branches),
            )
        if name == "ATOMIC_GROUP":
            inner = self.sequence(arg, top=False)
            return _Shape(inner.chars, inner.first, inner.nullable, False, False)
        if name in ("ASSERT", "ASSERT_NOT"):
            self.sequence(arg[1], top=False)
            return _EMPTY
        if name in ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE"):
            raise _RegexHazard("backreferences such as \\1 or (?(1)...) are not supported")
        raise _RegexHazard(f"unsupported construct {name}")

    def _charset(self, name: str, arg: Any) -> int:
        key = (name, repr(arg))
        cached = self._sets.get(key)
        if cached is not None:
            return cached
        if name == "ANY":
            result = self.all
        else:
            if name == "IN":
                negate = any(str(op) == "NEGATE" for op, _ in arg)
                items = [(str(op), value) for op, value in arg if str(op) != "NEGATE"]
            else:
                negate = name == "NOT_LITERAL"
                items = [("LITERAL", arg)]
            result = 0
            for bit, char in enumerate(self.alphabet):
                if any(_in_class(items, variant) for variant in _case_variants(char)) != negate:
                    result |= 1 << bit
        self._sets[key] = result
        return result


def _first(shapes: list[_Shape]) -> int:
    first = 0
    for shape in shapes:
        first |= shape.first
        if not shape.nullable:
            break
    return first


def _case_variants(char: str) -> list[str]:
    variants = {char, char.lower(), char.upper(), char.casefold()}
    return sorted(variant for variant in variants if len(variant) == 1)


_CATEGORIES: dict[str, Callable[[str], bool]] = {
    "CATEGORY_DIGIT": str.isdecimal,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdecimal(),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
    "CATEGORY_LINEBREAK": lambda c: c == "\n",
    "CATEGORY_NOT_LINEBREAK": lambda c: c != "\n",
}


def _any_char(char: str) -> bool:
    return True  # a category this check does not know: assume the worst, that it matches anything


def _in_class(items: list[tuple[str, Any]], char: str) -> bool:
    code = ord(char)
    for name, value in items:
        if name == "LITERAL" and code == value:
            return True
        if name == "RANGE" and value[0] <= code <= value[1]:
            return True
        if name == "CATEGORY" and _CATEGORIES.get(str(value), _any_char)(char):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _regex_hazard(pattern: str) -> str | None:
    """Why ``pattern`` could match slowly, or None. Uses the standard library's own regex parser, a
    private module: should it ever go away, the check is skipped and only the text cap protects."""
    try:
        parser: Any = importlib.import_module("re._parser")
        tree = parser.parse(pattern, re.IGNORECASE)
    except Exception:  # a missing private module or a parse difference: fall back to the text cap
        return None
    try:
        _RegexShapes(tree).sequence(tree, top=True)
    except _RegexHazard as hazard:
        return str(hazard)
    except RecursionError:
        return "nested too deeply"
    return None


# ---------------------------------------------------------------------------------------------------
# Text helpers


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _phrase_key(phrase: str) -> str:
    return " ".join(_tokens(phrase))


def _contains(tokens: list[str], phrase: list[str]) -> bool:
    size = len(phrase)
    return any(tokens[k : k + size] == phrase for k in range(len(tokens) - size + 1))


def _similarity(tokens: set[str], example: frozenset[str]) -> float:
    """Dice coefficient of two word sets: 1 for the same words, 0 for none in common."""
    if not tokens or not example:
        return 0.0
    return 2 * len(tokens & example) / (len(tokens) + len(example))


# ---------------------------------------------------------------------------------------------------
# The engine's interface


class ToolPort(Protocol):
    def __call__(self, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The tool's response (``{"output": ...}`` or ``{"error": ...}``), or None for a client tool
        whose response comes later, through ``Playbook.on_tool_response``. A ``ToolFailure`` raised here
        becomes the response ``{"error": message}``."""
        ...


@dataclass(frozen=True)
class Reply:
    text: str


@dataclass(frozen=True)
class ToolCalled:
    tool: str
    args: dict[str, Any]
    response: dict[str, Any]


@dataclass(frozen=True)
class AwaitingClient:
    """A client tool was called; the turn stops until its response comes back."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class VariablesSet:
    values: dict[str, Any]


@dataclass(frozen=True)
class Transfer:
    agent: str


@dataclass(frozen=True)
class EndSession:
    reason: str | None
    escalated: bool = False


Action = Reply | ToolCalled | AwaitingClient | VariablesSet | Transfer | EndSession


@dataclass
class Outcome:
    actions: list[Action]
    state: dict[str, Any]
    """JSON data to hand back with the next call; {} when nothing is pending."""
    variables: dict[str, Any]
    """The session variables after the turn."""
    intent: str | None = None
    """The intent this turn worked on, if any."""
    error: str | None = None
    """Why the steps stopped with the definition's error reply (a template failed), for logs and spans."""


# ---------------------------------------------------------------------------------------------------
# The engine


@dataclass
class _Compiled:
    """An intent's matchers, prepared once."""

    intent: Intent
    index: int
    patterns: list[re.Pattern[str]]
    keywords: list[list[str]]
    examples: list[frozenset[str]]
    slots: dict[str, _SlotMatcher]


@dataclass
class _SlotMatcher:
    slot: Slot
    pattern: re.Pattern[str] | None
    values: re.Pattern[str] | None
    canonical: dict[str, str]

    @property
    def free_text(self) -> bool:
        return self.pattern is None and self.values is None


_NUMBER_PATTERNS = {"integer": r"[-+]?\d+", "number": r"[-+]?\d+(?:\.\d+)?"}


def _slot_matcher(slot: Slot) -> _SlotMatcher:
    pattern = slot.pattern or _NUMBER_PATTERNS.get(slot.type)
    canonical: dict[str, str] = {}
    for value, synonyms in slot.values.items():
        for phrase in (value, *synonyms):
            canonical.setdefault(_phrase_key(phrase), value)
    values = None
    if canonical:
        # Longest phrases first, so that at one position "new york city" wins over "new york".
        phrases = sorted(canonical, key=lambda key: (-len(key), key))
        alternatives = "|".join(r"\W+".join(map(re.escape, key.split())) for key in phrases)
        values = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)
    return _SlotMatcher(slot, _compile_pattern(pattern) if pattern else None, values, canonical)


@dataclass
class _Block:
    """A list of steps and where it is in the definition (for state and error messages)."""

    key: str  # "intent:NAME", "event:NAME" or "fallback"
    path: str  # "intents[0].steps", "events.welcome", "fallback"
    steps: list[Step]


@dataclass
class _Turn:
    """What one call of the engine accumulates."""

    variables: dict[str, Any]
    tools: ToolPort
    input: dict[str, Any]
    actions: list[Action] = field(default_factory=list)
    executed: int = 0
    intent: str | None = None
    error: str | None = None


class Playbook:
    """Runs a parsed definition. Holds no conversation of its own: everything per session is in
    the ``state`` and ``variables`` each call takes and returns, so one instance serves all sessions."""

    def __init__(self, definition: PlaybookDefinition) -> None:
        self.definition = definition
        self._intents: list[_Compiled] = []
        self._by_name: dict[str, _Compiled] = {}
        for index, intent in enumerate(definition.intents):
            compiled = _Compiled(
                intent=intent,
                index=index,
                patterns=[_compile_pattern(pattern) for pattern in intent.patterns],
                keywords=[_tokens(keyword) for keyword in intent.keywords],
                examples=[frozenset(_tokens(example)) for example in intent.examples],
                slots={slot.name: _slot_matcher(slot) for slot in intent.slots},
            )
            self._intents.append(compiled)
            self._by_name[intent.name] = compiled

    # -- the three entry points --------------------------------------------------------------------

    def on_text(
        self, state: Mapping[str, Any], text: str, variables: Mapping[str, Any], tools: ToolPort
    ) -> Outcome:
        """A user input: answers the slot asked for, if any, else starts the intent it matches or the
        fallback. A client tool still pending is given up: the user moved on."""
        text = text[:MAX_INPUT_TEXT]
        turn = _Turn(copy.deepcopy(dict(variables)), tools, {"text": text, "event": None})
        pending = self._load(state)
        if pending is not None and pending["pending"] == "slot":
            new_state = self._answer(turn, pending, text)
        else:
            new_state = self._start(turn, text)
        return self._outcome(turn, new_state)

    def on_event(
        self, state: Mapping[str, Any], event: str, variables: Mapping[str, Any], tools: ToolPort
    ) -> Outcome:
        """An event such as ``welcome``: runs its steps. An event the definition does not name does
        nothing at all. A slot being asked for stays asked for once the event's steps finish; a client
        tool still pending is given up, as with new text."""
        pending = self._load(state)
        steps = self.definition.events.get(event)
        if steps is None:
            return Outcome([], copy.deepcopy(pending) if pending else {}, copy.deepcopy(dict(variables)))
        turn = _Turn(copy.deepcopy(dict(variables)), tools, {"text": "", "event": event})
        after = pending if pending is not None and pending["pending"] == "slot" else {}
        block = _Block(f"event:{event}", f"events.{event}", steps)
        new_state = self._run(turn, block, 0, {}, {}, after)
        return self._outcome(turn, new_state)

    def on_tool_response(
        self,
        state: Mapping[str, Any],
        response: Mapping[str, Any],
        variables: Mapping[str, Any],
        tools: ToolPort,
    ) -> Outcome:
        """The response of the client tool a turn paused on: kept in ``results`` and the steps go on
        from the next one. With no tool pending it does nothing."""
        pending = self._load(state)
        turn = _Turn(copy.deepcopy(dict(variables)), tools, {"text": "", "event": None})
        if pending is None or pending["pending"] != "tool":
            return Outcome([], copy.deepcopy(pending) if pending else {}, turn.variables)
        block = self._block(pending["block"])
        assert block is not None  # _load checked it
        turn.input = copy.deepcopy(pending["input"])
        turn.intent = pending["intent"]
        results = copy.deepcopy(pending["results"])
        # A client that answers with something other than an object still gets its answer through.
        answer = dict(response) if isinstance(response, Mapping) else {"output": response}
        results[pending["as"]] = copy.deepcopy(answer)
        slots, after = copy.deepcopy(pending["slots"]), copy.deepcopy(pending["after"])
        new_state = self._run(turn, block, pending["step"] + 1, slots, results, after)
        return self._outcome(turn, new_state)

    # -- intents and slots ------------------------------------------------------------------------

    def _start(self, turn: _Turn, text: str) -> dict[str, Any]:
        match = self._match(text)
        if match is None:
            return self._run(turn, _Block("fallback", "fallback", self.definition.fallback), 0, {}, {}, {})
        compiled, slots = match
        return self._begin(turn, compiled, slots, 0)

    def _match(self, text: str) -> tuple[_Compiled, dict[str, Any]] | None:
        """The best intent for ``text`` and the slots its pattern's named groups give.

        Ranked by how it matched, patterns before keywords before examples; then by a score: the length
        of the pattern's match, the number of keyword words, the example similarity; then by order in
        the definition.
        """
        sample = text[:MAX_MATCH_TEXT]
        tokens = _tokens(text)
        token_set = set(tokens)
        best: tuple[tuple[int, float], _Compiled, dict[str, Any]] | None = None
        for compiled in self._intents:
            rank: tuple[int, float] | None = None
            groups: dict[str, Any] = {}
            for pattern in compiled.patterns:
                found = pattern.search(sample)
                if found is not None and (rank is None or len(found[0]) > rank[1]):
                    rank = (3, float(len(found[0])))
                    groups = {name: value for name, value in found.groupdict().items() if value is not None}
            if rank is None and compiled.keywords and all(_contains(tokens, k) for k in compiled.keywords):
                rank = (2, float(sum(len(k) for k in compiled.keywords)))
            if rank is None and compiled.examples:
                score = max(_similarity(token_set, example) for example in compiled.examples)
                if score >= self.definition.example_threshold:
                    rank = (1, score)
            if rank is not None and (best is None or rank > best[0]):
                best = (rank, compiled, groups)
        if best is None:
            return None
        _, compiled, groups = best
        slots: dict[str, Any] = {}
        for name, raw in groups.items():
            matcher = compiled.slots.get(name)
            value = _convert(matcher.slot, raw) if matcher else raw
            if value is not None:
                slots[name] = value
        self._extract(compiled, sample, slots, awaited=None)
        return compiled, slots

    def _extract(self, compiled: _Compiled, text: str, slots: dict[str, Any], awaited: str | None) -> None:
        """Fill the slots still empty from ``text``; the awaited slot may take the whole text."""
        sample = text[:MAX_MATCH_TEXT]
        for name, matcher in compiled.slots.items():
            if name in slots:
                continue
            value: Any = None
            if matcher.values is not None:
                found = matcher.values.search(sample)
                if found is not None:
                    value = matcher.canonical.get(_phrase_key(found[0]))
            if value is None and matcher.pattern is not None:
                found = matcher.pattern.search(sample)
                if found is not None:
                    named = found.groupdict().get(name)
                    groups = [group for group in found.groups() if group is not None]
                    raw = named if named is not None else (groups[0] if groups else found[0])
                    value = _convert(matcher.slot, raw)
            if value is None and name == awaited and matcher.free_text and text.strip():
                value = text.strip()
            if value is not None:
                slots[name] = value

    def _begin(
        self, turn: _Turn, compiled: _Compiled, slots: dict[str, Any], reprompts: int
    ) -> dict[str, Any]:
        """Ask for the first missing required slot, or run the intent's steps when none is missing."""
        turn.intent = compiled.intent.name
        for slot in compiled.intent.slots:
            if slot.required and slot.name not in slots:
                return self._ask(turn, compiled, slots, slot, slot.prompt, reprompts)
        block = self._block(f"intent:{compiled.intent.name}")
        assert block is not None
        return self._run(turn, block, 0, self._slot_view(compiled, slots), {}, {})

    def _ask(
        self,
        turn: _Turn,
        compiled: _Compiled,
        slots: dict[str, Any],
        slot: Slot,
        prompt: str | None,
        reprompts: int,
    ) -> dict[str, Any]:
        where = f"intents[{compiled.index}].slots[{compiled.intent.slots.index(slot)}]"
        context = self._context(turn, self._slot_view(compiled, slots), {})
        try:
            text = templates.render(prompt or "", context)
        except TemplateFailure as failure:
            part = "reprompt" if reprompts and slot.reprompt else "prompt"
            return self._fail(turn, f"{where}.{part}", failure)
        turn.actions.append(Reply(text))
        return {"pending": "slot", "intent": compiled.intent.name, "slot": slot.name, "slots": slots,
                "reprompts": reprompts}

    def _answer(self, turn: _Turn, pending: dict[str, Any], text: str) -> dict[str, Any]:
        compiled = self._by_name[pending["intent"]]
        slots = copy.deepcopy(pending["slots"])
        awaited = pending["slot"]
        # The intent's own patterns first: "order AB-1234" answers "which order?" through the group.
        for pattern in compiled.patterns:
            found = pattern.search(text[:MAX_MATCH_TEXT])
            if found is not None:
                for name, raw in found.groupdict().items():
                    matcher = compiled.slots.get(name)
                    value = _convert(matcher.slot, raw) if matcher and raw is not None else None
                    if value is not None:
                        slots.setdefault(name, value)
        self._extract(compiled, text, slots, awaited=awaited)
        if awaited in slots:
            return self._begin(turn, compiled, slots, 0)
        match = self._match(text)
        if match is not None and match[0] is not compiled:
            return self._begin(turn, match[0], match[1], 0)  # the user asked for something else
        turn.intent = compiled.intent.name
        if pending["reprompts"] >= self.definition.max_reprompts:
            return self._run(turn, _Block("fallback", "fallback", self.definition.fallback), 0, {}, {}, {})
        slot = compiled.slots[awaited].slot
        return self._ask(turn, compiled, slots, slot, slot.reprompt or slot.prompt, pending["reprompts"] + 1)

    @staticmethod
    def _slot_view(compiled: _Compiled, slots: dict[str, Any]) -> dict[str, Any]:
        """Slots as templates see them: every declared slot, None when not filled."""
        return {**{slot.name: None for slot in compiled.intent.slots}, **slots}

    # -- steps ----------------------------------------------------------------------------------

    def _run(
        self,
        turn: _Turn,
        block: _Block,
        start: int,
        slots: dict[str, Any],
        results: dict[str, Any],
        after: dict[str, Any],
    ) -> dict[str, Any]:
        """Run ``block`` from step ``start``; the state to keep, which is ``after`` when the steps end
        without pausing, transferring or ending the session."""
        for index in range(start, len(block.steps)):
            step = block.steps[index]
            where = f"{block.path}[{index}]"
            turn.executed += 1
            if turn.executed > MAX_STEPS_PER_TURN:
                too_many = TemplateFailure(f"more than {MAX_STEPS_PER_TURN} steps in one turn")
                return self._fail(turn, where, too_many)
            context = self._context(turn, slots, results)
            part = "when"
            try:
                if step.when is not None and not templates.evaluate(_condition(step.when), context):
                    continue
                if step.reply is not None:
                    part = "reply"
                    text = templates.render(step.reply, context)
                    if text.strip():  # a reply whose template chose to say nothing says nothing
                        turn.actions.append(Reply(text))
                elif step.set_variables is not None:
                    part = "setVariables"
                    values = templates.render_value(step.set_variables, context)
                    turn.variables.update(values)
                    turn.actions.append(VariablesSet(copy.deepcopy(values)))
                elif step.call_tool is not None:
                    part = "callTool.args"
                    call = step.call_tool
                    args = templates.render_value(call.args, context)
                    response = self._call(turn.tools, call.tool, copy.deepcopy(args))
                    if response is None:
                        turn.actions.append(AwaitingClient(call.tool, args))
                        return {
                            "pending": "tool", "block": block.key, "step": index, "as": call.result_name,
                            "intent": turn.intent, "slots": slots, "results": results, "input": turn.input,
                            "after": after,
                        }
                    results[call.result_name] = response
                    turn.actions.append(ToolCalled(call.tool, args, copy.deepcopy(response)))
                elif step.transfer is not None:
                    turn.actions.append(Transfer(step.transfer))
                    return {}
                elif step.end_session is not None:
                    part = "endSession.reason"
                    reason = step.end_session.reason
                    turn.actions.append(EndSession(templates.render(reason, context) if reason else None,
                                                   bool(step.end_session.session_escalated)))
                    return {}
            except TemplateFailure as failure:
                return self._fail(turn, f"{where}.{part}", failure)
        return after

    @staticmethod
    def _call(tools: ToolPort, tool: str, args: dict[str, Any]) -> dict[str, Any] | None:
        try:
            response = tools(tool, args)
        except ToolFailure as failure:
            return {"error": failure.message}
        if response is None:
            return None
        return copy.deepcopy(response) if isinstance(response, dict) else {"output": copy.deepcopy(response)}

    def _fail(self, turn: _Turn, where: str, failure: TemplateFailure) -> dict[str, Any]:
        turn.error = f"{where}: {failure.message}"
        turn.actions.append(Reply(self.definition.error_reply))
        return {}

    @staticmethod
    def _context(turn: _Turn, slots: dict[str, Any], results: dict[str, Any]) -> dict[str, Any]:
        return {"slots": slots, "variables": turn.variables, "results": results, "input": turn.input}

    @staticmethod
    def _outcome(turn: _Turn, state: dict[str, Any]) -> Outcome:
        return Outcome(turn.actions, copy.deepcopy(state), turn.variables, turn.intent, turn.error)

    # -- state --------------------------------------------------------------------------------

    def _block(self, key: str) -> _Block | None:
        kind, _, name = key.partition(":")
        if kind == "intent" and name in self._by_name:
            compiled = self._by_name[name]
            return _Block(key, f"intents[{compiled.index}].steps", compiled.intent.steps)
        if kind == "event" and name in self.definition.events:
            return _Block(key, f"events.{name}", self.definition.events[name])
        if key == "fallback":
            return _Block(key, "fallback", self.definition.fallback)
        return None

    def _load(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """The pending work in ``state`` if it still fits the definition (which may have changed since
        the state was saved), else None: a state the engine cannot use is treated as no state."""
        if not isinstance(state, Mapping):
            return None
        data = dict(state)
        if self._slot_state_ok(data):
            return data
        if data.get("pending") == "tool":
            block = self._block(data["block"]) if isinstance(data.get("block"), str) else None
            step = data.get("step")
            if (
                block is not None
                and isinstance(step, int)
                and 0 <= step < len(block.steps)
                and block.steps[step].call_tool is not None
                and isinstance(data.get("as"), str)
                and isinstance(data.get("slots"), dict)
                and isinstance(data.get("results"), dict)
                and isinstance(data.get("input"), dict)
                and (data.get("intent") is None or isinstance(data.get("intent"), str))
                and isinstance(data.get("after"), dict)
                and (not data["after"] or self._slot_state_ok(data["after"]))
            ):
                return data
        return None

    def _slot_state_ok(self, data: dict[str, Any]) -> bool:
        if data.get("pending") != "slot":
            return False
        intent = data.get("intent")
        compiled = self._by_name.get(intent) if isinstance(intent, str) else None
        return (
            compiled is not None
            and data.get("slot") in compiled.slots
            and isinstance(data.get("slots"), dict)
            and isinstance(data.get("reprompts"), int)
        )


def _convert(slot: Slot, raw: str) -> Any:
    """A slot's text as its type; None when it is not one (the slot then stays empty)."""
    text = raw.strip()
    if not text:
        return None
    if slot.type == "integer":
        try:
            return int(text)
        except ValueError:
            return None
    if slot.type == "number":
        try:
            number = float(text)
        except ValueError:
            return None
        if not math.isfinite(number):
            return None
        return int(number) if number.is_integer() and re.fullmatch(r"[-+]?\d+", text) else number
    return text[:MAX_INPUT_TEXT]
