"""The model judge: asks the configured model provider, several times, and takes the majority.

Each question is one structured-output prompt (a JSON object ``{"score": int, "explanation": str}``)
spelling out the seed's label definitions. It is sampled ``samples`` times (with temperature when more
than once, so the samples can differ), at most ``max_concurrency`` requests in flight for the judge as a
whole. Replies are parsed leniently (JSON in prose or in a Markdown fence); a reply that does not parse
or whose score is out of range is discarded. The verdict is the most frequent score, a tie going to the
stricter one (the lower similarity; "not justified" before "no claim" before "justified"; "not met";
"not completed" before "unspecified" before "completed" before "handoff"). Verdicts are cached per
question, so asking the same thing twice costs one round of requests. :meth:`ModelJudge.with_samples` gives
the judge with another number of samples: made once per number, it keeps its own cache and shares the
bound on requests in flight.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from convener.api.errors import ApiError, Unavailable
from convener.llm.base import ChatMessage, ModelProvider, json_candidates
from convener.llm.judges import (
    CRITERION_LABELS,
    HALLUCINATION_LABELS,
    SIMILARITY_LABELS,
    USER_GOAL_LABELS,
    Verdict,
)

PREFIX = "Model judge:"
SAMPLED_TEMPERATURE = 0.7
"""Temperature of the samples when more than one is taken; a single sample is asked at 0."""

RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "explanation": {"type": "string"}},
    "required": ["score", "explanation"],
}

SYSTEM = (
    "You are an impartial evaluator of a customer-service AI agent. Read the task, decide, and reply with"
    ' only a JSON object of the form {"score": <integer>, "explanation": "<one or two sentences>"}'
    " and nothing else."
)


@dataclass(frozen=True)
class Question:
    """One kind of question: what to ask, which scores are valid, and which win ties."""

    kind: str
    labels: Mapping[int, str]
    definitions: Mapping[int, str]
    instructions: str
    strictness: tuple[int, ...]
    """Scores from the strictest; a tie between samples goes to the earliest here."""

    def prompt(self, sections: Sequence[tuple[str, str]]) -> str:
        scale = "\n".join(
            f"{score} = {self.labels[score]}: {self.definitions[score]}" for score in self.labels
        )
        body = "\n\n".join(f"{title}:\n<<<\n{text}\n>>>" for title, text in sections)
        allowed = ", ".join(str(score) for score in self.labels)
        return (
            f"{self.instructions}\n\nScores:\n{scale}\n\n{body}\n\n"
            f'Answer with a JSON object {{"score": <one of {allowed}>, "explanation": "<why>"}}.'
        )


SIMILARITY = Question(
    kind="similarity",
    labels=SIMILARITY_LABELS,
    definitions={
        4: "the actual response says everything the expected one says, with nothing contradicting it;"
        " wording, order and language may differ.",
        3: "the same meaning with small differences: a trivial detail left out, a harmless addition,"
        " or hedged where the expected response is plain.",
        2: "the main point is there but some real information of the expected response is missing or vague.",
        1: "most of the expected information is missing, or a secondary fact is wrong.",
        0: "unrelated to the expected response, or contradicting it (a wrong key number, date, amount,"
        " identifier, or a negation that reverses the meaning), or empty.",
    },
    instructions=(
        "Rate how consistent the agent's ACTUAL response is with the EXPECTED response. Judge meaning,"
        " not wording: a paraphrase, a reordering or a faithful translation into another language can be"
        " fully consistent. Numbers, amounts, dates, times and identifiers must agree."
    ),
    strictness=(0, 1, 2, 3, 4),
)

HALLUCINATION = Question(
    kind="hallucination",
    labels=HALLUCINATION_LABELS,
    definitions={
        1: "every factual claim of the response is supported by the context (what the user said,"
        " tool results, earlier turns), directly or by plain inference such as a sum or a translation.",
        0: "at least one factual claim is not supported by the context: an invented number, date,"
        " status, policy, promise or action, or one contradicting the context.",
        -1: "the response makes no factual claim: only greetings, thanks, apologies, questions or"
        " offers of help.",
    },
    instructions=(
        "Decide whether the agent's RESPONSE is justified by the CONTEXT it had. Check each factual"
        " claim of the response against the context only, not against general knowledge."
    ),
    strictness=(0, -1, 1),
)

CRITERION = Question(
    kind="criterion",
    labels=CRITERION_LABELS,
    definitions={
        1: "the conversation satisfies the criterion.",
        0: "the conversation does not satisfy the criterion, or it cannot be told from the transcript.",
    },
    instructions="Decide whether the CONVERSATION meets the CRITERION.",
    strictness=(0, 1),
)

USER_GOAL = Question(
    kind="user_goal",
    labels=USER_GOAL_LABELS,
    definitions={
        2: "the agent handed the user off gracefully to a human: it transferred the conversation to a person"
        " (a live agent, representative or support team) or told the user that one will take over or"
        " contact them, without leaving them stranded.",
        1: "the user's task was accomplished: the agent did what was asked (confirmed by a successful tool"
        " call or plainly stated as done) or gave the information the user was after.",
        0: "the task was not accomplished: the agent refused or failed, a tool call returned an error, the"
        " user gave up, the conversation ended while the agent was still asking questions, or there is no"
        " sign in the conversation that it was done.",
        -1: "the TASK is empty or does not say what the user wanted, so there is nothing to judge.",
    },
    instructions=(
        "Decide whether the simulated USER's TASK was accomplished in the CONVERSATION between the user and"
        " the customer-service agent. Judge from the conversation only: tool calls and their responses"
        " show what the agent actually did; a promise, an offer or a tool call that returned an error is"
        " not a completed task. A graceful handoff to a human is scored 2 whatever else happened."
    ),
    strictness=(0, -1, 1, 2),
)


@dataclass(frozen=True)
class Sample:
    score: int
    explanation: str


def parse_sample(text: str | None, structured: Any, allowed: Mapping[int, str]) -> Sample | None:
    """The verdict in one reply (the first of :func:`~convener.llm.base.json_candidates` with an allowed
    score), or None when there is none."""
    for candidate in json_candidates(text, structured):
        if not isinstance(candidate, dict):
            continue
        score = _integer(candidate.get("score"))
        if score is None or score not in allowed:
            continue
        explanation = candidate.get("explanation")
        return Sample(score, explanation.strip() if isinstance(explanation, str) else "")
    return None


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def vote(samples: Sequence[Sample], strictness: Sequence[int]) -> tuple[Sample, int]:
    """The winning score's first sample and how many samples gave it; ties go to the stricter score."""
    counts = Counter(sample.score for sample in samples)
    top = max(counts.values())
    score = next(score for score in strictness if counts.get(score) == top)
    return next(sample for sample in samples if sample.score == score), top


