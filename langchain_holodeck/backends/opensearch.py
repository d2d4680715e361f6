"""The OpenSearch keyword-index provider (``keyword_index.provider: opensearch``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_holodeck._redact import mask_url_password
from langchain_holodeck.backends._registry import register_keyword_index
from langchain_holodeck.backends.base import KeywordIndexProvider
from langchain_holodeck.config._backends import OpenSearchKeywordIndexConfig
from langchain_holodeck.keyword_index.opensearch import OpenSearchKeywordIndex

if TYPE_CHECKING:
    from pathlib import Path

    from langchain_core.vectorstores import VectorStore

    from langchain_holodeck.backends.base import Backend
    from langchain_holodeck.contracts import KeywordIndex


@register_keyword_index
class OpenSearchKeywordIndexProvider(KeywordIndexProvider):
    """An ``OpenSearchKeywordIndex`` filtered to the corpus's namespace.

    Setup:
        ``pip install "langchain-holodeck[opensearch]"``
    """

    provider = "opensearch"
    config_type = OpenSearchKeywordIndexConfig
    client_loggers = ("opensearch",)  # HEAD http://.../index [status:N/A ...] per attempt

    config: OpenSearchKeywordIndexConfig

    def open(
        self,
        *,
        backend: Backend,
        store: VectorStore,
        namespace: str,
        store_dir: Path | None = None,
    ) -> KeywordIndex:
        config = self.config
        return OpenSearchKeywordIndex(
            config.endpoint,
            index_name=config.index_name,
            username=config.username,
            password=config.password,
            api_key=config.api_key,
            verify_certs=config.verify_certs,
            timeout=config.timeout_seconds,
            namespace=namespace,
        )

    def describe(self, *, store_dir: Path | None = None, backend: Backend | None = None) -> str:
        endpoint = mask_url_password(self.config.endpoint)
        return f"opensearch {endpoint}, index {self.config.index_name}"
