"""A password holding ``#``, ``/``, ``?`` or ``@`` unencoded is refused before any connection.

redis-py and urllib end a URL's host part at the first ``/``, ``?`` or ``#``, libpq its user
info at the first ``@``: such a URL connected to a host made of password pieces ("horse" of
``Tr0ub4dor@horse#battery``) and printed it. No server is needed here.
"""

from __future__ import annotations

import logging
import re
import textwrap
from pathlib import Path

import pytest

from langchain_holodeck._redact import (
    mask_connection_string,
    mask_url_password,
    url_password,
    userinfo_problem,
)
from langchain_holodeck.backends import BackendUnavailableError, create_vector_store_with_status
from langchain_holodeck.config import load_agent_config
from langchain_holodeck.errors import ConfigError
from langchain_holodeck.vectorstores.postgres import PostgresVectorStore
from langchain_holodeck.vectorstores.redis import build_redis_store
from tests.helpers import HashingEmbeddings

PASSWORDS = [
    "Tr0ub4dor@horse#battery",  # the tester's: redis-py connected to "horse"
    "Tr0ub4dor@horse/battery",
    "a#b",
    "a/b",
    "a?b",
    "a@b#c",
    "p@ss w0rd#x",
]
URLS = {
    "redis": "redis://:{password}@127.0.0.1:6391",
    "postgres": "postgresql://holodeck:{password}@127.0.0.1:6391/holodeck",
}
MASKED = {
    "redis": "redis://:***@127.0.0.1:6391",
    "postgres": "postgresql://holodeck:***@127.0.0.1:6391/holodeck",
}


def pieces(password: str) -> list[str]:
    """The password, and each run of its letters and digits long enough to recognise."""
    return [password, *(p for p in re.split(r"[^A-Za-z0-9]+", password) if len(p) >= 3)]


def agent_yaml(tmp_path: Path, provider: str) -> Path:
    path = tmp_path / "agent.yaml"
    text = f"""\
        tools:
          - name: kb
            type: hierarchical_document
            source: docs
            database:
              provider: {provider}
              connection_string: ${{DB_URL}}
        """
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.mark.parametrize("provider", ["redis", "postgres"])
@pytest.mark.parametrize("password", PASSWORDS)
def test_an_unencoded_password_is_refused_in_one_masked_line_naming_the_field(
    tmp_path: Path, provider: str, password: str
) -> None:
    url = URLS[provider].format(password=password)
    with pytest.raises(ConfigError) as info:
        load_agent_config(agent_yaml(tmp_path, provider), environ={"DB_URL": url})
    message = str(info.value)
    assert "\n" not in message
    assert "tools[0].database.connection_string: " in message
    assert "percent-encoded (# as %23" in message
    assert f"got {MASKED[provider]!r}" in message  # the host the user meant, not "horse"
    for piece in pieces(password):
        assert piece not in message


@pytest.mark.parametrize("provider", ["redis", "postgres"])
@pytest.mark.parametrize("password", PASSWORDS)
def test_a_config_dict_with_an_unencoded_password_is_refused_before_connecting(
    provider: str, password: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = URLS[provider].format(password=password)
    config = {"provider": provider, "connection_string": url}
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as info:
        create_vector_store_with_status(config, HashingEmbeddings())
    assert "connection_string" in str(info.value)
    assert "%23" in str(info.value)
    for piece in pieces(password):
        assert piece not in str(info.value)
        assert piece not in caplog.text


@pytest.mark.parametrize("password", PASSWORDS)
def test_the_stores_refuse_an_unencoded_password_naming_the_parameter(password: str) -> None:
    redis_url = URLS["redis"].format(password=password)
    with pytest.raises(ValueError, match=r"^url: .*%23") as redis_info:
        build_redis_store(
            HashingEmbeddings(),
            url=redis_url,
            index_name="i",
            algorithm="FLAT",
            metric="COSINE",
            connect_timeout=0.5,
        )
    postgres_url = URLS["postgres"].format(password=password)
    good = "postgresql://holodeck@127.0.0.1:6391/holodeck"
    with pytest.raises(ValueError, match=r"^connection_string: .*%23") as pg_info:
        PostgresVectorStore(HashingEmbeddings(), connection_string=postgres_url)
    with pytest.raises(ValueError, match=r"^read_replicas\[1\]: ") as replica_info:
        PostgresVectorStore(
            HashingEmbeddings(), connection_string=good, read_replicas=[good, postgres_url]
        )
    for error in (redis_info, pg_info, replica_info):
        assert "\n" not in str(error.value)
        assert "***@127.0.0.1:6391" in str(error.value)
        for piece in pieces(password):
            assert piece not in str(error.value)


@pytest.mark.parametrize("field", ["read_replicas", "shards"])
def test_a_postgres_replica_or_shard_with_an_unencoded_password_is_refused(
    tmp_path: Path, field: str
) -> None:
    good = "postgresql://holodeck@127.0.0.1:6391/holodeck"
    bad = URLS["postgres"].format(password="Tr0ub4dor@horse#battery")
    config = {"provider": "postgres", "connection_string": good, field: [good, bad]}
    with pytest.raises(ConfigError) as info:
        create_vector_store_with_status(config, HashingEmbeddings())
    message = str(info.value)
    assert f"{field}: " in message
    assert f"got {MASKED['postgres']!r}" in message
    for piece in pieces("Tr0ub4dor@horse#battery"):
        assert piece not in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://holodeck:p ss@127.0.0.1/holodeck",  # libpq: 'unexpected spaces ... "p ss"'
        "postgresql://holodeck:ab%zzcd@127.0.0.1/holodeck",  # libpq: 'invalid ... "ab%zzcd"'
    ],
)
def test_libpq_only_also_refuses_a_space_or_a_lone_percent(url: str) -> None:
    assert userinfo_problem(url) is not None
    assert userinfo_problem(url.replace("postgresql", "redis")) is None  # redis-py reads them


