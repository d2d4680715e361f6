"""Hybrid retrieval at scale: ours (quantized dense + MaxScore BM25) next to the exact floor.

    python benchmarks/bench_scale.py                          # 100k and 1M chunks
    python benchmarks/bench_scale.py --sizes 100000           # quicker
    python benchmarks/bench_scale.py --ingest                 # also: sample-docs ingestion

Corpus: the generator of ``benchmarks/synthetic.py`` (120 Zipf-distributed made-up words per
chunk, random unit 384-dim vectors, 200 five-word queries), for ``n + n/100`` chunks: the
first ``n`` are the corpus, the last 1% are the "new chunks" of the update experiment. It is
cached as word ids and a float32 ``.npy`` under ``~/.cache/holodeck-bench`` (about 1.8 GB at
1M), so re-runs skip generation. Query embedding is excluded (vectors are looked up).

Each (system, size) runs in its own process (peak RSS per system, inputs included):
- floor: numpy float32 matmul + argpartition (exact), bm25s retrieve (stop words + stemming,
  queries pre-tokenized), a 20-line RRF; top 50 per leg, top 10 fused.
  "recall@10 vs exact" is the overlap of our top 10 with the top 10 of the same retriever run
  with exact dense search (``search_kwargs={"exact": True}``) and exhaustive BM25: what the
  quantization and the pruning lose. "recall@10 vs floor" compares with the floor's top 10;
  it is below 1 even for our exact path because this corpus has many equal BM25 scores
  (chunks of equal length sharing one rare term) and bm25s breaks those ties differently.
- ours: ``MatrixVectorStore(search_mode="auto")`` (4-bit PQ fast scan + exact re-scoring
  above 50k rows) + ``BM25KeywordIndex()`` (MaxScore) +
  ``HybridRetriever(k=10, fetch_k=50, fusion="rrf", weights=(0.5, 0.5, 0.2), feedback_docs=0)``
  (the floor's fusion, so "recall@10 vs floor" compares like with like),
  built in batches of 100k chunks with ``add_vectors`` / ``upsert``; "build" ends after the
  first search (which builds the BM25 matrix). Then 1% new chunks are added (store + BM25)
  and one search is run: "add 1%". The sizes of its large parts (vectors, texts as stored and
  as ``str``, BM25 matrix and term ids) are printed after the table.
- ours, the tool's defaults: the same store and index, ``HybridRetriever(k=10)`` with every
  other setting its default (convex fusion 0.7/0.3/0.2, fetch_k 300, query feedback from the
  3 best chunks), its "recall@10 vs exact" against the same defaults with exact dense search
  and exhaustive BM25. Feedback re-ranks on purpose (towards random vectors, on this corpus),
  so its "recall@10 vs floor" says nothing of quality.
- ours (exact): the same with ``search_mode="exact"`` and ``scoring="exhaustive"``.
- EnsembleRetriever (LangChain; BM25Retriever + InMemoryVectorStore): at 100k only and on
  5 queries (its build alone takes minutes there; at 1M its vectors as Python lists would
  not fit in memory).
Latency is per query, single-threaded BLAS/OpenMP (``OMP_NUM_THREADS=1`` etc. are set here).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402  (after the thread settings)
from synthetic import (  # noqa: E402
    DIM,
    N_QUERIES,
    SYLLABLES,
    VOCAB,
    WORDS_PER_CHUNK,
    floor_query_tokens,
    floor_search,
)

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("HOLODECK_BENCH_CACHE", Path.home() / ".cache" / "holodeck-bench"))
BATCH = 100_000
ENSEMBLE_QUERIES = 5
ENSEMBLE_MAX_N = 100_000


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(n: int) -> Path:
    """Write the corpus of ``n + n // 100`` chunks once; return its directory."""
    out = CACHE / f"scale_{n}"
    if (out / "done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    total = n + n // 100
    rng = np.random.default_rng(7)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < VOCAB:
        w = "".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    p = 1 / np.arange(1, VOCAB + 1) ** 1.07
    p /= p.sum()
    tokens = np.lib.format.open_memmap(
        out / "tokens.npy", mode="w+", dtype=np.int16, shape=(total, WORDS_PER_CHUNK)
    )
    for start in range(0, total, BATCH):
        stop = min(total, start + BATCH)
        tokens[start:stop] = rng.choice(VOCAB, size=(stop - start, WORDS_PER_CHUNK), p=p)
    tokens.flush()
    vecs = np.lib.format.open_memmap(
        out / "vectors.npy", mode="w+", dtype=np.float32, shape=(total, DIM)
    )
    for start in range(0, total, BATCH):
        stop = min(total, start + BATCH)
        block = rng.standard_normal((stop - start, DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vecs[start:stop] = block
    vecs.flush()
    queries = [" ".join(row) for row in np.array(words)[rng.choice(VOCAB // 10, (N_QUERIES, 5))]]
    qvecs = rng.standard_normal((N_QUERIES, DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    np.save(out / "qvecs.npy", qvecs)
    (out / "meta.json").write_text(json.dumps({"words": words, "queries": queries, "n": n}))
    (out / "done").write_text("ok")
    return out


class Corpus:
    """Lazy access to a generated corpus: texts are joined from word ids on demand."""

    def __init__(self, n: int) -> None:
        self.dir = generate(n)
        meta = json.loads((self.dir / "meta.json").read_text())
        self.words: list[str] = meta["words"]
        self.queries: list[str] = meta["queries"]
        self.qvecs = np.load(self.dir / "qvecs.npy")
        self.n = n
        self.total = n + n // 100

    def texts(self, start: int, stop: int) -> list[str]:
        tokens = np.load(self.dir / "tokens.npy", mmap_mode="r")
        words = self.words
        return [" ".join([words[w] for w in row]) for row in tokens[start:stop].tolist()]

    def vectors(self, start: int, stop: int) -> np.ndarray:
        # a fresh map per slice, dropped at once: the file's pages do not pile up in our RSS
        return np.array(np.load(self.dir / "vectors.npy", mmap_mode="r")[start:stop])


def parts_mb(store: object, bm25: object) -> dict[str, float]:
    """Sizes of the large parts of ours, from the store's and the index's own arrays."""
    from langchain_holodeck.vectorstores._columns import unpack_text

    docs = store._docs  # type: ignore[attr-defined]  # a benchmark looks inside
    matrix = bm25._main  # type: ignore[attr-defined]
    terms = bm25._tokens  # type: ignore[attr-defined]
    mb = 1 / 2**20
    return {
        "vectors": store._size * store._buffer.shape[1] * 4 * mb,  # type: ignore[attr-defined]
        "texts": sum(map(sys.getsizeof, docs.texts)) * mb,
        "texts_as_str": sum(sys.getsizeof(unpack_text(t)) for t in docs.texts) * mb,
        "bm25_matrix": (matrix.data.nbytes + matrix.indices.nbytes) * mb,
        "bm25_terms": terms._used * terms._flat.itemsize * mb,
    }


FLOOR_FUSION = {
    "k": 10,
    "fetch_k": 50,
    "fusion": "rrf",
    "weights": (0.5, 0.5, 0.2),
    "feedback_docs": 0,
}
"""``ours``: the floor's fusion (top 50 per leg, RRF 0.5/0.5, no query feedback)."""


def worker(system: str, n: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    corpus = Corpus(n)
    queries = corpus.queries
    if system == "ensemble":
        queries = queries[:ENSEMBLE_QUERIES]
    qv = {q: corpus.qvecs[i] for i, q in enumerate(corpus.queries)}

    class Lookup(Embeddings):
        """Query vectors precomputed; documents are added with their vectors."""

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise NotImplementedError

        def embed_query(self, text: str) -> list[float]:
            return qv[text].tolist()

    latencies: list[float] = []
    cpu: list[float] = []  # CPU seconds per query (all threads): what the load cannot inflate
    results: list[list[int]] = []
    extra: dict = {}
    if system in ("ours", "ours_exact", "ours_defaults"):
        from langchain_holodeck.keyword_index import BM25KeywordIndex
        from langchain_holodeck.retrievers import HybridRetriever
        from langchain_holodeck.vectorstores import MatrixVectorStore

        exact = system == "ours_exact"
        t0, c0 = time.perf_counter(), time.process_time()
        store = MatrixVectorStore(Lookup(), search_mode="exact" if exact else "auto")
        bm25 = BM25KeywordIndex(scoring="exhaustive" if exact else "maxscore")
        for start in range(0, n, BATCH):
            stop = min(n, start + BATCH)
            docs = [
                Document(id=str(start + i), page_content=t)
                for i, t in enumerate(corpus.texts(start, stop))
            ]
            store.add_vectors(docs, corpus.vectors(start, stop))
            bm25.upsert(docs)
            del docs
        bm25.search(queries[0], 1)  # the first search builds the BM25 matrix: part of build
        build = time.perf_counter() - t0
        extra["build_cpu_s"] = time.process_time() - c0
        # the floor's fusion (one RRF pass), or every default of the tool (convex fusion,
        # fetch_k 300, query feedback): each against its own exact variant below
        settings: dict = {"k": 10} if system == "ours_defaults" else FLOOR_FUSION
        retriever = HybridRetriever(vector_store=store, keyword_index=bm25, **settings)
        retriever.invoke(queries[0])
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = retriever.invoke(q)
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            results.append([int(d.id) for d in out])  # type: ignore[arg-type]
        extra["rss_mb"] = rss_mb()  # peak of build + queries
        extra["parts_mb"] = parts_mb(store, bm25)
        # the reference: the same retriever with exact dense search and exhaustive BM25
        exact_retriever = HybridRetriever(
            vector_store=store, keyword_index=bm25, search_kwargs={"exact": True}, **settings
        )
        scoring, bm25.scoring = bm25.scoring, "exhaustive"
        extra["exact_results"] = [[int(d.id) for d in exact_retriever.invoke(q)] for q in queries]  # type: ignore[arg-type]
        bm25.scoring = scoring
        new_docs = [
            Document(id=str(n + i), page_content=t)
            for i, t in enumerate(corpus.texts(n, corpus.total))
        ]
        new_vecs = corpus.vectors(n, corpus.total)
        t, c = time.perf_counter(), time.process_time()
        store.add_vectors(new_docs, new_vecs)
        bm25.upsert(new_docs)
        retriever.invoke(queries[0])
        extra["add_1pct_s"] = time.perf_counter() - t
        extra["add_1pct_cpu_s"] = time.process_time() - c
        extra["full_builds"] = bm25.full_builds
        hit = retriever.invoke(new_docs[0].page_content[:200])  # a new chunk is findable
        extra["new_chunk_found"] = any(d.id == new_docs[0].id for d in hit)
    elif system == "floor":
        import bm25s
        import Stemmer

        t0, c0 = time.perf_counter(), time.process_time()
        stemmer = Stemmer.Stemmer("english")
        matrix = np.concatenate([corpus.vectors(s, min(n, s + BATCH)) for s in range(0, n, BATCH)])
        index = bm25s.BM25()
        texts = corpus.texts(0, n)
        index.index(
            bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        del texts
        build = time.perf_counter() - t0
        extra["build_cpu_s"] = time.process_time() - c0

        q_tokens = floor_query_tokens(queries, stemmer)
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = floor_search(matrix, index, qv[q], q_tokens[q])
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            results.append(out)
        extra["rss_mb"] = rss_mb()
    elif system == "ensemble":
        from langchain_classic.retrievers import EnsembleRetriever
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.vectorstores import InMemoryVectorStore

        t0, c0 = time.perf_counter(), time.process_time()
        texts = corpus.texts(0, n)
        docs = [Document(id=str(i), page_content=t) for i, t in enumerate(texts)]
        store = InMemoryVectorStore(Lookup())
        for start in range(0, n, BATCH):
            stop = min(n, start + BATCH)
            vecs = corpus.vectors(start, stop)
            for i in range(start, stop):  # the store's own layout: a dict of lists
                store.store[str(i)] = {
                    "id": str(i),
                    "vector": vecs[i - start].tolist(),
                    "text": texts[i],
                    "metadata": {},
                }
        bm25r = BM25Retriever.from_documents(docs, k=50)
        ens = EnsembleRetriever(
            retrievers=[bm25r, store.as_retriever(search_kwargs={"k": 50})], weights=[0.5, 0.5]
        )
        build = time.perf_counter() - t0
        extra["build_cpu_s"] = time.process_time() - c0
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            out = ens.invoke(q)
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            results.append([int(d.id) for d in out[:10]])  # type: ignore[arg-type]
        extra["rss_mb"] = rss_mb()
    else:
        msg = f"unknown system {system!r}"
        raise ValueError(msg)
    return {"build_s": build, "lat": latencies, "cpu": cpu, "results": results} | extra


def ingest_sample_docs() -> dict:
    """Chunks/s through load + split + embed of examples/sample_docs with the default model."""
    sys.path.insert(0, str(ROOT))
    from langchain_holodeck.embeddings import resolve_embeddings
    from langchain_holodeck.embeddings.windows import stored_windows
    from langchain_holodeck.loaders import SourceLoader
    from langchain_holodeck.splitters.structured import default_text_splitter

    default_text_splitter().split_documents(SourceLoader(ROOT / "examples" / "sample_docs").load())
    t0 = time.perf_counter()  # after a warm pass: imports (markitdown, ...) are not per chunk
    docs = SourceLoader(ROOT / "examples" / "sample_docs").load()
    t1 = time.perf_counter()
    chunks = default_text_splitter().split_documents(docs)
    t2 = time.perf_counter()
    embeddings = resolve_embeddings(None)  # the default local model (all-MiniLM-L6-v2)
    embeddings.embed_query("warm up")  # model load is not per-chunk cost
    t3 = time.perf_counter()
    texts = [c.page_content for c in chunks]
    window_texts = stored_windows(embeddings)  # what sync embeds: every model window
    if window_texts is not None:
        texts = [w for windows in window_texts(texts) for w in windows]
    embeddings.embed_documents(texts)
    t4 = time.perf_counter()
    work = (t2 - t0) + (t4 - t3)
    return {
        "files": len(docs),
        "chunks": len(chunks),
        "windows": len(texts),
        "load_s": t1 - t0,
        "split_s": t2 - t1,
        "embed_s": t4 - t3,
        "chunks_per_s": len(chunks) / work,
        "embed_share": (t4 - t3) / work,
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def recall(results: list[list[int]], reference: list[list[int]]) -> float:
    pairs = list(zip(results, reference, strict=False))
    return statistics.mean(len(set(r) & set(e)) / max(len(e), 1) for r, e in pairs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument(
        "--systems",
        nargs="+",
        default=["floor", "ours", "ours_defaults", "ours_exact", "ensemble"],
    )
    parser.add_argument("--ingest", action="store_true", help="also measure sample-docs ingest")
    parser.add_argument("--worker", nargs=2, metavar=("SYSTEM", "N"))
    args = parser.parse_args()
    if args.worker and args.worker[0] == "ingest":
        print(json.dumps(ingest_sample_docs()))
        return
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]))))
        return
    ingest = None
    if args.ingest:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", "ingest", "0"],
            capture_output=True,
            text=True,
            check=False,
        )
        ingest = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else None
        if ingest is None:
            print(f"ingest failed\n{proc.stderr[-2000:]}")
    by: dict[tuple[int, str], dict] = {}
    for n in args.sizes:
        generate(n)
        for system in args.systems:
            if system == "ensemble" and n > ENSEMBLE_MAX_N:
                continue
            if system == "ours_exact" and n > ENSEMBLE_MAX_N:
                continue
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", system, str(n)],
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode != 0:
                print(f"{system} @ {n}: failed\n{proc.stderr[-2000:]}")
                continue
            by[(n, system)] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"done: {system} @ {n}", file=sys.stderr)
    names = {
        "floor": "exact floor (numpy f32 matmul + bm25s + RRF)",
        "ours": "**ours** (quantized dense + MaxScore BM25, HybridRetriever)",
        "ours_defaults": "ours, the tool's defaults (convex fusion, fetch_k 300, feedback 3)",
        "ours_exact": "ours, exact (search_mode='exact', scoring='exhaustive')",
        "ensemble": "EnsembleRetriever (LangChain)",
    }
    load = os.getloadavg()
    print(
        f"\nload average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
        f"{os.cpu_count()} cores (wall-clock figures include waiting for a core)"
    )
    print(
        "\n| chunks | system | queries | p50 ms | p95 ms | CPU ms/query p50 | "
        "recall@10 vs exact | recall@10 vs floor | build s (CPU s) | peak RSS MB |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (n, system), res in by.items():
        lat = [x * 1000 for x in res["lat"]]
        floor = by.get((n, "floor"))
        vs_floor = f"{recall(res['results'], floor['results']):.3f}" if floor else "-"
        vs_exact = (
            f"{recall(res['results'], res['exact_results']):.3f}" if "exact_results" in res else "-"
        )
        cpu = statistics.median(res["cpu"]) * 1000
        print(
            f"| {n:,} | {names[system]} | {len(lat)} | {statistics.median(lat):.1f} | "
            f"{pct(lat, 0.95):.1f} | {cpu:.1f} | {vs_exact} | {vs_floor} | "
            f"{res['build_s']:.0f} ({res['build_cpu_s']:.0f}) | {res['rss_mb']:.0f} |"
        )
    for (n, system), res in by.items():
        if system in ("ours", "ours_exact", "ours_defaults"):
            print(
                f"\n{names[system]} @ {n:,}: add 1% new chunks ({n // 100:,}) to store + BM25 "
                f"and search: {res['add_1pct_s']:.2f} s ({res['add_1pct_cpu_s']:.2f} CPU s; "
                f"BM25 full builds: "
                f"{res['full_builds']}, new chunk found: {res['new_chunk_found']})"
            )
            parts = res["parts_mb"]
            print(
                f"{names[system]} @ {n:,}, memory of the large parts (MB): float32 vectors "
                f"{parts['vectors']:.0f}, chunk texts {parts['texts']:.0f} "
                f"({parts['texts_as_str']:.0f} as str), BM25 score matrix "
                f"{parts['bm25_matrix']:.0f}, BM25 term ids {parts['bm25_terms']:.0f}"
            )
    if ingest:
        print(
            f"\ningest examples/sample_docs ({ingest['files']} files, {ingest['chunks']} chunks, "
            f"{ingest['windows']} model windows embedded): "
            f"{ingest['chunks_per_s']:.0f} chunks/s through load + split + embed "
            f"(load {ingest['load_s']:.2f} s, split {ingest['split_s']:.2f} s, embed "
            f"{ingest['embed_s']:.2f} s: embedding {ingest['embed_share']:.0%} of the time; "
            "default local model all-MiniLM-L6-v2, model load excluded)"
        )
    for n in args.sizes:
        if (n, "ours") in by and (n, "floor") in by:
            ours = statistics.median(by[(n, "ours")]["lat"])
            floor = statistics.median(by[(n, "floor")]["lat"])
            print(f"speed-up vs the exact floor @ {n:,}: {floor / ours:.1f}x (p50)")


if __name__ == "__main__":
    main()
