-- Embeddings are derived data: recomputable, stored beside the drawer, keyed by model.
-- Needs the pgvector extension: a superuser creates it once (`CREATE EXTENSION vector`) if this role may not.
CREATE EXTENSION IF NOT EXISTS vector;

-- `vector` without a fixed dimension: the dimension is read from the provider and a model change re-embeds in the
-- background, so one palace may hold vectors of two dimensions for a while. An HNSW index needs a fixed dimension,
-- so the store creates one partial expression index per dimension the first time it stores vectors of that size.
CREATE TABLE embedding (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- load order for the in-memory index
    model TEXT COLLATE "C" NOT NULL,
    drawer_seq BIGINT NOT NULL REFERENCES drawer(seq),
    passage INTEGER NOT NULL,
    dimension INTEGER NOT NULL,
    vector VECTOR NOT NULL,             -- float32, L2-normalized
    UNIQUE (model, drawer_seq, passage)
);
CREATE INDEX embedding_load ON embedding(model, id);

-- A drawer is marked once its passages are stored (a drawer may have none), so the embed sweep knows what is left.
CREATE TABLE embedded (
    model TEXT COLLATE "C" NOT NULL,
    drawer_seq BIGINT NOT NULL REFERENCES drawer(seq),
    dimension INTEGER NOT NULL,
    PRIMARY KEY (model, drawer_seq)
);
