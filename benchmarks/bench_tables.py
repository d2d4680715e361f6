"""Questions about the rows of a table: a cut table's pieces with and without its header row.

    python benchmarks/bench_tables.py --csv PATH/country-codes.csv
    python benchmarks/bench_tables.py --csv PATH/country-codes.csv --databases memory redis \
        qdrant postgres     # today's splitting on each store (REDIS_URL, POSTGRES_URL)

Data: ``data/country-codes.csv`` of github.com/datasets/country-codes (Public Domain
Dedication and License; the benchmark was run on commit caa72d1). Its 56 columns make a header
too long to repeat, so the benchmark keeps 8 of them, under their own names, and writes them
as one CSV (249 countries), as a user's table would be:
``CLDR display name, Capital, Sub-region Name, ISO3166-1-Alpha-2, ISO3166-1-Alpha-3,
ISO4217-currency_name, Dial, TLD``.

The CSV is ingested by the default ``HierarchicalDocumentTool`` (markitdown turns it into one
Markdown table; ``OnnxEmbeddings``, BM25, every retrieval default) three times:

- **today**: every default: a table longer than ``max_table_chunk_tokens`` (200) is cut at
  rows, each later piece with the header row repeated before it;
- **before**: ``max_table_chunk_tokens: null``: the table is cut like any block, at
  ``max_chunk_tokens`` (800), only the first piece holds the header, and the embedder adds
  windows of 128 word pieces to pieces longer than 256;
- the size alone: ``max_table_chunk_tokens: null`` and ``max_chunk_tokens: 200``: pieces as
  small as today's, the header in the first only (what the header repetition adds).

Questions, made from every row by fixed templates (no tuning set: nothing here was tuned on
them): the value of a column for a country ("What is the capital of Norway?", 7 columns) and
the country of a value that only one row has ("Which country has the dialing code 47?", 4
columns). A question is answered when a chunk holding the row's line is in the top 1 / top 5.

``--databases``: today's splitting only, stored in each database named (``memory``, the
default; ``redis`` at ``REDIS_URL``; ``qdrant`` in local mode on disk; ``postgres`` at
``POSTGRES_URL``; a fresh index or table each, dropped at the end), searched on each one's
default strategy (native hybrid on Redis, Qdrant and PostgreSQL) with the tool's convex fusion
and, on the native stores, with ``fusion: rrf`` too (the engine's own fusion). The reverse
questions name an identifier (a code, a number) that one row holds: they show whether a
fusion lets that one exact keyword match win over rows that are merely similar.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.embeddings import resolve_embeddings
from langchain_holodeck.splitters.structured import DEFAULT_TABLE_CHUNK_TOKENS
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import scan_documents

COLUMNS = {
    "country": "CLDR display name",
    "capital": "Capital",
    "region": "Sub-region Name",
    "alpha2": "ISO3166-1-Alpha-2",
    "alpha3": "ISO3166-1-Alpha-3",
    "currency": "ISO4217-currency_name",
    "dial": "Dial",
    "tld": "TLD",
}
FORWARD = {
    "capital": "What is the capital of {country}?",
    "region": "Which sub-region is {country} in?",
    "alpha2": "What is the two-letter ISO code of {country}?",
    "alpha3": "What is the three-letter ISO code of {country}?",
    "currency": "What currency does {country} use?",
    "dial": "What is the dialing code of {country}?",
    "tld": "What is the internet domain of {country}?",
}
REVERSE = {
    "capital": "Which country has the capital {value}?",
    "alpha3": "Which country has the three-letter ISO code {value}?",
    "dial": "Which country has the dialing code {value}?",
    "tld": "Which country has the internet domain {value}?",
}


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = [
            {key: (row[col] or "").strip() for key, col in COLUMNS.items()}
            for row in csv.DictReader(handle)
        ]
    return [row for row in rows if row["country"]]


def questions(rows: list[dict[str, str]]) -> list[tuple[str, int, str]]:
    """(question, row number, kind) for every row and template."""
    out = []
    for key in REVERSE:
        counts = Counter(row[key] for row in rows)
        for n, row in enumerate(rows):
            if row[key] and counts[row[key]] == 1:
                out.append((REVERSE[key].format(value=row[key]), n, "reverse"))
    for key, template in FORWARD.items():
        for n, row in enumerate(rows):
            if row[key]:
                out.append((template.format(country=row["country"]), n, "forward"))
    return out


def build(
    csv_text: str,
    table_tokens: int | None,
    work: Path,
    emb: Embeddings,
    *,
    small: bool,
    settings: dict[str, Any] | None = None,
):
    source = work / "corpus"
    source.mkdir()
    (source / "countries.csv").write_text(csv_text, encoding="utf-8")
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="tables",
        source="corpus",
        max_table_chunk_tokens=table_tokens,
        **({"max_chunk_tokens": DEFAULT_TABLE_CHUNK_TOKENS} if small else {}),
        **(settings or {}),
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=emb, base_dir=work, project_dir=work, home_dir=work
    )
    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(tool.initialize())
    return tool.as_retriever(), time.perf_counter() - started, time.process_time() - cpu


def holds(doc: Document, row: dict[str, str]) -> bool:
    """Whether ``doc`` holds the row's line (every cell of the row on one table line)."""
    cells = [row[key] for key in COLUMNS if row[key]]
    return any(
        line.startswith("|") and all(cell in line for cell in cells)
        for line in doc.page_content.splitlines()
    )


