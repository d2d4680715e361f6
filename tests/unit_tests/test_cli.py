"""``holodeck-rag``: ingest / search / tools through ``main(argv)``, on the tiny docs corpus.

One module-scoped ingest with the real local model (all-MiniLM-L6-v2, offline) feeds the
search tests; the rest never embeds anything.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import logging
import os
import re
import shutil
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from langchain_holodeck.cli import main
from langchain_holodeck.cli._format import ProgressBars
from langchain_holodeck.embeddings.onnx import OnnxEmbeddings
from langchain_holodeck.ingestion import IngestProgress
from tests.helpers import DATA_DIR
from tests.helpers import run_cli as run

JSON_KEYS = {
    "rank",
    "id",
    "score",
    "source_path",
    "section_id",
    "heading",
    "parent_chain",
    "text",
    "fused_score",
    "semantic_score",
    "semantic_rank",
    "keyword_score",
    "keyword_rank",
    "exact_match",
    "exact_rank",
    "native_rank",
    "native_score",
    "relevance_score",
}
SUMMARY = re.compile(
    r"^ingested docs into 'default' \(in-memory, saved in (?P<dir>\S+)\): "
    r"(?P<added>\d+) added, (?P<updated>\d+) updated, (?P<skipped>\d+) skipped, "
    r"(?P<failed>\d+) failed, (?P<deleted>\d+) deleted; (?P<total>\d+) chunks in "
    r"[\d.]+ s \([\d.]+ chunks/s\); search strategy (?P<strategy>native|fallback)$"
)


@dataclass(frozen=True)
class Ingested:
    workdir: Path
    store: Path
    code: int
    out: str
    err: str


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    """``holodeck-rag ingest docs`` once, from a fresh directory holding a copy of the corpus."""
    workdir = tmp_path_factory.mktemp("cli")
    shutil.copytree(DATA_DIR / "docs", workdir / "docs")
    shutil.copytree(DATA_DIR / "legal", workdir / "legal")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir)
        patch.setenv("HOME", str(workdir))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["ingest", "docs"])
    return Ingested(workdir, workdir / ".holodeck" / "store", code, out.getvalue(), err.getvalue())


@pytest.fixture(autouse=True)
def _in_workdir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs from a directory of its own, with HOME there (no user config leaks in)."""
    workdir = tmp_path_factory.mktemp("run")
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("HOME", str(workdir))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- ingest ---------------------------------------------------------------------------------
def test_ingest_prints_one_summary_line_and_writes_the_manifest(ingested: Ingested) -> None:
    assert ingested.code == 0, ingested.err
    match = SUMMARY.match(ingested.out.strip())
    assert match, ingested.out
    assert match["strategy"] == "fallback"  # the in-memory store has no native hybrid
    assert int(match["added"]) == int(match["total"]) > 0
    assert (match["updated"], match["skipped"], match["failed"]) == ("0", "0", "0")
    assert ingested.err == ""  # stderr is not a TTY: no progress bars, and no warning
    manifest = json.loads((ingested.store / "ingest.json").read_text())
    assert manifest["tool"] == "default"
    assert manifest["type"] == "hierarchical_document"
    assert manifest["source"] == "docs"
    assert manifest["config"] is None
    assert (
        manifest["embedding_model_id"]
        .removesuffix(":int8")
        .endswith("all-MiniLM-L6-v2:long_text=fit:window_tokens=128")
    )
    assert (ingested.store / "default" / "bm25").is_dir()


def test_second_ingest_reports_everything_skipped(
    ingested: Ingested, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ingested.workdir)
    code, out, err = run(capsys, "-v", "ingest", "docs")
    assert code == 0, err
    match = SUMMARY.match(out.strip())
    assert match, out
    assert match["added"] == match["updated"] == match["deleted"] == "0"
    assert int(match["skipped"]) == int(match["total"]) > 0
    assert "INFO langchain_holodeck.tools.document: default: ingested docs" in err  # -v: debug logs


