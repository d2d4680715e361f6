from langchain_holodeck._redact import mask_url_password, one_line, scrub


def test_url_passwords_are_masked() -> None:
    assert mask_url_password("redis://user:hunter2@db:6379/0") == "redis://user:***@db:6379/0"
    assert mask_url_password("redis://:hunter2@db") == "redis://:***@db"


def test_scrub_masks_known_secrets_longest_first_and_bearer_tokens() -> None:
    text = scrub("key sk-abc and sk-abcdef; Authorization: Bearer tok123", ["sk-abc", "sk-abcdef"])
    assert "sk-abc" not in text
    assert "tok123" not in text
    assert text.startswith("key *** and ***;")


def test_scrub_cuts_after_masking() -> None:
    assert scrub("x" * 50 + "SECRET", ["SECRET"], max_chars=20) == "x" * 17 + "..."


def test_one_line_has_type_no_newlines_no_secret() -> None:
    error = ConnectionError("cannot reach\nredis://u:pw@h:1\n  with key sk-live-9")
    line = one_line(error, ["sk-live-9"])
    assert line == "ConnectionError: cannot reach redis://u:***@h:1 with key ***"
