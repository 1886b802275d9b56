-- The knowledge graph: entities, mentions, assertions (fact edges), immutable fact links; drawer similarity links.
CREATE TABLE entity (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    aliases JSON NOT NULL DEFAULT '[]',
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX entity_key ON entity(key);
CREATE INDEX entity_name ON entity(name);

CREATE TABLE entity_alias (
    entity_id TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    alias_key TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (alias_key, entity_id)
);

CREATE TABLE entity_hint (
    entity_id TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    other_id TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    kind TEXT COLLATE "C" NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (entity_id, other_id, kind)
);
CREATE INDEX entity_hint_other ON entity_hint(other_id);

CREATE TABLE mention (
    drawer_id TEXT COLLATE "C" NOT NULL REFERENCES drawer(id),
    entity_id TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    spelling TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (drawer_id, entity_id, spelling)
);
CREATE INDEX mention_entity ON mention(entity_id, drawer_id);

CREATE TABLE assertion (
    id TEXT COLLATE "C" PRIMARY KEY,
    subject TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    predicate TEXT COLLATE "C" NOT NULL,
    object TEXT COLLATE "C" NOT NULL REFERENCES entity(id),
    confidence DOUBLE PRECISION NOT NULL,
    valid_from TEXT COLLATE "C" NOT NULL,
    valid_to TEXT COLLATE "C",
    drawer_id TEXT COLLATE "C" REFERENCES drawer(id),
    extractor TEXT COLLATE "C" NOT NULL,
    job_id TEXT COLLATE "C",
    origin JSON,
    explicit BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX assertion_subject ON assertion(subject, predicate);
CREATE INDEX assertion_object ON assertion(object);
CREATE INDEX assertion_drawer ON assertion(drawer_id);

CREATE TABLE fact_link (
    id TEXT COLLATE "C" PRIMARY KEY,
    from_id TEXT COLLATE "C" NOT NULL REFERENCES assertion(id),
    to_id TEXT COLLATE "C" NOT NULL REFERENCES assertion(id),
    kind TEXT COLLATE "C" NOT NULL,
    origin TEXT COLLATE "C" NOT NULL,
    reason TEXT NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    evidence_drawer TEXT COLLATE "C"
);
CREATE INDEX fact_link_from ON fact_link(from_id);
CREATE INDEX fact_link_to ON fact_link(to_id);

CREATE TABLE extraction_read (
    drawer_id TEXT COLLATE "C" NOT NULL REFERENCES drawer(id),
    extractor TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (extractor, drawer_id)
);
CREATE INDEX extraction_read_drawer ON extraction_read(drawer_id);

CREATE TABLE drawer_link (
    from_id TEXT COLLATE "C" NOT NULL REFERENCES drawer(id),
    to_id TEXT COLLATE "C" NOT NULL REFERENCES drawer(id),
    verdict TEXT COLLATE "C" NOT NULL,
    similarity DOUBLE PRECISION NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (from_id, to_id)
);
CREATE INDEX drawer_link_to ON drawer_link(to_id);
