-- The knowledge graph: entities, mentions, assertions (fact edges), immutable fact links; drawer similarity links.
CREATE TABLE entity (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    aliases TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL
);
CREATE INDEX entity_key ON entity(key);
CREATE INDEX entity_name ON entity(name);

CREATE TABLE entity_alias (
    entity_id TEXT NOT NULL REFERENCES entity(id),
    alias_key TEXT NOT NULL,
    PRIMARY KEY (alias_key, entity_id)
) WITHOUT ROWID;

CREATE TABLE entity_hint (
    entity_id TEXT NOT NULL REFERENCES entity(id),
    other_id TEXT NOT NULL REFERENCES entity(id),
    kind TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (entity_id, other_id, kind)
) WITHOUT ROWID;

CREATE TABLE mention (
    drawer_id TEXT NOT NULL REFERENCES drawer(id),
    entity_id TEXT NOT NULL REFERENCES entity(id),
    spelling TEXT NOT NULL,
    PRIMARY KEY (drawer_id, entity_id, spelling)
) WITHOUT ROWID;
CREATE INDEX mention_entity ON mention(entity_id, drawer_id);

CREATE TABLE assertion (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL REFERENCES entity(id),
    predicate TEXT NOT NULL,
    object TEXT NOT NULL REFERENCES entity(id),
    confidence REAL NOT NULL,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    drawer_id TEXT REFERENCES drawer(id),
    extractor TEXT NOT NULL,
    job_id TEXT,
    origin TEXT,
    explicit INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX assertion_subject ON assertion(subject, predicate);
CREATE INDEX assertion_object ON assertion(object);
CREATE INDEX assertion_drawer ON assertion(drawer_id);

CREATE TABLE fact_link (
    id TEXT PRIMARY KEY,
    from_id TEXT NOT NULL REFERENCES assertion(id),
    to_id TEXT NOT NULL REFERENCES assertion(id),
    kind TEXT NOT NULL,
    origin TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    evidence_drawer TEXT
);
CREATE INDEX fact_link_from ON fact_link(from_id);
CREATE INDEX fact_link_to ON fact_link(to_id);

CREATE TABLE extraction_read (
    drawer_id TEXT NOT NULL REFERENCES drawer(id),
    extractor TEXT NOT NULL,
    PRIMARY KEY (extractor, drawer_id)
) WITHOUT ROWID;

CREATE TABLE drawer_link (
    from_id TEXT NOT NULL REFERENCES drawer(id),
    to_id TEXT NOT NULL REFERENCES drawer(id),
    verdict TEXT NOT NULL,
    similarity REAL NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (from_id, to_id)
) WITHOUT ROWID;
CREATE INDEX drawer_link_to ON drawer_link(to_id);