def deck_docs_for_an_openai_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """``tmp_path/docs`` with one page, and a fake OpenAI key (the servers are loopback)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "deck.md", "# Deck\n\nThe holodeck deck opens at dawn.\n")
    return docs


def test_a_rerun_whose_embeddings_server_is_down_embeds_nothing_and_succeeds(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An OpenAI-compatible server's vector width is not known from the model's name: it is
    # measured (one embed_query) at each run on a store holding vectors, so with the server
    # down a re-run with nothing to embed failed. The probe failing, the width is read from the
    # cached vector of a stored chunk; a run that must embed says so, and the next converges.
    from tests.embedding_server import EmbeddingServer

    docs = deck_docs_for_an_openai_server(monkeypatch, tmp_path)
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code, _, _ = run(capsys, "ingest", str(docs), "--embedding-model", "text-embedding-3-small")
        assert code == 0
        server.mode = "error_500"
        code, out, err = run(capsys, "ingest", str(docs))
        assert code == 0  # nothing to embed
        assert "0 added, 0 updated, 1 skipped, 0 failed" in out
        (line,) = err.splitlines()
        assert line.startswith("warning: default: the embedding model did not answer its width")
        assert line.endswith(
            "500 - The embedding server is overloaded.); using the width of its cached vectors, 32."
        )
        write(docs / "deck.md", "# Deck\n\nThe holodeck deck opens at noon.\n")
        server.mode, server.fail_on, server.fail_status = "fail_on", "noon", 400  # no retries
        code, _, err = run(capsys, "ingest", str(docs))
        assert code == 1
        assert "deck.md" in err
        assert all(line.startswith(("warning: ", "error: ")) for line in err.splitlines())
        server.mode = "ok"
        code, out, _ = run(capsys, "ingest", str(docs))
    assert code == 0
    assert "0 added, 1 updated, 0 skipped, 0 failed" in out


def test_verbose_traceback_masks_a_key_the_embeddings_server_echoes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # -v logs the traceback of the error the CLI stops on; it printed the original exception,
    # whose text repeated the key (the WARNING and the error: line were masked already).
    from tests.embedding_server import EmbeddingServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-SUPERSECRETKEY123")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "deck.md", "# Deck\n\nThe holodeck deck opens at dawn.\n")
    with EmbeddingServer(echo_auth_in_errors=True) as server:
        server.mode, server.fail_on, server.fail_status = "fail_on", "", 401  # every request
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        model = ["--embedding-model", "text-embedding-3-small"]
        code, _, err = run(capsys, "-v", "ingest", str(docs), *model)
    assert code == 1
    assert "Traceback (most recent call last)" in err
    assert "openai.AuthenticationError: Error code: 401" in err  # the original exception
    assert "Incorrect API key provided: Bearer ***" in err
    assert "SUPERSECRETKEY" not in err


def test_an_openai_context_model_without_a_key_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # openai's client refuses to be built without a key: ingest printed a 13-frame traceback
    # ending in "openai.OpenAIError: Missing credentials" (a probe)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "deck.md", "# Deck\n\nThe holodeck deck opens at dawn.\n")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs\n"
        "    contextual_embeddings: true\n"
        "    context_model: {provider: openai, name: gpt-4o-mini}\n",
    )
    code, _, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 1
    assert err == (
        "error: context_model 'gpt-4o-mini' uses OpenAI, which needs an API key; set "
        'context_model.api_key ("${OPENAI_API_KEY}") or the OPENAI_API_KEY environment '
        "variable.\n"
    )


def test_search_leaves_the_contexts_a_failing_context_model_left_out_to_ingest(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A file some of whose chunks were indexed without context was re-enriched by every
    # search, test and chat: each called the context model again and waited for it (its
    # timeout, when it hangs), and a retry that worked printed "note: docs changed since the
    # last ingest" though no file had changed. Retrying is ingest's job.
    from tests.embedding_server import EmbeddingServer
    from tests.openai_server import chat_server

    deck_docs_for_an_openai_server(monkeypatch, tmp_path)
    with EmbeddingServer() as embeddings, chat_server() as model:
        monkeypatch.setenv("OPENAI_BASE_URL", embeddings.url)
        agent = write(
            tmp_path / "agent.yaml",
            "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs\n"
            "    embedding_model: text-embedding-3-small\n"
            "    contextual_embeddings: true\n    context_model: {provider: openai, name: m, "
            f'base_url: "{model.base_url}"}}\n',
        )
        model.error_status = 400  # the context model fails (not retried by the client)
        code, _, err = run(capsys, "ingest", "--config", str(agent))
        assert code == 0
        assert "1 of 1 chunks were indexed without context" in err
        asked = len(model.requests)
        model.error_status = 0  # back: a search does not retry, nor wait for it
        code, out, err = run(capsys, "search", "--config", str(agent), "deck")
        assert (code, err) == (0, "")
        assert "deck.md" in out
        assert len(model.requests) == asked
        code, out, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 0
    assert "0 added, 1 updated, 0 skipped, 0 failed" in out
    assert len(model.requests) == asked + 1  # ingest retried the missing context


def test_embedding_timeout_of_the_agent_yaml_bounds_ingest_search_and_serve(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The embeddings request timeout was fixed at 60 s, with no setting; now the tool's
    ``embedding_timeout`` reaches the model ingest, search and serve build. A server taking
    2 s answers within the default but not within 0.5 s."""
    from langchain_holodeck.cli.serve import served_tools
    from tests.embedding_server import EmbeddingServer

    docs = deck_docs_for_an_openai_server(monkeypatch, tmp_path)
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs\n"
        "    embedding_model: text-embedding-3-small\n    embedding_timeout: 0.5\n",
    )
    store = tmp_path / "S"
    at = ("--store", str(store))
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code, out, _ = run(capsys, *at, "ingest", "--config", str(agent))
        assert code == 0
        assert "1 added, 0 updated, 0 skipped, 0 failed" in out
        server.latency = 2.0
        code, out, err = run(capsys, *at, "search", "--config", str(agent), "deck")
        assert code == 0
        assert "deck.md" in out  # the keyword leg's hit
        assert "APITimeoutError" in err  # the dense leg timed out
        write(docs / "deck.md", "# Deck\n\nThe holodeck deck opens at dusk.\n")
        code, _, err = run(capsys, *at, "ingest", "--config", str(agent))
        assert code == 1
        assert "embedding batch of 1 from 'docs/deck.md': APITimeoutError" in err
        assert f"(no answer from {server.url}/embeddings)" in err  # the server, by its URL
        assert err.endswith("(1 chunks could not be embedded; none was written)\n")
        (served,) = served_tools(agent, store, quiet=True)
        model = served.tool.corpus.embeddings
        assert getattr(model, "underlying", model).request_timeout == 0.5


def test_ingest_of_a_missing_source_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "ingest", "no_such_dir")
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("error: source 'no_such_dir' does not exist")


@pytest.mark.parametrize(
    ("command", "store", "problem"),
    [
        (["ingest", "docs"], "afile", "'afile', which is a file"),
        (["ingest", "docs"], "afile/sub", "'afile/sub', but 'afile' is a file"),
        (["search", "token"], "afile", "'afile', which is a file"),
    ],
)
def test_a_store_that_is_a_file_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], command: list[str], store: str, problem: str
) -> None:
    """--store naming a file: ingest embedded every chunk, warned per batch with a cache path
    'Not a directory', then failed with '[Errno 20] Not a directory: 'afile/default''."""
    shutil.copytree(DATA_DIR / "docs", "docs")
    write(Path("afile"), "not a store")
    code, out, err = run(capsys, *command, "--store", store)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        f"error: argument --store: must name a directory (created when missing), got {problem}"
    )
    assert "warning" not in err
    assert Path("afile").read_text(encoding="utf-8") == "not a store"


def test_ingest_of_a_folder_without_supported_files_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "x.bin").write_bytes(b"\x00\x01")
    code, _, err = run(capsys, "-q", "ingest", str(tmp_path / "blobs"))
    assert code == 1
    assert err.startswith("error: source ")
    assert "has no supported file" in err
    assert "warning" not in err  # -q hides the per-file warning


def test_a_source_whose_files_were_all_deleted_stays_an_empty_corpus_run_after_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    gone, store = tmp_path / "gone", str(tmp_path / "st")
    gone.mkdir()
    write(gone / "a.md", "# Tokens\n\nRevoke a token in settings.\n")
    assert run(capsys, "--store", store, "ingest", str(gone))[0] == 0
    (gone / "a.md").unlink()
    code, out, err = run(capsys, "--store", store, "ingest", str(gone))
    assert code == 0, err
    assert "0 added, 0 updated, 0 skipped, 0 failed, 1 deleted; 0 chunks" in out
    for _ in range(2):  # the next runs find nothing stored: still the emptied source
        code, out, err = run(capsys, "--store", store, "ingest", str(gone))
        assert (code, err) == (0, "")
        assert "0 added, 0 updated, 0 skipped, 0 failed, 0 deleted; 0 chunks" in out
        code, out, err = run(capsys, "--store", store, "search", "revoke")
        assert (code, out, err) == (0, "No relevant results found for query: revoke\n", "")
    (tmp_path / "never").mkdir()
    code, out, err = run(capsys, "-q", "--store", store, "ingest", str(tmp_path / "never"))
    assert (code, out) == (1, "")
    assert err.startswith("error: source ")
    assert "has no supported file (found: no files)" in err


def test_ingest_without_source_or_config_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "ingest")
    assert code == 1
    assert err == "error: ingest needs SOURCE (a file or directory), or --config AGENT_YAML.\n"


def test_ingest_of_an_agent_yaml_as_source_says_to_pass_it_as_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """chat, serve and test take AGENT_YAML positionally: ``ingest agent.yaml`` indexed the
    YAML file itself as the 'default' corpus (1 chunk) and said it had ingested it."""
    shutil.copytree(DATA_DIR / "docs", "docs")
    write(  # it need not validate: ${UNSET_URL} is not set
        Path("agent.yaml"),
        "tools:\n  - {type: vectorstore, name: kb, source: docs,"
        " database: {provider: redis, connection_string: '${UNSET_URL}'}}\n",
    )
    code, out, err = run(capsys, "ingest", "agent.yaml")
    assert (code, out) == (1, "")
    assert err == (
        "error: SOURCE 'agent.yaml' is an agent.yaml (tools: kb); ingest its tools with: "
        "holodeck-rag ingest --config agent.yaml [--tool NAME]. To index the file itself as a "
        "document, ingest the folder holding it.\n"
    )
    assert not Path(".holodeck/store/ingest.json").exists()
    write(Path("notes.yaml"), "retries: 3\n")  # any other YAML file is a document
    code, _, err = run(capsys, "-q", "ingest", "notes.yaml")
    assert code == 0, err


