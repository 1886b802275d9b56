"""PostgreSQL advisory locks are keyed (namespace, key); the namespaces keep MemCastle's apart from other users of
the database."""

LOCK_NAMESPACE = 0x4D43  # "MC": the palace's own locks, below
COALESCE_LOCK_NAMESPACE = 0x4D44  # a job's coalesce key, hashed
MIGRATION_LOCK = 1
EMBEDDING_LOCK = 2
