"""The ``holodeck-rag`` command line."""

from __future__ import annotations

from langchain_holodeck.cli._targets import (
    DEFAULT_STORE,
    DEFAULT_TOOL_NAME,
    DEFAULT_TOP_K,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
)
from langchain_holodeck.cli.main import build_parser, main

__all__ = [
    "DEFAULT_STORE",
    "DEFAULT_TOOL_NAME",
    "DEFAULT_TOP_K",
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "build_parser",
    "main",
]