def test_bad_config_names_file_field_and_value_on_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: vectorstore\n    name: kb\n    description: Docs\n"
        "    source: docs\n    top_k: 0\n",
    )
    code, out, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"error: {agent}: tools[0].top_k: ")
    assert "got 0" in err


@pytest.mark.parametrize(
    "command",
    [
        ["search", "token", "--config"],
        ["ingest", "--config"],
        ["purge-legacy", "--config"],
        ["tools", "--config"],
        ["chat"],
        ["serve"],
        ["test"],
    ],
)
def test_an_agent_yaml_without_tools_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str]
) -> None:
    agent = write(tmp_path / "empty.yaml", "tools: []\n")
    code, out, err = run(capsys, "--store", str(tmp_path / "store"), *command, str(agent))
    assert (code, out) == (1, "")
    assert err == f"error: {agent}: tools: must contain at least one tool, such as " + (
        "{type: hierarchical_document, name: docs, source: docs}.\n"
    )


def test_a_misspelt_vectorstore_in_the_project_config_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (Path.cwd() / ".holodeck").mkdir()
    config = write(
        Path.cwd() / ".holodeck" / "config.yaml",
        "vector_store: {provider: redis, connection_string: 'redis://localhost:1'}\n",
    )
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "a.md", "# A\n\nText.\n")
    code, out, err = run(capsys, "ingest", str(tmp_path / "docs"))
    assert (code, out) == (1, "")
    assert err == (
        f"error: {config.absolute()}: vector_store: unknown key; allowed keys: vectorstore "
        "(rename vector_store to vectorstore).\n"
    )


def test_a_damaged_documents_file_is_one_error_line_naming_it_and_the_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "a.md", "# Tokens\n\n" + "A token is revoked by DELETE. " * 40)
    store = tmp_path / "sc"
    assert run(capsys, "-q", "--store", str(store), "ingest", str(tmp_path / "docs"))[0] == 0
    (documents,) = (store / "default").glob("documents-*.jsonl")
    documents.write_bytes(documents.read_bytes()[:500])
    for command in (["search", "token"], ["ingest", str(tmp_path / "docs")]):
        code, out, err = run(capsys, "--store", str(store), *command)
        assert (code, out) == (1, "")
        assert err.count("\n") == 1, err  # one line, no fallback warning before it
        assert err.startswith(f"error: the store saved in {store / 'default'} is damaged: ")
        assert f"{str(documents)!r} cannot be read (line 1, column " in err
        assert err.endswith(
            f"Delete the directory {str(store / 'default')!r} and run the ingestion again to "
            "rebuild it.\n"
        )


def test_an_agent_yaml_used_from_another_directory_keeps_its_ingests_project_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An MCP client spawns ``serve /abs/agent.yaml`` from ``/``: the project is the ingest's."""
    project = tmp_path / "proj"
    (project / ".holodeck").mkdir(parents=True)
    (project / "docs").mkdir()
    write(project / "docs" / "a.md", "# Tokens\n\nA token is revoked by sending DELETE.\n")
    write(project / ".holodeck" / "config.yaml", "vectorstore: {provider: qdrant, path: q}\n")
    agent = write(project / "agent.yaml", "tools: [{type: vectorstore, name: kb, source: docs}]\n")
    store = project / ".holodeck" / "store"
    monkeypatch.chdir(project)
    assert run(capsys, "-q", "ingest", "--config", "agent.yaml")[0] == 0
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--store", str(store), "tools", "--config", str(agent))
    assert (code, err) == (0, "")
    assert f"vectors:     qdrant path {project / 'q'}" in out  # not "in-memory"
    code, out, err = run(capsys, "--store", str(store), "search", "--config", str(agent), "revoke")
    assert (code, err) == (0, "")  # no "docs changed since the last ingest": nothing re-embedded
    assert "Source: docs/a.md" in out
    assert not (tmp_path / "q").exists()


def test_an_ingest_in_another_project_than_the_last_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found 2026-12-07: a cron job ingesting /abs/agent.yaml from / moved the tool to /'s
    project (another store) without a word, and every other command followed it."""
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    write(project / "docs" / "a.md", "# Tokens\n\nA token is revoked by sending DELETE.\n")
    agent = write(project / "agent.yaml", "tools: [{type: vectorstore, name: kb, source: docs}]\n")
    store = tmp_path / "store"
    monkeypatch.chdir(project)
    code, _, err = run(capsys, "-q", "--store", str(store), "ingest", "--config", "agent.yaml")
    assert (code, err) == (0, "")
    code, _, err = run(capsys, "--store", str(store), "ingest", "--config", str(agent))
    assert (code, err) == (0, "")  # the same project again: nothing to say
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "--store", str(store), "ingest", "--config", str(agent))
    assert code == 0
    assert err == (
        f"warning: the last ingest of tool 'kb' of {agent} into {store} ran in the project "
        f"{project}; this one runs in {tmp_path} (its .holodeck/config.yaml names the store), "
        "and search, chat, serve and tools will follow it; run ingest from "
        f"{project} to keep that project's store.\n"
    )
    # the agent.yaml spelt through '..' or a link is the same file (a later probe)
    (tmp_path / "other").mkdir()
    (tmp_path / "link").symlink_to(project)
    for cwd, config in (
        (tmp_path / "other", "../proj/agent.yaml"),
        (project, "../link/agent.yaml"),
    ):
        monkeypatch.chdir(cwd)
        code, _, err = run(capsys, "--store", str(store), "ingest", "--config", config)
        assert code == 0
        assert err.startswith("warning: the last ingest of tool 'kb' of "), (cwd, config)


def test_a_source_naming_no_user_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "ingest", "~nosuchuser9")  # a / forgotten after ~
    assert (code, out) == (1, "")
    assert err == (
        "error: SOURCE: ~nosuchuser9 names no user of this machine; write '~/nosuchuser9' for "
        "that folder in the home directory, or './~nosuchuser9' for a folder named so, got "
        "'~nosuchuser9'.\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("ingest", "a"),
        ("ingest", "--config", "agent.yaml"),
        ("search", "--config", "agent.yaml", "tokens"),
    ],
)
def test_a_source_that_is_a_symlink_loop_is_one_error_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
) -> None:
    """Found 2026-12-07 (a probe): ``ln -s b a; ln -s a b; holodeck-rag ingest a`` printed a
    traceback (``RuntimeError: Symlink loop``, from ``Path.resolve()`` in corpus_namespace)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    write(
        tmp_path / "agent.yaml", "tools:\n  - {name: kb, type: hierarchical_document, source: a}\n"
    )
    code, out, err = run(capsys, "--store", "st", *argv)
    assert (code, out) == (1, "")
    assert err == (
        "error: source 'a' is a symlink that cannot be resolved (Too many levels of symbolic "
        f"links: a link loop, or a link to nothing; looked at {str(tmp_path / 'a')!r}); point "
        "it at an existing file or directory.\n"
    )


