"""``precision="auto"`` follows the vectors a store holds; an explicit precision does not.

A store built in the other precision than this CPU's choice (by a version before int8 compute,
or on another CPU) is synced and searched in its own precision, with nothing re-embedded;
``force_ingest`` re-embeds it in this CPU's choice. The real model runs on a few small files.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from langchain_holodeck.backends import scan_documents
from langchain_holodeck.config import VectorStoreToolConfig
from langchain_holodeck.embeddings import OnnxEmbeddings, embedding_model_id, resolve_embeddings
from langchain_holodeck.errors import EmbeddingModelMismatchError
from langchain_holodeck.tools import VectorStoreTool
from tests.helpers import DATA_DIR

DEFAULT = resolve_embeddings(None)
"""The tools' model; ``precision="auto"``."""
assert isinstance(DEFAULT, OnnxEmbeddings)
CHOICE = DEFAULT.precision
"""What ``precision="auto"`` computes in on this CPU."""
OTHER = "fp32" if CHOICE == "int8" else "int8"


def model(precision: str) -> OnnxEmbeddings:
    """The tools' model, its precision set explicitly."""
    return DEFAULT.in_precision(precision)  # type: ignore[arg-type, union-attr]  # a literal


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    return tmp_path / "docs"


def tool(docs: Path, tmp_path: Path, embeddings: OnnxEmbeddings | None = None) -> VectorStoreTool:
    config = VectorStoreToolConfig(type="vectorstore", name="kb", source=str(docs), top_k=3)
    return VectorStoreTool(
        config,
        embeddings=embeddings,
        project_dir=tmp_path,
        home_dir=tmp_path,
        store_dir=tmp_path / "store",
    )


def stored_models(kb: VectorStoreTool) -> set[str]:
    store = kb.as_retriever().vector_store  # type: ignore[attr-defined]  # the tool's retriever
    return {str(d.metadata.get("embedding_model")) for d in scan_documents(store, windows=True)}


def test_auto_embeds_in_the_precision_the_store_holds(docs: Path, tmp_path: Path) -> None:
    other = model(OTHER)
    first = tool(docs, tmp_path, other).initialize_sync()
    assert first.added > 0
    (docs / "new.md").write_text("# Tachyons\n\nA tachyon moves faster than light.\n")

    default = tool(docs, tmp_path)  # a new process, precision "auto"
    result = default.initialize_sync()

    assert (result.added, result.updated, result.failed) == (1, 0, 0)
    assert result.skipped == first.added
    assert stored_models(default) == {embedding_model_id(other)}  # the new file's chunk too
    assert "new.md" in default.search_sync("particles faster than light")


@pytest.mark.parametrize("followed_first", [False, True])
def test_force_ingest_re_embeds_in_this_cpus_choice(
    docs: Path, tmp_path: Path, followed_first: bool
) -> None:
    first = tool(docs, tmp_path, model(OTHER)).initialize_sync()
    default = tool(docs, tmp_path)
    if followed_first:  # one process: a plain sync (in the store's precision), then a forced one
        assert default.initialize_sync().skipped == first.added
        assert default.corpus.model_id == embedding_model_id(model(OTHER))
    result = default.initialize_sync(force_ingest=True)
    assert result.added + result.updated == first.added
    assert default.corpus.model_id == embedding_model_id(DEFAULT)
    assert stored_models(default) == {embedding_model_id(DEFAULT)}
    assert "docs/api.md" in default.search_sync("endpoint users GET POST requests")
    assert tool(docs, tmp_path).initialize_sync().skipped == first.added  # and stays there


def test_an_explicit_precision_is_not_followed(docs: Path, tmp_path: Path) -> None:
    tool(docs, tmp_path, model(OTHER)).initialize_sync()
    with pytest.raises(EmbeddingModelMismatchError, match="force_ingest=True"):
        tool(docs, tmp_path, model(CHOICE)).initialize_sync()


def test_a_search_only_open_follows_the_store_too(docs: Path, tmp_path: Path) -> None:
    tool(docs, tmp_path, model(OTHER)).initialize_sync()
    reader = tool(docs, tmp_path)
    assert reader.open_sync() > 0  # serve's path: no sync, the stored chunk's model compared
    assert reader.corpus.model_id == embedding_model_id(model(OTHER))
    assert "docs/api.md" in reader.search_sync("endpoint users GET POST requests")
