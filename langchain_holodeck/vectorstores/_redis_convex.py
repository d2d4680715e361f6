"""The Redis native convex search in one server-side script: both legs, the fusion, the rows.

``HolodeckRedisVectorStore.native_hybrid_search(fusion="convex")`` without a similarity
threshold runs ``CONVEX_SCRIPT``: the ``KNN`` leg and the full-text leg (``FT.SEARCH`` each),
their convex fusion exactly as ``_client_fusion.convex_chunks`` computes it (a chunk scores its
best entry, ``<chunk id>:w<n>`` windows included; each leg divided by its best, lower bound 0;
ties by first appearance, the dense leg first), then ``HMGET`` of the ``k`` best. One round trip
and ``k`` rows back instead of two round trips and ``2 x fetch_k`` rows parsed in Python: on 10k
chunks it answers in about the time of redisvl's own one-request hybrid query. The script only
reads (``no-writes``), so it runs on replicas too. A server that refuses scripts (ACLs, a
managed service) gets the two-round-trip path instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["CONVEX_SCRIPT", "convex_rows"]

CONVEX_SCRIPT = """#!lua flags=no-writes
local fetch, k = tonumber(ARGV[4]), tonumber(ARGV[5])
local wd, wk = tonumber(ARGV[6]), tonumber(ARGV[7])
local scores, order, sim, n = {}, {}, {}, 0
local function add(id, value)
  if scores[id] == nil then n = n + 1; order[id] = n; scores[id] = 0 end
  scores[id] = scores[id] + value
end
if wd > 0 then
  local knn = redis.call('FT.SEARCH', KEYS[1], ARGV[1], 'PARAMS', 2, 'vector', ARGV[2],
    'RETURN', 1, 'vector_distance', 'SORTBY', 'vector_distance', 'ASC',
    'LIMIT', 0, fetch, 'DIALECT', 2)
  local best = nil
  for i = 2, #knn, 2 do
    local d = tonumber(knn[i + 1][2]) or 2  -- no distance (deleted meanwhile): the farthest
    local s = (ARGV[8] == 'L2') and (1 - d / 2) or (1 - d)
    if s < 0 then s = 0 elseif s > 1 then s = 1 end
    local chunk = string.match(knn[i], '^(.+):w[1-9]%d*$') or knn[i]  -- as window_parent
    if sim[chunk] == nil then
      sim[chunk] = s
      if best == nil then best = s end
      add(chunk, (best > 0) and (wd * math.min(1, s / best)) or wd)
    end
  end
end
if wk > 0 and ARGV[3] ~= '' then
  local txt = redis.call('FT.SEARCH', KEYS[1], ARGV[3], 'NOCONTENT', 'WITHSCORES',
    'SCORER', 'BM25STD', 'LIMIT', 0, fetch, 'DIALECT', 2)
  local best = nil
  for i = 2, #txt, 2 do
    local s = tonumber(txt[i + 1])
    if best == nil then best = s end
    add(txt[i], (best > 0) and (wk * math.max(0, math.min(1, s / best))) or wk)
  end
end
local ids = {}
for id, _ in pairs(scores) do ids[#ids + 1] = id end
table.sort(ids, function(a, b)
  if scores[a] ~= scores[b] then return scores[a] > scores[b] end
  return order[a] < order[b]
end)
local fields = {}
for j = 9, #ARGV do fields[#fields + 1] = ARGV[j] end
local out = {}
for i = 1, math.min(k, #ids) do
  local id = ids[i]
  out[#out + 1] = {id, string.format('%.17g', scores[id]),
    sim[id] and string.format('%.17g', sim[id]) or false, redis.call('HMGET', id, unpack(fields))}
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
