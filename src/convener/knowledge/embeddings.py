"""Local sentence embeddings for semantic search, from a package that ships its model's weights.

The model itself (all-MiniLM-L6-v2, the ``embeddings`` extra) is loaded by :mod:`convener.sentence_embeddings`,
which the offline judge shares; this module adds what search needs: the :class:`Embedder` interface, the
setting's choice and the stored form of vectors. Without the extra, search is lexical only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from convener.sentence_embeddings import DIMENSIONS, MINILM, MiniLMEmbedder, available

__all__ = ["DIMENSIONS", "MINILM", "Embedder", "MiniLMEmbedder", "Vectors", "available", "default_embedder",
           "from_bytes", "to_bytes"]

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    model: str

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text."""
        ...


def default_embedder(setting: str) -> Embedder | None:
    """The embedder the ``knowledge_embeddings`` setting asks for: ``auto`` uses MiniLM when installed."""
    if setting == "off" or (setting == "auto" and not available()):
        return None
    return MiniLMEmbedder()


def to_bytes(vector: Vectors) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes) -> Vectors:
    return np.frombuffer(data, dtype="<f4")
