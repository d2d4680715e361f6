"""Splitting throughput and structure accuracy.

Run: ``python benchmarks/bench_splitting.py [--pages 100] [--repeat 5]``

1. Throughput on a generated legislation-style document (~500 words per page):
   ``StructuredMarkdownSplitter`` (+ definition index and cross-reference resolution) vs
   LangChain's ``MarkdownHeaderTextSplitter`` followed by ``RecursiveCharacterTextSplitter``,
   both counting length in the same ``cl100k_base`` tokens, same 800-token limit.
   Budget: ingestion without embeddings/LLM under 3 s per 100 pages.
2. Structure accuracy on the hand-labelled fixtures in ``tests/data/structure``: share of
   labelled passages whose chunk has the expected ``section_id`` and ``parent_chain``, share of
   expected definitions and cross-references found.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from langchain_core.documents import Document
from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

from langchain_holodeck._tokens import count_tokens
from langchain_holodeck.definitions import DefinitionExtractor, resolve_cross_references
from langchain_holodeck.splitters import StructuredMarkdownSplitter, default_text_splitter

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "structure"
WORDS = [
    "operator",
    "program",
    "holodeck",
    "simulation",
    "safety",
    "interlock",
    "officer",
    "record",
    "log",
    "arch",
    "emitter",
    "deck",
    "participant",
    "rating",
    "engineer",
    "protocol",
    "replicator",
    "energy",
    "buffer",
    "pattern",
    "schedule",
    "shift",
    "authority",
    "vessel",
    "station",
    "approval",
    "review",
    "audit",
    "training",
    "hazard",
    "exposure",
]
ROMAN = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"]


def sentence(rng: random.Random, *, requirement: bool = False, ref: str | None = None) -> str:
    words = rng.choices(WORDS, k=rng.randint(10, 22))
    if requirement:
        words.insert(rng.randint(1, 4), rng.choice(["shall", "must", "must not"]))
    text = " ".join(words).capitalize()
    if ref:
        text += f", as provided in {ref}"
    return text + "."


def generate_legislation(pages: int, seed: int = 7) -> str:
    """A legislation-style markdown document of about ``pages * 500`` words."""
    rng = random.Random(seed)
    target_words = pages * 500
    parts = ["# Holodeck Consolidated Regulations\n", sentence(rng) + "\n"]
    words = 0
    title = chapter = 0
    section = 100
    while words < target_words:
        if section % 10 == 0:
            title += 1
            parts.append(f"## Title {ROMAN[(title - 1) % 10]} — {rng.choice(WORDS).title()}\n")
        if section % 4 == 0:
            chapter += 1
            parts.append(f"### Chapter {chapter} — {rng.choice(WORDS).title()} Matters\n")
        section += 1
        if section % 25 == 1:
            parts.append(f"#### Section {section}. Definitions\n\nIn this Title:\n")
            for n in range(1, 6):
                term = " ".join(rng.sample(WORDS, 2)).title()
                parts.append(f'({n}) "{term}" means {sentence(rng).lower()}\n')
            continue
        parts.append(f"#### Section {section}. {rng.choice(WORDS).title()} requirements\n")
        for letter in "abcd"[: rng.randint(2, 4)]:
            ref = f"Section {rng.randint(101, section)}" if rng.random() < 0.3 else None
            body = " ".join(
                sentence(rng, requirement=rng.random() < 0.4, ref=ref if i == 0 else None)
                for i in range(rng.randint(2, 5))
            )
            parts.append(f"({letter}) {body}\n")
            if rng.random() < 0.4:
                for number in range(1, rng.randint(2, 4)):
                    parts.append(f"({number}) {sentence(rng, requirement=True)}\n")
        if rng.random() < 0.1:
            rows = "\n".join(f"| {i} | {rng.choice(WORDS)} |" for i in range(1, 6))
            parts.append(f"| Level | Control |\n|---|---|\n{rows}\n")
        words = sum(len(p.split()) for p in parts)
    return "\n".join(parts)


def timed(func: Callable[[], object], repeat: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def throughput(pages: int, repeat: int) -> None:
    text = generate_legislation(pages)
    doc = Document(page_content=text, metadata={"source_path": "regulation.md"})
    words = len(text.split())
    print(f"\n## Splitting throughput: {pages} pages, {words} words, {count_tokens(text)} tokens\n")

    ours = StructuredMarkdownSplitter(max_chunk_tokens=800)

    def ours_ingest() -> list[Document]:
        chunks = ours.split_documents([doc])
        for i, chunk in enumerate(chunks):
            chunk.id = f"c{i}"
        DefinitionExtractor().extract(chunks)
        resolve_cross_references(chunks)
        return chunks

    headers = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]
    peer_header = MarkdownHeaderTextSplitter(headers, strip_headers=False)
    peer_recursive = RecursiveCharacterTextSplitter(
        chunk_size=800, chunk_overlap=0, length_function=count_tokens
    )

    def peer() -> list[Document]:
        return peer_recursive.split_documents(peer_header.split_text(text))

    default = default_text_splitter()
    rows = [
        ("StructuredMarkdownSplitter (split only)", lambda: ours.split_documents([doc])),
        ("StructuredMarkdownSplitter + definitions + cross-refs", ours_ingest),
        (
            "StructuredMarkdownSplitter(subclauses=False)",
            lambda: StructuredMarkdownSplitter(subclauses=False).split_documents([doc]),
        ),
        ("MarkdownHeaderTextSplitter + RecursiveCharacterTextSplitter", peer),
        ("default_text_splitter (512/50 tokens)", lambda: default.split_documents([doc])),
    ]
    print("| splitter | median s | pages/s | s per 100 pages | chunks |")
    print("|---|---:|---:|---:|---:|")
    for name, func in rows:
        seconds, chunks = timed(func, repeat)
        count = len(chunks)  # type: ignore[arg-type]
        per100 = seconds * 100 / pages
        print(f"| {name} | {seconds:.3f} | {pages / seconds:.0f} | {per100:.2f} | {count} |")


def accuracy() -> None:
    print("\n## Structure accuracy on hand-labelled fixtures\n")
    print(
        "| fixture | labelled passages | section_id | parent_chain | both "
        "| definitions found | cross-refs found |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    splitter = StructuredMarkdownSplitter()
    for expected_path in sorted(FIXTURES.glob("*.expected.json")):
        expected = json.loads(expected_path.read_text(encoding="utf-8"))
        source = FIXTURES / expected["source"]
        chunks = splitter.create_documents(
            [source.read_text(encoding="utf-8")], [{"source_path": expected["source"]}]
        )

        def chunk_with(snippet: str, chunks: list[Document] = chunks) -> Document | None:
            return next((c for c in chunks if snippet in c.page_content), None)

        ids = chains = both = 0
        for item in expected["chunks"]:
            chunk = chunk_with(item["contains"])
            id_ok = chunk is not None and chunk.metadata["section_id"] == item["section_id"]
            chain_ok = chunk is not None and chunk.metadata["parent_chain"] == item["parent_chain"]
            if chunk is not None and item["section_id"] in chunk.metadata["opens_sections"]:
                # the passage is the introduction of a section whose heading opens the chunk:
                # the chunk answers for it, and its chain runs through that heading
                chain = chunk.metadata["parent_chain"]
                id_ok = True
                chain_ok = chain[: len(item["parent_chain"])] == item["parent_chain"]
            ids += id_ok
            chains += chain_ok
            both += id_ok and chain_ok
        found = DefinitionExtractor().extract(chunks)
        defs = sum(term in found for term in expected["definitions"])
        refs_expected = refs_found = 0
        for snippet, refs in expected.get("cross_references", {}).items():
            chunk = chunk_with(snippet)
            got = chunk.metadata["cross_references"] if chunk else []
            refs_expected += len(refs)
            refs_found += sum(ref in got for ref in refs)
        n = len(expected["chunks"])
        print(
            f"| {expected['source']} | {n} | {ids / n:.0%} | {chains / n:.0%} | {both / n:.0%} "
            f"| {defs}/{len(expected['definitions'])} | {refs_found}/{refs_expected} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    count_tokens("warm up the tokenizer")
    throughput(args.pages, args.repeat)
    accuracy()


if __name__ == "__main__":
    main()
