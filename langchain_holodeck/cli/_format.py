"""What ``holodeck-rag`` shows: search results (plain, explained, JSON), summaries, progress.

Private to the CLI: pure functions returning strings, and tqdm progress bars on a stream.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from langchain_core.documents import Document

from langchain_holodeck._chunk import source_path
from langchain_holodeck.tools.formatting import result_score, shown_text

if TYPE_CHECKING:
    from tqdm import tqdm

    from langchain_holodeck.ingestion import IngestProgress
    from langchain_holodeck.sync import SyncResult

JSON_KEYS = (
    "rank",
    "id",
    "score",
    "source_path",
    "section_id",
    "heading",
    "parent_chain",
    "text",
    "fused_score",
    "semantic_score",
    "semantic_rank",
    "keyword_score",
    "keyword_rank",
    "exact_match",
    "exact_rank",
    "native_rank",
    "native_score",
    "relevance_score",
)
"""Keys of each object ``search --json`` prints, always all present (``null`` when unknown).

``native_rank`` and ``native_score`` are the engine's own rank and fused score where the store
fused the legs itself (the native strategy: Redis, Qdrant, PostgreSQL); ``null`` elsewhere."""

_STAGES = {
    "files": ("files", "file"),
    "contexts": ("contexts", "chunk"),
    "chunks": ("chunks", "chunk"),
}
_DEFAULT_STAGE = ("embeddings", "chunk")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 (but tab, newline), DEL, C1
_LINE_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ONE_LINE_KEYS = ("source", "source_path", "heading", "section_id", "title")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match[0]):02x}" if ord(match[0]) < 0x100 else f"\\u{ord(match[0]):04x}"


def terminal_text(text: str) -> str:
    r"""``text`` safe to print: control characters spelled out (``\x1b``...).

    An ESC starting a colour or window-title sequence, a carriage return or a backspace
    cannot rewrite the terminal then; tabs and newlines are kept.
    """
    return _CONTROL.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` with every control and line-break character spelled out: one line, always."""
    return _LINE_BREAK.sub(_escape, text)


def terminal_documents(documents: Sequence[Document]) -> list[Document]:
    """Copies of ``documents`` fit for a terminal; the documents themselves are untouched.

    Texts go through ``terminal_text``, the one-line fields (file name, heading, section,
    parents) through ``one_line``, so a newline in a file name cannot start a line that
    looks like another result.
    """
    out = []
    for doc in documents:
        meta = dict(doc.metadata)
        for key in _ONE_LINE_KEYS:
            if isinstance(meta.get(key), str):
                meta[key] = one_line(meta[key])
        if isinstance(meta.get("parent_chain"), list):
            meta["parent_chain"] = [one_line(str(p)) for p in meta["parent_chain"]]
        text = terminal_text(doc.page_content)
        out.append(doc.model_copy(update={"page_content": text, "metadata": meta}))
    return out


def result_record(rank: int, document: Document, *, hybrid: bool) -> dict[str, Any]:
    """One ``search --json`` object: the keys of ``JSON_KEYS``, JSON-serializable values."""
    meta = document.metadata
    source = source_path(meta) or None
    return {
        "rank": rank,
        "id": document.id,
        "score": _finite(result_score(document, hybrid=hybrid)),
        "source_path": source,
        "section_id": meta.get("section_id") or None,
        "heading": meta.get("heading") or None,
        "parent_chain": [str(p) for p in meta.get("parent_chain") or []],
        "text": shown_text(document),
        "fused_score": _finite(meta.get("fused_score")),
        "semantic_score": _finite(meta.get("semantic_score")),
        "semantic_rank": meta.get("semantic_rank"),
        "keyword_score": _finite(meta.get("keyword_score")),
        "keyword_rank": meta.get("keyword_rank"),
        "exact_match": bool(meta.get("exact_match", False)),
        "exact_rank": meta.get("exact_rank"),
        "native_rank": meta.get("native_rank"),
        "native_score": _finite(meta.get("native_score")),
        "relevance_score": _finite(meta.get("relevance_score")),
    }


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def explain_line(document: Document) -> str:
    """``fused 0.0131 | semantic #1 0.6753 | keyword #1 2.4440 | exact -``: why it ranked.

    A result the store fused itself (the native strategy: ``native_rank`` set) shows the
    engine's rank and fused score instead of the two legs the engine did not report, and its
    cosine: ``fused 1.0000 | engine #1 0.0328 | semantic 0.6440 | exact -``.
    """
    meta = document.metadata
    parts = [f"fused {_num(meta.get('fused_score'))}"]
    if "native_rank" in meta:
        rank, score = meta.get("native_rank"), meta.get("native_score")
        parts.append(f"engine #{rank} {_num(score)}" if rank is not None else "engine -")
        parts.append(f"semantic {_num(meta.get('semantic_score'))}")
    else:
        for name in ("semantic", "keyword"):
            rank = meta.get(f"{name}_rank")
            score = meta.get(f"{name}_score")
            parts.append(f"{name} #{rank} {_num(score)}" if rank is not None else f"{name} -")
    exact_rank = meta.get("exact_rank")
    if meta.get("exact_match"):
        parts.append(f"exact #{exact_rank}" if exact_rank is not None else "exact yes")
    else:
        parts.append("exact -")
    if meta.get("relevance_score") is not None:
        parts.append(f"rerank {_num(meta['relevance_score'])}")
    return " | ".join(parts)


