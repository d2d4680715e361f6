"""Cross-reference expansion: a breadth-first walk over the section graph of an exact index."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_holodeck.exact import ExactMatchIndex

Direction = Literal["out", "in", "both"]


@dataclass(frozen=True)
class Expansion:
    """A chunk reached by following cross-references from an entry hit."""

    id: str
    """The reached chunk's id."""
    distance: int
    """Hops from the nearest entry hit (1 = directly referenced)."""
    via: str
    """Id of the chunk whose reference led here (the first found at that distance)."""


def _ancestors(section_id: str) -> list[str]:
    """``203(a)(1)`` -> ``["203(a)(1)", "203(a)", "203"]``."""
    out = [section_id]
    while section_id.endswith(")") and "(" in section_id:
        section_id = section_id[: section_id.rindex("(")]
        out.append(section_id)
    return out


def _neighbours(index: ExactMatchIndex, doc_id: str, direction: Direction) -> list[str]:
    where = index.section_of(doc_id)
    if where is None:
        return []
    source_path, section_id = where
    found: list[str] = []
    if direction in ("out", "both"):
        for ref in index.references_of(doc_id):
            # the section itself, then its sub-sections (a header chunk alone says little)
            found += index.chunks_of_section(source_path, ref)
            found += index.chunks_under_section(source_path, ref)
    if direction in ("in", "both") and section_id:
        for sid in _ancestors(section_id):  # a reference to 202 also points at 202(a)
            found += index.referrers_of(source_path, sid)
    return found


def expand_references(
    entry_ids: Sequence[str],
    index: ExactMatchIndex,
    *,
    hops: int,
    direction: Direction = "out",
    limit: int | None = None,
) -> list[Expansion]:
    """Chunks reachable from ``entry_ids`` within ``hops`` cross-reference steps.

    Breadth-first over ``cross_references`` (resolved within the same ``source_path``):
    ``out`` follows the references a chunk makes (to the referenced section and its
    sub-sections), ``in`` the chunks referring to its section (or an enclosing one), ``both``
    either. Entry hits are never returned; each chunk appears once, at its smallest
    distance; cycles terminate. Ordered by distance, then id.

    Args:
        entry_ids: The hits to expand, in their order.
        index: The exact index holding the chunks' structure metadata.
        hops: Maximum distance (0 returns ``[]``).
        direction: ``"out"``, ``"in"`` or ``"both"``.
        limit: Keep at most this many (the nearest); ``None`` keeps all.
    """
    seen = set(entry_ids)
    frontier = list(dict.fromkeys(entry_ids))
    out: list[Expansion] = []
    for distance in range(1, hops + 1):
        reached: dict[str, str] = {}
        for origin in frontier:
            for doc_id in _neighbours(index, origin, direction):
                if doc_id not in seen and doc_id not in reached:
                    reached[doc_id] = origin
        if not reached:
            break
        level = sorted(reached)
        out += [Expansion(doc_id, distance, reached[doc_id]) for doc_id in level]
        seen.update(level)
        frontier = level
        if limit is not None and len(out) >= limit:
            break
    return out if limit is None else out[:limit]
