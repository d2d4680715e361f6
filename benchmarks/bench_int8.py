"""OnnxEmbeddings in int8 vs fp32: throughput per CPU-second, cosine, SciFact nDCG@10.

    python benchmarks/bench_int8.py --data /path/to/scifact              # everything
    python benchmarks/bench_int8.py --data /path/to/scifact --windows 1000 --no-ndcg
    python benchmarks/bench_int8.py --data /path/to/scifact --only-graphs --abstracts 400
    python benchmarks/bench_int8.py --data /path/to/scifact --only-batches --abstracts 400
    python benchmarks/bench_int8.py --only-build

1. Throughput: the first ``--windows`` windows of 128 word pieces (the default's document
   windows) cut from SciFact abstracts, embedded by ``OnnxEmbeddings(precision="fp32")``
   (today's path: the int8 weights dequantized, fp32 compute, batches of 32) and by
   ``precision="int8"`` (onnxruntime dynamic quantization, one window per run, runs side by
   side), one after the other in this process. Windows per CPU-second (process CPU time, all
   threads) is the figure that survives a shared machine; wall time and load are printed too.
2. Agreement: cosine of the int8 vectors with the fp32 ones (same windows), and of both with
   the torch model's vectors of the fixed test sample (``tests/data/minilm_reference``).
3. Quality: SciFact test (300 claims) nDCG@10, dense only and in ``HybridRetriever`` with
   its defaults (BM25KeywordIndex + MatrixVectorStore), with every abstract truncated at 256
   word pieces (``long_text="first"``: one window per abstract, so one corpus pass): fp32
   from the dataset's cached all-MiniLM-L6-v2 vectors (the ONNX fp32 path agrees with them at
   cosine >= 0.999), int8 computed here, documents and queries.
4. The int8 graph, today's recipe (``INT8_RECIPE``: attention and GELU fused) against v2's
   (``build_int8_graph(fuse=False)``) and v1's (the softmax NaN guards kept too,
   ``nan_guards=True``), each planted in a temporary cache, and today's sessions
   (``runtime.UNFUSED_OPTIMIZERS`` left off) against sessions with every onnxruntime fusion
   on (as before 2026-12-06): every window of 128, then of 256, word pieces of the
   first ``--abstracts`` SciFact abstracts, embedded by ``OnnxEmbeddings(precision="int8")``
   on each, alternating by slices of abstracts (the order flipped every slice), in this
   process: windows per CPU-second of each, the largest difference of its vectors from the
   first's (max |diff|, min cosine) and their cosine to the fp32 vectors of the same windows.
5. Batches: why the int8 path runs one window per run. Every full window of 128, then of 256,
   word pieces of the first ``--abstracts`` abstracts (full windows only: equal lengths, so a
   batch pads nothing, its best case) run through today's int8 session in batches of 1, 2,
   4, 8 and 16 windows on one thread, alternating by slices: windows per CPU-second of each
   batch size and how far its vectors move from the batch-of-one vectors (the activations'
   int8 scale is one per run, so a window's vector depends on its batchmates).
6. Build (``--only-build``, no data needed): the one-time int8 graph build's steps (fold,
   fuse and probe), then the fused graph quantized by ``quantize_int8`` (ours) and by
   onnxruntime's ``quantize_dynamic`` in turn, three times each: wall and CPU seconds, and
   whether both write the same initializers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ir_metrics import mean, ndcg_at_k
from langchain_core.documents import Document
from tuning_data import LookupEmbeddings

from langchain_holodeck.embeddings import OnnxEmbeddings, runtime
from langchain_holodeck.embeddings.runtime import INT8_RECIPE, build_int8_graph, int8_model
from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.retrievers import HybridRetriever
from langchain_holodeck.vectorstores import MatrixVectorStore

REFERENCE = Path(__file__).resolve().parents[1] / "tests" / "data" / "minilm_reference"


def load(data: Path) -> tuple[list[Document], list[tuple[str, str]], dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    docs = [
        Document(id=c["_id"], page_content=(c["title"] + " " + c["text"]).strip()) for c in corpus
    ]
    qrels: dict[str, dict[str, int]] = {}
    for line in list((data / "qrels" / "test.tsv").open(encoding="utf-8"))[1:]:
        qid, did, score = line.strip().split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    rows = [json.loads(line) for line in (data / "queries.jsonl").open(encoding="utf-8")]
    return docs, [(q["_id"], q["text"]) for q in rows], qrels


def load_line() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def window_texts(texts: list[str], n: int) -> list[str]:
    """The first ``n`` document windows of ``texts``, as texts of their own."""
    emb = OnnxEmbeddings(precision="fp32")
    out: list[str] = []
    for windows in emb.window_texts(texts):
        out.extend(windows)
        if len(out) >= n:
            break
    return out[:n]


def throughput(texts: list[str]) -> dict[str, np.ndarray]:
    vectors = {}
    for precision in ("fp32", "int8"):
        emb = OnnxEmbeddings(precision=precision)  # type: ignore[arg-type]  # a literal
        emb.embed_query("warm up")  # loads the session (and builds the int8 graph once)
        cpu, wall = time.process_time(), time.perf_counter()
        vectors[precision] = np.vstack([w[0] for w in emb.embed_windows(texts)])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(
            f"  {precision}: {len(texts)} windows of <= 128 word pieces in {cpu:.1f} CPU-s "
            f"({len(texts) / cpu:.1f} windows per CPU-s), {wall:.1f} s wall; {load_line()}",
            flush=True,
        )
    cos = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    print(f"  int8 vs fp32 cosine: mean {cos.mean():.5f}, min {cos.min():.5f}")
    return vectors


def reference_agreement() -> None:
    texts = json.loads((REFERENCE / "texts.json").read_text(encoding="utf-8"))
    reference = np.load(REFERENCE / "vectors.npy")
    for precision in ("fp32", "int8"):
        emb = OnnxEmbeddings(precision=precision)  # type: ignore[arg-type]  # a literal
        cos = (np.asarray(emb.embed_documents(texts)) * reference).sum(axis=1)
        print(
            f"  {precision} vs torch reference ({len(texts)} texts): mean {cos.mean():.5f}, "
            f"min {cos.min():.5f}"
        )


def quality(data: Path) -> None:
    docs, all_queries, qrels = load(data)
    queries = [(q, t) for q, t in all_queries if q in qrels]
    bm25 = BM25KeywordIndex()
    bm25.upsert(docs)
    fp32_docs = np.load(data / "emb_minilm_l6_v2_docs.npy")
    fp32_queries_all = np.load(data / "emb_minilm_l6_v2_queries.npy")
    by_id = {q: i for i, (q, _) in enumerate(all_queries)}
    fp32_queries = {t: fp32_queries_all[by_id[q]] for q, t in queries}
    emb = OnnxEmbeddings(precision="int8", long_text="first")
    cpu, wall = time.process_time(), time.perf_counter()
    int8_docs = np.asarray(emb.embed_documents([d.page_content for d in docs]), dtype=np.float32)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"  int8 corpus pass: {len(docs)} abstracts, {cpu:.0f} CPU-s, {wall:.0f} s wall")
    int8_queries = {t: np.asarray(emb.embed_query(t)) for _, t in queries}
    cos = (fp32_docs * int8_docs).sum(axis=1)
    print(f"  int8 vs fp32 (torch) abstract vectors: mean {cos.mean():.5f}, min {cos.min():.5f}")
    print("\n| SciFact test, truncated at 256 | dense nDCG@10 | hybrid (defaults) nDCG@10 |")
    print("|---|---|---|")
    for label, doc_vectors, query_vectors in (
        ("fp32 (today)", fp32_docs, fp32_queries),
        ("int8", int8_docs, int8_queries),
    ):
        store = MatrixVectorStore(LookupEmbeddings(query_vectors))
        store.add_vectors(docs, doc_vectors)
        dense = {
            q: [d.id for d, _ in store.similarity_search_with_score(t, k=10)] for q, t in queries
        }
        retriever = HybridRetriever(vector_store=store, keyword_index=bm25)
        hybrid = {q: [d.id for d in retriever.invoke(t, k=10)] for q, t in queries}
        nd_dense = mean([ndcg_at_k(dense[q], qrels[q], 10) for q, _ in queries])
        nd_hybrid = mean([ndcg_at_k(hybrid[q], qrels[q], 10) for q, _ in queries])
        print(f"| {label} | {nd_dense:.4f} | {nd_hybrid:.4f} |", flush=True)


def _with_fusions(emb: OnnxEmbeddings) -> OnnxEmbeddings:
    """``emb`` with its session loaded as before 2026-12-06: every onnxruntime fusion on."""
    saved = runtime.UNFUSED_OPTIMIZERS
    runtime.UNFUSED_OPTIMIZERS = ()
    try:
        emb.embed_query("warm up")  # loads the session
    finally:
        runtime.UNFUSED_OPTIMIZERS = saved
    return emb


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def graphs(texts: list[str], slices: int = 6) -> None:
    weights = OnnxEmbeddings()._weights()
    name = int8_model(weights).name
    with tempfile.TemporaryDirectory() as tmp:
        v1, v2 = Path(tmp) / "v1", Path(tmp) / "v2"  # older recipes, planted under today's name
        build_int8_graph(weights, v1 / "onnx" / name, nan_guards=True, fuse=False)
        build_int8_graph(weights, v2 / "onnx" / name, fuse=False)
        unfused = "/".join(runtime.UNFUSED_OPTIMIZERS)
        runs = {
            "v1 (NaN guards kept), all fusions": _with_fusions(
                OnnxEmbeddings(precision="int8", cache_dir=v1)
            ),
            "v2 (no NaN guards), all fusions (before 2026-12-06)": _with_fusions(
                OnnxEmbeddings(precision="int8", cache_dir=v2)
            ),
            f"v2, no {unfused} (before v3)": OnnxEmbeddings(precision="int8", cache_dir=v2),
            f"{INT8_RECIPE} (fused attention and GELU), no {unfused} (today)": OnnxEmbeddings(
                precision="int8"
            ),
        }
        for emb in runs.values():
            emb.embed_query("warm up")  # loads the session (the fused ones are loaded)
        fp32 = OnnxEmbeddings(precision="fp32")
        parts = [texts[i::slices] for i in range(slices)]
        for window in (128, 256):
            cpu = dict.fromkeys(runs, 0.0)
            rows: dict[str, list[np.ndarray]] = {name: [] for name in runs}
            for n, part in enumerate(parts):
                for name in list(runs)[:: 1 if n % 2 == 0 else -1]:
                    start = time.process_time()
                    rows[name].extend(runs[name].embed_windows(part, window=window))
                    cpu[name] += time.process_time() - start
            reference = np.vstack(
                [v for part in parts for v in fp32.embed_windows(part, window=window)]
            )
            first = np.vstack(rows[next(iter(runs))])
            print(f"  windows of {window}: {len(first)} ({load_line()})")
            for name in runs:
                ours = np.vstack(rows[name])
                to_first, to_fp32 = _cosines(first, ours), _cosines(reference, ours)
                print(
                    f"    {name}: {cpu[name]:.1f} CPU-s, {len(ours) / cpu[name]:.1f} windows "
                    f"per CPU-s, {cpu[next(iter(runs))] / cpu[name]:.2f}x the first; vs the "
                    f"first max |diff| {np.abs(first - ours).max():.3g}, min cosine "
                    f"{to_first.min():.5f}; cosine to fp32 mean {to_fp32.mean():.5f}, min "
                    f"{to_fp32.min():.5f}",
                    flush=True,
                )


def build(repeats: int = 3) -> None:
    """Section 6: the one-time build's steps, and ``quantize_int8`` next to ``quantize_dynamic``.

    Folding and fusing (with its probe) run once each, timed; then the fused graph is quantized
    by both quantizers in turn, ``repeats`` times, the order flipped each time: wall and CPU
    seconds of each, and whether the two write the same initializers and token states.
    """
    import onnx
    from onnx import numpy_helper
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata

    from langchain_holodeck.embeddings._fusions import fused_graph
    from langchain_holodeck.embeddings._quantize import quantize_int8

    def timed(step):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.process_time()
        out = step()
        return out, time.perf_counter() - wall, time.process_time() - cpu

    weights = OnnxEmbeddings()._weights()
    with tempfile.TemporaryDirectory() as tmp:
        graph, wall, cpu = timed(lambda: runtime.folded_graph(weights, directory=Path(tmp)))
        runtime.drop_nan_guards(graph)
        print(f"  fold the constants: {wall:.2f} s wall, {cpu:.2f} CPU-s")
        (fused, applied), wall, cpu = timed(lambda: fused_graph(graph))
        print(f"  fuse ({', '.join(applied)}) and probe: {wall:.2f} s wall, {cpu:.2f} CPU-s")
        add_pre_process_metadata(fused)
        target = Path(tmp) / "q.onnx"

        def theirs():  # type: ignore[no-untyped-def]
            quantize_dynamic(fused, target, weight_type=QuantType.QInt8, per_channel=True)
            return onnx.load(target)

        steps = {"quantize_int8 (ours)": lambda: quantize_int8(fused), "quantize_dynamic": theirs}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
        graphs: dict[str, onnx.ModelProto] = {}
        for n in range(repeats):
            for name in list(steps)[:: 1 if n % 2 == 0 else -1]:
                graphs[name], wall, cpu = timed(steps[name])
                times[name].append((wall, cpu))
        for name, runs in times.items():
            walls = ", ".join(f"{w:.2f}" for w, _ in runs)
            cpus = ", ".join(f"{c:.2f}" for _, c in runs)
            print(f"  {name}: {walls} s wall; {cpus} CPU-s")
        arrays = [
            {i.name: numpy_helper.to_array(i) for i in g.graph.initializer} for g in graphs.values()
        ]
        same = arrays[0].keys() == arrays[1].keys() and all(
            a.dtype == arrays[1][k].dtype and np.array_equal(a, arrays[1][k])
            for k, a in arrays[0].items()
        )
        print(f"  the same initializers, bit for bit: {same} ({load_line()})")


def batches(texts: list[str], sizes: tuple[int, ...] = (1, 2, 4, 8, 16), slices: int = 6) -> None:
    from langchain_holodeck.embeddings.onnx import _run

    emb = OnnxEmbeddings(precision="int8")
    session, tokenizer = emb._load()
    cls, sep = emb._special
    ids = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    for window in (128, 256):
        size = window - 2
        full = [
            [cls, *row[start : start + size], sep]
            for row in ids
            for start in range(0, len(row) - size + 1, size)
        ]
        parts = [full[i::slices] for i in range(slices)]
        cpu = dict.fromkeys(sizes, 0.0)
        vectors: dict[int, list[np.ndarray]] = {n: [] for n in sizes}
        for n, part in enumerate(parts):
            for batch in sizes[:: 1 if n % 2 == 0 else -1]:
                start = time.process_time()
                for begin in range(0, len(part), batch):
                    vectors[batch].append(_run(session, part[begin : begin + batch]))
                cpu[batch] += time.process_time() - start
        alone = np.vstack(vectors[sizes[0]])
        print(f"  windows of {window}: {len(alone)} full windows ({load_line()})")
        for batch in sizes:
            ours = np.vstack(vectors[batch])
            print(
                f"    batches of {batch}: {len(ours) / cpu[batch]:.1f} windows per CPU-s "
                f"({cpu[sizes[0]] / cpu[batch]:.2f}x one per run); vs one per run max |diff| "
                f"{np.abs(alone - ours).max():.3g}, min cosine {_cosines(alone, ours).min():.5f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="the BEIR SciFact folder (all but build)")
    parser.add_argument("--windows", type=int, default=1000, help="windows for throughput")
    parser.add_argument("--no-ndcg", action="store_true", help="skip the SciFact corpus pass")
    parser.add_argument("--only-graphs", action="store_true", help="section 4 alone")
    parser.add_argument("--only-batches", action="store_true", help="section 5 alone")
    parser.add_argument("--only-build", action="store_true", help="section 6 alone (no data)")
    parser.add_argument("--abstracts", type=int, default=400, help="abstracts for sections 4, 5")
    args = parser.parse_args()
    print(f"CPU count {os.cpu_count()}; {load_line()}")
    if args.only_build:
        print("\n6. The one-time int8 graph build: its steps, and the two quantizers in turn")
        build()
        return
    if args.data is None:
        parser.error("--data is needed (every section but --only-build)")
    docs, _, _ = load(args.data)
    if args.only_graphs:
        print("\n4. The int8 graph and session: v1, all fusions, today; same windows, alternating")
        graphs([d.page_content for d in docs[: args.abstracts]])
        return
    if args.only_batches:
        print("\n5. Batches of full windows in today's int8 session, one thread, alternating")
        batches([d.page_content for d in docs[: args.abstracts]])
        return
    print("\n1. Throughput (same windows, one process, fp32 then int8)")
    throughput(window_texts([d.page_content for d in docs], args.windows))
    print("\n2. Agreement with the torch model (fixed test sample)")
    reference_agreement()
    if not args.no_ndcg:
        print("\n3. Quality")
        quality(args.data)
    print("\n4. The int8 graph and session: v1, all fusions, today; same windows, alternating")
    graphs([d.page_content for d in docs[: args.abstracts]])
    print("\n5. Batches of full windows in today's int8 session, one thread, alternating")
    batches([d.page_content for d in docs[: args.abstracts]])
    print("\n6. The one-time int8 graph build: its steps, and the two quantizers in turn")
    build()
    print(f"\n{load_line()}")


if __name__ == "__main__":
    main()
