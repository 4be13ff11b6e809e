"""How often each judge agrees with the hand-labelled set in tests/data/judge_labels.jsonl.

Run from the repository root::

    .venv/bin/python benchmarks/judge_agreement.py [--kind similarity|hallucination] [--disagreements 10]
        [--samples 3] [--workers 4] [--limit N]

The offline judge is always measured. The model judge is measured too when a model provider is configured
(``CONVENER_LLM_PROVIDER`` and friends, read through ``convener.config.Settings``); it is asked
``--samples`` times per item, ``--workers`` items at a time.

For each judge and kind it prints the count, exact agreement (the judge's score equals the label), agreement
within ±1 (for hallucination's -1/0/1 that is "not the opposite verdict", so exact is the figure to read),
and a confusion table: one row per human label, one column per judge score. ``--disagreements N`` lists
the first N items the judge scored differently, with its explanation.
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
from convener.config import Settings
from convener.llm import close_provider, provider_from_settings
from convener.llm.judges import Judge, ModelJudge, OfflineJudge, Verdict

LABELS = Path(__file__).resolve().parents[1] / "tests" / "data" / "judge_labels.jsonl"
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


def report(name: str, outcomes: Sequence[Outcome], seconds: float, disagreements: int) -> None:
    print(f"\n== judge: {name}  ({len(outcomes)} items, {seconds:.1f} s)")
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
    parser.add_argument("--limit", type=int, help="only the first N items (after --kind)")
    arguments = parser.parse_args()

    items = [item for item in load() if arguments.kind in (None, item["kind"])][: arguments.limit]
    started = time.perf_counter()
    report(
        "offline", measure(OfflineJudge(), items, 1), time.perf_counter() - started, arguments.disagreements
    )

    provider = provider_from_settings(Settings())
    if provider is None:
        print("\n(model judge not measured: no model provider configured; set CONVENER_LLM_PROVIDER etc.)")
        return
    try:
        judge = ModelJudge(provider, samples=arguments.samples)
        started = time.perf_counter()
        outcomes = measure(judge, items, arguments.workers)
        name = f"model ({provider.name}/{provider.model}, {arguments.samples} samples)"
        report(name, outcomes, time.perf_counter() - started, arguments.disagreements)
    finally:
        close_provider(provider)


if __name__ == "__main__":
    main()