@pytest.mark.parametrize(
    ("url", "password"),
    [
        ("redis://:Tr0ub4dor%40horse%23battery@127.0.0.1:6391", "Tr0ub4dor%40horse%23battery"),
        ("redis://user:a%2Fb%3Fc@127.0.0.1:6391/0", "a%2Fb%3Fc"),
        ("postgresql://u:p%40ss%20w0rd%23x@127.0.0.1:5432/db", "p%40ss%20w0rd%23x"),
        ("postgresql://u:100%25@db:5432/db?user=me@corp", "100%25"),  # "@" in a query value
        ("postgresql://u:pw12@h1:5432,h2:5433/db?user=a@b", "pw12"),
        ("postgresql://u:pw12@[::1]:5432/db?user=a@b", "pw12"),
        ("postgresql://u:pw12@/db?host=/tmp", "pw12"),
    ],
)
def test_a_percent_encoded_password_is_accepted_and_masked(
    tmp_path: Path, url: str, password: str
) -> None:
    assert userinfo_problem(url) is None
    assert url_password(url) == password
    shown = mask_connection_string(url)
    assert password not in shown
    assert shown == url.replace(password, "***", 1)  # the host and the rest shown as they are
    assert mask_url_password(f"cannot reach {url} now") == f"cannot reach {shown} now"
    provider = "redis" if url.startswith("redis") else "postgres"
    config = load_agent_config(agent_yaml(tmp_path, provider), environ={"DB_URL": url})
    database = config.tools[0].database
    assert database is not None
    assert database.masked_connection_string == shown  # type: ignore[union-attr]  # a URL provider


def test_a_config_dict_error_shows_the_url_masked() -> None:
    url = URLS["redis"].format(password="Tr0ub4dor@horse#battery")
    with pytest.raises(ConfigError) as info:
        create_vector_store_with_status(
            {"provider": "redis", "connection_string": url}, HashingEmbeddings()
        )
    assert str(info.value).endswith(f", got {MASKED['redis']!r}.")


def test_a_wrong_scheme_names_the_masked_url_once(tmp_path: Path) -> None:
    url = "mysql://holodeck:Tr0ub4dor@127.0.0.1:6391/holodeck"
    with pytest.raises(ConfigError) as info:
        load_agent_config(agent_yaml(tmp_path, "postgres"), environ={"DB_URL": url})
    assert str(info.value).endswith(
        "connection_string: must start with postgresql://, "
        "got 'mysql://holodeck:***@127.0.0.1:6391/holodeck'."
    )


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis://127.0.0.1:99999", "Port out of range 0-65535"),
        ("redis://127.0.0.1:port", "Port could not be cast to integer value as 'port'"),
    ],
)
def test_a_redis_url_without_a_password_that_cannot_be_parsed_says_why(url: str, said: str) -> None:
    """Not "percent-encode the password's special characters": there is no password."""
    config = {"provider": "redis", "connection_string": url, "fallback_to_memory": False}
    with pytest.raises(BackendUnavailableError) as info:
        create_vector_store_with_status(config, HashingEmbeddings())
    message = str(info.value)
    assert (
        message
        == f"Redis connection string {url} cannot be parsed ({said}); write it as redis://host:port/db"
    )