def test_an_ingested_source_become_a_symlink_loop_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "a.md", "# Tokens\n\nRevoke a token in settings.\n")
    assert run(capsys, "-q", "--store", "st", "ingest", "docs")[0] == 0
    shutil.rmtree(tmp_path / "docs")
    (tmp_path / "docs").symlink_to("loop")
    (tmp_path / "loop").symlink_to("docs")
    for argv in (("ingest", "docs"), ("search", "tokens")):
        code, out, err = run(capsys, "--store", "st", *argv)
        assert (code, out) == (1, ""), argv
        assert err.startswith("error: "), argv
        assert err.count("\n") == 1, (argv, err)


def test_an_empty_source_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found 2026-12-07 (a probe): ``holodeck-rag ingest "$DOCS"`` with DOCS unset printed a
    pydantic ValidationError traceback; with --config, a ValueError's."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "agent.yaml", "tools:\n  - {name: kb, type: vectorstore, source: docs}\n")
    for argv in (("ingest", ""), ("ingest", "--config", "agent.yaml", "")):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (1, ""), argv
        assert err == (
            "error: SOURCE must not be empty, got '' (an unset shell variable, as in "
            'holodeck-rag ingest "$DOCS"?); pass a file or directory, e.g. holodeck-rag ingest '
            "docs.\n"
        )
    assert list(tmp_path.iterdir()) == [tmp_path / "agent.yaml"]  # nothing written


@pytest.mark.parametrize(
    "argv",
    [
        ("chat", ""),
        ("serve", ""),
        ("test", ""),
        ("ingest", "--config", ""),
        ("search", "--config", "", "tokens"),
        ("tools", "--config", ""),
    ],
)
def test_an_empty_agent_yaml_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    """It was taken as '.', the working directory: "error: .: is a directory"."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        ": must name an agent.yaml, got '' (an unset shell variable?)"
    )


def test_a_folder_whose_name_is_not_utf8_is_ingested_as_source_and_as_an_agent_yamls_home(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / os.fsdecode(b"caf\xe9")  # 'caf\udce9', as argv gives it
    folder.mkdir()
    write(folder / "a.md", "# Tokens\n\nA token is revoked by sending DELETE.\n")
    write(folder / "agent.yaml", "tools: [{type: vectorstore, name: kb, source: .}]\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "--store", "s1", "ingest", folder.name)
    assert (code, err) == (0, "")  # was pydantic's ValidationError (string_unicode), traced
    assert out.startswith("ingested caf\\xe9 into 'default' ")  # spelt: any stdout takes it
    assert " 2 added, " in out  # a.md and agent.yaml
    code, out, err = run(capsys, "--store", "s2", "ingest", "--config", str(folder / "agent.yaml"))
    assert (code, err) == (0, "")  # was UnicodeEncodeError in uuid5 (the corpus namespace)
    assert " 2 added, " in out  # a.md and agent.yaml
    code, out, err = run(capsys, "--store", "s1", "search", "revoke")
    assert (code, err) == (0, "")
    assert "Source: caf\\xe9/a.md" in out  # as the loader spells such names


def test_a_search_after_the_ingested_agent_yaml_moved_or_its_tool_was_renamed_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "a.md", "# Tokens\n\nA token is revoked by sending DELETE.\n")
    agent = write(tmp_path / "agent.yaml", "tools: [{type: vectorstore, name: kb, source: docs}]\n")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "-q", "ingest", "--config", "agent.yaml")[0] == 0
    recorded = Path(".holodeck/store/ingest.json")  # the store read, as given
    said = f"error: {recorded} records the last ingest as tool 'kb' of {agent}, but "
    fix = "; pass --config AGENT_YAML (and --tool NAME), or ingest again.\n"
    agent.rename(tmp_path / "old.yaml")
    for command in ("search", "tools"):
        argv = [command, "revoke"] if command == "search" else [command]
        code, out, err = run(capsys, *argv)
        assert (code, out) == (1, "")
        assert err == said + "that file is gone (moved or renamed?)" + fix  # was "file not found"
    write(agent, "tools: [{type: vectorstore, name: kb2, source: docs}]\n")
    code, out, err = run(capsys, "search", "revoke")
    assert (code, out) == (1, "")
    assert err == said + "that file has no tool 'kb' now (renamed?)" + fix  # not "--tool 'kb'"


def test_unknown_tool_name_lists_the_tools(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: hierarchical_document\n    name: legal\n    source: legal\n",
    )
    code, _, err = run(capsys, "ingest", "--config", str(agent), "--tool", "leagl")
    assert code == 1
    assert "--tool 'leagl' is not a tool of this file; its tools: legal" in err


# -- search ---------------------------------------------------------------------------------
def test_search_prints_the_tool_format(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "search", "revoke a token", "--store", str(ingested.store))
    assert code == 0, err
    # The default tool shows 5 results (of 8+ chunks) unless --top-k says otherwise.
    header = r"Found 5 result\(s\):\n\n\[1\] Score: [01]\.\d{2} \| Source: docs/auth\.md"
    assert re.match(header, out)
    first = out.split("\n\n[2]")[0]
    assert "A token is revoked by sending DELETE to /tokens/{id}." in first
    assert "explain:" not in out


def _guide_and_a_png(tmp_path: Path) -> Path:
    """A folder of one Markdown guide and one PNG (an unsupported file)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    write(docs / "guide.md", "# Guide\n\nThe replicator makes earl grey, hot.\n")
    (docs / "diagram.png").write_bytes(b"\x89PNG\r\n")
    return docs


def test_search_does_not_repeat_the_ingests_unsupported_files_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = _guide_and_a_png(tmp_path)
    store = str(tmp_path / "store")
    code, _, err = run(capsys, "ingest", str(docs), "--store", store)
    assert code == 0, err
    assert "Skipping 1 file of unsupported types: png 1" in err
    code, out, err = run(capsys, "search", "earl grey", "--store", store)
    assert code == 0, err
    assert out.startswith("Found 1 result(s):")
    assert err == ""  # the re-check before searching found the same png: no warning again
    code, _, err = run(capsys, "-v", "search", "earl grey", "--store", store)
    assert code == 0, err
    assert "Skipping 1 file of unsupported types: png 1" in err  # still there at -v (DEBUG)


