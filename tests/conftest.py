"""Fixtures shared by every suite."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest

from tests.helpers import (
    DATA_DIR,
    HashingEmbeddings,
    drop_postgres_tables,
    postgres_url_or_skip,
    redis_url_or_skip,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def data_dir() -> object:
    return DATA_DIR


@pytest.fixture
def embeddings() -> HashingEmbeddings:
    return HashingEmbeddings()


@pytest.fixture
def redis_url() -> str:
    return redis_url_or_skip()


@pytest.fixture
def redis_index_name(redis_url: str) -> Iterator[str]:
    """A fresh index name; its keys and index are dropped after the test."""
    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    yield name
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        with contextlib.suppress(redis.ResponseError):
            client.ft(name).dropindex(delete_documents=True)
        for key in client.scan_iter(f"{name}*"):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture
def postgres_url() -> str:
    return postgres_url_or_skip()


@pytest.fixture
def postgres_table(postgres_url: str) -> Iterator[str]:
    """A fresh table name; the store's tables are dropped after the test."""
    name = f"holodeck_test_{uuid.uuid4().hex[:10]}"
    yield name
    drop_postgres_tables(postgres_url, name)
