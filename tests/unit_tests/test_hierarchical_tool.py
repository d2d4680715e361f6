from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from langchain_holodeck.config import HierarchicalDocumentToolConfig
from langchain_holodeck.tools import HierarchicalDocumentTool
from tests.helpers import DATA_DIR, HashingEmbeddings


def make_config(source: Path, **overrides: Any) -> HierarchicalDocumentToolConfig:
    fields: dict[str, Any] = {
        "type": "hierarchical_document",
        "name": "legal_docs",
        "description": "Search the Holodeck Safety Act.",
        "source": str(source),
        "top_k": 3,
    }
    return HierarchicalDocumentToolConfig(**{**fields, **overrides})


@pytest.fixture
def legal(tmp_path: Path) -> Path:
    target = tmp_path / "legal"
    shutil.copytree(DATA_DIR / "legal", target)
    return target


@pytest.fixture
def tool(legal: Path, embeddings: HashingEmbeddings, tmp_path: Path) -> HierarchicalDocumentTool:
    return HierarchicalDocumentTool(
        make_config(legal), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )


@pytest.mark.parametrize(
    ("query", "section_id"),
    [
        ("Section 203(a)(1)", "203(a)(1)"),
        ("what does § 202 say", "202(a)"),  # 202's bare heading opens the 202(a) chunk
        ("section 201(b)", "201(b)"),
        ("Section 102", "102(a)"),  # 102's heading and "In this Act:" open the 102(a) chunk
    ],
)
async def test_exact_section_lookup_is_the_top_result(
    tool: HierarchicalDocumentTool, query: str, section_id: str
) -> None:
    await tool.initialize()
    docs = await tool.as_retriever().ainvoke(query)
    assert docs[0].metadata["section_id"] == section_id
    assert docs[0].metadata["exact_match"] is True


async def test_output_shows_rank_score_source_breadcrumb_and_text(
    tool: HierarchicalDocumentTool,
) -> None:
    await tool.initialize()
    output = await tool.search("Section 201(a)")
    first = output.split("\n\n[2] ")[0].split("\n\n", 1)[1]
    header, text = first.split("\n", 1)
    assert header.startswith("[1] Score: 1.")  # exact hits carry EXACT_BOOST
    assert "| Source: " in header
    assert header.endswith("Section 201. Starting a simulation \u203a 201(a)")
    assert text.startswith("## Title II — Operation\n\n### Section 201. Starting a simulation")
    assert "(a) The Operator shall confirm" in text
    scores = [float(line.split()[2]) for line in output.splitlines() if line.startswith("[")]
    assert scores == sorted(scores, reverse=True)


async def test_definitions_are_attached_when_the_query_names_a_term(
    tool: HierarchicalDocumentTool,
) -> None:
    await tool.initialize()
    assert "safety interlock" in tool.definitions
    docs = await tool.as_retriever().ainvoke("what is the safety interlock")
    definitions = docs[0].metadata.get("definitions") or []
    assert any(d["term"].lower() == "safety interlock" for d in definitions)


async def test_reinitialize_is_idempotent(
    tool: HierarchicalDocumentTool, embeddings: HashingEmbeddings
) -> None:
    first = await tool.initialize()
    calls = embeddings.texts_embedded
    second = await tool.initialize()
    assert (second.added, second.updated, second.skipped) == (0, 0, first.added)
    assert embeddings.texts_embedded == calls
    docs = await tool.as_retriever().ainvoke("Section 203(a)(1)")
    assert docs[0].metadata["section_id"] == "203(a)(1)"


