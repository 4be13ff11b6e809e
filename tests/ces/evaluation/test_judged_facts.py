"""An evaluation judged offline fails an agent response that changes a fact of the expected one, however many
words they share, and passes one that keeps it: read by words, and by sentence embeddings when installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from convener.config import Settings
from convener.sentence_embeddings import available
from tests.ces.evaluation.test_runs import _checker_app, evaluate, said, user
from tests.ces.session_helpers import runtime_settings, set_root

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["off", pytest.param("auto", marks=pytest.mark.slow)])
def settings(request: pytest.FixtureRequest, database_url: str, tmp_path: Path) -> Settings:
    if request.param == "auto" and not available():
        pytest.skip("the embeddings extra is not installed")
    return runtime_settings(database_url, tmp_path, judge_embeddings=request.param)


def similarity(result: dict[str, Any]) -> dict[str, Any]:
    turn = result["goldenResult"]["turnReplayResults"][0]
    found: dict[str, Any] = turn["semanticSimilarityResult"]
    return found


async def test_a_changed_status_fails_the_turn_and_the_same_fact_passes(client: Client, settings: Settings) -> None:
    await _checker_app(client)
    await set_root(client, "echo")  # answers "echo 1: <what the user said>"
    expected = "echo 1: Order A-1001 is pending."

    changed = await evaluate(client, "changed", [[user("Order A-1001 is shipped."), said(expected, None)]])
    verdict = similarity(changed)
    assert verdict["outcome"] == "FAIL" and verdict["score"] <= 1
    assert "changed fact: status: expected pending, the response says shipped" in verdict["explanation"]
    assert changed["evaluationStatus"] == "FAIL"
    reading = "by sentence embeddings" if settings.judge_embeddings == "auto" else "by words"
    assert verdict["explanation"].startswith(f"Offline judge: {reading}")

    kept = await evaluate(client, "kept", [[user("Order A-1001 is pending."), said(expected, None)]])
    assert similarity(kept)["outcome"] == "PASS"
    assert kept["evaluationStatus"] == "PASS"
