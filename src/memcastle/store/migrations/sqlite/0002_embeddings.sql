-- Embeddings are derived data: recomputable, stored beside the drawer, keyed by model.
CREATE TABLE embedding (
    id INTEGER PRIMARY KEY,             -- load order for the in-memory index
    model TEXT NOT NULL,
    drawer_seq INTEGER NOT NULL REFERENCES drawer(seq),
    passage INTEGER NOT NULL,
    vector BLOB NOT NULL,               -- float32, little-endian, L2-normalized
    UNIQUE (model, drawer_seq, passage)
);

-- A drawer is marked once its passages are stored (a drawer may have none), so the embed sweep knows what is left.
CREATE TABLE embedded (
    model TEXT NOT NULL,
    drawer_seq INTEGER NOT NULL REFERENCES drawer(seq),
    dimension INTEGER NOT NULL,
    PRIMARY KEY (model, drawer_seq)
) WITHOUT ROWID;
