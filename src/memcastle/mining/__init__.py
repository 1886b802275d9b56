"""Mining: the shared pipeline every connector goes through, and deterministic chunking."""