async def test_keyword_index_rebuilds_from_the_persisted_store(
    legal: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    first = HierarchicalDocumentTool(
        make_config(legal), embeddings=embeddings, store_dir=store_dir, home_dir=tmp_path
    )
    await first.initialize()
    second = HierarchicalDocumentTool(
        make_config(legal), embeddings=embeddings, store_dir=store_dir, home_dir=tmp_path
    )
    result = await second.initialize()
    assert result.added == 0
    hits = await second.as_retriever().ainvoke("arch controls supervising officer")
    assert hits[0].metadata["keyword_rank"] is not None
    assert hits[0].metadata["section_id"].startswith("202")


class CountingChat(GenericFakeChatModel):
    calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super()._generate(*args, **kwargs)


async def test_contextual_enrichment_is_indexed_but_not_shown(
    legal: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    llm = CountingChat(
        messages=iter(AIMessage(content="From the Holodeck Safety Act.") for _ in range(500))
    )
    config = make_config(
        legal,
        contextual_embeddings=True,
        context_model={"provider": "openai", "name": "unused"},
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, llm=llm, project_dir=tmp_path, home_dir=tmp_path
    )
    result = await tool.initialize()
    assert llm.calls == result.added
    docs = await tool.as_retriever().ainvoke("Section 201(a)")
    assert docs[0].page_content.startswith("From the Holodeck Safety Act.\n\n")
    assert docs[0].metadata["context"] == "From the Holodeck Safety Act."
    output = await tool.search("Section 201(a)")
    assert "From the Holodeck Safety Act." not in output
    await tool.initialize()
    assert llm.calls == result.added  # unchanged files: no LLM call


async def test_contexts_are_cached_across_runs_and_forced_ingests(
    legal: Path, embeddings: HashingEmbeddings, tmp_path: Path
) -> None:
    """The tool's contexts were cached in memory for one run only: a forced re-ingest, or a
    new process over the same store, paid an LLM call for every chunk again."""
    llm = CountingChat(messages=iter(AIMessage(content="From the Act.") for _ in range(500)))
    config = make_config(
        legal, contextual_embeddings=True, context_model={"provider": "openai", "name": "unused"}
    )
    (legal / "rota.md").write_text("# Rota\n\n## Day\n\nAlpha shift.\n\n## Night\n\nBeta.\n")

    def tool() -> HierarchicalDocumentTool:
        return HierarchicalDocumentTool(
            config,
            embeddings=embeddings,
            llm=llm,
            project_dir=tmp_path,
            home_dir=tmp_path,
            store_dir=tmp_path / "store",
        )

    first = await tool().initialize()
    assert llm.calls == first.added > 0
    again = tool()  # a new tool over the same store directory: as a new process would
    forced = await again.initialize(True)
    assert forced.updated + forced.added == first.added  # every chunk written again
    assert llm.calls == first.added  # and no context asked again
    docs = await again.as_retriever().ainvoke("Section 201(a)")
    assert docs[0].metadata["context"] == "From the Act."
    act = legal / "holodeck_act.md"
    text = act.read_text(encoding="utf-8")
    act.write_text(text.replace("safety interlock", "safety lock", 1), encoding="utf-8")
    edited = await again.initialize()  # an update: the embedding cache is pruned after it
    assert edited.updated > 0
    calls = llm.calls  # the act's contexts asked again (its text changed), not the rota's
    await tool().initialize(True)
    assert llm.calls == calls  # the prunings kept every context of the files


async def test_as_tool_output_for_an_agent(tool: HierarchicalDocumentTool) -> None:
    await tool.initialize()
    lc_tool = tool.as_tool()
    assert lc_tool.name == "legal_docs"
    output = await lc_tool.ainvoke({"query": "who must be present for a program rated 5"})
    assert output.startswith("Found 3 result(s):")


async def test_enrichment_cost_is_logged_before_any_llm_call(
    legal: Path, embeddings: HashingEmbeddings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    llm = CountingChat(messages=iter(AIMessage(content="Context.") for _ in range(500)))
    config = make_config(
        legal, contextual_embeddings=True, context_model={"provider": "openai", "name": "unused"}
    )
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, llm=llm, project_dir=tmp_path, home_dir=tmp_path
    )
    events: list[str] = []
    with caplog.at_level(logging.INFO, logger="langchain_holodeck.ingestion"):
        result = await tool.initialize(on_progress=lambda e: events.append(e.stage))
    line = next(r.getMessage() for r in caplog.records if "contextual enrichment" in r.message)
    assert line.startswith(f"contextual enrichment: {result.added} LLM calls (0 cached)")
    assert llm.calls == result.added
    assert events.index("contexts") < events.index("embeddings")


@pytest.mark.parametrize(("expand_limit", "expanded"), [(1, 1), (2, 2), (100, 5)])
async def test_expand_limit_from_the_config_caps_the_expanded_chunks(
    legal: Path, embeddings: HashingEmbeddings, tmp_path: Path, expand_limit: int, expanded: int
) -> None:
    config = make_config(legal, expand_hops=3, expand_direction="both", expand_limit=expand_limit)
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    docs = await tool.as_retriever().ainvoke("operator shall")
    assert sum(1 for d in docs if d.metadata["expansion_hops"]) == expanded


LICENSES = Path("/usr/share/common-licenses")


@pytest.mark.parametrize(
    "query", ["what does Operator mean?", "define Operator", "Operator definition"]
)
async def test_definition_question_returns_the_defining_chunk_and_shows_the_term(
    tool: HierarchicalDocumentTool, query: str
) -> None:
    await tool.initialize()
    docs = await tool.as_retriever().ainvoke(query)
    assert "operator" in [t.lower() for t in docs[0].metadata["defined_terms"]]
    text = await tool.search(query)
    terms = text.split("\n\nDefined terms:\n", 1)[1]
    assert terms.startswith('- "Operator" (')
    assert "the crew member who starts a simulation" in terms


async def test_defined_terms_come_from_the_results_own_document(
    tmp_path: Path, embeddings: HashingEmbeddings
) -> None:
    # the forklift manual was the only result, yet "Defined terms:" quoted the security
    # policy's "Operator" (the extractor kept one definition per term, in store order)
    source = tmp_path / "docs"
    source.mkdir()
    (source / "a_forklift_manual.md").write_text(
        "# Forklift Safety Manual\n\n## Section 1. Definitions\n\n"
        "“Operator” means a person certified to drive a forklift truck in the warehouse.\n"
    )
    (source / "security_policy.md").write_text(
        "# Information Security Policy\n\n## Section 2. Definitions\n\n"
        "“Operator” means the employee on call who runs production systems.\n"
    )
    tool = HierarchicalDocumentTool(
        make_config(source, top_k=1), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    text = await tool.search("what does Operator mean")
    first, terms = text.split("\n\nDefined terms:\n", 1)
    source_of_first = first.split("| Source: ", 1)[1].split(" |", 1)[0]
    assert terms.splitlines() == [
        f'- "Operator" ({source_of_first}, section 1): a person certified to drive a forklift '
        "truck in the warehouse."
        if source_of_first.endswith("forklift_manual.md")
        else f'- "Operator" ({source_of_first}, section 2): the employee on call who runs '
        "production systems."
    ]


@pytest.mark.skipif(not (LICENSES / "MPL-2.0").exists(), reason="needs Debian's common-licenses")
async def test_mpl_sections_and_definitions_are_found(
    tmp_path: Path, embeddings: HashingEmbeddings
) -> None:
    source = tmp_path / "licenses"
    source.mkdir()
    shutil.copy(LICENSES / "MPL-2.0", source / "MPL-2.0.txt")
    tool = HierarchicalDocumentTool(
        make_config(source), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    retriever = tool.as_retriever()
    top = retriever.invoke("Section 3.1")[0]
    assert top.metadata["section_id"] == "3.1"
    assert top.page_content.lstrip("-\n ").startswith(("3. Responsibilities", "3.1."))
    top = retriever.invoke("what does Larger Work mean?")[0]
    assert top.metadata["section_id"] == "1.7"
    assert top.metadata["chunk_type"] == "definition"
    assert "requirement" in {d.metadata["chunk_type"] for d in retriever.invoke("You must", k=10)}


@pytest.mark.parametrize("table_tokens", [200, None])
async def test_max_table_chunk_tokens_reaches_the_splitter(
    tmp_path: Path, embeddings: HashingEmbeddings, table_tokens: int | None
) -> None:
    source = tmp_path / "tables"
    source.mkdir()
    header = "| deck | program | officer |\n|---|---|---|"
    rows = "\n".join(f"| {n} | program {n} | officer {n % 9} |" for n in range(200))
    (source / "decks.md").write_text(f"{header}\n{rows}\n", encoding="utf-8")
    config = make_config(source, max_table_chunk_tokens=table_tokens)
    tool = HierarchicalDocumentTool(
        config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    docs = await tool.as_retriever().ainvoke("officer 4 program 40", k=10)
    assert docs
    headed = [d.page_content.startswith(header) for d in docs]
    if table_tokens is None:  # the old splitting: the header in the first chunk only
        assert sum(headed) <= 1
    else:
        assert all(headed)


async def test_context_timeout_from_the_config_bounds_each_context_request(
    tmp_path: Path,
    embeddings: HashingEmbeddings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """context_timeout in the YAML reaches the enricher: a model slower than it leaves the
    chunk without context (one WARNING) and the ingest goes on. It could not be set at all:
    every request waited up to the enricher's 60 s."""
    import logging

    from tests.openai_server import chat_server

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "arch.md").write_text("# Arch\n\nThe arch opens on deck 4.\n", encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with chat_server(delay=3.0) as server:
        config = make_config(
            docs,
            contextual_embeddings=True,
            context_timeout=0.2,
            context_model={"provider": "openai", "name": "m", "base_url": server.base_url},
        )
        tool = HierarchicalDocumentTool(
            config, embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
        )
        with caplog.at_level(logging.WARNING, logger="langchain_holodeck.contextual"):
            result = await tool.initialize()
        assert server.requests  # the request was made, and not waited for
    assert result.added == 1
    assert [e.split(": ", 1)[1] for e in result.errors] == [
        "1 of 1 chunks were indexed without context (the context model failed); "
        "the next ingest enriches the file again."
    ]
    hits = await tool.as_retriever().ainvoke("arch deck")
    assert "context" not in hits[0].metadata
    assert any("TimeoutError" in r.getMessage() for r in caplog.records)


async def test_a_retriever_taken_before_a_reingest_serves_the_new_definitions(
    tmp_path: Path, embeddings: HashingEmbeddings
) -> None:
    """A retriever kept in a chain (``tool.as_retriever()``) follows the corpus's definitions
    as it follows its keyword and exact indexes: each ingest gave the tool a new index, so
    it kept attaching the definition the file no longer has, and knew no term added since."""
    source = tmp_path / "glossary"
    source.mkdir()
    terms = source / "terms.md"
    terms.write_text(
        '# Glossary\n\n## Terms\n\n"Warpcore" means the main reactor of the ship.\n',
        encoding="utf-8",
    )
    tool = HierarchicalDocumentTool(
        make_config(source), embeddings=embeddings, project_dir=tmp_path, home_dir=tmp_path
    )
    await tool.initialize()
    kept = tool.as_retriever()
    terms.write_text(
        '# Glossary\n\n## Terms\n\n"Warpcore" means the antimatter engine.\n\n'
        '"Holodeck" means the simulation room.\n',
        encoding="utf-8",
    )
    await tool.initialize()

    def defined(query: str) -> list[str]:
        return [d["definition"] for d in kept.invoke(query)[0].metadata.get("definitions", [])]

    assert defined("what is a warpcore?") == ["the antimatter engine."]
    assert defined("what is a holodeck?") == ["the simulation room."]
