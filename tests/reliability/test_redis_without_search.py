"""A Redis without RediSearch (a distribution's plain ``redis-server``) behind a tool.

A private server on port 6391 (the fault-test range, ``redis_control``), started without
modules; never the shared server at ``REDIS_URL``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from langchain_holodeck.backends import BackendUnavailableError
from langchain_holodeck.config import RedisDatabaseConfig, VectorStoreToolConfig
from langchain_holodeck.tools import VectorStoreTool
from tests.helpers import HashingEmbeddings
from tests.reliability.redis_control import plain_redis

pytestmark = pytest.mark.redis

PORT = 6391


def test_a_redis_without_search_is_one_line_naming_the_fix(data_dir: Path) -> None:
    with plain_redis(PORT) as url:
        config = VectorStoreToolConfig(
            type="vectorstore",
            name="kb",
            description="Project docs",
            source=str(data_dir / "docs"),
            database=RedisDatabaseConfig(
                provider="redis", connection_string=SecretStr(url), fallback_to_memory=False
            ),
        )
        tool = VectorStoreTool(config, embeddings=HashingEmbeddings())
        with pytest.raises(BackendUnavailableError) as refused:
            tool.initialize_sync()
    message = str(refused.value)
    assert message.startswith(f"Redis at {url} is unavailable")
    assert "has no RediSearch module" in message
    assert "Redis Stack" in message
    assert "\n" not in message
