"""reStructuredText object descriptions: the names a chunk documents (``.. py:data:: NAME``)."""

from __future__ import annotations

import re

_OBJECT = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:py:)?"
    r"(?:function|class|method|attribute|data|exception|decorator|property|classmethod"
    r"|staticmethod|module)::[ \t]+(?P<name>[A-Za-z_][\w.]*)[^\n]*\n?"
    r"(?P<options>(?:[ \t]+:[\w-]+:[^\n]*\n?)*)",
    re.MULTILINE,
)
_NO_INDEX = re.compile(r":no-?index:")


def object_names(text: str) -> list[str]:
    """The objects ``text`` describes, in order, each name as written, once.

    ``.. py:data:: MAX_CONTENT_LENGTH``, ``.. function:: url_for``, ``.. class:: Flask``:
    Sphinx's Python domain, with or without ``py:``. Not autodoc's ``.. autofunction::``
    (its text is in the code, which the code splitter names) nor a description marked
    ``:noindex:`` (a repeat of one that is elsewhere).
    """
    return list(
        dict.fromkeys(
            match["name"].rstrip(".")
            for match in _OBJECT.finditer(text)
            if not _NO_INDEX.search(match["options"])
        )
    )