def test_search_does_not_repeat_the_ingests_walk_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A dangling link is warned about by the ingest, named as source_path names files, and
    not again by every search that re-checks the source."""
    docs = _guide_and_a_png(tmp_path)
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    store = str(tmp_path / "store")
    code, _, err = run(capsys, "ingest", str(docs), "--store", store)
    assert code == 0, err
    assert f"warning: Skipping symlink {docs.name}/gone.md: cannot resolve it" in err
    code, out, err = run(capsys, "search", "earl grey", "--store", store)
    assert code == 0, err
    assert out.startswith("Found 1 result(s):")
    assert err == ""


def test_a_first_ingest_by_test_warns_about_unsupported_files_and_a_second_does_not(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = _guide_and_a_png(tmp_path)
    agent = write(
        tmp_path / "agent.yaml",
        f"tools:\n  - type: hierarchical_document\n    name: kb\n    source: {docs}\n"
        "tests:\n  - {query: earl grey, source: guide.md, k: 1}\n",
    )
    store = str(tmp_path / "store")
    warning = "Skipping 1 file of unsupported types: png 1"
    code, out, err = run(capsys, "test", str(agent), "--store", store)
    assert code == 0, out + err
    assert warning in err  # this run ingested the corpus: the skipped png is news
    code, out, err = run(capsys, "test", str(agent), "--store", store)
    assert code == 0, out + err
    assert warning not in err  # the same walk again: said before


def test_reingesting_from_another_directory_rewrites_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """source_path starts with the source folder's name, whatever path names it: the same
    folder given by another path (from its parent directory) skips every chunk."""
    project = tmp_path / "project"
    shutil.copytree(DATA_DIR / "docs", project / "docs")
    store = str(tmp_path / "store")
    monkeypatch.chdir(project)
    code, out, err = run(capsys, "ingest", "docs", "--store", store)
    assert code == 0, err
    added = int(re.search(r"(\d+) added", out)[1])  # type: ignore[index]  # the summary
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "ingest", "project/docs", "--store", store)
    assert code == 0, err
    assert f"0 added, 0 updated, {added} skipped, 0 failed, 0 deleted" in out
    code, out, err = run(capsys, "search", "revoke a token", "--json", "--store", store)
    assert code == 0, err
    assert json.loads(out)[0]["source_path"] == "docs/auth.md"


def test_ingesting_another_source_into_the_store_says_the_earlier_corpus_is_kept_not_searched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ingest A then ingest B into one --store: A's chunks stayed (their own namespace) but
    search used B only, and nothing said so. Now one warning names both and the way back;
    nothing of A is deleted, and ingesting A again switches back without embedding."""
    monkeypatch.chdir(tmp_path)
    for name, text in (("A", "The arch opens on deck four."), ("B", "Replicators serve tea.")):
        Path(name).mkdir()
        write(Path(name) / f"{name.lower()}.md", f"# {name}\n\n{text}\n")
    assert run(capsys, "ingest", "A", "--store", "st")[0] == 0
    code, out, err = run(capsys, "ingest", "B", "--store", "st")
    assert (code, "1 added", "0 deleted") == (0, *re.findall(r"1 added|0 deleted", out))
    [line] = err.splitlines()
    assert line.startswith(f"warning: st holds the 'default' corpus of {tmp_path / 'A'} (ingested ")
    assert "its chunks are kept, but search, chat, serve and tools" in line
    assert f"will use {tmp_path / 'B'}. Ingest {tmp_path / 'A'} again to switch back" in line
    code, out, err = run(capsys, "search", "arch deck four", "--json", "--store", "st")
    assert {hit["source_path"] for hit in json.loads(out)} == {"B/b.md"}
    code, out, err = run(capsys, "ingest", "A", "--store", "st")
    assert "0 added, 0 updated, 1 skipped" in out  # A's chunks were kept: nothing re-embedded
    assert f"corpus of {tmp_path / 'B'} (ingested " in err
    code, out, err = run(capsys, "search", "arch deck four", "--json", "--store", "st")
    assert json.loads(out)[0]["source_path"] == "A/a.md"
    code, out, err = run(capsys, "ingest", "./A/", "--store", "st")
    assert err == ""  # the same source again: no warning
    # a source that cannot be ingested (a typo, no supported file) switches nothing: no warning
    Path("C").mkdir()
    write(Path("C") / "c.png", "not an image")
    for wrong in ("Typo", "C"):
        code, out, err = run(capsys, "ingest", wrong, "--store", "st")
        assert code == 1
        assert [line.split(":")[0] for line in err.splitlines()] == ["error"], err
    code, out, err = run(capsys, "search", "arch deck four", "--json", "--store", "st")
    assert json.loads(out)[0]["source_path"] == "A/a.md"


