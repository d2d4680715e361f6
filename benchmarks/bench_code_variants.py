"""What a code chunk is embedded and indexed as: variants on a numpy model of the default fusion.

    python benchmarks/bench_code_variants.py --split dev    # the tuning table in docs/quality.md
    python benchmarks/bench_code_variants.py --split test   # dense only / BM25 only, paired

The model: one entry per function (the pair's text, as ``--long-text`` embeds it), dense
cosines of the cached MiniLM-L6 vectors (``embedding_cache.py``: ONNX unless torch is
installed), ``BM25KeywordIndex`` scores, convex fusion 0.7/0.3 over the 300 best of each leg
(cosine / best cosine, BM25 / best BM25): the default's shape without the tool's ingest (on
dev 0.748 Pass@10 where the tool gives 0.745, both with the first 256 of a function). A
"signature" is one more dense entry per function, its chunk scored by its best entry; a name
field adds the function's name to its BM25 text. Each row is paired with the
first, query by query: ``+won / -lost`` at Pass@10.
"""

from __future__ import annotations

import argparse
import keyword
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bm25s.stopwords import STOPWORDS_EN
from code_pairs import load_pairs
from embedding_cache import DiskCachedMiniLM
from langchain_core.documents import Document

from langchain_holodeck.keyword_index import BM25KeywordIndex
from langchain_holodeck.splitters.code import name_words

DEPTH = 300
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", re.M)


def _name(code: str) -> str:
    found = _DEF.search(code)
    return found.group(1) if found else ""


def _def_line(code: str) -> str:
    found = _DEF.search(code)
    return code[found.start() :].splitlines()[0].strip() if found else code.splitlines()[0]


def fuse(
    dense: np.ndarray, bm25: np.ndarray, weights: tuple[float, float] = (0.7, 0.3)
) -> np.ndarray:
    """Convex fusion of (queries x documents) score matrices, each leg cut to its DEPTH best."""
    rows = np.arange(dense.shape[0])[:, None]
    top = np.argsort(-dense, axis=1)[:, :DEPTH]
    norm = np.zeros_like(dense)
    norm[rows, top] = np.clip(dense[rows, top], 0, None) / dense[rows, top[:, :1]]
    best = bm25.max(axis=1, keepdims=True)
    best[best == 0] = 1
    return weights[0] * norm + weights[1] * bm25 / best


def rrf(
    dense: np.ndarray, bm25: np.ndarray, weights: tuple[float, float], c: int = 60
) -> np.ndarray:
    """Weighted reciprocal rank fusion of the two legs' DEPTH best."""
    out = np.zeros_like(dense)
    rows = np.arange(dense.shape[0])[:, None]
    for scores, weight in ((dense, weights[0]), (bm25, weights[1])):
        top = np.argsort(-scores, axis=1)[:, :DEPTH]
        ranks = weight / (c + 1 + np.arange(DEPTH))[None, :]
        out[rows, top] += ranks * (scores[rows, top] > 0)
    return out


