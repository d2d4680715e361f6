"""``holodeck-rag`` with an agent.yaml whose database is Redis (REDIS_URL), and a dead Redis."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.helpers import DATA_DIR
from tests.helpers import run_cli as run

pytestmark = pytest.mark.redis

AGENT_YAML = """\
tools:
  - type: hierarchical_document
    name: {name}
    source: docs
    database:
      provider: redis
      connection_string: {url}
      index_name: {index}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a copy of the docs corpus; the working directory and HOME."""
    shutil.copytree(DATA_DIR / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def embedding_cache_cleanup(redis_url: str, redis_index_name: str) -> Iterator[None]:
    """The tool (named like the index) caches embeddings in Redis: drop them afterwards."""
    yield
    client = redis.Redis.from_url(redis_url)
    try:
        for key in client.scan_iter(f"holodeck:embcache:{redis_index_name}:*"):
            client.delete(key)
    finally:
        client.close()


@pytest.mark.usefixtures("embedding_cache_cleanup")
def test_ingest_and_search_on_redis(
    project: Path,
    redis_url: str,
    redis_index_name: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    agent = project / "agent.yaml"
    agent.write_text(
        AGENT_YAML.format(name=redis_index_name, url="${REDIS_URL}", index=redis_index_name)
    )
    code, out, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 0, err
    assert err == ""  # no fallback
    head = f"ingested docs into '{redis_index_name}' (redis {redis_url}, index {redis_index_name})"
    match = re.match(rf"{re.escape(head)}: (\d+) added", out)
    assert match, out
    added = int(match[1])
    assert added > 0
    client = redis.Redis.from_url(redis_url)
    try:
        assert len(list(client.scan_iter(f"{redis_index_name}*"))) >= added
    finally:
        client.close()

    # A later run finds everything in Redis: nothing is embedded again.
    code, out, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 0, err
    assert f": 0 added, 0 updated, {added} skipped, 0 failed, 0 deleted;" in out

    # search needs no --config: ingest.json remembers the agent.yaml and the tool.
    code, out, err = run(capsys, "search", "revoke a token", "--json", "-k", "2")
    assert code == 0, err
    records = json.loads(out)
    assert len(records) == 2
    assert records[0]["source_path"] == "docs/auth.md"
    assert "revoked" in records[0]["text"]

    code, out, _ = run(capsys, "tools", "--config", str(agent))
    assert code == 0
    assert f"  vectors:     redis {redis_url}, index {redis_index_name}" in out


def test_unreachable_redis_falls_back_with_one_warning_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = project / "agent.yaml"
    agent.write_text(
        AGENT_YAML.format(name="docs", url="redis://127.0.0.1:1", index="holodeck_unreachable")
    )
    code, out, err = run(capsys, "ingest", "--config", str(agent))
    assert code == 0, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("warning: Redis at redis://127.0.0.1:1 is unavailable (")
    assert lines[0].endswith("falling back to the in-memory vector store.")
    assert re.match(
        r"ingested docs into 'docs' \(in-memory, saved in \S+; redis unavailable\): "
        r"(\d+) added, 0 updated, 0 skipped, 0 failed",
        out,
    ), out

    # Redis is still down: search falls back again and reads the saved in-memory store.
    code, out, err = run(capsys, "search", "revoke a token", "-k", "1")
    assert code == 0, err
    assert len(err.splitlines()) == 1
    assert err.startswith("warning: Redis at redis://127.0.0.1:1 is unavailable")
    assert "note:" not in err  # nothing was re-ingested
    assert out.startswith("Found 1 result(s):\n\n[1] Score: ")
    assert "Source: docs/auth.md" in out


@pytest.mark.usefixtures("embedding_cache_cleanup")
def test_a_search_the_store_refuses_is_one_error_line(
    project: Path,
    redis_url: str,
    redis_index_name: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A Redis user whose ACL allows writes but not FT.SEARCH: ingest works, search fails."""
    user, password = redis_index_name, "pw-acl-7c1e"
    admin = redis.Redis.from_url(redis_url)
    admin.execute_command(
        "ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all",
        *(f"-{c}" for c in ("ft.search", "ft.aggregate", "eval", "evalsha", "eval_ro")),
        *(f"-{c}" for c in ("evalsha_ro", "fcall", "fcall_ro")),
    )  # fmt: skip
    try:
        host = redis_url.split("://", 1)[1].rsplit("@", 1)[-1]
        monkeypatch.setenv("REDIS_ACL_URL", f"redis://{user}:{password}@{host}")
        agent = project / "agent.yaml"
        agent.write_text(
            AGENT_YAML.format(name=redis_index_name, url="${REDIS_ACL_URL}", index=redis_index_name)
        )
        code, _, err = run(capsys, "ingest", "--config", str(agent))
        assert code == 0, err
        code, out, err = run(capsys, "search", "--config", str(agent), "token expiry")
    finally:
        admin.execute_command("ACL", "DELUSER", user)
        admin.close()
    assert code == 1
    assert out == ""
    assert err.startswith("error: Search failed: NoPermissionError: ")
    assert err.count("\n") == 1  # one line, no traceback
    assert password not in err


