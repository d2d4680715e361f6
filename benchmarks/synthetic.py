"""The synthetic corpus the speed benchmarks share: Zipf-distributed made-up words, random vectors.

``corpus(n)`` gives ``n`` chunks of 120 words over a 30,000-word vocabulary (Zipf exponent
1.07), unit 384-dim vectors, and 200 five-word queries with their own vectors; generated once
from seed 7 and cached in ``benchmarks/.cache/``, so every benchmark and every run sees the same
data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache"
DIM = 384
WORDS_PER_CHUNK = 120
VOCAB = 30_000
N_QUERIES = 200
SHIP_WORDS = (
    "holodeck",
    "safety",
    "protocol",
    "arch",
    "program",
    "crew",
    "shift",
    "officer",
    "replicator",
    "deck",
    "sensor",
    "power",
    "grid",
    "matrix",
    "subroutine",
    "emitter",
    "interlock",
    "transporter",
    "warp",
    "field",
    "array",
    "bridge",
    "console",
    "ensign",
    "captain",
    "engineering",
    "diagnostic",
    "calibration",
    "routine",
)
"""Vocabulary of the generated Markdown corpora (sync and insertion benchmarks)."""
SYLLABLES = ("ka", "to", "ri", "mu", "sen", "bel", "qua", "dor", "lin", "pha")
SYLLABLES += ("zer", "mon", "tic", "vas", "rel", "gor", "nim", "shu", "pra", "ell")


def corpus(n: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """(texts, vectors, queries, query vectors) for ``n`` chunks, generated once and cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"synthetic_{n}.npz"
    if not path.exists():
        rng = np.random.default_rng(7)
        words: list[str] = []
        seen: set[str] = set()
        while len(words) < VOCAB:
            w = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))
            if w not in seen:
                seen.add(w)
                words.append(w)
        vocab = np.array(words)
        p = 1 / np.arange(1, VOCAB + 1) ** 1.07
        p /= p.sum()
        texts = [" ".join(row) for row in vocab[rng.choice(VOCAB, size=(n, WORDS_PER_CHUNK), p=p)]]
        vecs = rng.standard_normal((n, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        queries = [" ".join(row) for row in vocab[rng.choice(VOCAB // 10, size=(N_QUERIES, 5))]]
        qvecs = rng.standard_normal((N_QUERIES, DIM)).astype(np.float32)
        qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
        np.savez(path, texts=np.array(texts), vecs=vecs, queries=np.array(queries), qvecs=qvecs)
    data = np.load(path)
    return list(data["texts"]), data["vecs"], list(data["queries"]), data["qvecs"]
