import logging
from pathlib import Path

import pytest

from langchain_holodeck._redact import (
    mask_connection_string,
    mask_url_password,
    one_line,
    scrub,
    url_password,
    url_passwords,
)
from langchain_holodeck.vectorstores import create_vector_store_with_status
from tests.helpers import HashingEmbeddings


def test_url_passwords_are_masked() -> None:
    assert mask_url_password("redis://user:hunter2@db:6379/0") == "redis://user:***@db:6379/0"
    assert mask_url_password("redis://:hunter2@db") == "redis://:***@db"


def test_scrub_masks_known_secrets_longest_first_and_bearer_tokens() -> None:
    text = scrub("key sk-abc and sk-abcdef; Authorization: Bearer tok123", ["sk-abc", "sk-abcdef"])
    assert "sk-abc" not in text
    assert "tok123" not in text
    assert text.startswith("key *** and ***;")


@pytest.mark.parametrize(
    "text",
    [
        "set HOLODECK_MCP_TOKEN (clients send Authorization: Bearer <token>), or bind",
        "send the header Authorization: Bearer <TOKEN>.",
        "pass api_key=<your-key> in the query",
    ],
)
def test_scrub_keeps_a_placeholder_in_angle_brackets(text: str) -> None:
    """A message saying what to send is no secret: 'Bearer <token>), or' read 'Bearer ***,
    or' (the placeholder and its closing parenthesis gone; found 2026-12-07)."""
    assert scrub(text) == text


def test_scrub_still_masks_a_token_glued_to_a_placeholder() -> None:
    assert scrub("Authorization: Bearer <x>tok123") == "Authorization: Bearer ***"


def test_scrub_cuts_after_masking() -> None:
    assert scrub("x" * 50 + "SECRET", ["SECRET"], max_chars=20) == "x" * 17 + "..."


def test_one_line_has_type_no_newlines_no_secret() -> None:
    error = ConnectionError("cannot reach\nredis://u:pw@h:1\n  with key sk-live-9")
    line = one_line(error, ["sk-live-9"])
    assert line == "ConnectionError: cannot reach redis://u:***@h:1 with key ***"


@pytest.mark.parametrize("password", ["pa ss", "ab/cd", "ab#cd", "a@b", "x:y#z/w", "@/# :"])
def test_a_connection_string_password_with_url_characters_is_masked_whole(password: str) -> None:
    url = f"redis://admin:{password}@db.example:6379/0"
    assert mask_connection_string(url) == "redis://admin:***@db.example:6379/0"
    assert mask_url_password(url) == "redis://admin:***@db.example:6379/0"
    assert url_password(url) == password
    assert password in url_passwords(url)


@pytest.mark.parametrize("password", ["pa ss", "pa ss word"])  # "/", "#", "@": refused
def test_a_redis_url_that_does_not_parse_falls_back_with_one_masked_line(
    password: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"redis://:{password}@127.0.0.1:1/0"
    config = {"provider": "redis", "connection_string": url, "index_name": "i"}
    with caplog.at_level(logging.WARNING):
        handle = create_vector_store_with_status(config, HashingEmbeddings())
    assert handle.fell_back
    assert "redis://:***@127.0.0.1:1/0" in (handle.reason or "")
    for piece in password.split():
        assert piece not in caplog.text.replace("127.0.0.1", "")
        assert piece not in (handle.reason or "").replace("127.0.0.1", "")


@pytest.mark.timeout(20)  # a bound, not a benchmark: the old regex took hours on this
def test_masking_is_linear_in_the_text() -> None:
    token = "a" * 1_000_000
    assert mask_url_password(token + ":" + token) == token + ":" + token
    assert scrub(f"x://{token}:{token}") == f"x://{token}:{token}"
    assert url_passwords(f"{token}:{token}@h") == [token]


def test_a_lone_user_name_is_a_password_on_redis_only() -> None:
    """Redis reads ``redis://secret@host`` as a password; PostgreSQL reads a user name."""
    assert url_password("redis://secret@db:6379") == "secret"
    assert mask_connection_string("redis://secret@db:6379") == "redis://***@db:6379"
    postgres = "postgresql://postgres@127.0.0.1:5590/postgres"
    assert url_password(postgres) is None
    assert url_passwords(f"connect to {postgres} as user postgres") == []
    assert mask_connection_string(postgres) == postgres
    message = f"provider 'postgres' cannot reach {postgres}"
    assert scrub(message, url_passwords(postgres)) == message
    with_password = "postgresql://postgres:hunter2@127.0.0.1:5590/postgres"
    assert url_passwords(with_password) == ["hunter2"]
    assert scrub(f"cannot reach {with_password}", url_passwords(with_password)) == (
        "cannot reach postgresql://postgres:***@127.0.0.1:5590/postgres"
    )


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://127.0.0.1:6399/0?password=qsecretXYZ", "redis://127.0.0.1:6399/0?password=***"),
        (
            "redis://:pw12@h:6379/0?db=1&password=qsecretXYZ&x=1",
            "redis://:***@h:6379/0?db=1&password=***&x=1",
        ),
        (
            "postgresql://app@h/db?sslmode=require&password=qsecret%40XYZ",
            "postgresql://app@h/db?sslmode=require&password=***",
        ),
        (
            "https://h/x?apikey=qsecretXYZ&access_token=qsecretXYZ&pwd=qsecretXYZ#top",
            "https://h/x?apikey=***&access_token=***&pwd=***#top",
        ),
    ],
)
def test_a_secret_query_parameter_is_masked_and_the_rest_stays_readable(
    url: str, masked: str
) -> None:
    """redis-py and libpq accept ``?password=``: its value is a secret like the user info's."""
    assert mask_connection_string(url) == masked
    assert mask_url_password(url) == masked
    assert (
        mask_url_password(f"Redis at {url} is unavailable") == f"Redis at {masked} is unavailable"
    )
    assert "qsecret" not in scrub(f"cannot reach {url}")
    assert "qsecret" not in one_line(ConnectionError(f"cannot reach {url}"))
    assert any(s.startswith("qsecret") for s in url_passwords(url))
    assert url_passwords("redis://h/0?db=2&token=") == []
    assert (
        mask_connection_string("redis://h:6379/0?db=2&protocol=3")
        == "redis://h:6379/0?db=2&protocol=3"
    )


