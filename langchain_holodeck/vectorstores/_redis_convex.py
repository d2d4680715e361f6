"""The Redis native convex search in one server-side script: both legs, the fusion, the rows.

``HolodeckRedisVectorStore.native_hybrid_search(fusion="convex")`` without a similarity
threshold runs ``CONVEX_SCRIPT``: the ``KNN`` leg and the full-text leg (``FT.SEARCH`` each),
their convex fusion exactly as ``_client_fusion.convex_chunks`` computes it (a chunk scores its
best entry, ``<chunk id>:w<n>`` windows included; each leg divided by its best, lower bound 0;
ties by first appearance, the dense leg first), then ``HMGET`` of the ``k`` best. One round trip
and ``k`` rows back instead of two round trips and ``2 x fetch_k`` rows parsed in Python: on 10k
chunks it answers in about the time of redisvl's own one-request hybrid query. The script only
reads (``no-writes``), so it runs on replicas too. A server that refuses scripts (ACLs, a
managed service) gets the two-round-trip path instead: ``script_refused`` tells a refusal from
a failure, and ``reply_rows`` reads that path's ``FT.SEARCH`` replies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from redis.exceptions import NoPermissionError, ResponseError

from langchain_holodeck.vectorstores._redis_schema import as_text

__all__ = ["CONVEX_SCRIPT", "convex_rows", "reply_rows", "script_refused"]

CONVEX_SCRIPT = """#!lua flags=no-writes
local fetch, k = tonumber(ARGV[4]), tonumber(ARGV[5])
local wd, wk = tonumber(ARGV[6]), tonumber(ARGV[7])
local l2 = ARGV[8] == 'L2'
local match, sub, min, max = string.match, string.sub, math.min, math.max
local slot, ids, scores, sim, n = {}, {}, {}, {}, 0  -- by first appearance, the dense leg first
if wd > 0 then
  local knn = redis.call('FT.SEARCH', KEYS[1], ARGV[1], 'PARAMS', 2, 'vector', ARGV[2],
    'NOCONTENT', 'WITHSORTKEYS', 'SORTBY', 'vector_distance', 'ASC',
    'LIMIT', 0, fetch, 'DIALECT', 2)
  local best = nil
  for i = 2, #knn, 2 do
    local key, sortkey = knn[i], knn[i + 1]  -- the sort key: '#' and the distance
    local d = type(sortkey) == 'string' and tonumber(sub(sortkey, 2)) or 2  -- none: farthest
    local s = l2 and (1 - d / 2) or (1 - d)
    if s < 0 then s = 0 elseif s > 1 then s = 1 end
    local chunk = match(key, '^(.+):w[1-9]%d*$') or key  -- as window_parent
    if slot[chunk] == nil then
      n = n + 1; slot[chunk] = n; ids[n] = chunk; sim[n] = s
      if best == nil then best = s end
      scores[n] = (best > 0) and (wd * min(1, s / best)) or wd
    end
  end
end
if wk > 0 and ARGV[3] ~= '' then
  local txt = redis.call('FT.SEARCH', KEYS[1], ARGV[3], 'NOCONTENT', 'WITHSCORES',
    'SCORER', 'BM25STD', 'LIMIT', 0, fetch, 'DIALECT', 2)
  local best = nil
  for i = 2, #txt, 2 do
    local key, s = txt[i], tonumber(txt[i + 1])
    if best == nil then best = s end
    local value = (best > 0) and (wk * max(0, min(1, s / best))) or wk
    local j = slot[key]
    if j == nil then
      n = n + 1; slot[key] = n; ids[n] = key; scores[n] = value
    else
      scores[j] = scores[j] + value
    end
  end
end
local fields = {}
for j = 9, #ARGV do fields[#fields + 1] = ARGV[j] end
local taken, out = {}, {}
for _ = 1, min(k, n) do  -- the k best, ties to the first seen: k passes beat sorting them all
  local b, bs = 0, -1
  for j = 1, n do
    if scores[j] > bs and not taken[j] then b, bs = j, scores[j] end
  end
  taken[b] = true
  out[#out + 1] = {ids[b], string.format('%.17g', bs),
    sim[b] and string.format('%.17g', sim[b]) or false, redis.call('HMGET', ids[b], unpack(fields))}
end
return out
"""
"""KEYS[1]: the index. ARGV: the KNN query, the vector, the full-text query (empty: none),
``fetch_k``, ``k``, the dense and keyword weights, the metric, then the fields to read. Each
row: key, fused score, dense relevance (``false`` for a keyword-only chunk), field values.
Numbers travel as ``%.17g`` strings (a Lua number would come back as an integer)."""


def convex_rows(
    script: Any,
    index: str,
    *,
    knn: str,
    vector: bytes,
    text: str,
    fetch_k: int,
    k: int,
    weights: tuple[float, float],
    metric: str,
    fields: Sequence[str],
) -> list[tuple[Any, float, float | None, list[Any]]]:
    """Run ``CONVEX_SCRIPT`` (a redis-py ``Script``): ``(key, score, similarity, values)``.

    The key and values come as the client returns them (bytes, or str when it decodes).
    """
    args = [knn, vector, text, fetch_k, k, weights[0], weights[1], metric, *fields]
    rows = script(keys=[index], args=args)
    return [
        (key, float(score), float(sim) if sim else None, list(values))
        for key, score, sim, values in rows
    ]


def script_refused(error: ResponseError) -> bool:
    """Whether the server refuses scripts (no permission, or no such command), not a search."""
    return isinstance(error, NoPermissionError) or "unknown command" in str(error).lower()


def reply_rows(reply: Any) -> list[tuple[str, float]]:
    """``(key, number)`` per row of an ``FT.SEARCH ... NOCONTENT`` reply, RESP2 or RESP3.

    The number is the row's score (``WITHSCORES``) or its sort key (``WITHSORTKEYS``, the KNN
    distance after a ``#``, all its digits). Hot: a few hundred rows per search.
    """
    if isinstance(reply, Mapping):  # RESP3: {"results": [{"id", "score" | "sortkey"}]}
        raw = b"results" in reply
        rows = reply[b"results" if raw else "results"]
        if not rows:
            return []
        key, score, sortkey = (b"id", b"score", b"sortkey") if raw else _RESP3_NAMES
        if score in rows[0]:
            return [(as_text(row[key]), float(row[score])) for row in rows]
        return [(as_text(row[key]), _sort_number(row[sortkey])) for row in rows]
    keys, values = reply[1::2], reply[2::2]  # RESP2: total, then key and score or sort key
    return [(as_text(k), _sort_number(v)) for k, v in zip(keys, values, strict=True)]


def _sort_number(value: bytes | str | float | None) -> float:
    """A score (a number, or its text) or a sort key (``#0.25``); none: the farthest (2)."""
    if value is None:
        return 2.0
    if isinstance(value, float | int):
        return float(value)
    text = as_text(value)
    return float(text[1:] if text.startswith("#") else text)


_RESP3_NAMES = ("id", "score", "sortkey")
