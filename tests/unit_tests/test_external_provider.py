"""A database provider defined outside the package works from an agent.yaml.

``tests/external_provider.py`` subclasses the ``DatabaseConfig`` family and ``Backend`` and
registers the backend, touching no file of ``langchain_holodeck``. The checks run in a
subprocess that imports it, so the provider's registration stays out of every other test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import DATA_DIR

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys
from pathlib import Path
from langchain_holodeck import ConfigError, DatabaseConfig, config_reference_markdown
from langchain_holodeck import load_agent_config
from langchain_holodeck.tools import HierarchicalDocumentTool
from tests.external_provider import ShelfDatabaseConfig, ShelfStore
from tests.helpers import HashingEmbeddings

work = Path(sys.argv[1])
out = {}
agent = load_agent_config(work / "agent.yaml")
config = agent.tools[0]
out["config_type"] = type(config.database).__name__
out["label"] = config.database.label
tool = HierarchicalDocumentTool(
    config, embeddings=HashingEmbeddings(), project_dir=work, home_dir=work
)
out["added"] = tool.initialize_sync().added
out["backend"] = tool.backend
out["storage"] = tool.describe_storage()
docs = tool.as_retriever().invoke("Section 203(a)(1)")
out["top_section"] = docs[0].metadata["section_id"]
for name in ("bad_key.yaml", "bad_provider.yaml"):
    try:
        load_agent_config(work / name)
        out[name] = "accepted"
    except ConfigError as error:
        out[name] = str(error)
built = DatabaseConfig(provider="shelf", label="x")
out["built"] = [type(built).__name__, built.label]
out["reference"] = "### ShelfDatabaseConfig" in config_reference_markdown()
print(json.dumps(out))
"""


def _agent_yaml(path: Path, database: str) -> None:
    path.write_text(
        "tools:\n"
        "  - type: hierarchical_document\n"
        "    name: legal_docs\n"
        "    description: Search the Holodeck Safety Act.\n"
        "    source: legal\n"
        "    top_k: 3\n"
        f"    database: {database}\n",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    work = tmp_path_factory.mktemp("external")
    shutil.copytree(DATA_DIR / "legal", work / "legal")
    _agent_yaml(work / "agent.yaml", "{provider: shelf, label: statutes}")
    _agent_yaml(work / "bad_key.yaml", "{provider: shelf, colour: red}")
    _agent_yaml(work / "bad_provider.yaml", "{provider: shelves}")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(work)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_agent_yaml_section_builds_the_outside_config(report: dict[str, object]) -> None:
    assert report["config_type"] == "ShelfDatabaseConfig"
    assert report["label"] == "statutes"


def test_a_tool_ingests_and_searches_through_the_outside_backend(
    report: dict[str, object],
) -> None:
    assert isinstance(report["added"], int)
    assert report["added"] > 0
    assert report["backend"] == "shelf"
    assert report["storage"] == "shelf statutes"
    assert report["top_section"] == "203(a)(1)"


def test_its_keys_are_checked_like_a_built_in_provider(report: dict[str, object]) -> None:
    assert "database.colour: unknown key; allowed keys: provider, label" in str(
        report["bad_key.yaml"]
    )


def test_an_unknown_provider_lists_the_registered_ones(report: dict[str, object]) -> None:
    message = str(report["bad_provider.yaml"])
    assert "database.provider: must be one of" in message
    assert "'shelf'" in message
    assert "'redis'" in message


def test_the_family_base_builds_the_registered_variant(report: dict[str, object]) -> None:
    assert report["built"] == ["ShelfDatabaseConfig", "x"]


def test_the_reference_documents_the_new_provider(report: dict[str, object]) -> None:
    assert report["reference"] is True


def test_the_package_itself_does_not_know_the_outside_provider() -> None:
    from langchain_holodeck.backends import registered_providers

    assert "shelf" not in registered_providers()
