"""Judges: the metrics of an evaluation that need reading, behind one interface.

Four questions are asked of a judge, each answered with a :class:`Verdict` whose score and label follow
seed 001's definitions:

- ``similarity(expected, actual)``: how consistent the agent's response is with the expected one, 0-4
  (4 fully consistent, 3 mostly consistent, 2 partially consistent (minor omissions), 1 mostly
  inconsistent (major omissions), 0 completely inconsistent / contradictory).
- ``hallucination(response, context)``: whether the response's claims are justified by the context
  (the user's words, tool responses, earlier turns): 1 justified, 0 not justified, -1 no claim to judge.
- ``criterion(prompt, transcript)``: whether a conversation meets an evaluation expectation's criterion:
  score 1 (PASS) or 0 (FAIL).
- ``user_goal(task, transcript)``: whether the simulated user's task was accomplished in the conversation
  (seed 001's UserGoalSatisfactionResult): 2 the agent handed the user off gracefully to a human, 1 the
  task was completed, 0 not completed (refused, failed, abandoned, or no sign it was done), -1 the task is
  empty or unspecified.

``judge.with_samples(n)`` is the same judge taking ``n`` samples per question (a SPEED_OPTIMIZED scenario
run asks with 1); a deterministic judge is its own variant.

``OfflineJudge`` is deterministic and runs locally (its similarity reads sentence embeddings when the
``embeddings`` extra is installed, words otherwise); ``ModelJudge`` asks the configured model provider.
Every explanation says which judge gave it. :func:`judge_from` picks one. The two judges live in
:mod:`convener.llm.offline_judge` and :mod:`convener.llm.model_judge` (which import this module for
:class:`Verdict` and the labels) and are re-exported from here, loaded on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from convener.llm.base import ModelProvider
    from convener.llm.model_judge import ModelJudge
    from convener.llm.offline_judge import OfflineJudge

__all__ = [
    "CRITERION_LABELS",
    "HALLUCINATION_LABELS",
    "SIMILARITY_LABELS",
    "USER_GOAL_LABELS",
    "Judge",
    "JudgeOf",
    "ModelJudge",
    "OfflineJudge",
    "Verdict",
    "judge_from",
]

SIMILARITY_LABELS = {
    4: "Fully consistent",
    3: "Mostly consistent",
    2: "Partially consistent (minor omissions)",
    1: "Mostly inconsistent (major omissions)",
    0: "Completely inconsistent / contradictory",
}
HALLUCINATION_LABELS = {1: "Justified", 0: "Not justified", -1: "No claim to assess"}
CRITERION_LABELS = {1: "Met", 0: "Not met"}
USER_GOAL_LABELS = {
    2: "Graceful handoff",
    1: "User task completed",
    0: "User task not completed",
    -1: "User task unspecified",
}


@dataclass(frozen=True)
class Verdict:
    score: int
    label: str
    explanation: str


class Judge(Protocol):
    name: str
    """"offline" or the provider's model, for reports."""

    def similarity(self, expected: str, actual: str) -> Verdict: ...

    def hallucination(self, response: str, context: Sequence[str]) -> Verdict: ...

    def criterion(self, prompt: str, transcript: str) -> Verdict: ...

    def user_goal(self, task: str, transcript: str) -> Verdict:
        """Whether the simulated user's ``task`` was accomplished in ``transcript`` (the lines of
        :func:`convener.ces.evaluation.scoring.transcript_of`): 2 the agent handed the user off gracefully
        to a human, 1 the task was completed, 0 not completed (refused, failed, abandoned, or no sign it was
        done), -1 the task is empty or unspecified."""
        ...

    def with_samples(self, samples: int) -> Judge:
        """The same judge taking ``samples`` samples per question (``self`` when that changes nothing)."""
        ...


def judge_from(provider: ModelProvider | None, embeddings: Literal["auto", "off"] = "auto") -> Judge:
    """A :class:`ModelJudge` asking ``provider``, or the :class:`OfflineJudge` when there is none (reading
    similarity with sentence embeddings too unless ``embeddings`` is off or the extra is not installed)."""
    if provider is None:
        from convener.llm.offline_judge import OfflineJudge

        return OfflineJudge(embeddings)
    from convener.llm.model_judge import ModelJudge

    return ModelJudge(provider)


class JudgeOf:
    """The judge of the configured provider, made once per provider so that its cache serves every run."""

    def __init__(self, provider: Callable[[], ModelProvider | None],
                 embeddings: Literal["auto", "off"] = "auto") -> None:
        self.provider = provider
        self.embeddings: Literal["auto", "off"] = embeddings
        self._made: tuple[ModelProvider | None, Judge] | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Judge:
        provider = self.provider()
        with self._lock:
            if self._made is None or self._made[0] is not provider:
                self._made = (provider, judge_from(provider, self.embeddings))
            return self._made[1]


def __getattr__(name: str) -> object:
    # The judges import Verdict from this module, so importing them here at the top would be circular;
    # they are loaded when first asked for instead (type checkers see the imports under TYPE_CHECKING).
    if name == "OfflineJudge":
        from convener.llm.offline_judge import OfflineJudge

        return OfflineJudge
    if name == "ModelJudge":
        from convener.llm.model_judge import ModelJudge

        return ModelJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
