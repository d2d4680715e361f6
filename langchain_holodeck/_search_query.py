"""What a search query must hold: words to look for. One check for every way a query comes in.

The tools (``search``, ``retrieve_sync``, ``as_tool``) and ``holodeck-rag test``'s cases, read
at load, refuse the same queries in the same words. Imports nothing of the package but
``_text_decoding``.
"""

from __future__ import annotations

from langchain_holodeck._text_decoding import check_query_text


def has_search_terms(query: str) -> bool:
    """Whether ``query`` has anything to search for: a letter or a digit (any script)."""
    return any(ch.isalnum() for ch in query)


def check_search_query(query: str) -> None:
    """Refuse a query with nothing to search for: any "nearest" chunk would be noise.

    Raises:
        ValueError: When ``query`` is empty or whitespace (``Search query cannot be empty``),
            holds a byte that is not UTF-8 text (``check_query_text``), or has no letter or
            digit (``'?!'``, ``'""'``), naming the query.
    """
    if not query.strip():
        msg = "Search query cannot be empty"
        raise ValueError(msg)
    check_query_text(query)
    if not has_search_terms(query):
        msg = (
            f"Search query has no letters or digits, got {query!r}; ask with words, "
            "identifiers or section numbers."
        )
        raise ValueError(msg)