class ModelJudge:
    """The :class:`~convener.llm.judges.Judge` that asks a model (see the module docstring).

    Thread-safe: concurrent callers share the cache and the concurrency bound; two callers asking the
    same question at once wait for one round of requests.
    """

    name = "model"

    def __init__(
        self,
        provider: ModelProvider,
        samples: int = 3,
        max_concurrency: int = 4,
        *,
        temperature: float = SAMPLED_TEMPERATURE,
    ) -> None:
        if samples < 1 or max_concurrency < 1:
            raise ValueError("samples and max_concurrency must be at least 1")
        self.provider = provider
        self.samples = samples
        self.max_concurrency = max_concurrency
        self.temperature = temperature if samples > 1 else 0.0
        self._sampled_temperature = temperature
        self._in_flight = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, ...], Verdict] = {}
        self._asking: dict[tuple[str, ...], threading.Lock] = {}
        self._root = self
        self._variants: dict[int, ModelJudge] = {}

    def with_samples(self, samples: int) -> ModelJudge:
        """This judge taking ``samples`` samples per question (at temperature 0 when 1).

        Made once per sample count (``self`` for its own) and kept, so that its verdict cache serves
        every caller; every variant shares this judge's bound on requests in flight.
        """
        if samples < 1:
            raise ValueError("samples must be at least 1")
        if samples == self.samples:
            return self
        root = self._root
        if samples == root.samples:
            return root
        with root._lock:
            variant = root._variants.get(samples)
            if variant is None:
                variant = ModelJudge(
                    root.provider, samples, root.max_concurrency, temperature=root._sampled_temperature
                )
                variant._in_flight = root._in_flight
                variant._root = root
                root._variants[samples] = variant
            return variant

    # ------------------------------------------------------------------ the questions

    def similarity(self, expected: str, actual: str) -> Verdict:
        return self._ask(SIMILARITY, (("EXPECTED", expected), ("ACTUAL", actual)))

    def hallucination(self, response: str, context: Sequence[str]) -> Verdict:
        numbered = "\n".join(f"[{index}] {item}" for index, item in enumerate(context, start=1))
        return self._ask(HALLUCINATION, (("CONTEXT", numbered or "(empty)"), ("RESPONSE", response)))

    def criterion(self, prompt: str, transcript: str) -> Verdict:
        return self._ask(CRITERION, (("CRITERION", prompt), ("CONVERSATION", transcript)))

    def user_goal(self, task: str, transcript: str) -> Verdict:
        if not task.strip():  # nothing to ask the model
            return Verdict(-1, USER_GOAL_LABELS[-1], f"{PREFIX} the task is empty (the model was not asked).")
        return self._ask(USER_GOAL, (("TASK", task), ("CONVERSATION", transcript)))

    # ------------------------------------------------------------------ asking

    def _ask(self, question: Question, sections: tuple[tuple[str, str], ...]) -> Verdict:
        key = (question.kind, *(text for _, text in sections))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            asking = self._asking.setdefault(key, threading.Lock())
        with asking:  # one round of requests per question, even when asked concurrently
            with self._lock:
                cached = self._cache.get(key)
            if cached is not None:
                return cached
            try:
                verdict = self._decide(question, question.prompt(sections))
            except BaseException:
                with self._lock:
                    self._asking.pop(key, None)
                raise
            with self._lock:
                self._cache[key] = verdict
                self._asking.pop(key, None)
            return verdict

    def _decide(self, question: Question, prompt: str) -> Verdict:
        messages = (ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=prompt))
        workers = min(self.samples, self.max_concurrency)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="model-judge") as pool:
            futures = [pool.submit(self._sample, messages) for _ in range(self.samples)]
        samples: list[Sample] = []
        errors: list[ApiError] = []
        unusable = 0
        for future in futures:
            outcome = future.result()
            if isinstance(outcome, ApiError):
                errors.append(outcome)
                continue
            text, structured = outcome
            sample = parse_sample(text, structured, question.labels)
            if sample is None:
                unusable += 1
            else:
                samples.append(sample)
        if not samples:
            if errors and not unusable:
                raise errors[0]
            failures = f"{unusable} unusable replies" + (f", {len(errors)} failed requests" if errors else "")
            raise Unavailable(
                f"the model judge ({self.provider.name}/{self.provider.model}) gave no usable {question.kind}"
                f" verdict: {failures} out of {self.samples} samples (each must be a JSON object with an"
                f" integer score in {sorted(question.labels)})"
            )
        winner, agreeing = vote(samples, question.strictness)
        discarded = self.samples - len(samples)
        tally = f"{agreeing} of {len(samples)} samples gave {winner.score}"
        if discarded:
            tally += f"; {discarded} discarded"
        explanation = winner.explanation or "(no explanation given)"
        return Verdict(winner.score, question.labels[winner.score], f"{PREFIX} {explanation} ({tally})")

    def _sample(self, messages: Sequence[ChatMessage]) -> tuple[str | None, Any] | ApiError:
        with self._in_flight:
            try:
                completion = self.provider.complete(
                    messages, response_schema=RESPONSE_SCHEMA, temperature=self.temperature
                )
            except ApiError as error:
                return error
        return completion.text, completion.structured
