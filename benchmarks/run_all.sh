#!/usr/bin/env bash
# Run every benchmark in sequence, on an otherwise idle machine; each prints markdown tables
# with ours next to the peer. Needs: pip install -e ".[bench]"; Redis Stack at REDIS_URL for
# bench_redis_hybrid (skipped without it); SciFact data in ../shared/data/scifact; a MetaTool
# checkout at METATOOL_DIR for bench_tool_selection (skipped without it).
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
for bench in vector_store memory hybrid_speed scifact sync insert_paragraph splitting rerank; do
  echo "### bench_$bench"
  python "benchmarks/bench_$bench.py"
  echo
done
if [ -n "${REDIS_URL:-}" ]; then
  echo "### bench_redis_hybrid"
  python benchmarks/bench_redis_hybrid.py
fi
if [ -n "${METATOOL_DIR:-}" ]; then
  echo "### bench_tool_selection"
  python benchmarks/bench_tool_selection.py
fi
