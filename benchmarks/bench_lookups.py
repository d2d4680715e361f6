"""Exact section lookups and definition questions, ours vs LangChain's EnsembleRetriever.

    python benchmarks/bench_lookups.py

Corpora: each structure fixture (tests/data/structure, tests/data/legal) and each of three
license texts every Debian system ships (/usr/share/common-licenses: GPL-3, Apache-2.0,
MPL-2.0), one corpus per document, ingested by the default ``HierarchicalDocumentTool``
(real all-MiniLM-L6-v2, vectors cached in ~/.cache/holodeck-bench/minilm; ours embeds as the
default embedder does, ``long_text="auto"``: a chunk that fits 256 word pieces whole, a longer
one also as windows of 128; the peer embeds each chunk whole).

(b) ``Section X`` for every labelled section: the fixtures' hand-labelled ``section_id``s
(``*.expected.json``) and, for the licenses, their numbered sections listed by hand below.
Top-1 is right when the first result is a chunk of section X (its ``section_id``, or a bare
heading of X that opens the chunk).

(c) ``what does X mean?`` for every defined term of Apache-2.0 and MPL-2.0 (listed by hand
below). Top-1 is right when the first result is the chunk holding X's definition (the quoted
term followed by "means" / "shall mean").

(d) ``Section X of the <license>`` in one corpus of the three licenses, for every section
number at least two of them have (``Section 4 of the Apache-2.0``: the file's name; all three
have a Section 4). Top-1 is right when the first result is a chunk of section X of that file.

The peer, ``EnsembleRetriever(BM25Retriever, InMemoryVectorStore)``, searches the very same
chunks with the same vectors.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from embedding_cache import DiskCachedMiniLM
from langchain_core.documents import Document

from langchain_holodeck.config.models import HierarchicalDocumentToolConfig
from langchain_holodeck.tools import HierarchicalDocumentTool
from langchain_holodeck.vectorstores import scan_documents

ROOT = Path(__file__).resolve().parents[1]
LICENSES = Path("/usr/share/common-licenses")

LICENSE_SECTIONS = {
    "Apache-2.0": [str(n) for n in range(1, 10)],
    "GPL-3": [str(n) for n in range(18)],
    "MPL-2.0": [
        "1",
        *(f"1.{n}" for n in range(1, 15)),
        "2",
        *(f"2.{n}" for n in range(1, 8)),
        "3",
        *(f"3.{n}" for n in range(1, 6)),
        "4",
        "5",
        *(f"5.{n}" for n in range(1, 4)),
        "6",
        "7",
        "8",
        "9",
        "10",
        *(f"10.{n}" for n in range(1, 5)),
    ],
}
LICENSE_TERMS = {
    "Apache-2.0": [
        "License",
        "Licensor",
        "Legal Entity",
        "You",
        "Source",
        "Object",
        "Work",
        "Derivative Works",
        "Contribution",
        "Contributor",
    ],
    "MPL-2.0": [
        "Contributor",
        "Contributor Version",
        "Contribution",
        "Covered Software",
        "Incompatible With Secondary Licenses",
        "Executable Form",
        "Larger Work",
        "License",
        "Licensable",
        "Modifications",
        "Patent Claims",
        "Secondary License",
        "Source Code Form",
        "You",
    ],
}

Search = Callable[[str], list[Document]]


def corpora() -> list[tuple[str, Path, list[str], list[str]]]:
    """(name, file, section ids to look up, defined terms to ask about) per document."""
    out: list[tuple[str, Path, list[str], list[str]]] = []
    for expected_path in sorted((ROOT / "tests" / "data" / "structure").glob("*.expected.json")):
        expected = json.loads(expected_path.read_text(encoding="utf-8"))
        ids = sorted({c["section_id"] for c in expected["chunks"] if c["section_id"]})
        if not ids:
            continue
        out.append((expected["source"], expected_path.parent / expected["source"], ids, []))
    for name, sections in LICENSE_SECTIONS.items():
        if (LICENSES / name).exists():
            out.append((name, LICENSES / name, sections, LICENSE_TERMS.get(name, [])))
        else:
            print(f"({LICENSES / name} is missing: skipped)")
    return out


def file_name(path: Path) -> str:
    return path.name if path.suffix in (".md", ".txt") else f"{path.name}.txt"


def build(paths: list[Path], emb: DiskCachedMiniLM, work: Path) -> tuple[Search, Search]:
    """Ours (the tool's retriever) and the peer over the tool's own chunks."""
    source = work / "corpus"
    source.mkdir()
    for path in paths:
        shutil.copy(path, source / file_name(path))
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="lookups", source="corpus"
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=emb, base_dir=work, project_dir=work, home_dir=work
    )
    asyncio.run(tool.initialize())
    retriever = tool.as_retriever()

    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.vectorstores import InMemoryVectorStore

    chunks = [
        Document(id=d.id, page_content=d.page_content, metadata=d.metadata)
        for d in scan_documents(retriever.vector_store, namespace=None)
    ]
    store = InMemoryVectorStore(emb.truncating())  # the peer embeds each chunk whole
    store.add_documents(chunks)
    peer = EnsembleRetriever(
        retrievers=[
            BM25Retriever.from_documents(chunks, k=10),
            store.as_retriever(search_kwargs={"k": 10}),
        ],
        weights=[0.5, 0.5],
    )
    return (lambda q: retriever.invoke(q, k=5)), peer.invoke


def is_section(doc: Document | None, section_id: str) -> bool:
    if doc is None:
        return False
    meta = doc.metadata
    return meta.get("section_id") == section_id or section_id in (meta.get("opens_sections") or [])


def defines(doc: Document | None, term: str) -> bool:
    if doc is None:
        return False
    quoted = r"[\"“]" + re.escape(term) + r"[\"”][^\n]{0,40}\s*(?:shall\s+mean|means)\b"
    return re.search(quoted, doc.page_content) is not None


def named_lookups(emb: DiskCachedMiniLM, misses: list[str]) -> str | None:
    """(d): ``Section X of the <license>`` over the three licenses in one corpus."""
    paths = [LICENSES / name for name in LICENSE_SECTIONS if (LICENSES / name).exists()]
    if len(paths) < 2:
        return None
    shared = {
        sid
        for sid in set().union(*LICENSE_SECTIONS.values())
        if sum(sid in LICENSE_SECTIONS[p.name] for p in paths) >= 2
    }
    hits = [0, 0]
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        ours, peer = build(paths, emb, Path(tmp))
        for path in paths:
            for section_id in sorted(shared & set(LICENSE_SECTIONS[path.name]), key=float):
                query = f"Section {section_id} of the {path.name}"
                n += 1
                for column, search in enumerate((ours, peer)):
                    found = search(query)
                    top = found[0] if found else None
                    right = (
                        is_section(top, section_id)
                        and top is not None
                        and (top.metadata.get("source_path", "").endswith(file_name(path)))
                    )
                    hits[column] += right
                    if column == 0 and not right:
                        where = top.metadata.get("source_path") if top else None
                        misses.append(f"{query!r} -> {where}")

    def pct(hit: int) -> str:
        return f"{hit / n:.0%} ({hit}/{n})"

    return f"top-1 ours {pct(hits[0])}, EnsembleRetriever {pct(hits[1])}"


def main() -> None:
    logging.basicConfig(level=logging.ERROR)
    emb = DiskCachedMiniLM(long_text="auto")  # as the tool's default embedder: model windows
    rows = []
    misses: list[str] = []
    totals = {"sections": [0, 0, 0], "terms": [0, 0, 0]}
    for name, path, sections, terms in corpora():
        with tempfile.TemporaryDirectory() as tmp:
            ours, peer = build([path], emb, Path(tmp))
            section_hits = [0, 0]
            for section_id in sections:
                query = f"Section {section_id}"
                mine = ours(query)
                section_hits[0] += is_section(mine[0] if mine else None, section_id)
                theirs = peer(query)
                section_hits[1] += is_section(theirs[0] if theirs else None, section_id)
                if not is_section(mine[0] if mine else None, section_id):
                    misses.append(f"{name}: {query!r} -> {mine[0].metadata.get('section_id')!r}")
            term_hits = [0, 0]
            for term in terms:
                query = f"what does {term} mean?"
                mine = ours(query)
                term_hits[0] += defines(mine[0] if mine else None, term)
                theirs = peer(query)
                term_hits[1] += defines(theirs[0] if theirs else None, term)
                if not defines(mine[0] if mine else None, term):
                    misses.append(f"{name}: {query!r} -> {mine[0].page_content[:60]!r}")
        for key, hits, n in (("sections", section_hits, sections), ("terms", term_hits, terms)):
            totals[key][0] += hits[0]
            totals[key][1] += hits[1]
            totals[key][2] += len(n)
        rows.append((name, len(sections), *section_hits, len(terms), *term_hits))

    def pct(hits: int, n: int) -> str:
        return f"{hits / n:.0%} ({hits}/{n})" if n else "-"

    print(
        "| document | section lookups | top-1 ours | top-1 EnsembleRetriever "
        "| definition questions | top-1 ours | top-1 EnsembleRetriever |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, ns, s_ours, s_peer, nt, t_ours, t_peer in rows:
        print(
            f"| {name} | {ns} | {pct(s_ours, ns)} | {pct(s_peer, ns)} | {nt or '-'} "
            f"| {pct(t_ours, nt)} | {pct(t_peer, nt)} |"
        )
    s, t = totals["sections"], totals["terms"]
    print(
        f"| **all** | {s[2]} | **{pct(s[0], s[2])}** | {pct(s[1], s[2])} | {t[2]} "
        f"| **{pct(t[0], t[2])}** | {pct(t[1], t[2])} |"
    )
    named = named_lookups(emb, misses)
    if named:
        print(f"\n(d) a section of the license the query names, one corpus of the three: {named}")
    for miss in misses:
        print(f"\nmissed: {miss}")


if __name__ == "__main__":
    main()
