"""PostgresByteStore against LangChain's standard key-value store suites (at POSTGRES_URL)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from langchain_tests.integration_tests import BaseStoreAsyncTests, BaseStoreSyncTests

from langchain_holodeck.backends.postgres import PostgresByteStore
from tests.helpers import drop_postgres_tables

pytestmark = pytest.mark.postgres

VALUES = (b"foo-value", b"bar \x00\xff bytes", b"buzz" * 100)


@pytest.fixture
def postgres_byte_store(postgres_url: str) -> Iterator[PostgresByteStore]:
    table = f"holodeck_test_bytes_{uuid.uuid4().hex[:10]}"
    try:
        yield PostgresByteStore(postgres_url, table=table, prefix="kb:")
    finally:
        drop_postgres_tables(postgres_url, table)


class TestPostgresByteStoreSync(BaseStoreSyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, postgres_byte_store: PostgresByteStore) -> PostgresByteStore:
        return postgres_byte_store

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES


class TestPostgresByteStoreAsync(BaseStoreAsyncTests[bytes]):
    @pytest.fixture
    def kv_store(self, postgres_byte_store: PostgresByteStore) -> PostgresByteStore:
        return postgres_byte_store

    @pytest.fixture
    def three_values(self) -> tuple[bytes, bytes, bytes]:
        return VALUES
