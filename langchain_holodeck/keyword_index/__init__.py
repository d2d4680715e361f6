"""Keyword (sparse) indexes over chunk Documents: the protocol and its providers.

- :class:`BM25KeywordIndex`: in-memory BM25 (bm25s sparse matrices, or rank_bm25).
- :class:`RedisKeywordIndex`: RediSearch BM25 on the index langchain-redis already keeps.
- :class:`OpenSearchKeywordIndex`: an OpenSearch index, BM25 ``match`` queries.
"""

from __future__ import annotations

from langchain_holodeck.keyword_index.base import KeywordHit, KeywordIndex
from langchain_holodeck.keyword_index.bm25 import BM25KeywordIndex, Tokenizer
from langchain_holodeck.keyword_index.opensearch import OpenSearchKeywordIndex
from langchain_holodeck.keyword_index.redis import RedisKeywordIndex

__all__ = [
    "BM25KeywordIndex",
    "KeywordHit",
    "KeywordIndex",
    "OpenSearchKeywordIndex",
    "RedisKeywordIndex",
    "Tokenizer",
]