def test_every_command_uses_the_source_an_ingest_gave_a_config_tool(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest --config F --tool T OTHER``: search, chat, test, serve and tools then use
    OTHER, as ``ingest --help`` says (found 2026-12-07: only search did; serve opened the
    configured source's empty corpus and every call answered 'No relevant results')."""
    from langchain_holodeck.cli.chat import session_tools
    from langchain_holodeck.cli.serve import served_tools
    from langchain_holodeck.config.models import load_agent_config

    monkeypatch.chdir(tmp_path)
    for folder, text in (("docs", "# Tokens\n\nRevoke by DELETE.\n"),
                         ("other", "# Zebra handbook\n\nZebras wait nine days.\n")):  # fmt: skip
        Path(folder).mkdir()
        write(Path(folder) / f"{folder}.md", text)
    agent = write(
        Path("agent.yaml"),
        "tools:\n  - {type: hierarchical_document, name: hier, description: Docs., "
        "source: docs}\ntests:\n  - {query: zebras wait, source: other/other.md, k: 1}\n",
    )
    assert run(capsys, "ingest", "--config", "agent.yaml", "--tool", "hier", "other")[0] == 0
    code, out, err = run(capsys, "test", "agent.yaml")
    assert code == 0, out + err
    code, out, _ = run(capsys, "tools", "--config", "agent.yaml")
    assert f"source:      {tmp_path / 'other'}" in out
    (served,) = served_tools(agent.absolute(), Path(".holodeck/store"), quiet=True)
    assert "other/other.md" in served.search("zebras wait", 1)[0]
    config = load_agent_config(agent)
    (tool,) = session_tools(config, agent, Path(".holodeck/store"), force_ingest=False, quiet=True)
    assert "other/other.md" in tool.search_sync("zebras wait")
    assert tool.document_count == 1  # docs/ was not ingested beside it
    # a damaged ingest.json tells nothing: the tool as configured, with a warning
    Path(".holodeck/store/ingest.json").write_text("{not json", encoding="utf-8")
    code, out, err = run(capsys, "tools", "--config", "agent.yaml")
    assert code == 0, err
    assert f"source:      {tmp_path / 'docs'}" in out
    assert err.startswith("warning: .holodeck/store/ingest.json is not a valid ingest manifest")
    assert err.rstrip().endswith("run `holodeck-rag ingest` again; using hier as configured.")


def test_search_help_names_every_json_key(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "--help")
    assert code == 0
    listed = out.split("--json prints", 1)[1]
    assert [k for k in sorted(JSON_KEYS) if not re.search(rf"\b{k}\b", listed)] == []


def test_search_json_is_a_list_with_the_documented_keys(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "search", "revoke a token", "--json", "--top-k", "3", "--store", str(ingested.store)
    )
    assert code == 0, err
    records = json.loads(out)
    assert [r["rank"] for r in records] == [1, 2, 3]  # --top-k respected
    assert all(set(r) == JSON_KEYS for r in records)
    top = records[0]
    assert top["source_path"] == "docs/auth.md"
    assert "revoked" in top["text"]
    assert top["score"] == top["fused_score"] > 0
    assert all(0 <= r["score"] <= 1 for r in records)  # the shown score: fused / best attainable
    assert top["semantic_score"] is not None  # the raw per-leg scores stay in the JSON
    assert top["semantic_rank"] == 1
    assert isinstance(top["parent_chain"], list)
    assert isinstance(top["exact_match"], bool)


def test_search_explain_shows_per_modality_ranks(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "search", "HTTP status 429", "--explain", "-k", "2", "--store", str(ingested.store)
    )
    assert code == 0, err
    assert out.startswith("Found 2 result(s):")
    explains = re.findall(r"^    explain: (.*)$", out, flags=re.MULTILINE)
    assert len(explains) == 2
    assert re.fullmatch(
        r"fused [01]\.\d{4} \| semantic (#\d+ 0\.\d{4}|-) \| keyword #1 \d+\.\d{4} \| exact -",
        explains[0],
    )
    assert "Source: docs/api.md" in out.split("\n")[2]


def test_explain_and_json_show_the_engines_rank_where_the_store_fused() -> None:
    from langchain_core.documents import Document

    from langchain_holodeck.cli._format import explain_line, result_record

    native = {
        "fused_score": 1.0,
        "semantic_score": 0.644,
        "semantic_rank": None,
        "keyword_score": None,
        "keyword_rank": None,
        "exact_match": False,
        "exact_rank": None,
        "native_rank": 1,
        "native_score": 0.0328,
    }
    line = explain_line(Document(page_content="x", metadata=native))
    assert line == "fused 1.0000 | engine #1 0.0328 | semantic 0.6440 | exact -"
    fallback = {**native, "semantic_rank": 2, "keyword_rank": 1, "keyword_score": 2.444}
    del fallback["native_rank"], fallback["native_score"]
    line = explain_line(Document(page_content="x", metadata=fallback))
    assert line == "fused 1.0000 | semantic #2 0.6440 | keyword #1 2.4440 | exact -"
    records = [
        result_record(1, Document(page_content="x", metadata=m), hybrid=True)
        for m in (native, fallback)
    ]
    assert (records[0]["native_rank"], records[0]["native_score"]) == (1, 0.0328)
    assert (records[1]["native_rank"], records[1]["native_score"]) == (None, None)


def test_search_top_k_limits_the_results(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "search", "holodeck", "-k", "1", "--store", str(ingested.store))
    assert code == 0
    assert out.startswith("Found 1 result(s):")
    assert "[2]" not in out


def test_search_before_any_ingest_is_an_error_with_a_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "search", "anything", "--store", str(tmp_path / "empty"))
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("error: nothing ingested in ")
    assert "holodeck-rag ingest SOURCE" in err


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("source", 5, "source must be str, got 5"),
        ("base_dir", None, "base_dir must be str, got null"),
        ("config", [], "config must be str or null, got []"),
        ("source_overridden", 1, "source_overridden must be bool, got 1"),
        ("format", True, "format must be int, got true"),
        ("source", "", "source: String should have at least 1 character"),
        ("embedding_model", "nonsense", "embedding_model: Value error, must be an OpenAI"),
    ],
)
@pytest.mark.parametrize("command", ["search", "chat", "tools"])
def test_a_hand_edited_manifest_of_a_wrong_type_is_one_error_line(
    ingested: Ingested,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    field: str,
    value: object,
    said: str,
) -> None:
    store = tmp_path / "st"
    store.mkdir()
    recorded = json.loads((ingested.store / "ingest.json").read_text(encoding="utf-8"))
    write(store / "ingest.json", json.dumps({**recorded, field: value}))
    argv = [command, "--store", str(store)] + (["revoke"] if command == "search" else [])
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err == (
        f"error: {store}/ingest.json is not a valid ingest manifest ({said}"
        + err.split(said, 1)[-1]
    )
    assert err.endswith("); run `holodeck-rag ingest` again.\n")
    assert err.count("\n") == 1


def _interrupted(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    ("command", "syncs"),
    [
        ("search", "langchain_holodeck.cli.main._sync_known"),
        ("test", "langchain_holodeck.cli.regression.sync_known"),
        ("chat", "langchain_holodeck.cli.chat.sync_known"),
    ],
)
def test_ctrl_c_in_search_test_or_chat_says_it_stopped_not_how_to_resume_an_ingest(
    ingested: Ingested,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    syncs: str,
) -> None:
    agent = write(
        tmp_path / "agent.yaml",
        f"tools:\n  - {{type: vectorstore, name: kb, source: {ingested.workdir / 'docs'}}}\n"
        "tests:\n  - {query: revoke a token, source: auth.md}\n",
    )
    module, name = syncs.rsplit(".", 1)  # cli.main is also the name of the function
    monkeypatch.setattr(importlib.import_module(module), name, _interrupted)  # Ctrl-C now
    argv = {"search": ["search", "revoke"], "test": ["test", str(agent)], "chat": ["chat"]}
    code, out, err = run(capsys, *argv[command], "--store", str(ingested.store))
    assert (code, out) == (130, "")
    assert err == f"interrupted: {command} stopped before it finished; the store is intact.\n"


def test_ctrl_c_in_purge_legacy_does_not_call_the_store_intact() -> None:
    """A purge stopped halfway has deleted some chunks: 'the store is intact' would be false."""
    from langchain_holodeck.cli._interrupt import command_interrupted

    assert command_interrupted("purge-legacy") == (
        "interrupted: purge-legacy stopped before it finished; run it again to finish."
    )
    assert command_interrupted("search").endswith("the store is intact.")


def test_search_with_an_empty_query_is_an_error(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "search", "  ", "--store", str(ingested.store))
    assert code == 1
    assert err.startswith("error: QUERY is empty")