@pytest.mark.timeout(20)
def test_query_masking_is_linear_in_the_text() -> None:
    name = "?" + "a" * 1_000_000
    assert mask_url_password(name) == name
    assert mask_url_password(f"redis://h/?{'x' * 500_000}password=s") == (
        f"redis://h/?{'x' * 500_000}password=***"
    )


def test_a_password_in_a_url_from_the_environment_is_masked_wherever_it_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``${VAR}`` URLs (reranker ``url:``, Cohere ``base_url:``, ``context_model.base_url:``)
    were plain strings: repr(load_agent_config(...)), model_dump(), model_dump_json() and
    repr(tool.as_retriever()) showed their passwords. They show ``***`` now, and the
    clients still get the URL."""
    import json

    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_holodeck.config import load_agent_config
    from langchain_holodeck.rerankers import RerankRetriever, create_reranker

    urls = {
        "RR_URL": "http://user:rrPASSWORD@127.0.0.1:9",
        "CO_URL": "https://u:coPASSWORD@127.0.0.1:9",
        "CTX_URL": "http://u:ctxPASSWORD@127.0.0.1:9/v1",
    }
    for name, url in {**urls, "CO_KEY": "co-key", "CTX_KEY": "sk-ctx"}.items():
        monkeypatch.setenv(name, url)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "tools:\n"
        "  - {type: hierarchical_document, name: a, source: docs, rerank: true,\n"
        "     reranker: {provider: vllm, url: '${RR_URL}', model: bge},\n"
        "     context_model: {provider: openai, name: m, base_url: '${CTX_URL}',"
        " api_key: '${CTX_KEY}'}}\n"
        "  - {type: vectorstore, name: b, source: docs, rerank: true,\n"
        "     reranker: {provider: cohere, api_key: '${CO_KEY}', base_url: '${CO_URL}'}}\n"
    )
    config = load_agent_config(agent)
    dumped = config.model_dump()
    rerankers = [create_reranker(tool.reranker) for tool in config.tools]  # type: ignore[arg-type]
    first_stage = InMemoryVectorStore(HashingEmbeddings()).as_retriever()
    retrievers = [RerankRetriever(retriever=first_stage, reranker=r) for r in rerankers]
    shown = [repr(config), str(dumped), config.model_dump_json()]
    shown += [json.dumps(config.model_dump(mode="json")), *map(repr, retrievers)]
    for text in shown:
        assert "PASSWORD" not in text, text
    assert "http://user:***@127.0.0.1:9" in repr(config)
    assert "https://u:***@127.0.0.1:9" in repr(retrievers[1])
    # what the clients read is the URL itself
    assert config.tools[0].reranker.url == urls["RR_URL"]  # type: ignore[union-attr]
    assert config.tools[0].context_model.base_url == urls["CTX_URL"]  # type: ignore[union-attr]
    assert dumped["tools"][1]["reranker"]["base_url"] == urls["CO_URL"]
    assert [str(rerankers[0].url), str(rerankers[1].base_url)] == [  # type: ignore[attr-defined]
        urls["RR_URL"],
        urls["CO_URL"],
    ]
