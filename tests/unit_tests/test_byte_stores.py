"""LocalFileByteStore against LangChain's standard key-value store suites."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests

from langchain_holodeck.embeddings import LocalFileByteStore

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
