-- Wings, rooms, drawers (immutable content), tags, full-text index, sources, documents, jobs.
CREATE TABLE wing (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE room (
    id INTEGER PRIMARY KEY,
    wing_id INTEGER NOT NULL REFERENCES wing(id),
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (wing_id, name)
);

CREATE TABLE drawer (
    seq INTEGER PRIMARY KEY,            -- rowid, shared with the full-text index
    id TEXT NOT NULL UNIQUE,
    room_id INTEGER NOT NULL REFERENCES room(id),
    name TEXT,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    source_uri TEXT,
    source_agent TEXT,
    connector TEXT,                     -- origin.connector, kept as a column for scoped queries
    origin TEXT,                        -- JSON, frozen at mine time
    tags TEXT NOT NULL DEFAULT '[]',
    provenance TEXT NOT NULL,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    supersedes TEXT,
    superseded_by TEXT,
    created_at TEXT NOT NULL
);
-- A name is unique among the current drawers of a room; history keeps the name on closed versions.
CREATE UNIQUE INDEX drawer_current_name ON drawer(room_id, name) WHERE name IS NOT NULL AND valid_to IS NULL;
CREATE INDEX drawer_room ON drawer(room_id, seq);
CREATE INDEX drawer_hash ON drawer(room_id, content_hash);
CREATE INDEX drawer_fingerprint ON drawer(room_id, fingerprint);
CREATE INDEX drawer_valid ON drawer(valid_to, valid_from);
CREATE INDEX drawer_created ON drawer(created_at);

CREATE TABLE drawer_tag (
    drawer_seq INTEGER NOT NULL REFERENCES drawer(seq),
    tag TEXT NOT NULL,
    PRIMARY KEY (tag, drawer_seq)
) WITHOUT ROWID;

CREATE VIRTUAL TABLE drawer_fts USING fts5(
    content,
    content = 'drawer',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Drawer content never changes once stored, so an insert trigger keeps the index whole.
CREATE TRIGGER drawer_fts_insert AFTER INSERT ON drawer BEGIN
    INSERT INTO drawer_fts(rowid, content) VALUES (new.seq, new.content);
END;

CREATE TABLE source (
    id TEXT PRIMARY KEY,
    connector TEXT NOT NULL,
    locator TEXT NOT NULL,
    options TEXT NOT NULL,
    cursor TEXT,
    updated_at TEXT NOT NULL
);

CREATE TABLE document (
    source_id TEXT NOT NULL REFERENCES source(id),
    external_id TEXT NOT NULL,
    revision TEXT NOT NULL,
    chunk_hashes TEXT NOT NULL,
    drawer_ids TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (source_id, external_id)
);

CREATE TABLE job (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    priority INTEGER NOT NULL,
    params TEXT NOT NULL,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    progress TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    recovery_attempts INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL DEFAULT 3,
    checkpoint TEXT NOT NULL DEFAULT '{}',
    result TEXT,
    error TEXT,
    lease_owner TEXT,
    lease_expires_at TEXT,
    pause_requested INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    requested_by TEXT NOT NULL,
    coalesce_key TEXT
);
CREATE INDEX job_claim ON job(status, priority DESC, created_at);
CREATE INDEX job_coalesce ON job(coalesce_key, status);