@pytest.mark.usefixtures("embedding_cache_cleanup")
def test_a_search_on_a_redis_without_the_corpus_says_so_not_that_the_files_changed(
    project: Path, redis_url: str, redis_index_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ingest docs`` into memory, then a project ``.holodeck/config.yaml`` naming Redis (or
    a Redis that lost its data): the search embeds the corpus into Redis, and its note said
    ``docs changed since the last ingest (its files, or how this version reads them)``
    though no file had (found 2026-12-07). It names the store that held none of it."""
    code, out, err = run(capsys, "ingest", "docs")
    assert (code, err) == (0, ""), err
    added = int(re.findall(r": (\d+) added", out)[0])
    (project / ".holodeck").mkdir(exist_ok=True)
    (project / ".holodeck" / "config.yaml").write_text(
        f"vectorstore: {{provider: redis, connection_string: '{redis_url}', "
        f"index_name: {redis_index_name}}}\n"
    )
    where = f"this search's store, redis {redis_url}, index {redis_index_name},"
    code, _, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (
        0,
        f"note: the last ingest of docs went to in-memory, and {where} held none of its "
        f"chunks; synced docs into it first ({added} added, 0 failed); the files did not "
        "necessarily change.\n",
    )
    code, _, err = run(capsys, "search", "revoke a token")
    assert (code, err) == (0, "")  # Redis holds it now: nothing to say
    code, out, _ = run(capsys, "ingest", "docs")  # ingest.json: the last ingest went to Redis
    assert f"0 added, 0 updated, {added} skipped" in out
    client = redis.Redis.from_url(redis_url)
    try:
        client.ft(redis_index_name).dropindex(delete_documents=True)  # restarted without data
    finally:
        client.close()
    code, _, err = run(capsys, "search", "revoke a token")
    assert code == 0
    assert err.splitlines()[-1] == (
        f"note: {where} held none of the chunks of docs (emptied, or restarted without its "
        f"data?); synced docs into it first ({added} added, 0 failed); the files did not "
        "necessarily change."
    )


@pytest.mark.usefixtures("embedding_cache_cleanup")
def test_an_index_settings_mismatch_names_the_whole_ingest_command_of_the_tool(
    project: Path, redis_url: str, redis_index_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``distance_metric`` changed on an agent.yaml tool's Redis index: the error said ``(CLI:
    `holodeck-rag ingest` with --force-ingest)``, without the --config and --tool the tool
    came from (found 2026-12-07). The command it names re-creates the index."""
    agent = project / "agent.yaml"
    yaml = AGENT_YAML.format(name=redis_index_name, url=redis_url, index=redis_index_name)
    agent.write_text(yaml + "      distance_metric: COSINE\n")
    assert run(capsys, "-q", "ingest", "--config", "agent.yaml")[0] == 0
    agent.write_text(yaml + "      distance_metric: L2\n")
    code, out, err = run(capsys, "ingest", "--config", "agent.yaml")
    assert (code, out) == (1, "")
    command = f"holodeck-rag ingest --config agent.yaml --tool {redis_index_name} --force-ingest"
    assert err.endswith(
        "but the configuration sets distance_metric L2; an existing index keeps its settings, so "
        f"re-ingest with `{command}` to re-create it with the configured ones, or configure the "
        "ones it has.\n"
    )
    code, _, err = run(capsys, *command.split()[1:])
    assert code == 0, err
    assert run(capsys, "ingest", "--config", "agent.yaml")[0] == 0  # L2 now: nothing to say
