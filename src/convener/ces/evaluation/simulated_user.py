"""The simulated user of a scenario evaluation: who decides what the user says next.

The driver of a scenario runs the session turn by turn; it sends a milestone's ``staticUtterance`` or
``event`` itself, stops at ``maxTurns`` and when the agent ends the session, and asks a
:class:`SimulatedUser` only when a generated user input is needed. The simulator sees a
:class:`UserView` (the task, the user facts, the persona, the milestone being pursued, the conversation so
far) and answers :class:`Say` (the user's next message) or :class:`Stop` (the user ends the conversation,
with a one-sentence reason and the user's own view of whether the goal was reached).

Two simulators exist; :func:`simulated_user` picks one from the configured model provider.

**ModelUser** asks the model provider to role-play the customer: a system prompt with the persona, the
task, the user facts, the current milestone and a JSON output contract (``{"action": "reply" | "done" |
"give_up", "text": ..., "reason": ...}``), then the conversation with the roles reversed (the agent's
words are the model's "user" turns, the simulated user's own earlier words its "assistant" turns). An
unusable reply is asked again once, then :class:`SimulationFailure` is raised.

**OfflineUser** is deterministic and reads words, with the offline judge's reading of text
(:func:`convener.llm.offline_judge.read`: casefolded, stemmed content words mapped through a small synonym
table, and figures such as ``AC-1001``). Its rules, first match wins:

1. *Opening.* While the history has no user line yet (it may have the agent's greeting), the user says the
   task in the first person: second-person words are rewritten (``you`` → ``I``, or ``me`` after a
   preposition or an object-taking verb, or before the end of a clause; ``your`` → ``my``, ``yours`` →
   ``mine``, ``yourself`` → ``myself``, ``you're``/``you are`` → ``I'm``/``I am``, ``you were`` → ``I was``,
   ``you've`` → ``I've``, ``you'll`` → ``I'll``, ``you'd`` → ``I'd``), keeping a capital where there was
   one. A task with no letter or digit is replaced by the milestone's goal, or by a plain request for help.
2. *Milestones exhausted.* When the scenario has milestones and every one is completed, the user stops
   (goal reached unknown: the judges decide).
3. *New milestone.* On the first user turn of a milestone that has a goal (after the opening), the user
   says that goal in the first person, unless the agent is asking something (other than whether there is
   anything else, or how it can help): then the question is answered instead (rule 4).
4. *The agent's question.* The question is the last sentence of the agent's latest line (everything the
   agent said since the user last spoke) that ends in ``?`` or makes a request ("please provide / tell /
   give / confirm / enter ...", "what is your ...", "could you ...", "may I have ...", "I need ...").
   No question: the user stops (goal reached unknown).

   a. "anything else" / "something else": the user stops, nothing being left to ask (goal unknown).
   b. A yes/no confirmation ("shall I", "do you want", "would you like", "is that correct", "can I go
      ahead", ...; not a question opening with what/which/when/where/who/how): the user says
      "Yes, please." A choice ("... or ...?") is answered from the facts or the task as in (d) and (e)
      when they match, else also with "Yes, please."
   c. "How can I help you?" and the like: the user restates the milestone's goal, or the task.
   d. Otherwise the user answers from the user facts with one fact's value alone: the fact whose name
      (split on ``_``, ``-``, spaces and camelCase) and value share the most concepts with the question,
      name words counting double and, between equals, the name most fully matched; ties go to the first
      fact. A fact with a blank value is never said.
   e. No fact matches: an identifier or figure of the task that comes right after (within three words of)
      a word the question asks about ("... my order AC-1001 ..." answers "What's the order number?").
   f. Still nothing: "Sorry, I don't know that." If the user's previous line was that same apology to the
      same question, the user stops instead (gave up).
5. *Loops.* An answer the user already gave three times in a row to the same question is not given a
   fourth time: the user stops, the agent looping (gave up). Two questions are the same when they ask about
   the same concepts and figures, request framing and courtesy aside ("Please provide your order number."
   and "Sorry, what's your order number?" are the same question).

Every text is stripped and cut to :data:`MAX_TEXT` characters; reasons quote at most
:data:`QUOTE_LENGTH` characters of the agent's words.

Limits of the offline user (also stated in results, :data:`OFFLINE_LIMITS`): it does not improvise beyond
these rules, cannot tell whether its goal was reached, and records the persona without acting it out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from convener.api.errors import Unavailable
from convener.ces.evaluation.models import EvaluationPersona, Milestone, UserFact
from convener.llm.base import ChatMessage, ModelProvider, json_candidates
from convener.llm.offline_judge import PLEASANTRIES, Figure, claims, concept, read, vocabulary

MAX_TEXT = 4000
"""The longest text a :class:`Say` carries."""
QUOTE_LENGTH = 120
"""How much of the agent's question a stop reason quotes."""
MAX_READ = 20_000
"""How many characters of a task or an agent line are read: enough for any real one, and bounded."""

