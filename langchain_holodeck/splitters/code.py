"""Source code: language-aware splitting and the symbols (functions, classes) each chunk defines.

``find_symbols`` is plain Python over a file's text: per language, a regular expression finds
definition lines, and indentation nests them (``class Shift:`` then ``    def swap`` gives
``Shift.swap``; a Go receiver ``func (s *Shift) Swap`` gives ``Shift.Swap``). It needs no
parser, so it works on any file, even one that does not compile.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

from langchain_holodeck._chunk import SIGNATURE, SYMBOLS
from langchain_holodeck._tokens import CAMEL_BOUNDARY, count_tokens
from langchain_holodeck.splitters._metadatas import check_metadatas

__all__ = [
    "CODE_LANGUAGES",
    "SourceCodeSplitter",
    "Symbol",
    "code_signature",
    "find_symbols",
    "name_words",
]

CODE_LANGUAGES: dict[str, str] = {
    "py": "python",
    "pyi": "python",
    "js": "js",
    "jsx": "js",
    "mjs": "js",
    "cjs": "js",
    "ts": "ts",
    "tsx": "ts",
    "go": "go",
    "java": "java",
    "kt": "kotlin",
    "scala": "scala",
    "rs": "rust",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "swift": "swift",
    "lua": "lua",
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "sql": "sql",
    "toml": "toml",
    "yaml": "yaml",
    "yml": "yaml",
    "ini": "ini",
    "cfg": "ini",
    "proto": "proto",
}
"""File extension (lowercase, no dot) -> language name, for the file types read as source code."""

_SPLITTER_LANGUAGES = {language.value: language for language in Language}

_PY_DEFINITION = r"(?:async[ \t]+)?(?:def|class)[ \t]"
_PY_DECORATORS = 32


def _py_decorated(indent: str, definition: str) -> str:
    """A line break, the decorators above a definition, then (looked ahead) the definition.

    A decorator may span lines (``@click.option(`` ... ``)``): its continuation lines start
    with a space or a closing bracket and are no decorator or definition, so the match never
    runs past its own definition. At most ``_PY_DECORATORS`` decorators go with it, so that
    a run of ``@`` lines without a definition costs linear time, not quadratic.
    """
    continuation = r"(?![ \t]*(?:@|" + _PY_DEFINITION + r"))[ \t)\]}][^\n]*\n"
    decorators = rf"(?:{indent}@[^\n]*\n(?:{continuation})*){{0,{_PY_DECORATORS}}}"
    return r"\n" + decorators + r"(?=" + indent + definition + r")"


_PY_METHOD = _py_decorated(r"[ \t]+", _PY_DEFINITION)
"""Cuts a class at its methods (at any indentation: LangChain's cut only at tab-indented
ones). Only a class is cut so: a function keeps its nested functions with its own body."""
_PY_CLASS_START = re.compile(
    rf"\s*(?:@[^\n]*\n(?:[ \t)\]}}][^\n]*\n)*){{0,{_PY_DECORATORS}}}class[ \t]"
)

_COMMENT_LINES = 32
"""Comments kept with the definition below them; a longer run keeps its last ones."""
_COMMENT_MARKERS: dict[str, str] = {"ruby": "#", "lua": "--", "shell": "#", "sql": "--"}
"""Line-comment marker per language; the others use C's (``//`` lines and ``/* ... */``
blocks), and their annotation lines (``@Override``, ``#[test]``) go with the definition too."""
_C_COMMENT = r"(?://[^\n]*|(?:@\w|#\[)[^\n]*|/\*(?:[^*]|\*+[^*/]){0,4000}\*+/[^\n]*)"
"""One C-style comment line, annotation line (``@Override``, Rust's ``#[test]``) or
``/* ... */`` block (of any lines, up to 4000 characters: an unclosed ``/*`` costs a bounded
look, not one to the end of the file)."""


def _with_comments(marker: str, definition: str) -> str:
    """A line break, the comments directly above a definition, then (looked ahead) it.

    As with Python's decorators, the cut goes above a definition's comment (a Go or Rust doc
    comment, a Javadoc and its annotations, ``# deploy it`` above a shell function), not
    between them. The comments are consumed by the match, so no cut falls inside them; at
    most ``_COMMENT_LINES`` go with it, so that a long run of them costs linear time.
    """
    comment = _C_COMMENT if marker == "//" else rf"{re.escape(marker)}[^\n]*"
    return rf"\n(?:[ \t]*{comment}\n){{0,{_COMMENT_LINES}}}(?={definition})"


_MEMBER_LANGUAGES = frozenset(
    {"java", "kotlin", "scala", "csharp", "cpp", "js", "ts", "php", "swift", "rust"}
)
"""Languages whose classes (impl blocks) hold their methods indented."""
_MEMBER_SIGNATURE = (
    r"(?!(?:if|for|while|switch|catch|else|do|return|try|using|lock|foreach|synchronized|with"
    r"|new|throw|await|yield)\b)[@\w][^\n;{}=]*\([^;{}]{0,500}\)[^\n;{}=]*(?:\n[ \t]*)?\{[ \t]*"
    r"(?=\n|\Z)"
)
"""A member's signature after its indentation: a name and its parameters (on one line or
more, up to 500 characters: a bounded look from each line), then ``{`` at the end of the line
or alone on the next (no ``;``, no ``=``, not a control statement)."""
_MEMBER_LINE = re.compile(r"^(?P<indent>[ \t]+)" + _MEMBER_SIGNATURE, re.MULTILINE)
_MEMBER = "(?!)members"
"""Placeholder (it matches nothing) for the cut at the members of the text being split: see
``SourceCodeSplitter._split_text``."""


def _member_separator(text: str) -> str | None:
    """A cut above each least-indented member signature of ``text`` (with its comments).

    LangChain's cuts are at column 0 only, so a class was cut at the blank lines inside its
    methods' bodies. Only the shallowest signatures cut: a class's methods, not the calls with
    a callback (``items.forEach(function (k) {``) inside their bodies.
    """
    indents = {m["indent"] for m in _MEMBER_LINE.finditer(text)}
    if not indents:
        return None
    indent = re.escape(min(indents, key=len))
    return _with_comments("//", indent + _MEMBER_SIGNATURE)


_SEPARATORS: dict[str, list[str]] = {
    "python": [
        _py_decorated("", r"class[ \t]"),
        _py_decorated("", r"(?:async[ \t]+)?def[ \t]"),
        _PY_METHOD,
        r"\n\n",
        r"\n",
        " ",
        "",
    ],
    "shell": [
        _with_comments("#", r"(?:function\s+)?[A-Za-z_][\w-]*\s*\(\)\s*\{?"),
        r"\n\n",
        r"\n",
        " ",
        "",
    ],
    "sql": [
        _with_comments("--", r"(?i:create|alter|drop|insert|update|delete|select|with|grant)\b"),
        r";\n",
        r"\n\n",
        r"\n",
        " ",
        "",
    ],
    "toml": [r"\n(?=\[)", r"\n\n", r"\n", " ", ""],
    "ini": [r"\n(?=\[)", r"\n\n", r"\n", " ", ""],
    "yaml": [  # top-level keys, then the entries of each indentation level in turn
        r"\n(?=[A-Za-z_\"'][^\n:]*:)",
        *(rf"\n(?=[ ]{{{n}}}[^ \n#])" for n in (2, 4, 6, 8)),
        r"\n\n",
        r"\n",
        " ",
        "",
    ],
}
"""Separators (regular expressions) for languages LangChain's ``Language`` does not cover."""

_C_CONTROL = r"(?!(?:if|for|while|switch|return|sizeof|else|do|catch|case)\b)"
_DEFINITIONS: dict[str, list[re.Pattern[str]]] = {
    "python": [re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(?P<name>\w+)")],
    "js": [
        re.compile(
            r"^(?P<indent>[ \t]*)(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?"
            r"(?:function\*?|class)[ \t]+(?P<name>[\w$]+)"
        ),
        re.compile(
            r"^(?P<indent>[ \t]*)(?:export[ \t]+)?(?:const|let|var)[ \t]+(?P<name>[\w$]+)"
            r"[ \t]*(?::[^=]+)?=[ \t]*(?:async[ \t]*)?"
            r"(?:function\b|(?:<[^>=]*>[ \t]*)?\([^)]*\)(?:[ \t]*:[^=;{]+)?[ \t]*=>|[\w$]+[ \t]*=>)"
        ),
        re.compile(
            r"^(?P<indent>[ \t]+)(?:(?:public|private|protected|static|async|readonly|get|set)"
            r"[ \t]+)*" + _C_CONTROL + r"(?P<name>[\w$]+)[ \t]*\([^)]*\)[ \t]*(?::[^{]+)?\{"
        ),
    ],
    "go": [
        re.compile(
            r"^(?P<indent>)func[ \t]+(?:\([ \t]*\w*[ \t]*\*?(?P<owner>\w+)[^)]*\)[ \t]*)?"
            r"(?P<name>\w+)"
        ),
        re.compile(r"^(?P<indent>)type[ \t]+(?P<name>\w+)"),
    ],
    "rust": [
        re.compile(
            r"^(?P<indent>[ \t]*)(?:pub(?:\([^)]*\))?[ \t]+)?(?:async[ \t]+)?(?:unsafe[ \t]+)?"
            r"(?:fn|struct|enum|trait|mod|type)[ \t]+(?P<name>\w+)"
        ),
        re.compile(
            r"^(?P<indent>[ \t]*)impl(?:<[^>]*>)?[ \t]+(?:[\w:<>]+[ \t]+for[ \t]+)?(?P<name>\w+)"
        ),
    ],
    "ruby": [
        re.compile(
            r"^(?P<indent>[ \t]*)(?:def[ \t]+(?:self\.)?|class[ \t]+|module[ \t]+)(?P<name>[\w?!]+)"
        )
    ],
    "shell": [
        re.compile(r"^(?P<indent>[ \t]*)function[ \t]+(?P<name>[\w-]+)"),
        re.compile(r"^(?P<indent>[ \t]*)(?P<name>[A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{?"),
    ],
    "sql": [
        re.compile(
            r"^(?P<indent>)(?i:create)[ \t]+(?i:or[ \t]+replace[ \t]+)?(?:\w+[ \t]+)?"
            r"(?i:table|view|function|procedure|index|trigger|type|schema|sequence)[ \t]+"
            r"(?i:if[ \t]+not[ \t]+exists[ \t]+)?(?P<name>[\w.\"`]+)"
        )
    ],
    "toml": [re.compile(r"^(?P<indent>)\[+[ \t]*(?P<name>[\w.\-\"]+)[ \t]*\]+")],
    "ini": [re.compile(r"^(?P<indent>)\[[ \t]*(?P<name>[^\]]+?)[ \t]*\]")],
    "yaml": [re.compile(r"^(?P<indent>)(?P<name>[A-Za-z_][\w.-]*)[ \t]*:")],
}
_BRACED = [
    re.compile(
        r"^(?P<indent>[ \t]*)(?:(?:public|private|protected|internal|static|final|abstract|sealed"
        r"|partial|export|open|data|inline)[ \t]+)*(?:class|interface|enum|struct|record|object"
        r"|namespace|trait|protocol|extension|module)[ \t]+(?P<name>\w+)"
    ),
    re.compile(
        r"^(?P<indent>[ \t]*)(?:(?:public|private|protected|internal|static|final|abstract"
        r"|virtual|override|inline|extern|const|unsigned|signed|synchronized|async|fun|func"
        r"|function|def)[ \t]+)*" + _C_CONTROL + r"(?:[\w:<>,\[\]*&]+[ \t*&]+)*?"
        r"(?P<name>~?\w+(?:::~?\w+)*)[ \t]*\([^;]*$"
    ),
]
for _language in ("java", "kotlin", "scala", "c", "cpp", "csharp", "php", "swift", "ts", "proto"):
    _DEFINITIONS[_language] = _BRACED + _DEFINITIONS.get(_language, [])
_DEFINITIONS["ts"] = _DEFINITIONS["js"] + _BRACED[:1]
_DEFINITIONS["lua"] = [
    re.compile(r"^(?P<indent>[ \t]*)(?:local[ \t]+)?function[ \t]+(?P<name>[\w.:]+)")
]
_KEYWORDS = frozenset({"if", "for", "while", "switch", "return", "else", "new", "catch", "do"})


@dataclass(frozen=True)
class Symbol:
    """A definition found in source code."""

    name: str
    """The name as defined (``swap``)."""
    qualified_name: str
    """The name with its enclosing definitions, dot-joined (``Shift.swap``)."""
    start: int
    """Offset of the definition in the text (its line's first non-blank character)."""


def find_symbols(text: str, language: str) -> list[Symbol]:
    """The functions, classes, methods (and config tables/keys) ``text`` defines, in order.

    Args:
        text: A source file's text.
        language: A value of ``CODE_LANGUAGES`` (``"python"``, ``"go"``, ...).

    Returns:
        One ``Symbol`` per definition line; nested definitions are qualified by indentation
        (and Go methods by their receiver type). ``[]`` for a language without rules.
    """
    patterns = _DEFINITIONS.get(language, [])
    if not patterns:
        return []
    out: list[Symbol] = []
    stack: list[tuple[int, str]] = []  # (indent width, qualified name) of open definitions
    offset = 0
    in_block_string = False
    for line in text.splitlines(keepends=True):
        start, offset = offset, offset + len(line)
        if language == "python" and line.count('"""') % 2 == 1:
            in_block_string = not in_block_string
            continue
        if in_block_string or not line.strip():
            continue
        width = len(line) - len(line.lstrip(" \t"))
        while stack and stack[-1][0] >= width:
            stack.pop()
        for pattern in patterns:
            match = pattern.match(line)
            if match is None:
                continue
            name = match["name"].strip('"`')
            if name in _KEYWORDS:
                break
            owner = match.groupdict().get("owner")
            parent = owner or (stack[-1][1] if stack else "")
            qualified = f"{parent}.{name}" if parent else name
            qualified = qualified.replace("::", ".")
            out.append(Symbol(name.split("::")[-1].split(".")[-1], qualified, start + width))
            stack.append((width, qualified))
            break
    return out


_NAME_SEPARATORS = re.compile(r"[._:$-]+")


def name_words(name: str) -> str:
    """An identifier as lowercase words: ``Shift.swap_slots`` -> ``shift swap slots``.

    Splits at dots, underscores, ``::``, ``$``, ``-`` and camelCase / ``HTTPServer`` boundaries.
    """
    parts = (w for part in _NAME_SEPARATORS.split(name) for w in CAMEL_BOUNDARY.split(part))
    return " ".join(w.lower() for w in parts if w)


def code_signature(text: str, symbols: Sequence[Symbol]) -> str:
    r"""A code chunk's signature: per definition, its name in words and its definition line.

    Args:
        text: The text ``symbols`` were found in (their ``start`` offsets index it).
        symbols: The definitions starting in the chunk, in order.

    Example:
        ```python
        code = "class Shift:\n    def swap_slots(self, other):\n        pass\n"
        code_signature(code, find_symbols(code, "python"))
        # -> 'shift: class Shift:\nshift swap slots: def swap_slots(self, other):'
        ```
    """
    lines = []
    for symbol in symbols:
        end = text.find("\n", symbol.start)
        line = text[symbol.start : end if end >= 0 else len(text)].strip()
        lines.append(f"{name_words(symbol.qualified_name)}: {line}")
    return "\n".join(lines)


_LISTED_SYMBOLS = 3
"""A code chunk's heading lists up to this many symbols; more are shown as a range."""


def code_heading(defined: Sequence[str], enclosing: Sequence[str]) -> str:
    """A code chunk's label: every symbol it defines (a range past three), else its context.

    Args:
        defined: Qualified names of the definitions starting in the chunk, in order.
        enclosing: Qualified names of the definitions starting before it, in order.

    Example:
        ```python
        code_heading(["Shift", "Shift.swap"], [])  # -> 'Shift, Shift.swap'
        code_heading(["a", "b", "c", "d"], [])  # -> 'a … d (4 definitions)'
        code_heading([], ["Shift.swap"])  # -> 'Shift.swap'
        ```
    """
    names = list(dict.fromkeys(defined))
    if not names:
        return enclosing[-1] if enclosing else ""
    if len(names) <= _LISTED_SYMBOLS:
        return ", ".join(names)
    return f"{names[0]} … {names[-1]} ({len(names)} definitions)"


class SourceCodeSplitter(RecursiveCharacterTextSplitter):
    """Split source code at definition boundaries, and name the symbols of each chunk.

    Separators are LangChain's ``RecursiveCharacterTextSplitter.get_separators_for_language``
    for the languages it knows (JS/TS, Go, Java, Rust, C/C++, Ruby, ...), each cutting above
    the comment and annotation lines directly over a definition (LangChain's cut between them;
    JS/TS also at ``export`` and ``async`` definitions, which LangChain does not cut at)
    and, for languages with classes, next at the class's least-indented method signatures
    (LangChain's cuts are at column 0 only: a class was cut inside its methods' bodies),
    and ours for Python (a definition with its decorators, methods at any indentation:
    LangChain's cut only tab-indented ones, and between a decorator and its ``def``), shell,
    SQL (a definition with its comment, too), TOML, INI and YAML (top-level keys, then the
    entries of each indentation level). The language comes from the input document's
    ``file_type`` metadata (see ``CODE_LANGUAGES``); other texts are split by lines.

    Emits metadata (besides the input document's): ``chunk_index`` (int, 0-based per input
    document), ``language``, ``chunk_type`` (``"code"``), ``symbols`` (qualified names of the
    definitions that start in the chunk, ``ClassName.method``), ``heading`` (all of them, up to
    three: ``Shift, Shift.swap``; else the range ``Shift … Shift.undo (5 definitions)``; a chunk
    defining nothing: the definition it continues, else ``""``), ``parent_chain`` (``[]``) and
    ``signature`` (``code_signature``: per definition, its name in words and its definition
    line; ``""`` when the chunk defines nothing). Sync embeds a chunk's signature as one more
    dense entry of the chunk (``_chunk``), so a query in words finds a function by its name
    and signature as well as by its body.

    Key init args:
        chunk_size: Maximum chunk length, measured by ``length_function`` (default:
            ``cl100k_base`` tokens).
        chunk_overlap: Length shared by consecutive chunks (default 0: definitions do not
            need overlap to be found).

    Instantiate:
        ```python
        splitter = SourceCodeSplitter(chunk_size=512)
        ```

    Invoke:
        ```python
        chunks = splitter.split_documents(docs)  # docs from SourceLoader
        chunks[0].metadata["symbols"]  # -> ['Shift', 'Shift.swap']
        ```
    """

    revision: ClassVar[int] = 3
    """Raised when the same settings split some code differently (1: Python cut at decorated
    definitions and 4-space methods; 2: other languages cut above a definition's comment and
    annotation lines, not between them, JS/TS at ``export``/``async`` definitions too, and a
    class at its methods, not at the blank lines inside them; YAML cut between the entries of
    a long mapping; 3: with ``chunk_overlap``, each chunk's ``start_index``, ``symbols``,
    ``heading`` and ``signature`` are its own, not those of a later offset).
    Part of the ingestion fingerprint: a store split before re-splits its files once."""

    def __init__(
        self,
        *,
        chunk_size: int = 512,
        chunk_overlap: int = 0,
        length_function: Callable[[str], int] = count_tokens,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            length_function=length_function,
            is_separator_regex=True,
            **kwargs,
        )

    def split_text(self, text: str) -> list[str]:
        return [chunk for _, chunk in self._pieces(text, "")]

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[Document]:
        metadatas = check_metadatas(texts, metadatas)
        out: list[Document] = []
        for text, meta in zip(texts, metadatas, strict=True):
            language = CODE_LANGUAGES.get(str(meta.get("file_type", "")).lower(), "")
            symbols = find_symbols(text, language)
            for index, (start, chunk) in enumerate(self._pieces(text, language)):
                end = start + len(chunk)
                starting = [s for s in symbols if start <= s.start < end]
                defined = [s.qualified_name for s in starting]
                enclosing = [s.qualified_name for s in symbols if s.start < start]
                metadata = {
                    **copy.deepcopy(meta),
                    "chunk_index": index,
                    "language": language,
                    "chunk_type": "code",
                    SYMBOLS: list(dict.fromkeys(defined)),
                    "heading": code_heading(defined, enclosing),
                    "parent_chain": [],
                    SIGNATURE: code_signature(text, starting),
                }
                if self._add_start_index:
                    metadata["start_index"] = start
                out.append(Document(page_content=chunk, metadata=metadata))
        return out

    def _split_text(self, text: str, separators: list[str]) -> list[str]:
        if _MEMBER in separators:  # the cut at this text's own members, if it has any
            member = _member_separator(text)
            at = separators.index(_MEMBER)
            separators = [*separators[:at], *([member] if member else []), *separators[at + 1 :]]
        if _PY_METHOD in separators and not _PY_CLASS_START.match(text):
            earlier = separators[: separators.index(_PY_METHOD)]
            if not any(re.search(s, text) for s in earlier):  # the methods' cut is next
                separators = [s for s in separators if s != _PY_METHOD]  # not a class: none
        return super()._split_text(text, separators)

    def _pieces(self, text: str, language: str) -> list[tuple[int, str]]:
        """(offset, text) of each chunk: split with the language's separators."""
        out: list[tuple[int, str]] = []
        start, end = -1, 0  # the previous chunk's span
        for chunk in self._split_text(text, _separators(language)):
            start = self._offset(text, chunk, start, end)
            end = start + len(chunk)
            out.append((start, chunk))
        return out

    def _offset(self, text: str, chunk: str, before: int, end: int) -> int:
        """Where ``chunk`` starts: after the previous chunk's start ``before``, past its ``end``.

        Chunks come in order, each reaching past the one before; with ``chunk_overlap`` it
        starts inside the previous one, on an overlap of at most ``chunk_overlap`` (measured by
        ``length_function``: tokens, so its characters are not known beforehand). Of the
        places the chunk's text is found, the first whose overlap fits is taken (text repeated
        word for word has several), else the first.
        """
        if self._chunk_overlap <= 0 or before < 0:
            found = text.find(chunk, end)
            return found if found >= 0 else end
        first = -1
        at = text.find(chunk, max(before + 1, end - len(chunk) + 1))
        while 0 <= at < end:
            if first < 0:
                first = at
            if self._length_function(text[at:end]) <= self._chunk_overlap:
                return at
            at = text.find(chunk, at + 1)
        if first >= 0:
            return first
        return at if at >= 0 else end


def _separators(language: str) -> list[str]:
    if language in _SEPARATORS:
        return _SEPARATORS[language]
    known = _SPLITTER_LANGUAGES.get(language)
    if known is not None:
        marker = _COMMENT_MARKERS.get(language, "//")
        separators = [
            _with_comments(marker, re.escape(s[1:]))
            if len(s) > 1 and s[0] == "\n" and s[1] != "\n"  # "\nfunc ": a definition's cut
            else re.escape(s)
            for s in RecursiveCharacterTextSplitter.get_separators_for_language(known)
        ]
        if language in ("js", "ts"):  # LangChain's miss "export function", "async function"
            separators.insert(0, _with_comments("//", r"(?:export|async)[ \t]"))
        if language in _MEMBER_LANGUAGES:  # a class's methods before its blank lines
            separators.insert(separators.index(re.escape("\n\n")), _MEMBER)
        return separators
    return [r"\n\n", r"\n", " ", ""]
