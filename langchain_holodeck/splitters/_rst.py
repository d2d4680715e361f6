"""reStructuredText object descriptions: the names a chunk documents (``.. py:data:: NAME``)."""

from __future__ import annotations

import re

_OBJECT = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:py:)?(?:auto)?"
    r"(?:function|class|method|attribute|data|exception|decorator|property|classmethod"
    r"|staticmethod|module)::[ \t]+(?P<name>[A-Za-z_][\w.]*)",
    re.MULTILINE,
)


def object_names(text: str) -> list[str]:
    """The objects ``text`` describes, in order, each name as written, once.

    ``.. py:data:: MAX_CONTENT_LENGTH``, ``.. autofunction:: url_for``, ``.. class:: Flask``:
    Sphinx's Python domain, with or without ``py:``, and autodoc's ``auto...`` directives.
    """
    return list(dict.fromkeys(match["name"].rstrip(".") for match in _OBJECT.finditer(text)))
