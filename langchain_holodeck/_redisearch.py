"""RediSearch query text: stop words, query words and escaping, for every Redis search.

Plain Python (no ``redis`` import): the Redis vector store's hybrid query and the Redis keyword
index build their query text here, so both read a query the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_holodeck._tokens import CAMEL_BOUNDARY, identifier_pieces

_WORD = re.compile(r"\w+")
_NOT_ALNUM = re.compile(r"([^0-9A-Za-z\u00c0-\uffff])")
_TAG_SPECIAL = re.compile(r"([,.<>{}\[\]\"':;!@#$%^&*()\-+=~|/\\ ?])")
_TAG_CLAUSE = re.compile(r"@[\w.$]+:\s*\{((?:\\.|[^\\}])*)\}")
_TAG_ALTERNATIVE = re.compile(r"(?<!\\)\|")
_UNESCAPED_IN_TAG = re.compile(r"\\.|([,.<>{\[\]\"':;!@#$%^&()\-+=~/?])")
"""An escaped character (skipped), or one RediSearch reads as syntax inside ``{...}``: a
syntax error, or a value split into words that matches other tags or nothing. ``*`` (a
wildcard), ``|`` (between alternatives) and spaces read as meant."""
MAX_QUERY_TERMS = 64
"""A query keeps at most this many distinct terms (a 100 KB query stays one cheap search)."""

# RediSearch's default stop words (TEXT fields drop them at index time).
_STOPWORDS = frozenset(
    (
        "a",
        "is",
        "the",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )
)


def query_words(query: str, *, limit: int = MAX_QUERY_TERMS) -> list[str]:
    r"""The distinct lowercase ``\w+`` words of ``query`` without stop words, unescaped.

    At most ``limit``, in order of appearance: what redisvl's hybrid queries take (they
    escape each word themselves).
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
    return [w for w in words if w not in _STOPWORDS][:limit]


def query_terms(query: str, *, limit: int = MAX_QUERY_TERMS) -> list[str]:
    r"""The distinct lowercase words of ``query`` without stop words, each escaped for RediSearch.

    Words are ``\w+`` runs, so no query-syntax character (``@ | - * { } ( ) [ ] " ' ~ % : ;
    , . < > ! $ & = ^ \ /``) survives; the escaping of anything else non-alphanumeric (``_``)
    is a second line of defence. At most ``limit`` terms are kept, in order of appearance.
    """
    words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
    terms = [_NOT_ALNUM.sub(r"\\\1", w) for w in words if w not in _STOPWORDS]
    return terms[:limit]


def identifier_parts(text: str) -> str:
    """The words inside ``text``'s compound identifiers, space-separated, each once.

    RediSearch splits text at punctuation and spaces but not at ``_`` or a case change, so
    ``currency_name`` and ``getUser`` are one term each and a query for ``currency`` or
    ``user`` misses them. Their parts (``currency name``, ``get user``; parts of one character
    dropped), indexed in a TEXT field of their own next to the text, let it match them, as
    the in-memory ``BM25KeywordIndex`` does by splitting identifiers.
    """
    compounds = (
        word
        for word in _WORD.findall(text)
        if "_" in word or (not word.islower() and CAMEL_BOUNDARY.search(word))
    )
    parts = dict.fromkeys(piece.lower() for word in compounds for piece in identifier_pieces(word))
    return " ".join(parts)


def escape_tag(value: str) -> str:
    """Escape a TAG value (``{...}`` filter) for RediSearch."""
    return _TAG_SPECIAL.sub(r"\\\1", value)


def unescaped_tag_clause(filter_text: str) -> tuple[str, str] | None:
    r"""The first TAG clause of ``filter_text`` whose value is not escaped, and that clause escaped.

    ``@namespace:{837b770f-1f2a}`` or ``@source_path:{docs/a.md}`` matched nothing, or failed
    with a syntax error, where ``@source_path:{docs\/a\.md}`` matches; ``None`` when every
    TAG value is escaped (or is a ``$parameter`` or a ``w'pattern'``).
    """
    for clause in _TAG_CLAUSE.finditer(filter_text):
        value = clause.group(1)
        escaped = "|".join(
            alternative
            if re.fullmatch(r"\s*(\$\w+|w'.*')\s*", alternative)
            else _UNESCAPED_IN_TAG.sub(_escape_match, alternative)
            for alternative in _TAG_ALTERNATIVE.split(value)
        )
        if escaped != value:
            whole = clause.group(0)
            return whole, whole[: clause.start(1) - clause.start(0)] + escaped + "}"
    return None


def _escape_match(match: re.Match[str]) -> str:
    char = match.group(1)
    return match.group(0) if char is None else "\\" + char


def match_any(field: str, terms: Sequence[str], scope: str = "") -> str:
    """The RediSearch query for the documents holding any of ``terms`` (escaped) in ``field``.

    ``scope`` is a filter's query text (see ``unscored``), or empty. Without one this is
    ``@field:(t1 | t2)``. With one, each term is intersected with it, ``(@field:t1 scope) |
    (@field:t2 scope)``: RediSearch 2.10 (Redis Stack 7.4) has scored a union under an
    intersection, ``@field:(t1 | t2) scope``, as if some of its matching terms had not matched
    (a document holding both scored as one holding one). On SciFact's test claims ``BM25STD``
    ranked at nDCG@10 0.652 alone, 0.467 with the union intersected with a namespace TAG or
    with only ``-@chunk_type:{window}``, and 0.659 in this form with both (``RedisKeywordIndex``).
    """
    if not scope:
        return f"@{field}:({' | '.join(terms)})"
    return " | ".join(f"(@{field}:{term} {scope})" for term in terms)


def unscored(filter_text: str) -> str:
    """``filter_text`` (a TAG or NUMERIC clause) as a filter that adds nothing to BM25 scores.

    RediSearch 2.10 adds a TAG clause's own score to the full-text match it is intersected
    with; when every document carries the tag (one corpus in the index, the usual case) that
    score was a large arbitrary number (40 to 44 on a 5-document index), which swamps the BM25
    differences. A negated clause scores nothing, so the double negation ``-(-(filter))``
    keeps exactly the same documents and the plain BM25 scores.
    """
    return f"-(-({filter_text}))"
