-- Near-duplicate candidates: MinHash band keys per drawer (a key already includes the drawer's wing and room).
CREATE TABLE drawer_band (
    band INTEGER NOT NULL,
    drawer_id TEXT NOT NULL REFERENCES drawer(id),
    PRIMARY KEY (band, drawer_id)
) WITHOUT ROWID;

-- Embedding row ids must never be reused: the in-memory index loads rows by increasing id, so a re-embedded
-- drawer's new rows must come after every row it has already read.
CREATE TABLE embedding_next (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    model TEXT NOT NULL,
    drawer_seq INTEGER NOT NULL REFERENCES drawer(seq),
    passage INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (model, drawer_seq, passage)
);
INSERT INTO embedding_next(id, model, drawer_seq, passage, vector)
    SELECT id, model, drawer_seq, passage, vector FROM embedding ORDER BY id;
DROP TABLE embedding;
ALTER TABLE embedding_next RENAME TO embedding;

-- The MinHash signature itself, so candidates are compared by signature before any text is read.
CREATE TABLE drawer_signature (
    drawer_id TEXT PRIMARY KEY REFERENCES drawer(id),
    signature BLOB NOT NULL
) WITHOUT ROWID;
