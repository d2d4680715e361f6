"""A BEIR-format data set from a directory: ``corpus.jsonl``, queries, ``qrels/<split>.tsv``.

Queries of a split come from ``queries_<split>.jsonl`` when that file exists (SciFact's train
claims), else from ``queries.jsonl``; only queries with judgments are kept. A document's text is
its title and text joined by a space (as BEIR's dense evaluation does).

The held-out prose sets of ``bench_quality.py`` are BEIR subsets of short documents (5,000
documents and 50 judged queries each: DBPedia-entity and MS MARCO passages) from the public
repository agentset-ai/embedding-leaderboard at 7a1376ca20a006b470e3bbb4a08b17affd380d90,
``datasets/{dbpedia,msmarco}``; they are not committed here (their licences are the BEIR
sources': DBPedia CC BY-SA, MS MARCO for non-commercial research). Put them anywhere and pass
the directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from langchain_core.documents import Document


@dataclass
class BeirSet:
    """Documents, queries per split and graded judgments per split."""

    name: str
    docs: list[Document]
    queries: dict[str, list[tuple[str, str]]]
    qrels: dict[str, dict[str, dict[str, int]]]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for number, line in enumerate(path.open(encoding="utf-8")):
        fields = line.strip().split("\t")
        if len(fields) < 3 or (number == 0 and not fields[2].lstrip("-").isdigit()):
            continue
        qid, did, score = fields[:3]
        out.setdefault(qid, {})[did] = int(score)
    return out


def beir(path: Path, *, splits: tuple[str, ...] = ("test",), name: str | None = None) -> BeirSet:
    """The BEIR set in ``path`` with the given splits."""
    corpus = [json.loads(line) for line in (path / "corpus.jsonl").open(encoding="utf-8")]
    docs = [
        Document(id=str(c["_id"]), page_content=(c.get("title", "") + " " + c["text"]).strip())
        for c in corpus
    ]
    queries: dict[str, list[tuple[str, str]]] = {}
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for split in splits:
        qrels[split] = _qrels(path / "qrels" / f"{split}.tsv")
        file = path / f"queries_{split}.jsonl"
        if not file.exists():
            file = path / "queries.jsonl"
        rows = [json.loads(line) for line in file.open(encoding="utf-8")]
        judged = qrels[split]
        queries[split] = [
            (str(q["_id"]), q["text"])
            for q in rows
            if str(q["_id"]) in judged and any(g > 0 for g in judged[str(q["_id"])].values())
        ]
    return BeirSet(name or path.name, docs, queries, qrels)
