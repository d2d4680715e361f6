"""A Redis password holding ``@``, ``#`` and ``/``: refused unencoded, works percent-encoded.

Against the Redis Stack at ``REDIS_URL``: an ACL user of the test's own (the default user and
the server's other data are left alone) whose password is ``Tr0ub4dor@horse#battery/staple``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

import pytest
import redis

from langchain_holodeck.backends import create_vector_store_with_status
from langchain_holodeck.errors import ConfigError
from tests.helpers import HashingEmbeddings

pytestmark = pytest.mark.redis

PASSWORD = "Tr0ub4dor@horse#battery/staple"


@pytest.fixture
def acl_user(redis_url: str) -> Iterator[str]:
    """A user allowed everything, with ``PASSWORD``; deleted afterwards."""
    name = f"holodeck_test_{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(redis_url)
    client.acl_setuser(
        name,
        enabled=True,
        passwords=[f"+{PASSWORD}"],
        keys=["*"],
        channels=["*"],
        commands=["+@all"],
    )
    try:
        yield name
    finally:
        client.acl_deluser(name)
        client.close()


def test_a_password_with_at_hash_slash_is_refused_raw_and_works_percent_encoded(
    redis_url: str, redis_index_name: str, acl_user: str, caplog: pytest.LogCaptureFixture
) -> None:
    host = urlsplit(redis_url).netloc.rpartition("@")[2]
    raw = f"redis://{acl_user}:{PASSWORD}@{host}/0"
    config = {"provider": "redis", "connection_string": raw, "index_name": redis_index_name}
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as info:
        create_vector_store_with_status(config, HashingEmbeddings())
    message = str(info.value)
    assert "\n" not in message
    assert "connection_string" in message
    assert "%23" in message
    assert f"got 'redis://{acl_user}:***@{host}/0'" in message
    for piece in ("Tr0ub4dor", "horse", "battery", "staple"):
        assert piece not in message
        assert piece not in caplog.text

    encoded = f"redis://{acl_user}:{quote(PASSWORD, safe='')}@{host}/0"
    handle = create_vector_store_with_status(
        {**config, "connection_string": encoded}, HashingEmbeddings(), fallback=False
    )
    assert not handle.fell_back
    assert handle.backend == "redis"
    store = handle.store
    ids = store.add_texts(["the holodeck safety protocols"], ids=["doc-1"])
    assert ids == ["doc-1"]
    assert store.get_by_ids(["doc-1"])[0].page_content == "the holodeck safety protocols"
    for piece in ("Tr0ub4dor", "horse", "battery", "staple"):
        assert piece not in caplog.text