@contextmanager
def database(name: str, work: Path) -> Iterator[dict[str, Any] | None]:
    """The ``database:`` section of a fresh store of ``name``, dropped afterwards."""
    tag = f"tables_{uuid.uuid4().hex[:8]}"
    if name == "memory":
        yield None
    elif name == "qdrant":
        yield {"provider": "qdrant", "path": str(work / "qdrant"), "fallback_to_memory": False}
    elif name == "redis":
        import redis

        url = os.environ["REDIS_URL"]
        try:
            yield {"provider": "redis", "connection_string": url, "index_name": tag,
                   "fallback_to_memory": False}  # fmt: skip
        finally:
            client = redis.Redis.from_url(url)
            client.ft(tag).dropindex(delete_documents=True)
    elif name == "postgres":
        from bench_postgres import drop

        url = os.environ["POSTGRES_URL"]
        try:
            yield {"provider": "postgres", "connection_string": url, "table_name": tag,
                   "fallback_to_memory": False}  # fmt: skip
        finally:
            drop(url, tag)
    else:
        msg = f"unknown database {name!r}"
        raise ValueError(msg)


def ask(retriever: Any, asked: list[tuple[str, int, str]], rows: list[dict[str, str]]) -> dict:
    """``kind -> [questions, top-1 right, top-5 right]``."""
    hits: dict[str, list[int]] = {"forward": [0, 0, 0], "reverse": [0, 0, 0]}
    for question, n, kind in asked:
        found = retriever.invoke(question, k=5)
        hits[kind][0] += 1
        hits[kind][1] += bool(found) and holds(found[0], rows[n])
        hits[kind][2] += any(holds(doc, rows[n]) for doc in found)
    return hits


def compare_databases(
    names: list[str], csv_text: str, asked: list[tuple[str, int, str]], rows: list[dict[str, str]]
) -> None:
    """Today's splitting in each database, by its default strategy, convex and engine fusion."""
    emb = resolve_embeddings(None)  # the tools' default model and long_text
    emb.embed_query("warm up")
    print("| database | search | kind | top-1 | top-5 | s/question |\n|---|---|---|---:|---:|---:|")
    for name in names:
        fusions = ["convex"] if name == "memory" else ["convex", "rrf"]
        with tempfile.TemporaryDirectory() as tmp, database(name, Path(tmp)) as section:
            settings = {"database": section} if section else {}
            retriever, _, _ = build(
                csv_text, DEFAULT_TABLE_CHUNK_TOKENS, Path(tmp), emb, small=False,
                settings=settings,
            )  # fmt: skip
            for fusion in fusions:
                retriever.fusion = fusion
                started = time.perf_counter()
                hits = ask(retriever, asked, rows)
                per = (time.perf_counter() - started) / len(asked)
                label = f"{retriever.search_strategy}, {fusion}"
                for kind, (total, top1, top5) in hits.items():
                    print(
                        f"| {name} | {label} | {kind} | {top1 / total:.3f} | {top5 / total:.3f} "
                        f"| {per:.3f} |",
                        flush=True,
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", type=Path, required=True, help="country-codes.csv")
    parser.add_argument(
        "--databases",
        nargs="+",
        choices=["memory", "redis", "qdrant", "postgres"],
        help="today's splitting in each of these stores (default: the three splittings)",
    )
    args = parser.parse_args()
    rows = rows_of(args.csv)
    with tempfile.TemporaryDirectory() as tmp:
        narrow = Path(tmp) / "narrow.csv"
        with narrow.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(COLUMNS.values())
            writer.writerows([row[key] for key in COLUMNS] for row in rows)
        csv_text = narrow.read_text(encoding="utf-8")
    asked = questions(rows)
    if args.databases:
        print(f"{len(rows)} rows, {len(asked)} questions; load {os.getloadavg()[0]:.1f}\n")
        compare_databases(args.databases, csv_text, asked, rows)
        return
    print(
        f"{len(rows)} rows, {len(asked)} questions "
        f"({sum(k == 'forward' for _, _, k in asked)} column values, "
        f"{sum(k == 'reverse' for _, _, k in asked)} countries by a unique value); "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    emb = resolve_embeddings(None)  # the tools' default model and long_text
    emb.embed_query("warm up")  # the model's first load is not any build's
    print(
        "| splitting | chunks | dense entries | ingest s (CPU s) | kind | top-1 | top-5 |\n"
        "|---|---:|---:|---:|---|---:|---:|"
    )
    for label, table_tokens in (
        ("today: cut at 200 tokens, header repeated", DEFAULT_TABLE_CHUNK_TOKENS),
        ("before: cut at 800 tokens, header once, windows", None),
        ("cut at 200 tokens like any block, header once", None),
    ):
        with tempfile.TemporaryDirectory() as tmp:
            small = label.startswith("cut at 200")  # the size alone, without the header
            retriever, wall, cpu = build(csv_text, table_tokens, Path(tmp), emb, small=small)
            chunks = len(list(scan_documents(retriever.vector_store, namespace=None)))
            entries = len(list(retriever.vector_store.iter_documents()))  # windows too
            hits = ask(retriever, asked, rows)
            for kind, (total, top1, top5) in hits.items():
                print(
                    f"| {label} | {chunks} | {entries} | {wall:.1f} ({cpu:.1f}) | {kind} "
                    f"| {top1 / total:.3f} | {top5 / total:.3f} |",
                    flush=True,
                )
    print(f"\n(load average at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
