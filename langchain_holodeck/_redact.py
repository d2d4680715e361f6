"""Keeping secrets out of messages: one place for every log line, error and ``SyncResult``."""

from __future__ import annotations

import re
from collections.abc import Iterable

_URL_PASSWORD = re.compile(r"(?P<user>[^\s:/@]*):(?P<password>[^\s@/]+)@")
_BEARER = re.compile(r"(?i)\b(bearer\s+|api[_-]?key=)[^\s,;'\"&]+")  # headers, query strings


def mask_url_password(text: str) -> str:
    """Mask the password of ``scheme://user:password@host`` forms: ``redis://:***@host:6379``."""
    return _URL_PASSWORD.sub(lambda m: f"{m['user']}:***@", text)


def url_passwords(text: str) -> list[str]:
    """The passwords of the ``user:password@`` forms in ``text`` (to scrub them elsewhere)."""
    return [m["password"] for m in _URL_PASSWORD.finditer(text)]


def scrub(text: str, secrets: Iterable[str] = (), *, max_chars: int | None = None) -> str:
    """``text`` with each secret (longest first), URL passwords and bearer tokens masked.

    Args:
        text: Any message.
        secrets: Known secret values (API keys, passwords); empty ones are ignored.
        max_chars: Cut longer results (after masking, so no secret is cut in half and kept).
    """
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _BEARER.sub(r"\g<1>***", mask_url_password(text))
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 3] + "..."
    return text


def one_line(error: BaseException, secrets: Iterable[str] = (), *, max_chars: int = 300) -> str:
    """``Type: message`` on one line, secrets masked, cut to ``max_chars``: safe to log or store."""
    text = " ".join(str(error).split()) or "(no message)"
    return f"{type(error).__name__}: {scrub(text, secrets, max_chars=max_chars)}"
