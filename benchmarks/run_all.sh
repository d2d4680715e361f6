#!/usr/bin/env bash
# Run every benchmark in sequence, on an otherwise idle machine; each prints markdown tables
# with ours next to the peer. Needs: pip install -e ".[bench]"; Redis Stack at REDIS_URL for
# bench_redis_hybrid (skipped without it); SciFact data at $SCIFACT_DIR (see
# benchmarks/tuning_data.py: SCIFACT_HELP); bench_code
# reads sympy's source from site-packages and embeds ~13k texts on its first run (cached in
# ~/.cache/holodeck-bench), bench_lookups reads /usr/share/common-licenses; a MetaTool
# checkout at METATOOL_DIR for bench_tool_selection (skipped without it); datasets/country-codes'
# data/country-codes.csv at COUNTRY_CODES_CSV for bench_tables (skipped without it).
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1
for bench in vector_store memory hybrid_speed scifact sync api_ingest insert_paragraph splitting lookups symbols code rerank \
  embeddings chat qdrant_hybrid; do
  echo "### bench_$bench"
  python "benchmarks/bench_$bench.py"
  echo
done
echo "### bench_install (a fresh venv from PyPI: minutes, and network to the package index)"
python benchmarks/bench_install.py
echo
if [ -n "${REDIS_URL:-}" ]; then
  echo "### bench_redis_hybrid"
  python benchmarks/bench_redis_hybrid.py
  echo "### bench_scifact_strategies"
  python benchmarks/bench_scifact_strategies.py
else
  echo "### bench_scifact_strategies (no REDIS_URL: Redis rows skipped)"
  python benchmarks/bench_scifact_strategies.py --backends memory qdrant
fi
if [ -n "${METATOOL_DIR:-}" ]; then
  echo "### bench_tool_selection"
  python benchmarks/bench_tool_selection.py
fi
if [ -n "${COUNTRY_CODES_CSV:-}" ]; then
  echo "### bench_tables"
  python benchmarks/bench_tables.py --csv "$COUNTRY_CODES_CSV"
fi
