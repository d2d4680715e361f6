"""Keeping secrets out of messages: one place for every log line, error and ``SyncResult``."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from urllib.parse import unquote

# headers, query strings; a placeholder in angle brackets (``Bearer <token>`` in a message
# saying what to send) is no token: masked, it read "Bearer ***, or bind" (its ")" eaten too)
_BEARER = re.compile(r"(?i)\b(bearer\s+|api[_-]?key=)(?!<[\w.-]+>(?:[\s,;'\"&).]|$))[^\s,;'\"&]+")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_SPACE = re.compile(r"(\s+)")
_QUERY_KEY = re.compile(r"[^=&#@/?\s]+=")  # the "key=" a query starts with
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SECRET_NAME = re.compile(r"(api_?key|password|passwd|pwd|secret|token)$", re.IGNORECASE)
# "?password=..." / "&access_token=...": a secret query parameter's value (linear: a name
# cannot cross "?", "&" or ";", so each character is read from one start only)
_SECRET_PARAM = re.compile(
    r"(?i)([?&;][\w.%-]*(?:api_?key|password|passwd|pwd|secret|token)=)[^&;#\s'\"]+"
)


_MIN_KNOWN_SECRET = 8
"""Shortest value masked without being passed to ``scrub``: ``EMPTY``, a vLLM server's usual
``OPENAI_API_KEY``, would otherwise vanish from every message saying "empty"."""
_ENV_SECRET_NAME = re.compile(r"(?:^|_)(api_?key|password|secret|token)$", re.IGNORECASE)
"""An environment variable holding a key: ``OPENAI_API_KEY``, ``CO_API_KEY``, ``HF_TOKEN``
(not ``is_secret_name``'s rule: ``PWD`` is the working directory there)."""
_REMEMBERED: set[str] = set()
_REMEMBERED_LOCK = threading.Lock()


def remember_secrets(values: Iterable[str]) -> None:
    """Mask ``values`` in every later ``scrub`` of the process (configured API keys).

    ``load_agent_config`` remembers the values of its secret keys (``api_key``, ``password``):
    a server repeating a key in an error (``401 Invalid key: sk-...``) is masked in every
    warning and error line, whichever component logged it. Values under 8 characters are not
    remembered.
    """
    with _REMEMBERED_LOCK:
        _REMEMBERED.update(v for v in values if len(v) >= _MIN_KNOWN_SECRET)


def known_secrets() -> list[str]:
    """The secrets every ``scrub`` masks: remembered ones and the environment's keys.

    The environment's: the values of variables named like a key (``OPENAI_API_KEY``,
    ``COHERE_API_KEY``, ``CO_API_KEY``, ``ANTHROPIC_API_KEY``, ``*_TOKEN``...), which the model
    clients read, of at least 8 characters; read at each call, so a key set later counts.
    """
    with _REMEMBERED_LOCK:
        found = list(_REMEMBERED)
    found.extend(
        value
        for name, value in os.environ.items()
        if len(value) >= _MIN_KNOWN_SECRET and _ENV_SECRET_NAME.search(name)
    )
    return found


def model_secrets(model: object) -> list[str]:
    """The values of a pydantic model's ``SecretStr`` fields (a chat model's ``api_key``).

    Duck-typed (``model_fields``, ``get_secret_value``): importing pydantic here would load
    it for ``holodeck-rag --version``.
    """
    fields = getattr(type(model), "model_fields", None)
    if not isinstance(fields, dict):
        return []
    values = (getattr(model, name, None) for name in fields)
    reveal = (getattr(v, "get_secret_value", None) for v in values)
    return [secret for get in reveal if callable(get) and isinstance(secret := get(), str)]


def is_secret_name(name: str) -> bool:
    """Whether a key or query parameter named ``name`` holds a secret (``api_key``, ``password``).

    The one rule: configuration keys (``api_key``, ``client_secret``) and URL query parameters
    (``?password=``, ``&access_token=``) alike.
    """
    return bool(_SECRET_NAME.search(name))


def mask_query_secrets(text: str) -> str:
    """``text`` with the values of secret query parameters masked: ``/0?password=***&db=1``."""
    return _SECRET_PARAM.sub(r"\g<1>***", text)


def query_secrets(text: str) -> list[str]:
    """The values of the secret query parameters in ``text`` (as written and decoded)."""
    found: list[str] = []
    for match in _SECRET_PARAM.finditer(text):
        value = match.group(0)[len(match.group(1)) :]
        found.extend((value, unquote(value)))
    return list(dict.fromkeys(found))


def _split_url(url: str) -> tuple[str, str, str] | None:
    """(``scheme://``, user info, ``host...``) of a URL with user info, else ``None``.

    Where the user info ends: ``_userinfo_end``. Linear time.
    """
    mark = url.find("://")
    if mark <= 0 or not all(c in _SCHEME_CHARS for c in url[:mark]):
        return None
    rest = url[mark + 3 :]
    at = _userinfo_end(rest)
    if at < 0:
        return None
    return url[: mark + 3], rest[:at], rest[at + 1 :]


def _userinfo_end(rest: str) -> int:
    """The ``@`` ending the user info of ``rest`` (a URL after ``scheme://``), else -1.

    As a person writes a URL, the user info ends at the *last* ``@``: a password holding a
    space, ``/``, ``?``, ``#`` or ``@`` stays inside it, masked whole. The clients read it
    otherwise (urllib and redis-py end the host part at the first ``/``, ``?`` or ``#``, libpq
    the user info at the first ``@``), so ``userinfo_problem`` refuses such a URL. One
    exception: a URL that reads well the standard way, whose later ``@``s are all in its
    query's values (``postgresql://u:pw@host/db?user=me@corp``), ends it where they do.
    """
    last = rest.rfind("@")
    if last < 0:
        return -1
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    if last < end:  # no "@" past the host part: both readings agree
        return last
    query = rest.find("?", end)
    key = _QUERY_KEY.match(rest, query + 1) if query >= 0 else None
    if key is None or "#" in rest[end:query] or "@" in rest[end : key.end()]:
        return last
    at = rest.rfind("@", 0, end)
    info, hosts = rest[: max(at, 0)], rest[at + 1 : end]
    if "@" in info or any(c.isspace() for c in info) or not _are_hosts(hosts):
        return last  # not a standard URL either: the person's reading (it masks the most)
    return at


def _are_hosts(text: str) -> bool:
    """Whether ``text`` is ``host[:port]`` (libpq: a comma-separated list), ports digits."""
    for host in text.split(","):
        if host.startswith("["):  # [IPv6]:port
            name, close, port = host[1:].partition("]")
            if not close:
                return False
        else:
            name, colon, digits = host.partition(":")
            port = colon + digits
        if any(c.isspace() or c in "[]" for c in name):
            return False
        if port and not (port[0] == ":" and port[1:].isdigit()):
            return False
    return True


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
    So are the values of secret query parameters (``redis://host/0?password=***``, which
    redis-py and libpq accept); the rest of the URL stays readable.
    """
    parts = _split_url(url.strip())
    if parts is None:
        return mask_query_secrets(url)
    scheme, userinfo, host = parts
    return f"{scheme}{_masked_userinfo(scheme, userinfo)}@{mask_query_secrets(host)}"


def url_password(url: str) -> str | None:
    """The password of a whole connection string (Redis: or its lone user), to scrub elsewhere.

    Only the user info's: a secret query parameter's value is ``query_secrets``'.
    """
    parts = _split_url(url.strip())
    if parts is None:
        return None
    user, colon, password = parts[1].partition(":")
    if colon:
        return password or None
    return user if user and _lone_user_is_password(parts[0]) else None


def userinfo_problem(url: str) -> str | None:
    """Why the client would misread ``url``'s user name or password, else ``None``.

    A ``/``, ``?``, ``#`` or ``@`` in them ends the host part or the user info early for
    urllib, redis-py or libpq, which then connect to a host made of password pieces and print
    it; libpq also refuses a space or a lone ``%``, quoting the password. The problem names
    no character of the password; show the URL with ``mask_connection_string``.
    """
    parts = _split_url(url.strip())
    if parts is None:
        return None
    scheme, info, _ = parts
    bad = any(c in "/?#@" for c in info)
    if scheme.lower().startswith("postgres"):
        bad = bad or any(c.isspace() for c in info) or _BAD_ESCAPE.search(info) is not None
    if not bad:
        return None
    return (
        "the user name and password must be percent-encoded (# as %23, / as %2F, ? as %3F, "
        "@ as %40, space as %20, % as %25)"
    )


def check_userinfo(url: str, *, name: str) -> None:
    """Refuse ``url`` (the parameter ``name``) when ``userinfo_problem`` finds one.

    Raises:
        ValueError: One line naming ``name`` and showing the URL with its password masked.
    """
    problem = userinfo_problem(url)
    if problem is not None:
        msg = f"{name}: {problem}, got {mask_connection_string(url)!r}."
        raise ValueError(msg)


def mask_url_password(text: str) -> str:
    """Mask the passwords of the ``scheme://user:password@host`` forms in ``text``.

    A text that is one URL is masked whole (``mask_connection_string``: any password);
    otherwise each whitespace-separated word holding a URL or ``user:password@host`` is,
    so a password with a space in free text is only masked when passed to ``scrub`` as a
    known secret. Secret query parameters' values are masked too (``?password=***``).
    Linear time, whatever the input.
    """
    if _split_url(text.strip()) is not None and text.lstrip()[:1].isalpha():
        return mask_connection_string(text)
    words = _SPACE.split(mask_query_secrets(text))
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
    """The passwords of the URLs in ``text`` (one whole URL, or words), to scrub elsewhere.

    User info passwords and the values of secret query parameters (``?password=...``).
    """
    whole = url_password(text)
    found = [whole] if whole else []
    found.extend(query_secrets(text))
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
        secrets: Secret values (API keys, passwords) besides ``known_secrets()``, which are
            always masked; empty ones are ignored.
        max_chars: Cut longer results (after masking, so no secret is cut in half and kept).
    """
    every = {*(s for s in secrets if s), *known_secrets()}
    for secret in sorted(every, key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _BEARER.sub(r"\g<1>***", mask_url_password(text))
    if max_chars is not None and len(text) > max_chars:
        text = text[: max_chars - 3] + "..."
    return text


def one_line(error: BaseException, secrets: Iterable[str] = (), *, max_chars: int = 300) -> str:
    """``Type: message`` on one line, secrets masked, cut to ``max_chars``: safe to log or store."""
    text = " ".join(str(error).split()) or "(no message)"
    return f"{type(error).__name__}: {scrub(text, secrets, max_chars=max_chars)}"


def clipped(text: str, limit: int = 80) -> str:
    """``text``, or its first ``limit - 3`` characters and ``...`` when longer.

    For a value shown in a one-line message: a 100,000-character query, a filter's ``repr``.
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


class MaskedUrl(str):
    """A URL whose ``repr`` shows its password as ``***`` (``http://user:***@host``).

    Otherwise it is the URL itself, a ``str``: a client given it connects with the real
    password. Only ``repr`` masks it, and so does everything built from ``repr``: a pydantic
    model's ``repr``, a printed ``model_dump()``, a LangChain callback's payload.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(mask_url_password(str(self)))
