"""The default embedder's vectors (``OnnxEmbeddings``), cached on disk by text.

A text's cached vector is what ``OnnxEmbeddings`` gives it as a document under truncation: its
first ``max_tokens`` (256) word pieces, i.e. the whole text when it fits. A model window is a
substring of its chunk, so every window policy (whole text, windows of 128, the first 256, any
mix) is a choice of *which texts* to embed, and each text is embedded once across runs and
benchmarks. Vectors live in ``~/.cache/holodeck-bench/onnx/<model tag>/shard_*.npz``.

    python benchmarks/onnx_cache.py --scifact PATH --prose PATH [PATH ...]   # precompute
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

CACHE = Path.home() / ".cache" / "holodeck-bench" / "onnx"


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class DiskCachedOnnx(Embeddings):
    """``OnnxEmbeddings`` (truncating at ``max_tokens``) behind a sharded on-disk cache.

    ``model`` is any ``OnnxEmbeddings``-like object; its class name and ``model_name`` tag the
    cache directory, so two models never share vectors.
    """

    def __init__(self, model: object | None = None, *, tag: str | None = None) -> None:
        if model is None:
            from langchain_holodeck.embeddings import OnnxEmbeddings

            model = OnnxEmbeddings(long_text="first")
        self.model = model
        name = tag or str(getattr(model, "model_name", type(model).__name__))
        if tag is None and getattr(model, "precision", None):  # int8 and fp32 never share vectors
            name = f"{name}__{model.precision}"
            if model.precision == "int8":  # nor int8 runs of other graph optimizations
                from langchain_holodeck.embeddings import runtime

                name += "".join(f"__no-{o}" for o in runtime.UNFUSED_OPTIMIZERS)
                if runtime.INT8_RECIPE != "dyn-qint8-perchannel-v2":  # v1, v2: same vectors
                    name += f"__{runtime.INT8_RECIPE}"
        self.cache = CACHE / name.replace("/", "__")
        self.cache.mkdir(parents=True, exist_ok=True)
        self._table: dict[str, np.ndarray] = {}
        self.computed = 0
        self.compute_seconds = 0.0
        for shard in sorted(self.cache.glob("shard_*.npz")):
            with np.load(shard) as npz:
                for key, vec in zip(npz["keys"], npz["vectors"], strict=True):
                    self._table[str(key)] = vec

    def has(self, text: str) -> bool:
        return _key(text) in self._table

    def ensure(self, texts: Sequence[str], *, label: str = "") -> None:
        """Compute and store the vectors of the texts not cached yet."""
        keys = {_key(t): t for t in texts}
        missing = [(k, t) for k, t in keys.items() if k not in self._table]
        step = 256
        for start in range(0, len(missing), step):
            part = missing[start : start + step]
            began = time.perf_counter()
            vectors = np.asarray(
                self.model.embed_documents([t for _, t in part]),  # type: ignore[attr-defined]
                dtype=np.float32,
            )
            self.compute_seconds += time.perf_counter() - began
            shard = self.cache / f"shard_{time.time_ns()}.npz"
            tmp = shard.with_suffix(".tmp.npz")
            np.savez(tmp, keys=np.array([k for k, _ in part]), vectors=vectors)
            tmp.replace(shard)
            for (k, _), vec in zip(part, vectors, strict=True):
                self._table[k] = vec
            self.computed += len(part)
            print(
                f"  {label} {start + len(part)}/{len(missing)} embedded "
                f"({time.perf_counter() - began:.0f} s)",
                file=sys.stderr,
                flush=True,
            )

    def vector(self, text: str) -> np.ndarray:
        return self._table[_key(text)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.ensure(texts)
        return [self._table[_key(t)].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.ensure([text])
        return self._table[_key(text)].tolist()


def windows_of(
    texts: Sequence[str], window_tokens: int = 128, overlap: int = 32
) -> list[list[str]]:
    """Each text's windows of ``window_tokens`` word pieces (the MiniLM tokenizer), as text."""
    from langchain_holodeck.embeddings import OnnxEmbeddings

    cutter = OnnxEmbeddings(long_text="best", window_tokens=window_tokens, window_overlap=overlap)
    out: list[list[str]] = []
    for start in range(0, len(texts), 2048):
        out.extend(cutter.window_texts(list(texts[start : start + 2048])))
    return out


if __name__ == "__main__":
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from prose_data import beir

    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, default=None)
    parser.add_argument("--prose", type=Path, nargs="*", default=[])
    args = parser.parse_args()
    cache = DiskCachedOnnx()
    sets = [beir(p) for p in args.prose]
    if args.scifact is not None:
        sets.insert(0, beir(args.scifact, splits=("test", "train")))
    # cheapest first: what the new default needs, then what only the old default needs
    plan: list[tuple[str, list[str]]] = []
    for data in sets:
        texts = [d.page_content for d in data.docs]
        queries = [t for split in data.queries.values() for _, t in split]
        w128, w256 = windows_of(texts), windows_of(texts, 256)
        plan.append((f"{data.name} queries", queries))
        plan.append((f"{data.name} docs", texts))
        plan.append(
            (
                f"{data.name} long docs' windows of 128",
                [w for ws, whole in zip(w128, w256, strict=True) if len(whole) > 1 for w in ws],
            )
        )
    for data in sets:
        texts = [d.page_content for d in data.docs]
        plan.append(
            (
                f"{data.name} all windows of 128",
                [w for ws in windows_of(texts) if len(ws) > 1 for w in ws],
            )
        )
    for label, texts in plan:
        cache.ensure(texts, label=label)
        print(
            f"{label}: done, {cache.computed} computed in {cache.compute_seconds:.0f} s", flush=True
        )
