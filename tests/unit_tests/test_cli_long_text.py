"""``holodeck-rag ingest --long-text MODE``: windows or truncation for the default tool, remembered.

Runs the real local model (all-MiniLM-L6-v2, offline) on one file holding a prose section far
longer than the model's 256 word pieces (so ``fit``, the default, stores windows) and a short one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_holodeck.vectorstores import MatrixVectorStore
from tests.helpers import HashingEmbeddings
from tests.helpers import run_cli as run

LONG_SECTION = " ".join(
    f"Rotation rule {i} assigns crew member {i} to deck {i % 7}." for i in range(60)
)
ROTA = f"# Rota\n\n{LONG_SECTION}\n\n## Safety\n\nNever disable the safety interlock.\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with ``docs/rota.md``; the test runs there, with HOME there too."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rota.md").write_text(ROTA, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def saved(workdir: Path, tool: str = "default") -> tuple[list[str], list[int]]:
    """The saved store's window ids (``<chunk id>:w<n>``) and its chunks' ``window_count``."""
    store = MatrixVectorStore.load(workdir / ".holodeck" / "store" / tool, HashingEmbeddings(384))
    docs = list(store.iter_documents())
    windows = [d.id for d in docs if d.id and ":w" in d.id]
    counts = [d.metadata.get("window_count", 0) for d in docs if d.id and ":w" not in d.id]
    return windows, counts


def manifest(workdir: Path) -> dict[str, object]:
    path = workdir / ".holodeck" / "store" / "ingest.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_default_ingest_stores_windows_of_the_long_section(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ingest", "docs")
    assert code == 0, err
    windows, counts = saved(workdir)
    assert len(windows) >= 3  # ~700 word pieces in two chunks: their windows of 128
    assert sum(counts) == len(windows)
    assert manifest(workdir)["long_text"] == "fit"


def test_ingest_long_text_first_stores_no_windows_and_search_remembers_it(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "ingest", "docs", "--long-text", "first")
    assert code == 0, err
    windows, counts = saved(workdir)
    assert windows == []
    assert len(counts) == 3  # the long section is two chunks, the short one a third
    assert set(counts) == {0}
    assert " 3 added, " in out
    recorded = manifest(workdir)
    assert recorded["long_text"] == "first"
    assert str(recorded["embedding_model_id"]).endswith(
        ("all-MiniLM-L6-v2:long_text=first", "all-MiniLM-L6-v2:long_text=first:int8")
    )
    # search, chat and tools rebuild the tool in the same mode: no mismatch, no re-embedding
    code, out, err = run(capsys, "search", "which deck is crew member 12 on")
    assert code == 0, err
    assert err == ""  # no "changed since the last ingest" note, no error
    assert out.startswith("Found 3 result(s):\n\n[1] Score: ")
    assert "Source: docs/rota.md" in out
    code, out, err = run(capsys, "search", "safety interlock", "--json", "-k", "1")
    assert code == 0, err
    assert json.loads(out)[0]["text"].endswith("Never disable the safety interlock.")
    code, out, err = run(capsys, "tools")
    assert code == 0, err
    assert "  embeddings:  sentence-transformers/all-MiniLM-L6-v2 (long_text: first)" in out
    assert saved(workdir)[0] == []  # the searches wrote no windows


def test_chat_without_the_flag_uses_the_remembered_mode(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("safety interlock\n"))
    code, out, err = run(capsys, "chat")
    assert code == 0, err
    assert "Never disable the safety interlock" in out
    assert "error" not in err


def test_switching_mode_asks_for_force_ingest_in_one_line_then_rebuilds(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    for argv in (["--long-text", "auto"], ["--long-text", "best"]):
        code, out, err = run(capsys, "ingest", "docs", *argv)
        assert (code, out) == (1, "")
        assert err.count("\n") == 1
        assert err.startswith("error: the store holds chunks of 'default' embedded with '")
        assert "long_text=first" in err
        assert f"long_text={argv[1]}" in err
        assert err.rstrip().endswith(  # both ways, each a whole command
            "`holodeck-rag ingest docs --long-text first` keeps them (nothing is re-embedded); "
            f"`holodeck-rag ingest docs --long-text {argv[1]} --force-ingest` re-embeds "
            "everything."
        )
        assert manifest(workdir)["long_text"] == "first"  # a failed ingest keeps the manifest
    code, out, err = run(capsys, "ingest", "docs", "--long-text", "auto", "--force-ingest")
    assert code == 0, err
    assert " 3 updated, " in out
    windows, counts = saved(workdir)
    assert len(windows) >= 3
    assert max(counts) == len(windows)
    assert manifest(workdir)["long_text"] == "auto"
    code, _, err = run(capsys, "search", "which deck is crew member 12 on")
    assert code == 0, err


def test_a_manifest_written_before_long_text_keeps_the_mode_its_model_id_names(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the state versions before ingest.json recorded long_text left: a store in `auto` (their
    # default), whose mode only the recorded embedding_model_id names
    assert run(capsys, "ingest", "docs", "--long-text", "auto")[0] == 0
    path = workdir / ".holodeck" / "store" / "ingest.json"
    old = manifest(workdir)
    del old["long_text"]
    assert ":long_text=auto:" in str(old["embedding_model_id"])
    path.write_text(json.dumps(old), encoding="utf-8")
    code, out, err = run(capsys, "search", "safety interlock")
    assert code == 0, err
    assert err == ""  # no model mismatch, nothing re-embedded
    assert out.startswith("Found ")
    code, out, err = run(capsys, "ingest", "docs")  # a plain re-ingest needs no flag
    assert code == 0, err
    assert " 0 added, 0 updated, 3 skipped, " in out
    assert manifest(workdir)["long_text"] == "auto"


def test_search_on_a_store_of_another_model_names_the_ingest_that_re_embeds(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # search takes no --force-ingest (argparse: 'unrecognized arguments'): the line names ingest
    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    path = workdir / ".holodeck" / "store" / "ingest.json"
    path.write_text(json.dumps({**manifest(workdir), "long_text": "auto"}), encoding="utf-8")
    code, out, err = run(capsys, "search", "safety interlock")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert "`holodeck-rag ingest docs --long-text auto --force-ingest` re-embeds everything" in err


def test_a_manifest_with_an_unknown_mode_is_refused_in_one_line(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ingest", "docs")[0] == 0
    path = workdir / ".holodeck" / "store" / "ingest.json"
    path.write_text(json.dumps({**manifest(workdir), "long_text": "fast"}), encoding="utf-8")
    code, _, err = run(capsys, "search", "safety interlock")
    assert code == 1
    assert err.count("\n") == 1
    assert "is not a valid ingest manifest (long_text 'fast' is not one of" in err


def test_long_text_with_config_is_refused_naming_the_yaml_key(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = workdir / "agent.yaml"
    agent.write_text("tools:\n  - type: vectorstore\n    name: kb\n    source: docs\n")
    code, out, err = run(capsys, "ingest", "--config", str(agent), "--long-text", "first")
    assert (code, out) == (1, "")
    assert err == (
        "error: --long-text applies to the default tool; with --config set the tool's "
        "long_text in the agent.yaml.\n"
    )


def test_config_long_text_reaches_the_tool(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = workdir / "agent.yaml"
    agent.write_text(
        "tools:\n  - type: hierarchical_document\n    name: kb\n    source: docs\n"
        "    long_text: first\n"
    )
    code, _, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 0, err
    assert saved(workdir, "kb") == ([], [0, 0, 0])
    assert "long_text=first" in str(manifest(workdir)["embedding_model_id"])
    code, _, err = run(capsys, "search", "safety interlock")
    assert code == 0, err


def test_long_text_with_an_openai_model_is_one_error_line(
    workdir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # refused before any key is needed
    argv = ["ingest", "docs", "--embedding-model", "text-embedding-3-small", "--long-text", "first"]
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1
    assert err.startswith(
        "error: --long-text must be 'fit' (the default) or 'auto' with embedding_model "
        "'text-embedding-3-small': OpenAI models have no windows"
    )
    assert err.rstrip().endswith("got 'first'.")
    assert not (workdir / ".holodeck").exists()


def test_an_unknown_mode_is_a_usage_error_listing_the_modes(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "ingest", "docs", "--long-text", "fast")
    assert code == 2
    assert "invalid choice: 'fast' (choose from 'fit', 'auto', 'best', 'mean', 'first')" in err


def test_ingest_help_says_what_first_trades(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ingest", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--long-text MODE default tool only: fit (default), auto, best, mean or first;" in text
    assert "19-26% less ingest CPU on a docs folder, for nDCG@10 -0.011 on SciFact" in text


def test_serve_builds_the_tool_in_the_remembered_mode(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from langchain_holodeck.cli.serve import served_tools

    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    (served,) = served_tools(None, workdir / ".holodeck" / "store", quiet=True)
    assert ":long_text=first" in str(served.tool.corpus.model_id)
    text, _ = served.search("safety interlock", 1)
    assert "Never disable the safety interlock" in text


def test_a_plain_re_ingest_of_the_same_source_keeps_the_remembered_mode(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ingest docs --long-text first``, an edit, then ``ingest docs``: still ``first``."""
    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    code, out, err = run(capsys, "ingest", "docs")
    assert code == 0, err
    assert " 0 added, 0 updated, 3 skipped, " in out  # unchanged: nothing re-embedded
    rota = workdir / "docs" / "rota.md"
    rota.write_text(ROTA + "\n## Drills\n\nA drill every Tuesday.\n", encoding="utf-8")
    code, out, err = run(capsys, "ingest", "docs")
    assert code == 0, err
    assert saved(workdir)[0] == []  # the re-ingest embedded in the remembered mode: no windows
    assert manifest(workdir)["long_text"] == "first"


