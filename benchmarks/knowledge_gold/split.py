"""How the knowledge gold sets are split into tuning (40%) and held-out (60%) questions.

A fixed seed, and each stratum (answerable, out of scope) split on its own so that both halves have
out-of-scope questions. Run once when a gold set is written; the result is committed beside this file:

    python benchmarks/knowledge_gold/split.py benchmarks/knowledge_gold.json benchmarks/knowledge_gold/git-split.json

writes the index lists of ``git-split.json``. The SQLite questions were split the same way when they were
written, straight into ``sqlite-tuning.json`` and ``sqlite-held-out.json``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

SEED = 21
TUNING_SHARE = 0.4


def is_out_of_scope(item: dict[str, Any]) -> bool:
    return bool(item.get("out_of_scope")) or not item.get("relevant")


def split(questions: list[dict[str, Any]], seed: int = SEED) -> tuple[list[int], list[int]]:
    """(tuning indices, held-out indices), each sorted."""
    rng = random.Random(seed)
    tuning: list[int] = []
    for stratum in (False, True):
        indices = [i for i, item in enumerate(questions) if is_out_of_scope(item) == stratum]
        rng.shuffle(indices)
        tuning += indices[:round(TUNING_SHARE * len(indices))]
    held_out = sorted(set(range(len(questions))) - set(tuning))
    return sorted(tuning), held_out


def main() -> None:
    source, target = Path(sys.argv[1]), Path(sys.argv[2])
    questions = json.loads(source.read_text())["questions"]
    tuning, held_out = split(questions)
    target.write_text(json.dumps({"gold": source.name, "seed": SEED, "tuning": tuning, "held_out": held_out},
                                 indent=1) + "\n")
    print(f"{len(tuning)} tuning, {len(held_out)} held-out questions -> {target}")


if __name__ == "__main__":
    main()
