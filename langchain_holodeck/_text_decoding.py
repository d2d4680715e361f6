"""Text out of a file's bytes: byte order marks, UTF-8, a detected code page, or a fallback.

``SourceLoader`` reads every text file through ``decode``; ``mostly_utf8`` keeps a UTF-8 file
with a stray byte UTF-8, and ``check_encoding`` vets a configured fallback at construction.
``undecoded_byte`` finds a byte that never was text in a string (a query, a text to embed),
and ``replaced_lone_surrogates`` spells U+FFFD each half of a UTF-16 pair that JSON carried.
"""

from __future__ import annotations

import codecs
import encodings
import encodings.aliases
import importlib
import logging
import re
import sys
from collections.abc import Sequence

logger = logging.getLogger("langchain_holodeck.loaders")  # the loader's: what users filter on

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),  # before UTF-16: it starts with the UTF-16-LE BOM
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def decode(data: bytes, fallbacks: Sequence[str]) -> tuple[str | None, str | None]:
    """(text, encoding) of ``data``, or (None, None) for binary or undecodable bytes.

    A byte order mark decides; then UTF-8; then charset-normalizer's best guess, unless one of
    ``fallbacks`` (the loader's ``encoding_fallbacks``, in order) reads about as cleanly and as
    words of a Latin-script language; with no guess at all, the first fallback that decodes.
    """
    bom = bom_encoding(data)
    if bom is not None:
        try:
            return data.decode(bom), bom
        except UnicodeDecodeError:
            return None, None
    if b"\x00" in data:
        return None, None
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        pass
    import charset_normalizer

    matches = charset_normalizer.from_bytes(data)
    best = matches.best()
    if best is not None:
        guess = str(best)
        # a few accented letters read as a double-byte code page or UTF-16 ("Eu não sei."
        # as Big5: "Eu n緌 sei."): too short for the detector to offer the fallback at all
        multibyte = len(guess) < len(data)
        for name in fallbacks:
            codec = _codec(name)
            chaos = min(
                (m.chaos for m in matches if codec in map(_codec, m.could_be_from_charset)),
                default=None,
            )
            near = chaos is not None and chaos <= best.chaos + _CHAOS_MARGIN
            if not (near or multibyte):
                continue
            text, encoding = _try_decode(data, name)
            if text is None:
                continue
            if (chaos is not None and chaos <= best.chaos) or (
                _reads_as_latin_words(text) and (near or _accents_only(text))
            ):
                return text, encoding
        return guess, best.encoding
    for name in fallbacks:
        text, encoding = _try_decode(data, name)
        if text is not None:
            return text, encoding
    return None, None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str, source_path: str) -> str:
    r"""``text`` with each lone surrogate spelt U+FFFD, and one WARNING when there was one.

    Decoded bytes never hold one; JSON does (``"caf\udce9"``, an escape of half a pair, is
    valid JSON), and no UTF-8 encoder takes it: the file's chunk hashes, and every file
    after it, stopped with ``UnicodeEncodeError``.
    """
    cleaned, found = replaced_lone_surrogates(text)
    if found:
        logger.warning(
            "%s: %d lone surrogate escape(s) (half of a UTF-16 pair, not text) replaced with "
            "U+FFFD.",
            source_path,
            found,
        )
    return cleaned


def replaced_lone_surrogates(text: str) -> tuple[str, int]:
    """``text`` with each lone surrogate spelt U+FFFD, and how many there were (0: ``text``)."""
    if text.isascii():  # the usual text: nothing to look for
        return text, 0
    return _LONE_SURROGATE.subn("\ufffd", text)


def undecoded_byte(text: str) -> str | None:
    """Where ``text`` holds a character no UTF-8 encodes (a lone surrogate), else ``None``.

    Bytes that were not UTF-8 reach Python as such surrogates (``surrogateescape``: argv,
    stdin); a JSON string may carry one too. The embedding tokenizer refuses them, so the
    dense leg failed and the search quietly lost it.
    """
    if text.isascii():  # the usual text: no encoding to try
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        return f"{what} at character {error.start}"
    return None


