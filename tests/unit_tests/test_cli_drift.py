"""What the CLI says when the present differs from ``STORE/ingest.json``: a moved project,
another store, a tool setting an upgrade changed.

Runs the real local model (all-MiniLM-L6-v2, offline) on one small file per source.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from langchain_holodeck.cli.chat import session_tools
from langchain_holodeck.corpus import corpus_namespace
from langchain_holodeck.embeddings import embedding_model_id, resolve_embeddings
from langchain_holodeck.errors import HolodeckError
from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings
from tests.helpers import run_cli as run

TOKENS = "# Tokens\n\nA token is revoked by sending DELETE to /tokens/{id}.\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path/proj`` holding ``docs/tokens.md``; the test runs there, HOME in tmp_path."""
    (tmp_path / "proj" / "docs").mkdir(parents=True)
    (tmp_path / "proj" / "docs" / "tokens.md").write_text(TOKENS, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path / "proj"


def moved(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``mv proj proj2 && cd proj2``."""
    monkeypatch.chdir(project.parent)
    project.rename(project.parent / "proj2")
    monkeypatch.chdir(project.parent / "proj2")
    return project.parent / "proj2"


def test_a_search_after_the_project_moved_names_the_manifest_and_the_ingest_to_run(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest docs``, ``mv proj proj2``, ``search``: the source is rebuilt from
    ingest.json's base_dir, gone (found 2026-12-07: ``error: source 'docs' does not exist
    (looked at '/x/proj/docs'); pass an existing file or directory.``, an argument search
    does not take). The folder here is not followed: another root is another corpus."""
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    here = moved(project, monkeypatch)
    store = Path(".holodeck/store")
    before = sorted(p.name for p in (store / "default").iterdir())
    said = (
        f"error: .holodeck/store/ingest.json records the last ingest as 'docs' in {project}, "
        f"and {project} is gone (the project moved or was renamed?); run `holodeck-rag ingest "
        "docs` where docs is now (a folder at another path is another corpus: its files are "
        "embedded anew; an agent.yaml tool with corpus_id keeps one corpus across moves).\n"
    )
    assert run(capsys, "search", "revoke a token") == (1, "", said)
    with pytest.raises(HolodeckError, match="records the last ingest as 'docs'"):
        session_tools(None, None, store, force_ingest=False, quiet=True)  # chat's
    assert sorted(p.name for p in (store / "default").iterdir()) == before  # nothing written
    # another --store names it; a source deleted in place is said so
    code, _, err = run(capsys, "--store", str(here / ".holodeck/store"), "search", "revoke")
    assert code == 1
    assert f"run `holodeck-rag --store {here}/.holodeck/store ingest docs` where" in err
    # the ingest it names works, and search then answers from the moved folder
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    code, out, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (0, "")
    assert "docs/tokens.md" in out
    (here / "docs" / "tokens.md").unlink()
    (here / "docs").rmdir()
    code, _, err = run(capsys, "search", "revoke a token")
    assert code == 1
    assert f"and {here / 'docs'} is gone (moved, renamed or deleted?)" in err


def test_an_ingest_after_the_project_moved_names_both_roots_and_the_old_corpus_namespace(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ingest docs``, ``mv proj proj2``, ``ingest docs``: the warning said the store holds
    the corpus of docs but will use docs, and to ingest docs again to switch back, which
    cannot work (found 2026-12-07). It names both roots, and since the old one is gone, the
    namespace whose chunks stay and the ways to remove them."""
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    here = moved(project, monkeypatch)
    code, out, err = run(capsys, "ingest", "docs")
    assert (code, "1 added") == (0, *re.findall("1 added", out))  # another corpus: embedded
    old = corpus_namespace(project / "docs", name="default")
    assert err.startswith(
        f"warning: .holodeck/store holds the 'default' corpus of {project / 'docs'} (ingested "
    )
    assert err.endswith(
        f"), a folder that is gone (moved or renamed?): this ingest of {here / 'docs'} is "
        "another corpus, its files embedded anew, and the old one's chunks and embedding cache "
        f"stay in the store, unsearched. Delete its namespace {old!r} (scan_documents, then "
        "delete: docs/reliability.md, a source moved), or delete .holodeck/store/default and "
        "ingest again; corpus_id in an agent.yaml keeps one corpus across moves.\n"
    )
    store = MatrixVectorStore.load(here / ".holodeck/store/default", HashingEmbeddings(384))
    held = {str(d.metadata["namespace"]) for d in store.iter_documents()}
    assert held == {old, corpus_namespace(here / "docs", name="default")}  # the one it names
    # a root that is still there: both named by their roots, and the way back works
    (here / "B").mkdir()
    (here / "B" / "b.md").write_text("# B\n\nReplicators serve tea.\n", encoding="utf-8")
    when = json.loads(Path(".holodeck/store/ingest.json").read_text())["ingested_at"]
    code, out, err = run(capsys, "ingest", "B")
    assert err == (
        f"warning: .holodeck/store holds the 'default' corpus of {here / 'docs'} (ingested "
        f"{when}); its chunks are kept, but search, chat, serve and tools on this --store will "
        f"use {here / 'B'}. Ingest {here / 'docs'} again to switch back (nothing is "
        "re-embedded), or give each source its own --store.\n"
    )
    code, out, err = run(capsys, "ingest", str(here / "docs"))
    assert "0 added, 0 updated, 1 skipped" in out  # the command it names switches back


def test_a_tool_built_in_the_earlier_long_text_default_is_told_both_ways_with_its_config(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    """An agent.yaml tool ingested in ``long_text=auto`` (the default before ``fit``), then
    run without it: the mismatch offered only ``holodeck-rag ingest`` with --force-ingest
    (everything re-embedded, and no --config), not ``long_text: auto``, which keeps the
    chunks and embeds nothing (found 2026-12-07)."""
    tool = "tools:\n  - {type: hierarchical_document, name: kb, source: docs%s}\n"
    agent = project / "agent.yaml"
    agent.write_text(tool % ", long_text: auto", encoding="utf-8")
    assert run(capsys, "-q", "ingest", "--config", "agent.yaml")[0] == 0
    agent.write_text(tool % "", encoding="utf-8")
    auto, fit = (embedding_model_id(resolve_embeddings(None, long_text=m)) for m in ("auto", "fit"))
    for argv in (["ingest", "--config", "agent.yaml"], ["search", "--config", "agent.yaml", "x"]):
        assert run(capsys, *argv) == (
            1,
            "",
            f"error: the store holds chunks of 'kb' embedded with {auto!r}, but its model is "
            f"now {fit!r}; set `long_text: auto` on tool 'kb' in agent.yaml to keep them "
            "(nothing is re-embedded), or re-embed everything in long_text fit with "
            "`holodeck-rag ingest --config agent.yaml --tool kb --force-ingest`.\n",
        )
    code, _, err = run(capsys, "search", "x")  # the tool the manifest records: its path
    assert f"set `long_text: auto` on tool 'kb' in {agent} to keep them" in err
    assert f"`holodeck-rag ingest --config {agent} --tool kb --force-ingest`" in err
    agent.write_text(tool % ", long_text: auto", encoding="utf-8")  # the first way
    code, out, err = run(capsys, "ingest", "--config", "agent.yaml")
    assert (code, err) == (0, "")
    assert "0 added, 0 updated, 1 skipped" in out  # nothing re-embedded


def test_a_search_on_a_store_that_lost_the_corpus_says_so_not_that_the_files_changed(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    """``ingest docs``, then the saved store deleted: the search re-embeds the corpus, and its
    note blamed the files (``docs changed since the last ingest (its files, or how this
    version reads them)``) though none had changed (found 2026-12-07). The store is named."""
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    shutil.rmtree(project / ".holodeck/store/default")
    code, _, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (
        0,
        "note: this search's store, in-memory, saved in .holodeck/store/default, held "
        "none of the chunks of docs (its saved files deleted?); synced docs into it first "
        "(1 added, 0 failed); the files did not necessarily change.\n",
    )
    assert run(capsys, "search", "revoke a token")[2] == ""  # held now: nothing to say
    (project / "docs" / "tokens.md").write_text(TOKENS + "\nTokens expire.\n", encoding="utf-8")
    code, _, err = run(capsys, "search", "revoke a token")
    assert "note: docs changed since the last ingest (its files, " in err  # a file did


def test_a_width_mismatch_names_the_whole_ingest_command_of_the_tool(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent.yaml tool whose embeddings server now answers 48 numbers, not 32: the error
    said ``(CLI: `holodeck-rag ingest` with --force-ingest)``, without the --config and
    --tool the tool came from (found 2026-12-07). The command it names works."""
    from tests.embedding_server import EmbeddingServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    (project / "agent.yaml").write_text(
        "tools:\n  - {type: vectorstore, name: kb, source: docs, "
        "embedding_model: text-embedding-3-small}\n",
        encoding="utf-8",
    )
    with EmbeddingServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert run(capsys, "-q", "--store", "s", "ingest", "--config", "agent.yaml")[0] == 0
    with EmbeddingServer(default_dimensions=48) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        command = "holodeck-rag --store s ingest --config {} --tool kb --force-ingest"
        for argv, agent in (
            (["ingest", "--config", "agent.yaml"], "agent.yaml"),
            (["search", "deck"], project / "agent.yaml"),  # the one ingest.json records
        ):
            code, out, err = run(capsys, "--store", "s", *argv)
            assert (code, out) == (1, "")
            assert err == (
                "error: kb: the vector store (in-memory) holds 32-dimensional vectors but the "
                "embedding model 'OpenAIEmbeddings:text-embedding-3-small' makes 48-dimensional "
                f"ones; re-ingest with `{command.format(agent)}` to rebuild this corpus's "
                "vectors.\n"
            )
        code, out, err = run(capsys, *command.format("agent.yaml").split()[1:])
        assert (code, "1 added") == (0, *re.findall("1 added", out)), err


def test_serve_in_a_moved_project_says_what_it_serves_and_keeps_serving(
    capsys: pytest.CaptureFixture[str],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``ingest docs``, ``mv proj proj2``, ``serve``: it opens the store without walking the
    source, so it served the old root's chunks without a word where ``search`` stops (found
    2026-12-07). One WARNING says so, with the ingest to run; a server keeps serving."""
    from langchain_holodeck.cli.serve import served_tools

    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    moved(project, monkeypatch)
    with caplog.at_level(logging.WARNING):
        (served,) = served_tools(None, Path(".holodeck/store"), quiet=True)
    assert [r.getMessage() for r in caplog.records] == [
        f"default: .holodeck/store/ingest.json records the last ingest as 'docs' in {project}, "
        f"and {project} is gone (the project moved or was renamed?); serving the 1 chunk(s) "
        "that ingest left in the store, as they were (serve does not read the source): run "
        "`holodeck-rag ingest docs` where docs is now, and serve follows it."
    ]
    text, _ = served.search("revoke a token", 1)
    assert "docs/tokens.md" in text  # still served


def test_an_ingest_through_a_re_pointed_symlink_names_the_corpus_it_hides(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``docs -> ../r1/docs``, ``ingest docs``, the link re-pointed to ``../r2/docs`` (a
    release deploy), ``ingest docs``: every file was embedded anew into a second namespace
    without a word (found 2026-12-07): the manifest's ``docs`` was resolved today, so the
    corpus it recorded looked like this one. ingest.json records the resolved root."""
    for release in ("r1", "r2"):
        (tmp_path / release / "docs").mkdir(parents=True)
        (tmp_path / release / "docs" / "tokens.md").write_text(TOKENS, encoding="utf-8")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "docs").symlink_to("../r1/docs")
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    recorded = json.loads(Path(".holodeck/store/ingest.json").read_text())
    assert recorded["source_root"] == str(tmp_path / "r1" / "docs")
    (tmp_path / "proj" / "docs").unlink()
    (tmp_path / "proj" / "docs").symlink_to("../r2/docs")
    code, out, err = run(capsys, "ingest", "docs")
    assert (code, "1 added") == (0, *re.findall("1 added", out))  # another corpus: embedded
    assert err.startswith(
        f"warning: .holodeck/store holds the 'default' corpus of {tmp_path / 'r1' / 'docs'} "
        "(ingested "
    )
    assert f"will use {tmp_path / 'r2' / 'docs'}. Ingest {tmp_path / 'r1' / 'docs'} again" in err
    store = MatrixVectorStore.load(Path(".holodeck/store/default"), HashingEmbeddings(384))
    held = {str(d.metadata["namespace"]) for d in store.iter_documents()}
    assert held == {
        corpus_namespace(tmp_path / "r1" / "docs", name="default"),  # the corpus it names
        corpus_namespace(tmp_path / "r2" / "docs", name="default"),
    }
    manifest = json.loads(Path(".holodeck/store/ingest.json").read_text())
    assert manifest["source_root"] == str(tmp_path / "r2" / "docs")


def test_a_search_or_serve_after_a_symlink_was_re_pointed_says_so(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``docs -> ../r1/docs`` ingested, the link re-pointed to ``../r2/docs``, no ingest: a
    search embedded r2 as a second corpus and said the store's saved files were deleted,
    serve answered from r2's empty namespace without a word, and a re-point to a folder with
    no supported file ingested an empty corpus, exit 0 (found 2026-12-07, third round)."""
    from langchain_holodeck.cli.serve import served_tools

    for release in ("r1", "r2", "r3"):
        (tmp_path / release / "docs").mkdir(parents=True)
    for release in ("r1", "r2"):
        (tmp_path / release / "docs" / "tokens.md").write_text(TOKENS, encoding="utf-8")
    (tmp_path / "r3" / "docs" / "notes.xyz").write_text("no supported file\n", encoding="utf-8")
    (tmp_path / "proj").mkdir()
    link = tmp_path / "proj" / "docs"
    link.symlink_to("../r1/docs")
    monkeypatch.chdir(tmp_path / "proj")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    saved = {p: p.read_bytes() for p in sorted(Path(".holodeck").rglob("*")) if p.is_file()}
    link.unlink()
    link.symlink_to("../r2/docs")
    said = (
        f".holodeck/store/ingest.json records the last ingest of 'docs' as "
        f"{tmp_path / 'r1' / 'docs'}, and docs now resolves to {tmp_path / 'r2' / 'docs'} "
        "(a symlink re-pointed?)"
    )
    code, out, err = run(capsys, "search", "revoke a token")
    assert (code, out) == (1, "")
    assert err == (
        f"error: {said}; run `holodeck-rag ingest docs` to ingest what it points to now "
        "(another corpus: its files are embedded anew, and that ingest names the one it "
        "hides).\n"
    )
    with caplog.at_level(logging.WARNING, logger="langchain_holodeck.cli._drift"):
        (served,) = served_tools(None, Path(".holodeck/store"), quiet=True)
    assert [r.getMessage() for r in caplog.records] == [
        f"default: {said}; serving what the store holds for it now, 0 chunk(s) (serve does "
        "not read the source): run `holodeck-rag ingest docs` to ingest it, and serve "
        "follows it."
    ]
    assert served.tool.document_count == 0  # r2's namespace, as the warning says
    files = {p: p.read_bytes() for p in sorted(Path(".holodeck").rglob("*")) if p.is_file()}
    assert files == saved  # nothing embedded, nothing recorded
    link.unlink()
    link.symlink_to("../r3/docs")
    code, _, err = run(capsys, "ingest", "docs")
    assert code == 1
    assert err.splitlines()[-1].startswith("error: source 'docs' has no supported file")
    Path("agent.yaml").write_text(  # corpus_id: one corpus wherever its files are
        "tools:\n  - {type: hierarchical_document, name: kb, source: docs, corpus_id: kb}\n",
        encoding="utf-8",
    )
    link.unlink()
    link.symlink_to("../r1/docs")
    assert run(capsys, "-q", "--store", "kb", "ingest", "--config", "agent.yaml")[0] == 0
    link.unlink()
    link.symlink_to("../r2/docs")
    code, out, err = run(capsys, "--store", "kb", "search", "--config", "agent.yaml", "token")
    assert (code, err) == (0, ""), err
    assert "tokens.md" in out


def test_a_manifest_written_before_source_root_is_read_as_before(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    assert run(capsys, "-q", "ingest", "docs")[0] == 0
    path = Path(".holodeck/store/ingest.json")
    manifest = json.loads(path.read_text())
    del manifest["source_root"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    code, out, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (0, "")
    assert "docs/tokens.md" in out
    code, out, err = run(capsys, "ingest", "docs")  # the same corpus: no warning
    assert (code, err) == (0, "")
    assert "0 added, 0 updated, 1 skipped" in out


def test_a_moved_agent_yaml_project_names_the_manifest_read_and_search_config_says_to_ingest(
    capsys: pytest.CaptureFixture[str], project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent.yaml project ingested, then moved: search and tools named
    /x/proj/.holodeck/store/ingest.json, a file that no longer exists (the store_dir it
    records), and ``search --config agent.yaml``, which that error says to pass, embedded a
    second corpus into the store, said only 'note: docs changed since the last ingest' and
    left ingest.json as it was (found 2026-12-07)."""
    (project / "agent.yaml").write_text(
        "tools:\n  - {type: hierarchical_document, name: kb, source: docs}\n", encoding="utf-8"
    )
    assert run(capsys, "-q", "ingest", "--config", "agent.yaml")[0] == 0
    here = moved(project, monkeypatch)
    for command in (["search", "revoke a token"], ["tools"]):
        code, out, err = run(capsys, *command)
        assert (code, out) == (1, "")
        assert err.startswith(
            "error: .holodeck/store/ingest.json records the last ingest as tool 'kb' of "
            f"{project / 'agent.yaml'}, but that file is gone (moved or renamed?); "
        )
    store = here / ".holodeck" / "store"
    files = {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}
    code, out, err = run(capsys, "search", "revoke a token", "--config", "agent.yaml")
    assert (code, out) == (1, "")
    assert err == (
        f"error: .holodeck/store/ingest.json records the last ingest of tool 'kb' as "
        f"{project / 'docs'}, and {project} is gone (the project moved or was renamed?); run "
        f"`holodeck-rag ingest --config agent.yaml --tool kb` to ingest {here / 'docs'} "
        "(another corpus: its files are embedded anew; corpus_id on the tool keeps one corpus "
        "across moves).\n"
    )
    assert {p: p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()} == files
    code, _, err = run(capsys, "ingest", "--config", "agent.yaml", "--tool", "kb")
    assert code == 0
    assert f"holds the 'kb' corpus of {project / 'docs'}" in err  # the corpus it hides
    code, out, err = run(capsys, "search", "revoke a token", "--config", "agent.yaml")
    assert (code, err) == (0, "")
    assert "docs/tokens.md" in out