def right_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each query's own function (row i's document i), ties in its favour."""
    own = scores[np.arange(scores.shape[0]), np.arange(scores.shape[0])][:, None]
    return (scores > own).sum(axis=1) + 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument(
        "--long-text",
        choices=("fit", "first"),
        default="fit",
        help="a function's one vector: the tools' default (fit: whole when it fits 256 word "
        "pieces, else its first 128) or truncation at 256 (first, the default before)",
    )
    args = parser.parse_args()
    pairs = load_pairs(args.split)
    queries, docs = [p.query for p in pairs], [p.document for p in pairs]
    emb = DiskCachedMiniLM(long_text=args.long_text)

    def vectors(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(emb.embed_documents(list(texts)), dtype=np.float32)

    qv = np.asarray([emb.embed_query(q) for q in queries], dtype=np.float32)

    def dense(texts: Sequence[str]) -> np.ndarray:
        return qv @ vectors(texts).T

    def bm25(texts: Sequence[str], index: BM25KeywordIndex | None = None) -> np.ndarray:
        index = index if index is not None else BM25KeywordIndex()
        index.upsert(
            [
                Document(id=str(i), page_content=t, metadata={"chunk_type": "code"})
                for i, t in enumerate(texts)
            ]
        )
        out = np.zeros((len(queries), len(texts)), dtype=np.float32)
        for row, query in enumerate(queries):
            for hit in index.search(query, DEPTH):
                out[row, int(hit.id)] = hit.score
        return out

    def named(extra: int) -> list[str]:
        return ["\n".join([name_words(_name(d))] * extra) + "\n" + d for d in docs]

    body, keywords = dense(docs), bm25(docs)
    signature = dense([f"{name_words(_name(d))}: {_def_line(d)}" for d in docs])
    name_field = bm25(named(2))
    with_sig = np.maximum(body, signature)
    rows: list[tuple[str, Callable[[], np.ndarray]]] = [
        ("the model of today's default", lambda: fuse(body, keywords)),
        ("dense only", lambda: body),
        ("BM25 only", lambda: keywords),
        ("signature entry (words: definition line)", lambda: fuse(with_sig, keywords)),
        ("names counted 2 more times in BM25", lambda: fuse(body, name_field)),
        ("both (the new default)", lambda: fuse(with_sig, name_field)),
        (
            "plain RRF (k=60, 0.5/0.5) of the default's legs",
            lambda: rrf(with_sig, name_field, (0.5, 0.5)),
        ),
    ]
    if args.split == "dev":
        lines, words = (
            dense([_def_line(d) for d in docs]),
            dense([name_words(_name(d)) for d in docs]),
        )
        head3 = dense([f"{name_words(_name(d))}: " + "\n".join(d.splitlines()[:3]) for d in docs])
        header = dense([f"{name_words(_name(d))}\n{d}" for d in docs])
        wordy = dense(
            [re.sub(r"[A-Za-z_]\w*", lambda m: name_words(m[0]) or m[0], d) for d in docs]
        )
        stops = sorted(set(STOPWORDS_EN) | set(keyword.kwlist) | {"self", "cls", "args", "kwargs"})
        stopped = bm25(docs, BM25KeywordIndex(stopwords=[w.lower() for w in stops]))
        rows += [
            ("both, 1 more time", lambda: fuse(with_sig, bm25(named(1)))),
            ("both, 3 more times", lambda: fuse(with_sig, bm25(named(3)))),
            (
                "signature entry of the definition line alone",
                lambda: fuse(np.maximum(body, lines), keywords),
            ),
            (
                "signature entry of the name in words alone",
                lambda: fuse(np.maximum(body, words), keywords),
            ),
            (
                "signature entry of name + first 3 lines",
                lambda: fuse(np.maximum(body, head3), keywords),
            ),
            ("name in words prepended to the embedded body", lambda: fuse(header, keywords)),
            ("identifiers as words in the embedded body", lambda: fuse(wordy, keywords)),
            ("Python keywords as BM25 stop words", lambda: fuse(body, stopped)),
            *[
                (
                    f"BM25 k1={k1} b={b}",
                    lambda k1=k1, b=b: fuse(body, bm25(docs, BM25KeywordIndex(k1=k1, b=b))),
                )
                for k1, b in ((1.2, 0.75), (1.0, 0.5), (1.5, 0.5), (1.5, 0.9), (2.0, 0.75))
            ],
            *[
                (f"fusion weights {w}", lambda w=w: fuse(body, keywords, w))
                for w in ((0.5, 0.5), (0.6, 0.4), (0.8, 0.2))
            ],
            *[
                (f"RRF k=60 {w}", lambda w=w: rrf(body, keywords, w))
                for w in ((0.5, 0.5), (0.7, 0.3))
            ],
            (
                "body + signature blended 0.5/0.5, name field",
                lambda: fuse(0.5 * body + 0.5 * signature, name_field),
            ),
        ]
    print(f"Code variants ({args.split}, {len(pairs)} pairs; embedder {emb.embedder})\n")
    print("| variant | Pass@5 | Pass@10 | Pass@20 | nDCG@10 | + / - at 10 |")
    print("|---|---:|---:|---:|---:|---:|")
    base: np.ndarray | None = None
    for label, scores in rows:
        ranks = right_ranks(scores())
        cells = [np.mean(ranks <= cut) for cut in (5, 10, 20)]
        cells.append(np.mean(np.where(ranks <= 10, 1 / np.log2(ranks + 1), 0)))
        paired = ""
        if base is None:
            base = ranks
        else:
            won = int(((ranks <= 10) & (base > 10)).sum())
            lost = int(((ranks > 10) & (base <= 10)).sum())
            paired = f"+{won} / -{lost}"
        print(
            f"| {label} | " + " | ".join(f"{v:.3f}" for v in cells) + f" | {paired} |", flush=True
        )


if __name__ == "__main__":
    main()