def check_query_text(query: str) -> None:
    """Refuse a search query holding a byte that is not UTF-8 text (``undecoded_byte``).

    Raises:
        ValueError: ``Search query is not UTF-8 text (byte 0xff at character 5); send the
            words as UTF-8.``
    """
    where = undecoded_byte(query)
    if where is not None:
        msg = f"Search query is not UTF-8 text ({where}); send the words as UTF-8."
        raise ValueError(msg)


_CHAOS_MARGIN = 0.1
"""How much messier than charset-normalizer's best guess a configured fallback may read and
still win, when its text reads as Latin words (``_reads_as_latin_words``)."""
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f\s]{3,}")


def _accents_only(text: str) -> bool:
    """Whether every non-ASCII character of ``text`` is an accented Latin letter (U+00C0-U+00FF).

    ``Eu não sei.`` read as cp1252 is; a short Shift-JIS or UTF-16 text read so is not: its
    characters become quotes, ``Œ``, ``Ž``, ``Š`` (``2024年`` is ``2024”N``).
    """
    return all(ch < "\x80" or ("\xc0" <= ch <= "\xff" and ch not in "\xd7\xf7") for ch in text)


def _reads_as_latin_words(text: str) -> bool:
    """Whether ``text``'s non-ASCII characters stand mostly alone or in pairs among ASCII ones.

    So do the accents of a Latin-script language (``très``, ``così``, ``informações``). A
    double-byte (GBK, Big5, EUC) or a Cyrillic or Greek text read as a Latin code page is a
    run of accented letters and symbols per word (``ÅäÖÃÎÄ¼þ``): here more than a quarter of
    its non-ASCII characters stand in runs of three or more.
    """
    non_ascii = sum(1 for ch in text if ord(ch) > 0x7F and not ch.isspace())
    in_runs = sum(len(run) for run in _NON_ASCII_RUN.findall(text))
    return in_runs * 4 <= non_ascii


def mostly_utf8(data: bytes) -> tuple[str, int] | None:
    """(text, invalid sequences) when ``data`` is UTF-8 text with a few invalid bytes.

    UTF-8 it is when its valid multi-byte sequences outnumber the invalid ones four to one:
    one stray byte in a UTF-8 file is not a reason to read all of it as cp1252.
    """
    if bom_encoding(data) is not None or b"\x00" in data:
        return None
    valid = len(_UTF8_MULTIBYTE.findall(data))
    if not valid:
        return None
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count("\ufffd".encode())
    return (text, invalid) if 0 < invalid * 4 <= valid else None


def check_encoding(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a codec this interpreter can load.

    A known codec whose module fails to import (an interpreter this user cannot read) is
    reported as that, with the import error, not as an unknown encoding.
    """
    try:
        codecs.lookup(name)
    except LookupError:
        module = encodings.normalize_encoding(name).lower()
        module = encodings.aliases.aliases.get(module, module)
        if module not in set(encodings.aliases.aliases.values()):
            msg = f"encoding_fallbacks has an unknown encoding {name!r}."
            raise ValueError(msg) from None
        try:
            importlib.import_module(f"encodings.{module}")
            reason = "the codec registry refused it"
        except Exception as error:  # the reason is the message
            reason = f"{type(error).__name__}: {error}"
        msg = (
            f"encoding_fallbacks: the codec {name!r} exists but its module encodings.{module} "
            f"could not be loaded ({reason}); check that this user can read the Python "
            f"installation at {sys.prefix!r}, or pass encoding_fallbacks=()."
        )
        raise ValueError(msg) from None


def _codec(name: str) -> str:
    return codecs.lookup(name).name


def _try_decode(data: bytes, encoding: str) -> tuple[str | None, str | None]:
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        return None, None


def bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None
