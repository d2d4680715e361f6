"""RedisByteStore against LangChain's standard key-value store suites (Redis Stack at REDIS_URL)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests

from langchain_holodeck.embeddings import RedisByteStore

pytestmark = pytest.mark.redis

VALUES = (b"foo-value", b"bar \x00\xff bytes", b"buzz" * 100)


@pytest.fixture
def redis_byte_store(redis_url: str) -> Iterator[RedisByteStore]:
    client = redis.Redis.from_url(redis_url)
    prefix = f"holodeck_test_bytes_{uuid.uuid4().hex[:10]}:"
    try:
        yield RedisByteStore(client, prefix=prefix)
    finally:
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)
        client.close()


class TestRedisByteStoreSync(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, redis_byte_store: RedisByteStore) -> RedisByteStore:
        return redis_byte_store

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestRedisByteStoreAsync(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, redis_byte_store: RedisByteStore) -> RedisByteStore:
        return redis_byte_store

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES
