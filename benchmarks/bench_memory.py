"""Memory overhead of 1000 chunks (~120 words, 384-dim vectors): ours vs InMemoryVectorStore.

    python benchmarks/bench_memory.py [--docs 1000]

Each store is built in a fresh subprocess from precomputed vectors (embedding model memory
excluded). The inputs (texts, metadata, vectors as ``list[float]`` as an ``Embeddings`` returns
them) are created after the baseline and dropped after the build, so "retained" is what the
store holds; reported: RSS growth (``/proc/self/status`` VmRSS), tracemalloc retained and peak.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tracemalloc

import numpy as np

WORDS = [
    "holodeck", "safety", "protocol", "officer", "replicator", "warp", "core", "shift",
    "rotation", "maintenance", "section", "requirement", "definition", "captain", "engineering",
    "deck", "sensor", "array", "diagnostic", "subspace", "field", "transporter", "clearance",
    "authorization", "report", "duty", "log",
]  # fmt: skip


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build(kind: str, n: int, *, trace: bool) -> dict[str, float]:
    import gc

    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_holodeck.vectorstores import MatrixVectorStore

    emb = DeterministicFakeEmbedding(size=384)
    gc.collect()
    before = rss_mb()
    if trace:
        tracemalloc.start()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, 120)) for _ in range(n)]
    metas = [
        {
            "source": f"data/docs/file{i // 10}.md",
            "source_path": f"data/docs/file{i // 10}.md",
            "file_type": "md",
            "mtime": 1717171717.0,
            "size_bytes": 8000,
            "chunk_index": i % 10,
            "namespace": "kb",
            "chunk_key": f"data/docs/file{i // 10}.md_chunk_{i % 10}",
            "content_hash": "ab" * 32,
            "chunk_count": 10,
            "embedding_model": "LocalEmbeddings:sentence-transformers/all-MiniLM-L6-v2",
            "parent_chain": ["Title I", f"Section {i}"],
            "cross_references": ["4.2"],
        }
        for i in range(n)
    ]
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vec_lists = vecs.tolist()  # what an Embeddings object returns
    docs = [
        Document(id=str(i), page_content=t, metadata=m)
        for i, (t, m) in enumerate(zip(texts, metas, strict=True))
    ]
    store: object
    if kind == "MatrixVectorStore":
        matrix_store = MatrixVectorStore(emb)
        matrix_store.add_vectors(docs, vec_lists)
        store = matrix_store
    else:
        peer = InMemoryVectorStore(emb)
        # fill directly: the peer's add path would re-embed
        peer.store = {
            d.id: {"id": d.id, "vector": v, "text": d.page_content, "metadata": d.metadata}
            for d, v in zip(docs, vec_lists, strict=True)
        }
        store = peer
    del texts, metas, vecs, vec_lists, docs  # the store keeps what it needs
    gc.collect()
    current, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
    tracemalloc.stop()
    after = rss_mb()
    assert store is not None
    return {"rss_delta_mb": after - before, "traced_mb": current / 2**20, "peak_mb": peak / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--child", default=None)
    parser.add_argument("--trace", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(build(args.child, args.docs, trace=bool(args.trace))))
        return
    print(f"### Memory for {args.docs:,} chunks (~120 words, 384-dim), fresh process each\n")
    print(
        "| store | RSS growth incl. inputs (MB) | retained, tracemalloc (MB) "
        "| peak incl. inputs (MB) |"
    )
    print("|---|---:|---:|---:|")
    for kind in ("MatrixVectorStore", "InMemoryVectorStore"):
        r = {}
        for trace in (0, 1):  # RSS without tracemalloc (it costs memory itself), then traced
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--docs",
                    str(args.docs),
                    "--child",
                    kind,
                    "--trace",
                    str(trace),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            got = json.loads(out.strip().splitlines()[-1])
            r.update(got if trace else {"rss_delta_mb": got["rss_delta_mb"]})
            if trace:
                r["rss_delta_mb"] = r.get("rss_untraced", r["rss_delta_mb"])
            else:
                r["rss_untraced"] = got["rss_delta_mb"]
        print(f"| {kind} | {r['rss_untraced']:.1f} | {r['traced_mb']:.1f} | {r['peak_mb']:.1f} |")
    print("\nTarget: < 100 MB for 1000 documents.")


if __name__ == "__main__":
    main()