def test_another_source_into_the_same_store_gets_the_defaults(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    (workdir / "notes").mkdir()
    (workdir / "notes" / "rota.md").write_text(ROTA, encoding="utf-8")
    code, _, err = run(capsys, "ingest", "notes")
    assert code == 0, err
    assert manifest(workdir)["long_text"] == "fit"
    assert saved(workdir)[0]  # the default mode stored the long section's windows


def test_switching_back_to_a_source_ingested_in_another_mode_keeps_its_mode(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ingest docs --long-text first``, ``ingest notes``, ``ingest docs``: ingest.json held
    only notes' settings, so the switch back met the model mismatch and was told to
    --force-ingest (found 2026-12-07). It keeps docs' stored mode now, re-embedding nothing."""
    assert run(capsys, "ingest", "docs", "--long-text", "first")[0] == 0
    (workdir / "notes").mkdir()
    (workdir / "notes" / "rota.md").write_text(ROTA, encoding="utf-8")
    assert run(capsys, "ingest", "notes")[0] == 0
    code, out, err = run(capsys, "ingest", "docs")
    assert code == 0, err
    assert " 0 added, 0 updated, 3 skipped, " in out
    assert err.splitlines()[0] == (
        "note: docs was embedded with --long-text first; kept (pass --long-text to change it)."
    )
    assert manifest(workdir)["long_text"] == "first"
    code, out, err = run(capsys, "search", "--json", "safety interlock")
    assert code == 0, err
    assert json.loads(out)[0]["source_path"] == "docs/rota.md"
    # asked for another mode: the mismatch stands, with its advice
    code, _, err = run(capsys, "ingest", "docs", "--long-text", "fit")
    assert code == 1
    assert "--force-ingest" in err


def test_a_damaged_manifest_does_not_stop_a_plain_ingest(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only a plain re-ingest reads ingest.json: a damaged one means the defaults, rewritten."""
    assert run(capsys, "ingest", "docs")[0] == 0
    path = workdir / ".holodeck" / "store" / "ingest.json"
    path.write_text("{not json", encoding="utf-8")
    code, out, err = run(capsys, "ingest", "docs")
    assert code == 0, err
    assert " 0 added, 0 updated, " in out
    assert manifest(workdir)["long_text"] == "fit"