def test_ingest_and_search_a_config_tool(
    ingested: Ingested, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    shutil.copytree(ingested.workdir / "legal", project / "legal")
    agent = write(
        project / "agent.yaml",
        "tools:\n  - type: hierarchical_document\n    name: act\n    source: legal\n",
    )
    store = tmp_path / "store"
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--store", str(store))
    assert code == 0, err
    assert out.startswith(f"ingested legal into 'act' (in-memory, saved in {store / 'act'}): ")
    # search finds the tool from the manifest; the section number wins the exact leg.
    code, out, err = run(capsys, "search", "Section 202", "--explain", "--store", str(store))
    assert code == 0, err
    header, explain = out.split("\n")[2:4]
    assert "Source: legal/holodeck_act.md" in header
    assert "202" in header
    assert explain.endswith("| exact #1")


def test_a_config_tool_source_under_home_is_found_and_re_ingests_nothing(
    ingested: Ingested,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `source: ~/legal` was looked up at <agent.yaml's dir>/~/legal: error, exit 1
    home = tmp_path / "home"
    shutil.copytree(ingested.workdir / "legal", home / "legal")
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "project").mkdir()
    agent = write(
        tmp_path / "project" / "agent.yaml",
        "tools:\n  - type: hierarchical_document\n    name: act\n    source: ~/legal\n",
    )
    store = tmp_path / "store"
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--store", str(store))
    assert code == 0, err
    assert out.startswith("ingested ~/legal into 'act' ")
    code, out, err = run(capsys, "search", "Section 202", "--store", str(store))
    assert code == 0, err
    assert "Source: legal/holodeck_act.md" in out
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--store", str(store))
    assert code == 0, err
    assert ": 0 added, 0 updated, " in out


def test_opensearch_down_is_one_warning_per_search_without_the_clients_own_lines(
    ingested: Ingested, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # opensearch-py logged `HEAD http://.../holodeck_keywords [status:N/A ...]` per attempt
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    shutil.copytree(ingested.workdir / "legal", tmp_path / "legal")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - {type: hierarchical_document, name: act, source: legal, keyword_index:"
        f" {{provider: opensearch, endpoint: 'http://127.0.0.1:{port}', timeout: 2}}}}\n",
    )
    store = str(tmp_path / "store")
    code, _, err = run(capsys, "ingest", "--config", str(agent), "--store", store)
    assert code == 0, err
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        "warning: sync: keyword index update failed"
    ]
    code, out, err = run(capsys, "search", "Section 202", "--store", store)
    assert code == 0, err
    assert "holodeck_act.md" in out  # the dense and exact legs answer
    assert [line.split(" (")[0] for line in err.splitlines()] == [
        "warning: HybridRetriever: the keyword search failed"
    ]
    code, _, err = run(capsys, "search", "Section 202", "--store", store, "-vv")
    assert code == 0, err
    assert f"WARNING opensearch: HEAD http://127.0.0.1:{port}/holodeck_keywords" in err


# -- tools ----------------------------------------------------------------------------------
def test_tools_says_the_keyword_index_a_redis_one_falls_back_to(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Found 2026-12-07: keyword_index: {provider: redis} on the in-memory store was shown as
    "redis full-text on the vector index", while ingest used the in-memory BM25 index."""
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - {type: hierarchical_document, name: act, source: legal,\n"
        "     keyword_index: {provider: redis}}\n",
    )
    code, out, err = run(capsys, "tools", "--config", str(agent), "--store", "st")
    assert code == 0, err
    assert (
        "  keywords:    in-memory BM25 (keyword_index redis needs the Redis vector store; this "
        "one is in-memory)\n"
    ) in out


def test_tools_lists_each_tool_and_where_its_data_lives(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLI_TEST_REDIS", "redis://:s3cret@db.example:6379/0")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n"
        "  - type: vectorstore\n    name: kb\n    description: Crew docs\n    source: docs\n"
        "  - type: hierarchical_document\n    name: act\n    source: legal\n"
        "    database:\n      provider: redis\n      connection_string: ${CLI_TEST_REDIS}\n"
        "      index_name: act_vectors\n",
    )
    code, out, err = run(capsys, "tools", "--config", str(agent), "--store", "st")
    assert code == 0, err
    kb, act = out.strip().split("\n\n")
    assert kb.splitlines()[0] == "kb (vectorstore)"
    assert f"  source:      {tmp_path / 'docs'}" in kb
    assert f"  vectors:     in-memory, saved in {Path('st') / 'kb'}" in kb
    assert "  keywords:    none (dense search only)" in kb
    assert "  search:      dense only" in kb
    assert act.splitlines()[0] == "act (hierarchical_document)"
    assert "  vectors:     redis redis://:***@db.example:6379/0, index act_vectors" in act
    assert "in-memory BM25" in act
    assert "s3cret" not in out


def test_tools_without_config_describes_the_last_ingest(
    ingested: Ingested, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "tools", "--store", str(ingested.store))
    assert code == 0
    assert out.startswith("default (hierarchical_document)\n")
    assert "  search:      fallback (convex score fusion in-process; search_strategy: auto)" in out
    assert f"  source:      {ingested.workdir / 'docs'}" in out


# -- help and progress ----------------------------------------------------------------------
@pytest.mark.parametrize("command", [[], ["ingest"], ["search"], ["tools"]])
def test_help_exits_zero(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert out.startswith(" ".join(["usage: holodeck-rag", *command]))


def test_every_option_in_help_says_what_it_does_and_its_default() -> None:
    from langchain_holodeck.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, command in {"": parser, **commands}.items():
        for action in command._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            option = f"{name} {action.option_strings[-1]}"
            assert len(action.help or "") > 10, option
            shown = action.default not in (None, False, argparse.SUPPRESS)
            if shown and not isinstance(action, argparse._VersionAction):
                assert "default" in action.help, option


def test_usage_error_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "x", "--top-k", "0")
    assert code == 2
    assert "--top-k: must be an integer from 1 to 100, got '0'" in err


@pytest.mark.parametrize("store", ["", "  "])
@pytest.mark.parametrize("before_the_verb", [True, False])
def test_an_empty_store_is_refused_and_nothing_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, store: str, before_the_verb: bool
) -> None:
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "a.md", "# A\n\nText.\n")
    ingest = ["ingest", str(tmp_path / "docs")]
    argv = ["--store", store, *ingest] if before_the_verb else [*ingest, "--store", store]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        f"error: argument --store: must name a directory (default: .holodeck/store), got {store!r}"
    )
    assert list(Path.cwd().iterdir()) == []  # no default/ nor ingest.json in the working dir


def test_progress_bars_draw_files_chunks_and_embeddings() -> None:
    stream = io.StringIO()
    with ProgressBars(enabled=True, stream=stream) as bars:
        for _ in range(5):
            bars(IngestProgress("files", 1, 5))
        bars(IngestProgress("chunks", 9, 9))
        bars(IngestProgress("embeddings", 4, 9))
        bars(IngestProgress("embeddings", 5, 9))
    text = stream.getvalue()
    assert "files     : 100%" in text
    assert "5/5" in text
    assert "chunks    : 100%" in text
    assert "embeddings: 100%" in text
    assert "9/9" in text


def test_progress_bars_disabled_draw_nothing() -> None:
    stream = io.StringIO()
    with ProgressBars(enabled=False, stream=stream) as bars:
        bars(IngestProgress("files", 1, 1))
    assert stream.getvalue() == ""


def test_unreachable_redis_without_fallback_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n"
        "  - type: vectorstore\n    name: kb\n    description: Crew docs\n    source: docs\n"
        "    database:\n      provider: redis\n      connection_string: redis://127.0.0.1:1\n"
        "      fallback_to_memory: false\n",
    )
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--store", str(tmp_path / "s"))
    assert code == 1
    assert out == ""
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line.startswith("error: Redis at redis://127.0.0.1:1 is unavailable")
    assert "falling back" not in err


def _model_down(self: OnnxEmbeddings, texts: object) -> list[list[float]]:
    msg = "embedding service unavailable"
    raise ConnectionError(msg)


def test_ingest_with_the_embedding_model_down_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.setattr(OnnxEmbeddings, "embed_documents", _model_down)
    monkeypatch.setattr(OnnxEmbeddings, "embed_query", _model_down)
    code, out, err = run(capsys, "ingest", str(tmp_path / "docs"), "--store", str(tmp_path / "s"))
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert line.startswith(
        "error: Failed to generate embeddings: ConnectionError: embedding service unavailable"
    )


def test_search_with_the_embedding_model_down_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: vectorstore\n    name: kb\n    description: Crew docs\n"
        "    source: docs\n",
    )
    store = str(tmp_path / "s")
    code, _, err = run(capsys, "ingest", "--config", str(agent), "--store", store)
    assert code == 0, err
    monkeypatch.setattr(OnnxEmbeddings, "embed_query", _model_down)
    code, out, err = run(capsys, "search", "revoke a token", "--store", store)
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines()[-1] == (
        "error: Failed to generate query embedding: ConnectionError: embedding service unavailable"
    )


def test_purge_legacy_deletes_only_the_old_namespace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from langchain_core.documents import Document

    from langchain_holodeck.sync import sync_documents
    from langchain_holodeck.vectorstores import MatrixVectorStore, scan_documents
    from tests.helpers import HashingEmbeddings

    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: vectorstore\n    name: kb\n    description: d\n    source: docs\n"
        "    embedding_model: sentence-transformers/all-MiniLM-L6-v2\n",
    )
    store_dir = tmp_path / "s"
    assert run(capsys, "ingest", "--config", str(agent), "--store", str(store_dir))[0] == 0
    store = MatrixVectorStore.load(store_dir / "kb", HashingEmbeddings(384))
    own = len(list(store.iter_documents()))
    old = [Document(page_content="old", metadata={"source_path": "docs/api.md"})]
    sync_documents(old, store, namespace="kb")
    store.dump(store_dir / "kb")
    purge = ("purge-legacy", "--config", str(agent), "--store", str(store_dir))
    code, out, err = run(capsys, *purge)  # without --yes: a pin elsewhere is possible
    assert (code, out) == (1, "")
    assert "error: purge-legacy: 1 chunk(s) under namespace 'kb' do not say" in err
    assert "nothing deleted. Run again with --yes if no project pins corpus_id: kb." in err
    stored = MatrixVectorStore.load(store_dir / "kb", HashingEmbeddings(384))
    assert len(list(scan_documents(stored, namespace="kb"))) == 1
    code, out, err = run(capsys, *purge, "--yes")
    assert code == 0, err
    assert out.startswith("deleted 1 legacy chunk(s) of namespace 'kb' from in-memory")
    left = MatrixVectorStore.load(store_dir / "kb", HashingEmbeddings(384))
    assert list(scan_documents(left, namespace="kb")) == []
    assert len(list(left.iter_documents())) == own
    # none left: nothing to refuse (found 2026-12-07: exit 1 claiming there were such chunks)
    code, out, err = run(capsys, *purge)
    assert (code, err) == (0, "")
    assert out.startswith("no legacy chunk of namespace 'kb' in in-memory")


def test_purge_legacy_refuses_a_namespace_another_tool_pins(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 25 item 10: the README's way to keep old chunks (corpus_id: <tool name>) made
    purge-legacy of that tool name delete the pinned corpus's live chunks."""
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n  - type: vectorstore\n    name: kb\n    description: d\n    source: docs\n"
        "  - type: vectorstore\n    name: archive\n    description: d\n    source: docs\n"
        "    corpus_id: kb\n",
    )
    code, out, err = run(
        capsys, "purge-legacy", "--config", str(agent), "--tool", "kb", "--store", "s"
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"error: purge-legacy: namespace 'kb' is the corpus_id of tool(s) 'archive' in {agent}, "
        "so its chunks are live, not legacy; nothing deleted. Remove corpus_id: kb from them "
        "first to purge."
    ]
    assert not (tmp_path / "s").exists()


def test_initialize_known_holds_only_its_own_threads_skip_summary(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """``serve`` may build two tools at once: one's re-check must not lower the other's news."""
    from langchain_holodeck.cli._targets import initialize_known
    from langchain_holodeck.loaders import SKIP_SUMMARY
    from langchain_holodeck.sync import SyncResult

    loaders = logging.getLogger("langchain_holodeck.loaders")

    def summary(text: str) -> None:
        loaders.warning(text, extra={SKIP_SUMMARY: True})

    class Rechecked:  # a re-check of a stored corpus: nothing added, all skipped
        def initialize_sync(
            self,
            *,
            force_ingest: bool = False,
            on_progress: object = None,
            retry_contexts: bool = True,
            save_errors: str = "raise",
        ) -> SyncResult:
            other = threading.Thread(target=summary, args=("other tool's first ingest",))
            other.start()
            other.join()
            summary("this tool's re-check")
            return SyncResult(skipped=1)

    with caplog.at_level(logging.DEBUG, logger="langchain_holodeck.loaders"):
        initialize_known(Rechecked(), tmp_path)  # type: ignore[arg-type]  # the one method it calls
    levels = {r.getMessage(): r.levelname for r in caplog.records}
    assert levels == {"other tool's first ingest": "WARNING", "this tool's re-check": "DEBUG"}


def test_a_redis_password_in_the_query_is_masked_in_tools_and_ingest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``?password=`` (redis-py reads it): never printed by ``tools``, ``ingest`` or errors."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0?password=qsecretXYZ")
    agent = write(
        tmp_path / "agent.yaml",
        "tools:\n"
        "  - type: vectorstore\n    name: kb\n    description: Crew docs\n    source: docs\n"
        "    database: {provider: redis, connection_string: '${REDIS_URL}'}\n",
    )
    code, out, err = run(capsys, "tools", "--config", str(agent))
    assert code == 0
    assert "redis redis://127.0.0.1:1/0?password=***" in out
    assert "qsecret" not in out + err
    store = str(tmp_path / "s")
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--store", store)
    assert "Redis at redis://127.0.0.1:1/0?password=*** is unavailable" in err
    assert "qsecret" not in out + err
    monkeypatch.setenv("REDIS_URL", "http://127.0.0.1:1/0?password=qsecretXYZ")
    code, out, err = run(capsys, "tools", "--config", str(agent))
    assert code == 1
    assert "got 'http://127.0.0.1:1/0?password=***'" in err
    assert "qsecret" not in out + err


def test_a_dense_only_tool_says_so_explains_its_one_score_and_names_the_source_it_reads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``vectorstore`` tool given another SOURCE (``ingest --config agent.yaml docs`` over
    ``source: nothere``): the summary ended ``search strategy fallback`` where ``tools`` says
    ``dense only``, ``--explain`` showed ``fused 1.0000`` under ``Score: 0.33``, and the
    default description, which MCP clients and agents read, named nothere (found 2026-12-07)."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / "agent.yaml", "tools:\n  - {type: vectorstore, name: kb, source: nothere}\n")
    code, out, err = run(capsys, "ingest", "--config", "agent.yaml", "docs")
    assert (code, err) == (0, "")
    assert out.endswith(" chunks/s); search dense only\n")
    code, out, _ = run(capsys, "tools", "--config", "agent.yaml")
    assert "  description: Search the documents in docs by meaning.\n" in out
    assert "  search:      dense only\n" in out
    code, out, err = run(capsys, "search", "revoke a token", "-k", "1", "--explain")
    assert (code, err) == (0, "")
    shown = re.findall(r"^\[1\] Score: (\d\.\d\d) \| Source: docs/auth\.md$", out, re.MULTILINE)
    explained = re.findall(r"^    explain: semantic #1 (0\.\d{4})$", out, re.MULTILINE)
    assert len(shown) == len(explained) == 1, out
    assert f"{float(explained[0]):.2f}" == shown[0]  # the score the header shows
