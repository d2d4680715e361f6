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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10_000)
    args = parser.parse_args()
    texts, _, queries, _ = corpus(args.chunks)
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


if __name__ == "__main__":
    main()
