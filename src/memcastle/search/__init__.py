"""Retrieval: lexical, semantic, fusion, expansion, and the embedding providers."""
