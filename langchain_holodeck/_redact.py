"""Keeping secrets out of messages: one place for every log line, error and ``SyncResult``."""

from __future__ import annotations

import re
from collections.abc import Iterable

_BEARER = re.compile(r"(?i)\b(bearer\s+|api[_-]?key=)[^\s,;'\"&]+")  # headers, query strings
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SPACE = re.compile(r"(\s+)")


def _split_url(url: str) -> tuple[str, str, str] | None:
    """(``scheme://``, user info, ``host...``) of a URL with user info, else ``None``.

    The user info ends at the *last* ``@``: a password holding a space, ``/``, ``#`` or ``@``
    (which ``urlsplit`` misreads as path, fragment or host) stays inside it. Linear time.
    """
    mark = url.find("://")
    if mark <= 0 or not all(c in _SCHEME_CHARS for c in url[:mark]):
        return None
    rest = url[mark + 3 :]
    at = rest.rfind("@")
    if at < 0:
        return None
    return url[: mark + 3], rest[:at], rest[at + 1 :]


def _lone_user_is_password(scheme: str) -> bool:
    """Whether a URL of ``scheme`` (``redis://``) reads a lone user info as a password.

    Redis does (``redis://secret@host``); PostgreSQL, HTTP and the rest read it as a user
    name (``postgresql://postgres@host``), which is no secret: scrubbed everywhere, the word
    ``postgres`` would vanish from every message naming the provider.
    """
    return scheme.lower().startswith(("redis", "valkey", "unix"))


def _masked_userinfo(scheme: str, userinfo: str) -> str:
    user, colon, _ = userinfo.partition(":")
    if colon:
        return f"{user}:***"
    return "***" if _lone_user_is_password(scheme) else user  # Redis: a lone password


def mask_connection_string(url: str) -> str:
    """A whole connection string, its password masked: ``redis://user:***@host:6379/0``.

    The one URL masker: every message, summary and error that shows a URL goes through it
    (``mask_url_password`` for free text). A user name alone (``redis://secret@host``) is
    masked too on Redis, which reads it as a password; elsewhere it is a user name and stays.
    """
    parts = _split_url(url.strip())
    if parts is None:
        return url
    scheme, userinfo, host = parts
    return f"{scheme}{_masked_userinfo(scheme, userinfo)}@{host}"


def url_password(url: str) -> str | None:
    """The password of a whole connection string (Redis: or its lone user), to scrub elsewhere."""
    parts = _split_url(url.strip())
    if parts is None:
        return None
    user, colon, password = parts[1].partition(":")
    if colon:
        return password or None
    return user if user and _lone_user_is_password(parts[0]) else None


def mask_url_password(text: str) -> str:
    """Mask the passwords of the ``scheme://user:password@host`` forms in ``text``.

    A text that is one URL is masked whole (``mask_connection_string``: any password);
    otherwise each whitespace-separated word holding a URL or ``user:password@host`` is,
    so a password with a space in free text is only masked when passed to ``scrub`` as a
    known secret. Linear time, whatever the input.
    """
    if _split_url(text.strip()) is not None and text.lstrip()[:1].isalpha():
        return mask_connection_string(text)
    words = _SPACE.split(text)
    for n, word in enumerate(words):
        if "@" not in word:
            continue
        parts = _split_url(word[_scheme_start(word) :])
        if parts is not None:
            start = _scheme_start(word)
            masked = _masked_userinfo(parts[0], parts[1])
            words[n] = f"{word[:start]}{parts[0]}{masked}@{parts[2]}"
        elif ":" in word[: word.rfind("@")]:
            at = word.rfind("@")
            user, _, _ = word[:at].partition(":")
            words[n] = f"{user}:***{word[at:]}"
    return "".join(words)


def _scheme_start(word: str) -> int:
    """Where the ``scheme://`` of ``word`` starts (after quotes or brackets), else 0."""
    mark = word.find("://")
    if mark <= 0:
        return 0
    start = mark
    while start > 0 and word[start - 1] in _SCHEME_CHARS:
        start -= 1
    return start


def url_passwords(text: str) -> list[str]:
    """The passwords of the URLs in ``text`` (one whole URL, or words), to scrub elsewhere."""
    whole = url_password(text)
    found = [whole] if whole else []
    for word in text.split():
        if "@" in word:
            url = word[_scheme_start(word) :]
            if _split_url(url) is not None:  # scheme://user[:password]@host
                password = url_password(url)
            else:  # user:password@host
                password = word[: word.rfind("@")].partition(":")[2] or None
            if password:
                found.append(password)
    return list(dict.fromkeys(found))


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
