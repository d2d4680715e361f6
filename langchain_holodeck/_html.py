"""An HTML page's own content: its main element, without the site's navigation around it.

A page of a generated docs site (Sphinx, MkDocs, Docusaurus) repeats the site around its own
text: a sidebar listing every page, a header, previous and next links, a footer. markitdown
converts the whole ``<body>``, so each page gave chunks of the same links and copyright
lines, found by every query that names a page. The page's own text is marked up the same way
across generators: the ``<main>`` element or ``role="main"`` (Sphinx's ``div.body``), and the
navigation as ``<nav>`` or ``role="navigation"`` (Sphinx's sidebar and related links).

``PageHtmlConverter`` is markitdown's ``HtmlConverter`` given that part of the page:
navigation removed, then the innermost main element when there is exactly one (its page's
``<h1>`` put first when the element has none), else the rest of the body.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO

from bs4 import BeautifulSoup, Tag
from markitdown import DocumentConverterResult, StreamInfo
from markitdown.converters import HtmlConverter

__all__ = ["PageHtmlConverter", "page_content"]

NAVIGATION = 'nav, [role="navigation"]'
"""What a page marks as navigation: removed before conversion."""
MAIN = 'main, [role="main"]'
"""What a page marks as its main content."""


def page_content(soup: BeautifulSoup) -> str:
    """The HTML of ``soup``'s own content: navigation removed, its main element if it has one.

    ``soup`` is changed in place (its navigation is removed). Where the page marks exactly one
    innermost main element, only that element is kept, with the page's first ``<h1>`` put
    before it when the element holds no ``<h1>`` of its own (a title in the site's header);
    elsewhere the whole page is kept, without its navigation.
    """
    for element in soup.select(NAVIGATION):
        element.decompose()
    innermost = [m for m in soup.select(MAIN) if m.select_one(MAIN) is None]
    if len(innermost) != 1:
        return str(soup)
    main = innermost[0]
    title = soup.find("h1") if main.find("h1") is None else None
    return (str(title) if isinstance(title, Tag) else "") + str(main)


class PageHtmlConverter(HtmlConverter):
    """markitdown's HTML converter over ``page_content``: a page without its site around it."""

    def convert(
        self, file_stream: BinaryIO, stream_info: StreamInfo, **kwargs: Any
    ) -> DocumentConverterResult:
        encoding = "utf-8" if stream_info.charset is None else stream_info.charset
        soup = BeautifulSoup(file_stream, "html.parser", from_encoding=encoding)
        content = page_content(soup).encode("utf-8")
        info = stream_info.copy_and_update(charset="utf-8")
        return super().convert(io.BytesIO(content), info, **kwargs)
