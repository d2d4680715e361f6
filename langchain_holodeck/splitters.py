"""Text splitters: the token-counted default splitter and the structure-aware splitter."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_text_splitters import Language, RecursiveCharacterTextSplitter, TextSplitter

from langchain_holodeck._tokens import count_tokens


class ChunkIndexedTextSplitter(RecursiveCharacterTextSplitter):
    """A ``RecursiveCharacterTextSplitter`` that numbers the chunks of each input text.

    Emits metadata: ``chunk_index`` (int, 0-based within each input document), plus the input
    document's metadata.

    Instantiate:
        ```python
        splitter = ChunkIndexedTextSplitter(chunk_size=512, chunk_overlap=50,
                                            length_function=count_tokens)
        ```
    """

    def create_documents(
        self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None
    ) -> list[Document]:
        metadatas = metadatas or [{} for _ in texts]
        if len(metadatas) != len(texts):
            msg = (
                f"metadatas has {len(metadatas)} entries but {len(texts)} texts were given; "
                "pass one metadata dict per text."
            )
            raise ValueError(msg)
        out: list[Document] = []
        for text, meta in zip(texts, metadatas, strict=True):
            for index, doc in enumerate(super().create_documents([text], [meta])):
                doc.metadata["chunk_index"] = index
                out.append(doc)
        return out


def default_text_splitter(*, chunk_size: int = 512, chunk_overlap: int = 50) -> TextSplitter:
    """The default splitter: markdown-aware separators, lengths in ``cl100k_base`` tokens.

    Args:
        chunk_size: Maximum chunk length in tokens.
        chunk_overlap: Tokens shared by consecutive chunks.

    Returns:
        A ``ChunkIndexedTextSplitter`` emitting ``chunk_index`` metadata.

    Raises:
        ValueError: When ``chunk_size <= 0``, ``chunk_overlap < 0`` or
            ``chunk_overlap > chunk_size``.
    """
    return ChunkIndexedTextSplitter(
        separators=RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN),
        is_separator_regex=True,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=count_tokens,
    )