# -- the interface ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One line of the conversation: the user's message, or an agent turn's texts joined with newlines."""

    role: Literal["user", "agent"]
    text: str


@dataclass(frozen=True)
class UserView:
    """What the simulated user knows when it is asked for its next input."""

    task: str
    facts: tuple[UserFact, ...]
    persona: EvaluationPersona | None
    milestone: Milestone | None
    """The milestone being pursued; None when there are none or all are done."""
    milestone_started: bool
    """True on the first user turn of that milestone."""
    history: tuple[Exchange, ...]
    """The conversation so far, oldest first."""
    turn: int
    """Index of the user turn about to be made, from 0."""
    milestones_done: bool = False
    """True when the scenario has milestones and every one is COMPLETED: nothing is left to pursue."""


@dataclass(frozen=True)
class Say:
    """The user's next message: non-empty, stripped, at most :data:`MAX_TEXT` characters."""

    text: str


@dataclass(frozen=True)
class Stop:
    """The user ends the conversation."""

    reason: str
    """One sentence, shown in results: why the user stopped."""
    goal_reached: bool | None
    """The user's own view: True done, False gave up, None the simulator cannot tell."""


class SimulationFailure(Unavailable):
    """The simulator could not produce a usable reply."""


@runtime_checkable
class SimulatedUser(Protocol):
    name: str
    """``"offline"`` or ``"model"``."""
    limits: str | None
    """What this simulator cannot do, stated in results; None when nothing is to be said."""

    def next(self, view: UserView) -> Say | Stop: ...


def simulated_user(provider: ModelProvider | None) -> SimulatedUser:
    """The model-driven user when a provider is configured, else the offline one."""
    if provider is None:
        return OfflineUser()
    return ModelUser(provider)


