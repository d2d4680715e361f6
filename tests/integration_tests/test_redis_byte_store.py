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


def test_the_redis_backends_embedding_cache_entries_expire(
    redis_url: str, redis_index_name: str
) -> None:
    """Issue 25 item 15: cache keys had no TTL and grew with every edit."""
    from langchain_holodeck.backends.redis import CACHE_TTL_SECONDS, RedisBackend
    from langchain_holodeck.config._backends import RedisDatabaseConfig

    config = RedisDatabaseConfig(
        provider="redis", connection_string=redis_url, index_name=redis_index_name
    )
    cache = RedisBackend(config).byte_store(namespace="kb")
    cache.mset([("text-hash", b"vector")])
    client = redis.Redis.from_url(redis_url)
    try:
        (key,) = client.scan_iter(f"holodeck:embcache:{redis_index_name}:kb:*")
        assert 0 < client.ttl(key) <= CACHE_TTL_SECONDS
        client.delete(key)
    finally:
        client.close()
