"""The offline judge's similarity with and without sentence embeddings (its ``embeddings`` switch), and the
held-out similarity pairs' format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convener.llm.judges import SIMILARITY_LABELS, JudgeOf, judge_from
from convener.llm.offline_judge import OfflineJudge
from convener.sentence_embeddings import available

PAIRS = Path(__file__).resolve().parents[1] / "data" / "judge_pairs"
PENDING = "Order A-1001 is pending."
PARAPHRASE = "We're still working on order A-1001, it has not gone out so far."
DELAYED = "Your package is delayed and will now arrive on Friday instead of Wednesday."
DELAYED_PARAPHRASE = "Sorry, your delivery is running late — it's now expected Friday, not Wednesday."

needs_embeddings = pytest.mark.skipif(not available(), reason="the embeddings extra is not installed")


def test_switched_off_the_judge_reads_words_and_says_so() -> None:
    judge = OfflineJudge("off")
    assert not judge.embeddings and judge.reading.startswith("words")
    verdict = judge.similarity(PENDING, "Order A-1001 is shipped.")
    assert verdict.score <= 1 and verdict.explanation.startswith("Offline judge: by words:")
    assert "changed fact: status: expected pending, the response says shipped" in verdict.explanation
    assert judge.similarities([(PENDING, PENDING), (PENDING, "")]) == [judge.similarity(PENDING, PENDING),
                                                                       judge.similarity(PENDING, "")]


def test_judge_from_and_judge_of_pass_the_switch_on() -> None:
    assert not OfflineJudge("off").embeddings
    judge = judge_from(None, "off")
    assert isinstance(judge, OfflineJudge) and not judge.embeddings
    made = JudgeOf(lambda: None, "off")()
    assert isinstance(made, OfflineJudge) and not made.embeddings


@needs_embeddings
@pytest.mark.slow
def test_with_embeddings_a_paraphrase_passes_and_a_changed_fact_still_fails() -> None:
    judge = OfflineJudge("auto")
    assert judge.embeddings and "sentence embeddings" in judge.reading
    words = OfflineJudge("off").similarity(DELAYED, DELAYED_PARAPHRASE)
    assert judge.similarity(DELAYED, DELAYED_PARAPHRASE).score >= 3 > words.score
    meant = judge.similarity(PENDING, PARAPHRASE)
    assert meant.score >= 3
    assert meant.explanation.startswith("Offline judge: by sentence embeddings (all-MiniLM-L6-v2, cosine ")
    changed = judge.similarity(PENDING, "Order A-1001 is shipped.")
    assert changed.score <= 1 and "changed fact: status" in changed.explanation
    assert judge.similarity(PENDING, "").score == 0
    batch = judge.similarities([(PENDING, PARAPHRASE), (PENDING, "Order A-1001 is shipped."), (PENDING, " ")])
    assert batch == [meant, changed, judge.similarity(PENDING, " ")]


@needs_embeddings
@pytest.mark.slow
def test_the_model_is_loaded_once_and_vectors_are_kept() -> None:
    from convener.sentence_embeddings import _encoder

    first, second = OfflineJudge("auto"), OfflineJudge("auto")
    first.similarity(PENDING, PARAPHRASE)
    second.similarity(PENDING, "Order A-1001 is cancelled.")
    assert _encoder.cache_info().currsize == 1 and _encoder.cache_info().misses == 1
    cosine = first.cosines([(PENDING, PARAPHRASE)])
    assert first.cosines([(PENDING, PARAPHRASE)]) == cosine and len(first._vectors) == 2
    assert first.cosines([(PENDING, "x" * 1_000_000)])[0] < 0.5, "a huge text is embedded from its beginning"


@pytest.mark.parametrize("name", ["tuning", "heldout"])
def test_the_similarity_pairs_are_well_formed(name: str) -> None:
    items = [json.loads(line) for line in (PAIRS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    assert len(items) >= 60
    for item in items:
        assert item["kind"] == "similarity" and item["score"] in SIMILARITY_LABELS
        assert set(item) <= {"kind", "expected", "actual", "score", "variant", "fact"}
        if item["variant"] == "changed-fact":
            assert item["score"] <= 1 and item["fact"] in {"status", "number", "amount", "name", "date", "id",
                                                           "negation"}
        if item["variant"] == "paraphrase":
            assert item["score"] == 4


def test_the_sets_do_not_share_an_expected_response() -> None:
    def expected(name: str) -> set[str]:
        lines = (PAIRS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        return {json.loads(line)["expected"] for line in lines if line.strip()}

    assert not expected("tuning") & expected("heldout")
    assert len(expected("tuning")) + len(expected("heldout")) >= 30
