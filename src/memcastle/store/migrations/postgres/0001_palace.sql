-- Wings, rooms, drawers (immutable content), tags, full-text index, sources, documents, jobs.
-- Text columns that are ordered or compared use the "C" collation: byte order, as SQLite's BINARY, so listings and
-- the fixed-width RFC 3339 timestamps sort the same on both backends whatever the database's locale.

-- Full-text: the english snowball stemmer without a stop-word list. Stop words are the query builder's decision
-- (search/lexical.py drops them unless nothing else is left), so they must stay searchable, as in SQLite FTS5.
-- Case folding, diacritics and word splitting happen in Python before the text reaches to_tsvector (store/postgres.py
-- `search_text`), so documents and queries are tokenized alike whatever the database's locale.
CREATE TEXT SEARCH DICTIONARY memcastle_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION memcastle_english (COPY = english);
ALTER TEXT SEARCH CONFIGURATION memcastle_english
    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart
    WITH memcastle_stem;

CREATE TABLE wing (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE room (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    wing_id BIGINT NOT NULL REFERENCES wing(id),
    name TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    UNIQUE (wing_id, name)
);

CREATE TABLE drawer (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT COLLATE "C" NOT NULL UNIQUE,
    room_id BIGINT NOT NULL REFERENCES room(id),
    name TEXT COLLATE "C",
    content TEXT NOT NULL,              -- verbatim, except that NUL (which TEXT cannot hold) reads U+FFFD here ...
    content_exact BYTEA,                -- ... and then the exact UTF-8 bytes are kept here; NULL otherwise
    content_hash TEXT COLLATE "C" NOT NULL,
    fingerprint TEXT COLLATE "C" NOT NULL,
    source_kind TEXT COLLATE "C" NOT NULL,
    source_uri TEXT,
    source_agent TEXT COLLATE "C",
    connector TEXT COLLATE "C",         -- origin.connector, kept as a column for scoped queries
    origin JSON,                        -- JSON (not JSONB): the snapshot keeps its key order, frozen at mine time
    tags JSON NOT NULL DEFAULT '[]',
    provenance JSON NOT NULL,
    valid_from TEXT COLLATE "C" NOT NULL,
    valid_to TEXT COLLATE "C",
    supersedes TEXT COLLATE "C",
    superseded_by TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    token_count INTEGER NOT NULL,       -- document length for BM25
    search TSVECTOR NOT NULL            -- content never changes, so it is computed once, at insert
);
-- A name is unique among the current drawers of a room; history keeps the name on closed versions.
CREATE UNIQUE INDEX drawer_current_name ON drawer(room_id, name) WHERE name IS NOT NULL AND valid_to IS NULL;
CREATE INDEX drawer_room ON drawer(room_id, seq);
CREATE INDEX drawer_hash ON drawer(room_id, content_hash);
CREATE INDEX drawer_fingerprint ON drawer(room_id, fingerprint);
CREATE INDEX drawer_valid ON drawer(valid_to, valid_from);
CREATE INDEX drawer_created ON drawer(created_at);
CREATE INDEX drawer_search ON drawer USING GIN (search);

CREATE TABLE drawer_tag (
    drawer_seq BIGINT NOT NULL REFERENCES drawer(seq),
    tag TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (tag, drawer_seq)
);
CREATE INDEX drawer_tag_drawer ON drawer_tag(drawer_seq);

CREATE TABLE source (
    id TEXT COLLATE "C" PRIMARY KEY,
    connector TEXT COLLATE "C" NOT NULL,
    locator TEXT NOT NULL,
    options JSON NOT NULL,
    cursor TEXT,
    updated_at TEXT COLLATE "C" NOT NULL
);

CREATE TABLE document (
    source_id TEXT COLLATE "C" NOT NULL REFERENCES source(id),
    external_id TEXT COLLATE "C" NOT NULL,
    revision TEXT NOT NULL,
    chunk_hashes JSON NOT NULL,
    drawer_ids JSON NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (source_id, external_id)
);

CREATE TABLE job (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL,
    priority INTEGER NOT NULL,
    params JSON NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    started_at TEXT COLLATE "C",
    finished_at TEXT COLLATE "C",
    progress JSON NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    recovery_attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    checkpoint JSON NOT NULL DEFAULT '{}',
    result JSON,
    error TEXT,
    lease_owner TEXT COLLATE "C",
    lease_expires_at TEXT COLLATE "C",  -- on the database's clock, the one clock every daemon shares
    pause_requested BOOLEAN NOT NULL DEFAULT FALSE,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    requested_by TEXT NOT NULL,
    coalesce_key TEXT COLLATE "C"
);
CREATE INDEX job_claim ON job(status, priority DESC, created_at);
CREATE INDEX job_coalesce ON job(coalesce_key, status);
