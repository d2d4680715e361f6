"""Hybrid retrieval over your own documents, for LangChain."""
