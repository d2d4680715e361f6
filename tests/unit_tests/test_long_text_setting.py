"""The tool's ``long_text`` setting: YAML, validation, ``resolve_embeddings`` and the corpus.

Nothing here embeds: the models load lazily, and the corpus is only opened.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_holodeck.config import (
    HierarchicalDocumentToolConfig,
    VectorStoreToolConfig,
    config_reference_markdown,
    load_agent_config,
)
from langchain_holodeck.corpus import Corpus
from langchain_holodeck.embeddings import (
    OPENAI_EMBEDDING_MODELS,
    OnnxEmbeddings,
    embedding_model_id,
    resolve_embeddings,
)
from langchain_holodeck.errors import ConfigError

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent.yaml"


def load(tmp_path: Path, **tool: Any) -> VectorStoreToolConfig | HierarchicalDocumentToolConfig:
    data = {"tools": [{"type": "hierarchical_document", "name": "kb", "source": "docs", **tool}]}
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    (config,) = load_agent_config(path, environ={}).tools
    return config


# -- the configuration --------------------------------------------------------------------------
@pytest.mark.parametrize("tool_type", ["vectorstore", "hierarchical_document"])
def test_long_text_defaults_to_fit_on_both_tool_types(tool_type: str) -> None:
    config = (
        VectorStoreToolConfig if tool_type == "vectorstore" else HierarchicalDocumentToolConfig
    )(type=tool_type, name="kb", source="docs")
    assert config.long_text == "fit"


@pytest.mark.parametrize("mode", ["fit", "auto", "best", "mean", "first"])
def test_each_mode_round_trips_through_yaml(tmp_path: Path, mode: str) -> None:
    config = load(tmp_path, long_text=mode)
    assert config.long_text == mode
    dumped = config.model_dump(mode="json")
    assert dumped["long_text"] == mode
    assert type(config).model_validate(dumped).long_text == mode


def test_an_unknown_mode_names_file_field_and_value(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, long_text="fast")
    assert str(info.value) == (
        f"{tmp_path / 'agent.yaml'}: tools[0].long_text: must be 'fit', 'auto', 'best', 'mean' "
        "or 'first', got 'fast'."
    )


@pytest.mark.parametrize("model", ["text-embedding-3-small", "openai/text-embedding-3-large"])
@pytest.mark.parametrize("mode", ["best", "mean", "first"])
def test_a_mode_on_an_openai_model_is_one_line_naming_field_value_and_model(
    tmp_path: Path, model: str, mode: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, embedding_model=model, long_text=mode)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        f"{tmp_path / 'agent.yaml'}: tools[0].long_text: must be 'fit' (the default) or 'auto' "
    )
    assert f"with embedding_model {model!r}: OpenAI models have no windows" in message
    assert message.endswith(f", got {mode!r}.")


def test_the_default_mode_with_an_openai_model_is_accepted(tmp_path: Path) -> None:
    assert load(tmp_path, embedding_model="text-embedding-3-small").long_text == "fit"
    explicit = load(tmp_path, embedding_model="text-embedding-3-small", long_text="fit")
    assert explicit.long_text == "fit"
    # the default before, which configs written then may name, stays accepted
    before = load(tmp_path, embedding_model="text-embedding-3-small", long_text="auto")
    assert before.long_text == "auto"


def test_a_mode_on_a_sentence_transformers_model_is_accepted(tmp_path: Path) -> None:
    config = load(tmp_path, embedding_model="sentence-transformers/x", long_text="first")
    assert config.long_text == "first"


def test_the_reference_documents_long_text_next_to_embedding_model() -> None:
    section = config_reference_markdown().split("### VectorStoreToolConfig\n", 1)[1]
    rows = [r for r in section.split("\n### ", 1)[0].splitlines() if r.startswith("| `")]
    names = [r.split("`")[1] for r in rows]
    assert names[names.index("embedding_model") + 1] == "long_text"
    (row,) = [r for r in rows if r.startswith("| `long_text` |")]
    assert (
        "| `fit` or `auto` or `best` or `mean` or `first` | `fit` | fit or auto with an OpenAI "
        "model |"
    ) in row
    assert "truncate" in row


def test_the_example_agent_yaml_shows_the_setting() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "# long_text: first" in text


# -- resolve_embeddings -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["fit", "auto", "best", "mean", "first"])
@pytest.mark.parametrize("name", [None, "sentence-transformers/all-MiniLM-L6-v2"])
def test_resolve_passes_the_mode_to_the_local_default(name: str | None, mode: str) -> None:
    resolved = resolve_embeddings(name, long_text=mode)  # type: ignore[arg-type]  # each mode
    assert isinstance(resolved, OnnxEmbeddings)
    assert resolved.long_text == mode


def test_resolve_defaults_to_fit_and_the_mode_is_in_the_model_id() -> None:
    default, first = resolve_embeddings(None), resolve_embeddings(None, long_text="first")
    assert isinstance(default, OnnxEmbeddings)
    assert default.long_text == "fit"
    assert ":long_text=fit:window_tokens=128" in embedding_model_id(default)
    before = resolve_embeddings(None, long_text="auto")  # the default before: another id
    assert ":long_text=auto:window_tokens=128" in embedding_model_id(before)
    assert ":long_text=first" in embedding_model_id(first)
    assert "window_tokens" not in embedding_model_id(first)  # no windows: no window size


def test_resolve_refuses_a_mode_for_openai_before_needing_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in [*sorted(OPENAI_EMBEDDING_MODELS), "openai/text-embedding-3-large"]:
        with pytest.raises(
            ValueError, match=r"^long_text must be 'fit' \(the default\) or 'auto' with"
        ) as info:
            resolve_embeddings(name, long_text="first")
        assert f"embedding_model {name!r}" in str(info.value)
        assert str(info.value).endswith("got 'first'.")


def test_resolve_refuses_a_mode_for_an_embeddings_object() -> None:
    model = DeterministicFakeEmbedding(size=4)
    assert resolve_embeddings(model) is model
    assert resolve_embeddings(model, long_text="auto") is model  # the default before: unset
    with pytest.raises(ValueError, match="set its own mode instead") as info:
        resolve_embeddings(model, long_text="first")
    assert "DeterministicFakeEmbedding" in str(info.value)


def test_resolve_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="got 'fast'"):
        resolve_embeddings(None, long_text="fast")  # type: ignore[arg-type]  # the bad value


# -- the corpus: the config's mode, unless embeddings are given ---------------------------------
def test_the_corpus_embeds_in_the_configured_mode(tmp_path: Path) -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", source=str(tmp_path), long_text="first"
    )
    corpus = Corpus(config, store_dir=tmp_path / "store")
    corpus.open()
    assert corpus.model_id is not None
    assert ":long_text=first" in corpus.model_id
    default = Corpus(config.model_copy(update={"long_text": "auto"}), store_dir=tmp_path / "s2")
    default.open()
    assert ":long_text=auto:" in str(default.model_id)


def test_embeddings_given_to_the_corpus_win_over_the_configured_mode(tmp_path: Path) -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", source=str(tmp_path), long_text="first"
    )
    corpus = Corpus(config, embeddings=OnnxEmbeddings(long_text="mean"), store_dir=tmp_path / "s")
    corpus.open()
    assert "long_text=first" not in str(corpus.model_id)
    assert ":long_text=" not in str(corpus.model_id)  # "mean": the id of earlier versions


def test_a_configured_mode_the_given_embeddings_do_not_follow_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = HierarchicalDocumentToolConfig(
        type="hierarchical_document", name="kb", source=str(tmp_path), long_text="first"
    )
    unset = HierarchicalDocumentToolConfig(  # a config that never names long_text
        type="hierarchical_document", name="kb", source=str(tmp_path)
    )
    given = [(config, "mean"), (config, "first"), (unset, "best")]
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck"):
        for n, (tool_config, mode) in enumerate(given):
            embeddings = OnnxEmbeddings(long_text=mode)  # type: ignore[arg-type]  # a mode
            Corpus(tool_config, embeddings=embeddings, store_dir=tmp_path / str(n)).open()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "kb: long_text 'first' in the tool config is not applied: the tool was given "
        "OnnxEmbeddings, which embeds with long_text='mean' (set the mode on that object instead)."
    ]


@pytest.mark.parametrize("mode", ["auto", "first"])
def test_resolve_passes_the_mode_to_other_sentence_transformers_models(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``LocalEmbeddings`` loads lazily; only its import check is stood in for here."""
    import importlib.util

    from langchain_holodeck.embeddings import LocalEmbeddings

    found = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "sentence_transformers" else found(name, *a),
    )
    resolved = resolve_embeddings("sentence-transformers/paraphrase-MiniLM-L3-v2", long_text=mode)  # type: ignore[arg-type]  # each mode
    assert isinstance(resolved, LocalEmbeddings)
    assert resolved.long_text == mode  # the tool's default, auto, not LocalEmbeddings' own (best)
    assert f":long_text={mode}" in embedding_model_id(resolved)
