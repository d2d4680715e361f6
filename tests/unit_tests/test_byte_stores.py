"""LocalFileByteStore against LangChain's standard key-value store suites; RedisByteStore's ttl."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests

from langchain_holodeck.embeddings import LocalFileByteStore, RedisByteStore

VALUES = (b"foo-value", b"bar \x00\xff bytes", b"buzz" * 100)


class TestLocalFileByteStoreSync(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, tmp_path: Path) -> LocalFileByteStore:
        return LocalFileByteStore(tmp_path / "cache")

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestLocalFileByteStoreAsync(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, tmp_path: Path) -> LocalFileByteStore:
        return LocalFileByteStore(tmp_path / "cache")

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


@pytest.mark.parametrize("ttl", [0, -1, 10**12 * 86_400, 1.5, True])
def test_a_redis_ttl_out_of_range_is_refused_before_any_request(ttl: object) -> None:
    """Found 2026-12-07 (embedding_cache_ttl_days' twin): any ttl was taken, and Redis refused
    0 or one past its clock's range on every cache write. No client is needed to refuse."""
    with pytest.raises(ValueError, match=rf"^ttl must be a whole number of seconds .*got {ttl!r}"):
        RedisByteStore(object(), ttl=ttl)  # type: ignore[arg-type]  # the values under test


def test_a_redis_ttl_of_a_century_is_taken() -> None:
    assert RedisByteStore(object(), ttl=36_500 * 86_400).ttl == 3_153_600_000
