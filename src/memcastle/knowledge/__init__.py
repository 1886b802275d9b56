"""What is derived from stored drawers: facts, entities, drawer dedup, the extract sweep and its providers."""
