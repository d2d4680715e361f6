"""Long-text policies cheaper than ``long_text="auto"`` on a BEIR set: their cost and quality.

    python benchmarks/bench_late_windows.py --data PATH/scifact --split train

``auto`` (the default) embeds a chunk longer than the model's 256 word pieces twice over: its
first 256 as one pass, then every window of 128 (overlap 32) as passes of their own. On SciFact
(71% of abstracts longer than 256) that is ~2.6x the word pieces of truncation. The candidates
here keep the same entries (own vector + windows) but pay for fewer passes:

- ``first``: the own vector only (truncation; the tail is lost to the dense leg).
- ``late-head``: late chunking (Günther et al., 2024, "Late Chunking: Contextual Chunk
  Embeddings Using Long-Context Embedding Models"): the own pass's token states are mean-pooled
  over each window of 128 inside the first 256, so the windows cost no pass; the tail is lost
  (one pass per chunk, the cost of truncation).
- ``late-full``: the whole text in consecutive passes of 256 (each token read once), the own
  vector the first pass's, every window of 128 pooled from the stitched token states (word
  pieces = the text's length, about half of ``auto``'s on SciFact).
- ``late-short``: ``late-full`` plus pooled windows for texts that fit 256 too (free).
- ``mean-own``: ``auto``'s windows, but the own vector is the mean of the windows inside the
  first 256 instead of a pass of its own.
- ``tail``: ``auto``'s entries without the windows that lie inside the first 256 (the own
  vector already covers them): the windows start where ``auto``'s do, and the first kept one
  is the first to reach past the own pass.
- ``auto+late``: ``auto``'s entries and ``late-full``'s windows as well (no more passes than
  ``auto``; 1.8x the vectors).
- ``titled``: ``auto``'s entries, every window but the first (which starts with the title)
  embedded as ``"<document title>. <window>"``: a window of a long text's tail keeps what the
  text is about, as a contextual chunk header does (one pass more per window than the title's
  word pieces; the windows' texts are embedded and cached on first use).

- ``fit`` (the tools' default since): whole when the text fits one window of 128; whole plus
  its windows of 128 when it fits 256; else its windows of 128 only (the first its own entry).
- ``fit-titled``: ``fit``'s entries, every window that does not start the text embedded as
  ``"<document title>. <window>"`` (``titled`` on ``fit``).

- ``sentences``: the own vector, then each sentence of the text as an entry of its own, headed
  by the document's title where the set has titles (``"<title>. <sentence>"``): a query that
  restates one sentence (a SciFact claim restates its rationale sentence) meets an entry that
  holds just that sentence and what the text is about. Sentences: split after ``.``, ``!`` or
  ``?`` before a capital, a digit or a bracket; shorter than 20 characters dropped.
- ``long-sentences``: ``sentences`` for the texts longer than the model's pass, the others
  whole (``auto``'s rule, the windows replaced by titled sentences).

``--sweep`` also runs ``auto``, ``late-full``, ``titled``, ``fit`` and ``fit-titled`` (those of
``--policies``) over a grid of fusion weights (dense 0.6 / 0.7 / 0.8) x feedback weights (0.5 /
0.75 / 1.0);
``--title`` runs ``auto`` with each document's title counted 1 and 2 more times by BM25 (a
title field, as BM25F weights one).

Every variant's own vector is bit-for-bit ``auto``'s where it is a pass of the first 256
(checked below). Rows: the default ``HybridRetriever`` (feedback on) over each store, without
feedback, and dense only; word pieces each policy runs through the model per document. Tune on
train; the test split is for reporting. The token states of the corpus are computed once per
run (~3 min of CPU for SciFact on 2 cores); ``auto``'s window vectors come from the bench
cache (``onnx_cache.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from bench_quality import POLICIES, _evaluate, _run
from langchain_core.documents import Document
from onnx_cache import DiskCachedOnnx, windows_of
from prose_data import beir
from tuning_data import LookupEmbeddings

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.embeddings.windows import token_windows
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

WHOLE, WINDOW, OVERLAP = 254, 126, 32
"""Word pieces without [CLS]/[SEP]: the model's pass, a window and the windows' overlap."""


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class TokenStates:
    """Each text's own vector and its tokens' contextual states, passes of ``WHOLE`` pieces."""

    def __init__(self, texts: list[str]) -> None:
        self.model = OnnxEmbeddings(long_text="first")  # int8 where the CPU has it, as default
        self.session, tokenizer = self.model._load()
        self.ids = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
        began, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(2) as pool:
            done = list(pool.map(self._states, self.ids))
        self.own = [own for own, _ in done]
        self.states = [states for _, states in done]
        print(
            f"token states of {len(texts)} texts: {time.perf_counter() - began:.0f} s wall, "
            f"{time.process_time() - cpu:.0f} CPU-s (load {os.getloadavg()[0]:.1f})"
        )

    def _pass(self, ids: list[int]) -> np.ndarray:
        cls, sep = self.model._special
        window = np.array([[cls, *ids, sep]], dtype=np.int64)
        (hidden,) = self.session.run(
            ["last_hidden_state"],
            {
                "input_ids": window,
                "attention_mask": np.ones_like(window),
                "token_type_ids": np.zeros_like(window),
            },
        )
        return hidden[0]

    def _states(self, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        passes = [self._pass(ids[s : s + WHOLE]) for s in range(0, max(len(ids), 1), WHOLE)]
        own = _unit(passes[0].mean(axis=0))  # [CLS] and [SEP] pooled too, as OnnxEmbeddings
        return own, np.concatenate([p[1:-1] for p in passes]).astype(np.float16)

    def pooled(self, n: int, *, upto: int | None = None, short: bool = False) -> list[np.ndarray]:
        """Text ``n``'s windows of ``WINDOW`` pooled from its states (``upto``: first pieces)."""
        states = self.states[n]
        length = len(states) if upto is None else min(len(states), upto)
        if len(states) <= (WINDOW if short else WHOLE):
            return []
        spans = token_windows(length, size=WINDOW, overlap=OVERLAP)
        return [_unit(states[s:e].astype(np.float32).mean(axis=0)) for s, e in spans]


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see ``sentences`` in the module docstring)."""
    return [s.strip() for s in SENTENCE_END.split(text) if len(s.strip()) > 20]


def pieces(length: int, policy: str) -> int:
    """Word pieces (with [CLS]/[SEP]) the model runs for a text of ``length`` pieces."""
    head = min(length, WHOLE) + 2
    windows = token_windows(length, size=WINDOW, overlap=OVERLAP)
    windowed = sum(e - s + 2 for s, e in windows) if length > WHOLE else 0
    passes = -(-max(length, 1) // WHOLE)
    every = sum(e - s + 2 for s, e in windows)
    fit = length + 2 if length <= WINDOW else every + (length + 2 if length <= WHOLE else 0)
    return {
        "auto": head + windowed,
        "first": head,
        "late-head": head,
        "late-full": length + 2 * passes,
        "late-short": length + 2 * passes,
        "mean-own": windowed or head,
        "auto+late": head + windowed,
        "titled": head + windowed,  # and each window's title: added in main
        "fit": fit,
        "fit-titled": fit,  # and each window's title: added in main
        "sentences": head,  # and the sentence entries: counted in main
        "long-sentences": head,
        "tail": head + sum(e - s + 2 for s, e in windows if e > WHOLE) if length > WHOLE else head,
    }[policy]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True, help="a BEIR directory (SciFact)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--sweep", action="store_true", help="fusion x feedback weights")
    parser.add_argument("--title", action="store_true", help="BM25 with the title repeated")
    parser.add_argument("--policies", help="comma-separated policies to run (default: all)")
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    data = beir(args.data, splits=(args.split,), name=args.data.name)
    docs, queries, qrels = data.docs, data.queries[args.split], data.qrels[args.split]
    texts = [d.page_content for d in docs]
    _, tokenizer = OnnxEmbeddings(long_text="first")._load()
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    late = {"late-head", "late-full", "late-short", "auto+late"}
    wanted = args.policies.split(",") if args.policies else None
    # the token states (~4 min of CPU on SciFact) only for the policies that pool them
    states = TokenStates(texts) if wanted is None or late & set(wanted) else None
    cache = DiskCachedOnnx()
    cache.ensure([t for _, t in queries], label="queries")
    table = {t: cache.vector(t) for _, t in queries}
    w128, w256 = windows_of(texts), windows_of(texts, 256)
    auto = [[t] if len(b) == 1 else [t, *a] for t, a, b in zip(texts, w128, w256, strict=True)]
    cache.ensure([t for entries in auto for t in entries], label="auto entries")
    titles = {
        str(row["_id"]): row.get("title", "")
        for row in map(json.loads, (args.data / "corpus.jsonl").open(encoding="utf-8"))
    }
    titled = [
        [
            own,
            *(
                f"{titles[str(doc.id)]}. {w}" if n and titles[str(doc.id)] else w
                for n, w in enumerate(windows)
            ),
        ]
        for doc, (own, *windows) in zip(docs, auto, strict=True)
    ]
    if wanted is None or "titled" in wanted:
        cache.ensure([t for entries in titled for t in entries], label="titled entries")
    fit = [POLICIES["fit"](t, a, b) for t, a, b in zip(texts, w128, w256, strict=True)]
    fit_titled = [
        [
            f"{titles[str(doc.id)]}. {e}"
            if titles[str(doc.id)] and not doc.page_content.startswith(e)
            else e
            for e in entries
        ]
        for doc, entries in zip(docs, fit, strict=True)
    ]
    for label, entries in (("fit", fit), ("fit-titled", fit_titled)):
        if wanted is None or label in wanted:
            cache.ensure([t for ts in entries for t in ts], label=f"{label} entries")
    bodies = {
        str(row["_id"]): row["text"]
        for row in map(json.loads, (args.data / "corpus.jsonl").open(encoding="utf-8"))
    }

    def headed(doc_id: str) -> list[str]:
        title = titles[doc_id]
        return [f"{title}. {s}" if title else s for s in sentences(bodies[doc_id])]

    sentence_entries = [headed(str(d.id)) for d in docs]
    long = [len(b) > 1 for b in w256]
    further = {
        "sentences": sentence_entries,
        "long-sentences": [e if n else [] for e, n in zip(sentence_entries, long, strict=True)],
    }
    if wanted is None or {"sentences", "long-sentences"} & set(wanted):
        cache.ensure([t for e in sentence_entries for t in e], label="sentence entries")
    if states is not None:
        same = max(
            float(np.abs(cache.vector(t) - states.own[n]).max()) for n, t in enumerate(texts)
        )
        print(f"own vector vs auto's (max |difference| over every text): {same:.1e}")

    def standalone(n: int) -> list[np.ndarray]:
        return [cache.vector(t) for t in auto[n]]

    def mean_own(n: int) -> list[np.ndarray]:
        windows = standalone(n)[1:]
        return [_unit(np.mean(windows[:2], axis=0)), *windows] if windows else standalone(n)

    def tail(n: int) -> list[np.ndarray]:
        own, *windows = standalone(n)
        if not windows:
            return [own]
        spans = token_windows(lengths[n], size=WINDOW, overlap=OVERLAP)
        return [own, *(v for v, (_, end) in zip(windows, spans, strict=True) if end > WHOLE)]

    policies = {
        "auto": standalone,
        "first": lambda n: standalone(n)[:1],  # auto's own vector: the first 256 pieces
        "late-head": lambda n: [states.own[n], *states.pooled(n, upto=WHOLE)],
        "late-full": lambda n: [states.own[n], *states.pooled(n)],
        "late-short": lambda n: [states.own[n], *states.pooled(n, short=True)],
        "mean-own": mean_own,
        "auto+late": lambda n: [*standalone(n), *states.pooled(n)],
        "tail": tail,
        "titled": lambda n: [cache.vector(t) for t in titled[n]],
        "fit": lambda n: [cache.vector(t) for t in fit[n]],
        "fit-titled": lambda n: [cache.vector(t) for t in fit_titled[n]],
        "sentences": lambda n: (
            [cache.vector(texts[n])] + [cache.vector(t) for t in further["sentences"][n]]
        ),
        "long-sentences": lambda n: (
            [cache.vector(texts[n])] + [cache.vector(t) for t in further["long-sentences"][n]]
        ),
    }
    if wanted is not None:
        policies = {name: policies[name] for name in wanted}
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    print(
        f"\n### {data.name} {args.split}: {len(docs)} documents, {len(queries)} queries\n\n"
        "| policy | nDCG@10 | R@100 | no feedback | dense only | vectors per doc "
        "| word pieces per doc |\n|---|---:|---:|---:|---:|---:|---:|"
    )

    def store_of(vectors_of: Callable[[int], list[np.ndarray]]) -> tuple[MatrixVectorStore, int]:
        rows: list[Document] = []
        vectors: list[np.ndarray] = []
        for n, doc in enumerate(docs):
            own, *windows = vectors_of(n)
            rows.append(doc)
            vectors.append(own)
            for w, vector in enumerate(windows, start=1):
                meta = {"window_of": doc.id}
                rows.append(Document(id=f"{doc.id}:w{w}", page_content="", metadata=meta))
                vectors.append(vector)
        store = MatrixVectorStore(LookupEmbeddings(table))
        store.add_vectors(rows, np.stack(vectors))
        return store, len(vectors)

    def score(retriever: HybridRetriever) -> tuple[float, float]:
        return _evaluate(_run(queries, lambda q: [d.id for d in retriever.invoke(q, k=100)]), qrels)

    stores: dict[str, MatrixVectorStore] = {}
    for name, vectors_of in policies.items():
        store, entries = store_of(vectors_of)
        stores[name] = store
        default = HybridRetriever(vector_store=store, keyword_index=bm25)
        figures = [
            score(default),
            score(default.model_copy(update={"feedback_docs": 0})),
            score(default.model_copy(update={"weights": (1.0, 0.0, 0.0)})),
        ]
        cost = sum(pieces(length, name) for length in lengths) / len(docs)
        if name in ("titled", "fit-titled"):
            plain = "auto" if name == "titled" else "fit"
            counted = {
                label: sum(
                    len(e.ids) for e in tokenizer.encode_batch([t for ts in entries for t in ts])
                )
                for label, entries in (
                    (name, titled if name == "titled" else fit_titled),
                    (plain, auto if name == "titled" else fit),
                )
            }
            cost += (counted[name] - counted[plain]) / len(docs)  # the titles' pieces
        if name in further:
            extra = [t for ts in further[name] for t in ts]
            cost += sum(len(e.ids) + 2 for e in tokenizer.encode_batch(extra)) / len(docs)
        print(
            f"| {name} | {figures[0][0]:.4f} | {figures[0][1]:.4f} | {figures[1][0]:.4f} | "
            f"{figures[2][0]:.4f} | {entries / len(docs):.2f} | {cost:.0f} |",
            flush=True,
        )
    if args.sweep:
        print("\n| policy | dense weight | feedback weight | nDCG@10 |\n|---|---:|---:|---:|")
        swept = ("auto", "late-full", "titled", "fit", "fit-titled")
        for name in [n for n in swept if n in stores]:
            default = HybridRetriever(vector_store=stores[name], keyword_index=bm25)
            for dense in (0.6, 0.7, 0.8):
                for feedback in (0.5, 0.75, 1.0):
                    weights = (dense, round(1 - dense, 2), default.weights[2])
                    update = {"weights": weights, "feedback_weight": feedback}
                    ndcg = score(default.model_copy(update=update))[0]
                    print(f"| {name} | {dense} | {feedback} | {ndcg:.4f} |", flush=True)
    if args.title:
        print("\n| BM25 title repeats | hybrid nDCG@10 | BM25 only nDCG@10 |\n|---|---:|---:|")
        for repeats in (0, 1, 2):
            titled = [
                doc.model_copy(
                    update={
                        "page_content": doc.page_content + ("\n" + titles[str(doc.id)]) * repeats
                    }
                )
                for doc in docs
            ]
            index = BM25KeywordIndex()
            index.upsert(titled)
            alone = _evaluate(
                _run(queries, lambda q, i=index: [h.id for h in i.search(q, 100)]), qrels
            )
            hybrid = score(HybridRetriever(vector_store=stores["auto"], keyword_index=index))
            print(f"| {repeats} | {hybrid[0]:.4f} | {alone[0]:.4f} |", flush=True)
    print(
        f"\n(wall {time.perf_counter() - started:.0f} s, CPU {time.process_time() - cpu:.0f} s, "
        f"load average at end {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