def dense_explain_line(document: Document) -> str:
    """``semantic #1 0.3328``: the dense-only tool's one leg, the score its results show.

    A ``vectorstore`` tool fuses nothing: its ``fused_score`` is the one leg's rank over the
    best attainable (1.0 for every first result), and it has no keyword or exact leg. The
    reranker's score follows when a reranker ordered the results.
    """
    meta = document.metadata
    rank = meta.get("semantic_rank")
    parts = [
        f"semantic #{rank} {_num(meta.get('semantic_score'))}" if rank is not None else "semantic -"
    ]
    if meta.get("relevance_score") is not None:
        parts.append(f"rerank {_num(meta['relevance_score'])}")
    return " | ".join(parts)


def _num(value: Any) -> str:
    return "-" if value is None else f"{float(value):.4f}"


@dataclass(frozen=True)
class IngestReport:
    """What the closing line of ``ingest`` says."""

    tool: str
    source: str
    where: str
    result: SyncResult
    seconds: float
    search_strategy: str | None = None
    """``native`` or ``fallback`` (how searches fuse); ``None`` leaves it out."""
    dense_only: bool = False
    """A tool that searches by meaning alone (``vectorstore``): said as ``search dense only``,
    as ``holodeck-rag tools`` says it, instead of a strategy with nothing to fuse."""


def format_summary(report: IngestReport) -> str:
    """One line: counts, time and throughput of an ingest."""
    result = report.result
    rate = result.total / report.seconds if report.seconds > 0 else 0.0
    line = (
        f"ingested {report.source} into {report.tool!r} ({report.where}): "
        f"{result.added} added, {result.updated} updated, {result.skipped} skipped, "
        f"{result.failed} failed, {result.deleted} deleted; "
        f"{result.total} chunks in {report.seconds:.2f} s ({rate:.1f} chunks/s)"
    )
    if report.dense_only:
        line += "; search dense only"
    elif report.search_strategy is not None:
        line += f"; search strategy {report.search_strategy}"
    return line


class ProgressBars:
    """One tqdm bar per ingest stage (files, chunks, embeddings), drawn on ``stream``.

    Stages run one after the other, so a bar is opened at its stage's first event and the
    previous one closed. Pass an instance as ``on_progress``. Chunks are counted as files are
    split but reported in one event when splitting ends, so the "chunks" bar's clock starts
    with the "files" bar: its rate is chunks split per second, not one event per instant.
    """

    def __init__(self, *, enabled: bool, stream: TextIO) -> None:
        self.enabled = enabled
        self.stream = stream
        self._bars: dict[str, tqdm[Any]] = {}
        self._current: tqdm[Any] | None = None

    def __call__(self, event: IngestProgress) -> None:
        if not self.enabled:
            return
        bar = self._bars.get(event.stage) or self._open(event.stage, event.total)
        if event.total is not None and bar.total != event.total:
            bar.total = event.total
        bar.update(event.advance)
        if event.stage == "chunks" and event.total:
            # Embedding starts next (and may first load a model): show its bar already.
            self._open("embeddings", event.total)

    def _open(self, stage: str, total: int | None) -> tqdm[Any]:
        from tqdm import tqdm

        if self._current is not None:
            self._current.close()
        label, unit = _STAGES.get(stage, _DEFAULT_STAGE)
        bar = tqdm(total=total, desc=f"{label:<10}", unit=unit, file=self.stream, leave=True)
        files = self._bars.get("files")
        if stage in ("chunks", "contexts") and files is not None:
            bar.start_t = bar.last_print_t = files.start_t  # splitting began with the files
        self._bars[stage] = self._current = bar
        return bar

    def close(self) -> None:
        """Close every bar (idempotent)."""
        for bar in self._bars.values():
            bar.close()
        self._current = None

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
