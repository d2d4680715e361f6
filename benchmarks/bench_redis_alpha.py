"""The linear alpha of Redis's native hybrid (``AggregateHybridQuery``), swept on SciFact *train*.

    REDIS_URL=redis://127.0.0.1:6380 python benchmarks/bench_redis_alpha.py [--data DIR]

Redis Stack 7.4 fuses ``alpha * (2 - distance) / 2 + (1 - alpha) * BM25STD`` over the KNN
candidates. The 809 train claims (``qrels/train.tsv``; never the test split) are embedded once
with the local all-MiniLM-L6-v2 (the model of the cached corpus vectors; ``tuning_data.scifact``
caches them in ``benchmarks/.cache/scifact_train_minilm.npz``), the corpus vectors are the
cached ones. Each
query: KNN 200, best 100 rows, the query's words as ``query_words`` gives them (what the native
path sends). Prints nDCG@10 / Recall@100 per alpha; ``LINEAR_VECTOR_SCALE`` is the smallest
alpha within 0.001 nDCG@10 of the best. A fresh index is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scifact import evaluate
from tuning_data import SCIFACT, SCIFACT_HELP, scifact

ALPHAS = (0.5, 0.95, 0.98, 0.985, 0.99, 0.995)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=SCIFACT, help=SCIFACT_HELP)
    args = parser.parse_args()
    url = os.environ.get("REDIS_URL")
    if not url:
        sys.exit("REDIS_URL is unset (redis://127.0.0.1:6380)")
    from redisvl.query import AggregateHybridQuery

    from langchain_holodeck.keyword_index.redis import query_words
    from langchain_holodeck.vectorstores import create_vector_store
    from langchain_holodeck.vectorstores.redis import CONTENT_FIELD, EMBEDDING_FIELD

    data = scifact(args.data)
    docs, emb = data.docs, data.embeddings
    queries, qrels = data.queries["train"], data.qrels["train"]
    vectors = [np.asarray(emb.embed_query(text)) for _, text in queries]
    emb.table.setdefault("dimension probe", next(iter(emb.table.values())))  # LookupEmbeddings
    name = f"holodeck_alpha_{uuid.uuid4().hex[:8]}"
    store = create_vector_store(
        {"provider": "redis", "connection_string": url, "index_name": name}, emb, fallback=False
    )
    client = store._index.client  # type: ignore[attr-defined]  # a HolodeckRedisVectorStore
    try:
        for start in range(0, len(docs), 500):
            store.add_documents(docs[start : start + 500])
        while float(client.ft(name).info().get("percent_indexed", 1)) < 1:
            time.sleep(0.1)
        print(f"SciFact train: {len(queries)} claims, {len(docs)} docs; KNN 200, best 100\n")
        print("| alpha | nDCG@10 | Recall@100 |\n|---:|---:|---:|")
        for alpha in ALPHAS:
            run = {}
            for (qid, text), vector in zip(queries, vectors, strict=True):
                aggregate = AggregateHybridQuery(
                    text=" ".join(query_words(text)),
                    text_field_name=CONTENT_FIELD,
                    vector=vector.tolist(),
                    vector_field_name=EMBEDDING_FIELD,
                    alpha=alpha,
                    num_results=200,
                    return_fields=["__key"],
                    stopwords=None,
                )
                aggregate.limit(0, 100)
                rows = store._index.query(aggregate)  # type: ignore[attr-defined]
                run[qid] = [str(r["__key"]).split(":", 1)[1] for r in rows]
            nd, rc = evaluate(run, qrels)
            print(f"| {alpha} | {nd:.3f} | {rc:.3f} |", flush=True)
    finally:
        client.ft(name).dropindex(delete_documents=True)


if __name__ == "__main__":
    main()
