"""How often each judge agrees with the hand-labelled sets.

The sets: ``labels`` (tests/data/judge_labels.jsonl, similarity and hallucination), ``tuning`` and
``heldout`` (tests/data/judge_pairs/, similarity only; see its README: the held-out set is scored only once
a judge is settled, never tuned on). Each set is reported on its own.

Run from the repository root::

    .venv/bin/python benchmarks/judge_agreement.py [--set labels|tuning|heldout ...] [--kind similarity|hallucination]
        [--disagreements 10] [--samples 3] [--workers 4] [--limit N] [--embeddings auto|off]

The offline judge is always measured. The model judge is measured too when a model provider is configured
(``CONVENER_LLM_PROVIDER`` and friends, read through ``convener.config.Settings``); it is asked
``--samples`` times per item, ``--workers`` items at a time.

For each judge and kind it prints the count, exact agreement (the judge's score equals the label), agreement
within ±1 (for hallucination's -1/0/1 that is "not the opposite verdict", so exact is the figure to read),
and a confusion table: one row per human label, one column per judge score. For similarity it then reports
two subsets apart: ``paraphrase`` (same meaning, other words: how many the judge passes, i.e. scores at or
above the default semantic similarity threshold 3) and ``changed-fact`` (one fact changed: how many the judge
fails, which every one of them should). ``--disagreements N`` lists the first N items the judge scored
differently, with its explanation. ``--embeddings off`` measures the offline judge's word-based reading even
when the embeddings extra is installed; the cost per judged item is printed with each set.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convener.api.errors import ApiError
from convener.ces.evaluation.thresholds import DEFAULT_SEMANTIC_SIMILARITY_SUCCESS_THRESHOLD
from convener.config import Settings
from convener.llm import close_provider, provider_from_settings
from convener.llm.judges import Judge, ModelJudge, OfflineJudge, Verdict

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
LABELS = DATA / "judge_labels.jsonl"
SETS = {"labels": LABELS, "tuning": DATA / "judge_pairs" / "tuning.jsonl",
        "heldout": DATA / "judge_pairs" / "heldout.jsonl"}
PASSING = DEFAULT_SEMANTIC_SIMILARITY_SUCCESS_THRESHOLD
SCALES = {"similarity": (0, 1, 2, 3, 4), "hallucination": (-1, 0, 1)}


@dataclass(frozen=True)
class Outcome:
    item: dict[str, Any]
    verdict: Verdict | None
    error: str | None = None


def load(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ask(judge: Judge, item: dict[str, Any]) -> Outcome:
    try:
        if item["kind"] == "similarity":
            return Outcome(item, judge.similarity(item["expected"], item["actual"]))
        return Outcome(item, judge.hallucination(item["response"], item["context"]))
    except ApiError as error:
        return Outcome(item, None, str(error))


def measure(judge: Judge, items: Sequence[dict[str, Any]], workers: int) -> list[Outcome]:
    if isinstance(judge, OfflineJudge) and judge.embeddings:
        # The offline judge embeds the similarity items' texts in one batch first, as a caller judging many
        # pairs would.
        judge.cosines([(item["expected"], item["actual"]) for item in items
                       if item["kind"] == "similarity" and item["expected"].strip() and item["actual"].strip()])
    if workers <= 1:
        return [ask(judge, item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda item: ask(judge, item), items))


def agreement(outcomes: Sequence[Outcome]) -> tuple[int, float, float]:
    """(count judged, exact share, within-±1 share) of the outcomes that have a verdict."""
    judged = [(o.item["score"], o.verdict.score) for o in outcomes if o.verdict is not None]
    if not judged:
        return 0, 0.0, 0.0
    exact = sum(human == score for human, score in judged) / len(judged)
    close = sum(abs(human - score) <= 1 for human, score in judged) / len(judged)
    return len(judged), exact, close


def subsets(outcomes: Sequence[Outcome]) -> None:
    """The paraphrase and changed-fact similarity items apart: agreement, and how many pass or fail."""
    for variant, should in (("paraphrase", "pass"), ("changed-fact", "fail")):
        mine = [o for o in outcomes if o.item.get("variant") == variant and o.verdict is not None]
        if not mine:
            continue
        count, exact, close = agreement(mine)
        passed = sum(o.verdict.score >= PASSING for o in mine if o.verdict is not None)
        right = passed if should == "pass" else count - passed
        print(f"  {variant}: n={count}  exact {exact:6.1%}  within ±1 {close:6.1%}  "
              f"{should} (threshold {PASSING}) {right}/{count}")
        if variant == "changed-fact":
            facts = Counter(o.item.get("fact", "?") for o in mine)
            missed = Counter(o.item.get("fact", "?") for o in mine
                             if o.verdict is not None and o.verdict.score >= PASSING)
            print("    passed wrongly by fact: " + ", ".join(f"{fact} {missed[fact]}/{facts[fact]}"
                                                          for fact in sorted(facts)))


def report(name: str, outcomes: Sequence[Outcome], seconds: float, disagreements: int) -> None:
    per_item = seconds / len(outcomes) * 1000 if outcomes else 0.0
    print(f"\n== judge: {name}  ({len(outcomes)} items, {seconds:.1f} s, {per_item:.1f} ms per item)")
    for kind, scale in SCALES.items():
        mine = [outcome for outcome in outcomes if outcome.item["kind"] == kind]
        if not mine:
            continue
        count, exact, close = agreement(mine)
        failed = sum(outcome.verdict is None for outcome in mine)
        print(
            f"\n{kind}: n={count}  exact {exact:6.1%}  within ±1 {close:6.1%}"
            + (f"  failed {failed}" if failed else "")
        )
        cells = Counter((o.item["score"], o.verdict.score) for o in mine if o.verdict is not None)
        print("  human \\ judge " + "".join(f"{score:>5}" for score in scale))
        for human in scale:
            print(f"  {human:>13} " + "".join(f"{cells[(human, score)]:>5}" for score in scale))
        if kind == "similarity":
            subsets(mine)
        variants = Counter(o.item.get("variant", "?") for o in mine if o.verdict is not None)
        misses = Counter(
            o.item.get("variant", "?")
            for o in mine
            if o.verdict is not None and o.verdict.score != o.item["score"]
        )
        worst = sorted(misses, key=lambda variant: (-misses[variant] / variants[variant], variant))[:5]
        if worst:
            print(
                "  most disagreement by variant: "
                + ", ".join(f"{v} {misses[v]}/{variants[v]}" for v in worst)
            )
        shown = [o for o in mine if o.verdict is None or o.verdict.score != o.item["score"]][:disagreements]
        for outcome in shown:
            text = outcome.item.get("actual", outcome.item.get("response", ""))
            got = (
                outcome.error
                if outcome.verdict is None
                else f"{outcome.verdict.score}: {outcome.verdict.explanation}"
            )
            print(
                f"    [{outcome.item.get('variant')}] human {outcome.item['score']}, judge {got}\n"
                f"      {text[:140]!r}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kind", choices=sorted(SCALES), help="only this kind of item")
    parser.add_argument("--disagreements", type=int, default=0, help="list this many disagreements per kind")
    parser.add_argument("--samples", type=int, default=3, help="model judge: samples per question")
    parser.add_argument("--workers", type=int, default=4, help="model judge: items judged at once")
    parser.add_argument("--limit", type=int, help="only the first N items of each set (after --kind)")
    parser.add_argument("--set", action="append", choices=sorted(SETS), dest="sets",
                        help="measure this set (repeatable; default: all three)")
    parser.add_argument("--embeddings", choices=("auto", "off"), default="auto",
                        help="the offline judge's sentence embeddings: auto uses them when installed")
    arguments = parser.parse_args()

    sets = {name: [item for item in load(SETS[name]) if arguments.kind in (None, item["kind"])][: arguments.limit]
            for name in (arguments.sets or list(SETS))}
    offline = OfflineJudge(embeddings=arguments.embeddings)
    started = time.perf_counter()
    offline.similarity("warm-up", "warm-up")  # loads the embedding model, if any, outside the timings
    print(f"(offline judge ready in {time.perf_counter() - started:.1f} s: {offline.reading})")
    for set_name, items in sets.items():
        started = time.perf_counter()
        outcomes = measure(offline, items, 1)
        report(f"offline, set {set_name}", outcomes, time.perf_counter() - started, arguments.disagreements)

    provider = provider_from_settings(Settings())
    if provider is None:
        print("\n(model judge not measured: no model provider configured; set CONVENER_LLM_PROVIDER etc.)")
        return
    try:
        judge = ModelJudge(provider, samples=arguments.samples)
        for set_name, items in sets.items():
            started = time.perf_counter()
            outcomes = measure(judge, items, arguments.workers)
            name = f"model ({provider.name}/{provider.model}, {arguments.samples} samples), set {set_name}"
            report(name, outcomes, time.perf_counter() - started, arguments.disagreements)
    finally:
        close_provider(provider)


if __name__ == "__main__":
    main()
