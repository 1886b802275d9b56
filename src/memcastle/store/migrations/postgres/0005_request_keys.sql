-- Idempotency keys of agent writes (notes, checkpoints): a retry with the same key answers with what the first
-- request wrote instead of writing again. Kept for a day; not part of a palace copy.
CREATE TABLE request_key (
    key TEXT PRIMARY KEY,
    operation TEXT NOT NULL,
    digest TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    result TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX request_key_created ON request_key(created_at);