# -- shared helpers ---------------------------------------------------------------------------------


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` stripped and cut to ``limit`` characters, at a space when one is near the end."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    if space >= limit * 3 // 4:
        cut = cut[:space]
    return cut.rstrip()


def quote(text: str, limit: int = QUOTE_LENGTH) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis, for a reason to quote."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


# -- first person -----------------------------------------------------------------------------------

_SECOND_PERSON = re.compile(
    r"\b(?:you['\u2019](?:re|ve|ll|d)|you\s+(?:are|were)|yourselves|yourself|yours|your|you)\b"
    r"(?P<after>\s*[.,;:!?)\"\u201d]|\s*$)?",
    re.IGNORECASE,
)
_REPLACEMENTS = {
    "you're": "I'm",
    "you've": "I've",
    "you'll": "I'll",
    "you'd": "I'd",
    "you are": "I am",
    "you were": "I was",
    "yourselves": "myself",
    "yourself": "myself",
    "yours": "mine",
    "your": "my",
}
_OBJECT_AFTER = vocabulary(
    """
    to for with at from about by of on than into onto upon toward towards around behind against like
    tell told give gave given call called help helped send sent email emailed ask asked contact contacted
    let thank thanks show showed refund refunded charge charged bill billed owe owes offer offered notify
    notified assure assured remind reminded inform informed connect connected transfer transferred
    """
)
_PREVIOUS_WORD = re.compile(r"([A-Za-z]+)\s+$")


def first_person(text: str) -> str:
    """``text`` with second-person words rewritten in the first person (see the module docstring)."""

    def replace(match: re.Match[str]) -> str:
        after = match.group("after") or ""
        original = match.group(0)[: len(match.group(0)) - len(after)]
        key = " ".join(original.replace("\u2019", "'").casefold().split())
        if key in _REPLACEMENTS:
            word = _REPLACEMENTS[key]
        else:  # plain "you": subject or object
            previous = _PREVIOUS_WORD.search(text, max(0, match.start() - 40), match.start())
            after_object = previous is not None and previous.group(1).casefold() in _OBJECT_AFTER
            word = "me" if after_object or after.strip() else "I"
        if original.isupper() and len(original) > 1:
            word = word.upper()
        elif original[0].isupper():
            word = word[0].upper() + word[1:]
        return word + after

    return _SECOND_PERSON.sub(replace, text)


# -- reading the agent --------------------------------------------------------------------------------

APOLOGY = "Sorry, I don't know that."
YES = "Yes, please."
LOOP_LIMIT = 3
"""How many times in a row the same answer may be given to the same question."""

_REQUEST = re.compile(
    r"\b(?:please\s+(?:provide|tell|give|confirm|enter|share|send|state|type|spell|let\s+me\s+know)"
    r"|what(?:'s|\s+is|\s+are|\s+was)\s+(?:your|the)"
    r"|could\s+you|can\s+you|would\s+you\s+(?:please|mind)|may\s+i\s+(?:have|get|ask)"
    r"|i(?:\s+will|'ll)?\s+need|let\s+me\s+know)\b"
)
_CONFIRMATION = re.compile(
    r"\b(?:shall\s+(?:i|we)|should\s+i|do\s+you\s+(?:want|wish|confirm|agree)|would\s+you\s+(?:like|want)"
    r"|is\s+(?:that|this|it)\s+(?:correct|right|ok|okay|alright|all\s+right|fine)"
    r"|(?:can|may|should)\s+i\s+(?:go\s+ahead|proceed)|(?:want|like)\s+me\s+to"
    r"|(?:ok|okay)\s+to\s+proceed|are\s+you\s+sure)\b"
)
_WH_OPENING = re.compile(r"^\W*(?:what|which|when|where|who|whom|whose|how)\b")
_CHOICE = re.compile(r"\bor\b")
_ANYTHING_ELSE = re.compile(r"\b(?:anything|something)\s+else\b")
_HOW_CAN_I_HELP = re.compile(
    r"\b(?:how\s+(?:can|may|could)\s+i\s+(?:help|assist)|what\s+can\s+i\s+(?:do|help)"
    r"|how\s+can\s+we\s+(?:help|assist)|what\s+brings\s+you|(?:can|may|could)\s+i\s+(?:help|assist))\b"
)
FRAMING = frozenset(
    concept(word)
    for word in vocabulary("please provide tell give enter share need know let like want type say state")
)
"""Concepts that frame a request rather than name what is asked for."""


def _lower(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").casefold()


def is_question(sentence: str) -> bool:
    """Whether a sentence of the agent asks something: a question mark, or a request."""
    return sentence.rstrip().endswith("?") or _REQUEST.search(_lower(sentence)) is not None


def focus_question(agent_text: str) -> str | None:
    """The question the agent is waiting for: the last asking sentence of its line, if any."""
    sentences = claims(agent_text[-MAX_READ:])
    return next((sentence for sentence in reversed(sentences) if is_question(sentence)), None)


def question_key(question: str) -> frozenset[str]:
    """What makes two questions the same: the concepts they ask about (framing and courtesy aside) and
    their figures, or, for a question with neither, its words."""
    reading = read(question)
    key = (reading.concepts - FRAMING - PLEASANTRIES) | {f"#{figure.value}" for figure in reading.figures}
    if not key:
        key = frozenset({" ".join(re.findall(r"\w+", reading.plain))})
    return frozenset(key)


def asked_concepts(question: str) -> frozenset[str]:
    """The concepts a question asks about (framing such as "please provide" left out)."""
    return read(question).concepts - FRAMING


def _figure_values(figures: Sequence[Figure]) -> set[str]:
    return {figure.value for figure in figures}


def best_fact(question: str, facts: Sequence[UserFact]) -> UserFact | None:
    """The fact that best matches ``question`` (see rule 4d of the module docstring), or None."""
    reading = read(question)
    asked = reading.concepts - FRAMING
    asked_figures = _figure_values(reading.figures)
    best: tuple[int, float] = (0, 0.0)
    chosen: UserFact | None = None
    for fact in facts:
        value = (fact.value or "").strip()
        if not value:
            continue
        name = read((fact.name or "")[:MAX_READ]).concepts - FRAMING
        said = read(value[:MAX_READ])
        name_hits = len(name & asked)
        value_hits = len((said.concepts - FRAMING) & asked)
        value_hits += len(_figure_values(said.figures) & asked_figures)
        score = (2 * name_hits + value_hits, name_hits / len(name) if name else 0.0)
        if score[0] > 0 and score > best:
            best, chosen = score, fact
    return chosen


_EDGE_START = "\"'([{#<\u201c\u2018"
_EDGE_END = "\"'.,;:!?)]}>\u201d\u2019"


def task_figure(question: str, task: str) -> str | None:
    """An identifier or figure of the task right after a word the question asks about (rule 4e)."""
    asked = asked_concepts(question)
    if not asked:
        return None
    tokens = task[:MAX_READ].split()
    for index, token in enumerate(tokens):
        candidate = token.lstrip(_EDGE_START).rstrip(_EDGE_END)
        if not candidate or not read(candidate).figures:
            continue
        for previous in reversed(tokens[max(0, index - 3) : index]):
            reading = read(previous)
            if reading.figures:
                break
            if reading.concepts & asked:
                return candidate
    return None


@dataclass(frozen=True)
class Round:
    """What the agent said since the user last spoke, and the user's answer to it."""

    agent: str
    user: str


def rounds(history: Sequence[Exchange]) -> tuple[list[Round], str]:
    """The history as rounds (agent lines, then the user's line) and the agent's words since the last
    user line."""
    done: list[Round] = []
    agent: list[str] = []
    for exchange in history:
        if exchange.role == "agent":
            agent.append(exchange.text)
        else:
            done.append(Round("\n".join(agent), exchange.text))
            agent = []
    return done, "\n".join(agent)


# -- the offline user -------------------------------------------------------------------------------

OFFLINE_LIMITS = (
    "The offline simulated user follows the milestones' static utterances and events, opens with the task"
    " (rewritten in the first person), says a new milestone's goal, answers the agent's questions from the"
    " userFacts by matching words (or with an identifier from the task), says yes to confirmations and"
    " stops when every milestone is completed or the agent asks nothing more; it does not improvise, cannot judge whether its goal was"
    " reached, and applies no persona (the persona is recorded but does not change its words)."
)
OPENING_FALLBACK = "Hello, I need some help."


class OfflineUser:
    """The deterministic simulated user (rules in the module docstring); no I/O."""

    name: str = "offline"
    limits: str | None = OFFLINE_LIMITS

    def next(self, view: UserView) -> Say | Stop:
        done, agent = rounds(view.history)
        if not done:
            return Say(self._goal(view, prefer_task=True))
        if view.milestones_done:
            return Stop("every milestone is completed; nothing is left to pursue", None)
        milestone_goal = _goal_text(view.milestone)
        question = focus_question(agent)
        if view.milestone_started and milestone_goal and (
                question is None or _ANYTHING_ELSE.search(_lower(question)) or _HOW_CAN_I_HELP.search(_lower(question))):
            return Say(milestone_goal)  # a real question of the agent is answered first
        if question is None:
            reason = (
                "the agent asked nothing more and no milestone is left to pursue"
                if view.milestone is None
                else "the agent asked nothing more and the user has nothing to add to the current milestone"
            )
            return Stop(reason, None)
        lowered = _lower(question)
        if _ANYTHING_ELSE.search(lowered):
            return Stop("the agent asked if there is anything else; nothing is left to ask", None)
        answer = self._answer(view, question, lowered)
        key = question_key(question)

        def same_question(round_: Round) -> bool:
            earlier = focus_question(round_.agent)
            return earlier is not None and question_key(earlier) == key

        if answer == APOLOGY and done[-1].user.strip() == APOLOGY and same_question(done[-1]):
            return Stop(
                f'the agent asked again for something the user does not know: "{quote(question)}"', False
            )
        recent = done[-LOOP_LIMIT:]
        if len(recent) == LOOP_LIMIT and all(
            round_.user.strip() == answer and same_question(round_) for round_ in recent
        ):
            return Stop(
                f'the agent is looping: it asked "{quote(question)}" again after the user had given the same'
                f" answer {LOOP_LIMIT} times in a row",
                False,
            )
        return Say(answer)

    def _answer(self, view: UserView, question: str, lowered: str) -> str:
        confirmation = _CONFIRMATION.search(lowered) is not None and not _WH_OPENING.search(lowered)
        if confirmation and not _CHOICE.search(lowered):
            return YES
        if _HOW_CAN_I_HELP.search(lowered):
            return self._goal(view, prefer_task=False)
        fact = best_fact(question[:MAX_READ], view.facts)
        if fact is not None:
            value = bounded(fact.value or "")
            if value:
                return value
        figure = task_figure(question[:MAX_READ], view.task)
        if figure:
            return bounded(figure)
        if confirmation:
            return YES
        return APOLOGY

    @staticmethod
    def _goal(view: UserView, *, prefer_task: bool) -> str:
        """The task (or the milestone's goal) in the first person: the first of them that says something."""
        task = bounded(first_person(view.task[:MAX_READ])) if view.task else ""
        goal = _goal_text(view.milestone)
        options = (task, goal) if prefer_task else (goal, task)
        return next((text for text in options if _says_something(text)), OPENING_FALLBACK)


def _goal_text(milestone: Milestone | None) -> str:
    if milestone is None or not milestone.goal or not _says_something(milestone.goal):
        return ""
    return bounded(first_person(milestone.goal[:MAX_READ]))


def _says_something(text: str) -> bool:
    return any(char.isalnum() for char in text)


# -- the model user ---------------------------------------------------------------------------------

TEMPERATURE = 0.7
ATTEMPTS = 2
"""An unusable reply is asked again once."""
RAW_EXCERPT = 200
"""How much of an unusable reply a failure message quotes."""
ACTIONS = ("reply", "done", "give_up")

RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "text": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["action", "text", "reason"],
}

OPENING_PROMPT = "(The conversation starts. Write the customer's first message.)"
SILENT_AGENT_PROMPT = "(The agent said nothing. Write the customer's next message.)"

CONTRACT = (
    "Reply ONLY with a JSON object, and nothing else, of the form"
    ' {"action": "reply" | "done" | "give_up",'
    ' "text": "<what the customer says; empty when done or give_up>",'
    ' "reason": "<why, for done or give_up>"}.\n'
    '- "reply": the customer says "text" next (one message, in the customer\'s own voice).\n'
    '- "done": the customer\'s task is accomplished (and the current goal met); the customer ends the'
    ' conversation. "reason" says what showed it.\n'
    '- "give_up": the agent cannot or will not help, or keeps going in circles; the customer ends the'
    ' conversation. "reason" says why.'
)


ROLE = (
    "You role-play a CUSTOMER (the user) talking to a customer-service agent. You are NOT the agent and"
    " you do not assist anyone: write only what the customer says next, as the customer would say it,"
    " in short natural messages."
)


def system_prompt(view: UserView) -> str:
    """The role-play instructions: persona, task, facts, current milestone and the output contract."""
    parts = [ROLE]
    persona = view.persona
    if persona is not None:
        who = [f"Name: {persona.display_name}" if persona.display_name else ""]
        if persona.description:
            who.append(f"Description: {persona.description}")
        if persona.personality:
            who.append(f"Personality (behave like this): {persona.personality}")
        lines = [line for line in who if line]
        if lines:
            parts.append("Who you are:\n" + "\n".join(lines))
    parts.append(f"Your task (what you want from the agent): {view.task.strip() or '(not stated)'}")
    facts = [
        f"- {(fact.name or '').strip() or '(unnamed)'}: {(fact.value or '').strip()}"
        for fact in view.facts
    ]
    if facts:
        parts.append(
            "Facts you know. Reveal a fact only when the agent asks for it or when your task needs it;"
            " never invent any other fact (names, numbers, dates, addresses): if the agent asks for"
            " something not listed here, say you do not know it.\n" + "\n".join(facts)
        )
    else:
        parts.append(
            "You know no particular facts: never invent any (names, numbers, dates, addresses); if the agent"
            " asks for something, say you do not know it."
        )
    milestone = view.milestone
    if milestone is not None and milestone.goal:
        goal = f"Your current goal: {milestone.goal.strip()}"
        if view.milestone_started:
            goal += " (you are starting on it now)"
        if milestone.success_criteria:
            goal += f"\nWhat you want to see before you are satisfied: {milestone.success_criteria.strip()}"
        parts.append(goal)
    parts.append(CONTRACT)
    return "\n\n".join(parts)


def conversation(view: UserView) -> list[ChatMessage]:
    """The prompt: the system message, then the history with the roles reversed."""
    messages = [ChatMessage(role="system", content=system_prompt(view))]
    for exchange in view.history:
        role: Literal["user", "assistant"] = "user" if exchange.role == "agent" else "assistant"
        messages.append(ChatMessage(role=role, content=exchange.text))
    if not view.history:
        messages.append(ChatMessage(role="user", content=OPENING_PROMPT))
    elif view.history[-1].role == "user":
        messages.append(ChatMessage(role="user", content=SILENT_AGENT_PROMPT))
    return messages


def interpret(text: str | None, structured: Any) -> Say | Stop | str:
    """The decision in a reply, or a description of what is wrong with it."""
    objects = [candidate for candidate in json_candidates(text, structured) if isinstance(candidate, dict)]
    if not objects:
        excerpt = (text or "").strip()
        if not excerpt:
            return "the reply is empty"
        shown = excerpt[:RAW_EXCERPT] + ("…" if len(excerpt) > RAW_EXCERPT else "")
        return f"the reply is not a JSON object: {json.dumps(shown, ensure_ascii=False)}"
    problem = ""
    for candidate in objects:
        action = candidate.get("action")
        normal = re.sub(r"[\s-]+", "_", action.strip().casefold()) if isinstance(action, str) else None
        said = candidate.get("text")
        said = bounded(said) if isinstance(said, str) else ""
        reason = candidate.get("reason")
        reason = quote(reason, 300) if isinstance(reason, str) else ""
        if normal == "reply":
            if said:
                return Say(said)
            problem = problem or 'action "reply" came with an empty text'
        elif normal == "done":
            return Stop(reason or "the simulated user said its goal was reached", True)
        elif normal == "give_up":
            return Stop(reason or "the simulated user gave up", False)
        else:
            shown = quote(json.dumps(action, ensure_ascii=False), 60)
            problem = problem or f"the action {shown} is not one of {', '.join(ACTIONS)}"
    return problem


class ModelUser:
    """The simulated user that asks a model to role-play the customer (see the module docstring)."""

    name: str = "model"
    limits: str | None = None

    def __init__(self, provider: ModelProvider) -> None:
        self.provider = provider

    def next(self, view: UserView) -> Say | Stop:
        messages = conversation(view)
        problems: list[str] = []
        for _ in range(ATTEMPTS):
            completion = self.provider.complete(
                messages, response_schema=RESPONSE_SCHEMA, temperature=TEMPERATURE
            )
            decision = interpret(completion.text, completion.structured)
            if not isinstance(decision, str):
                return decision
            problems.append(decision)
        raise SimulationFailure(
            f"the simulated user ({self.provider.name}/{self.provider.model}) gave no usable reply in"
            f" {ATTEMPTS} attempts: {'; then '.join(problems)} (each reply must be a JSON object"
            ' {"action": "reply" | "done" | "give_up", "text": ..., "reason": ...}, with a non-empty text'
            " to reply)"
        )
