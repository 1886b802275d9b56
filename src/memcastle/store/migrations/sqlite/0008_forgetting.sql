-- Forgetting (docs/lifecycle.md). A mined drawer's source and document as columns, so one document's every revision
-- (and one source's every document) is found by an index, not by reading each drawer's origin.
ALTER TABLE drawer ADD COLUMN source_id TEXT;
ALTER TABLE drawer ADD COLUMN document TEXT;
UPDATE drawer SET source_id = json_extract(origin, '$.source_id'), document = json_extract(origin, '$.document')
WHERE origin IS NOT NULL;
CREATE INDEX drawer_document ON drawer(source_id, document) WHERE source_id IS NOT NULL;

-- Lookups by drawer and by entity in the tables a forget cascades through (their keys lead with another column);
-- deleting a parent row checks each of these for children, so without them a forget scans them once per row.
CREATE INDEX IF NOT EXISTS drawer_tag_drawer ON drawer_tag(drawer_seq);
CREATE INDEX IF NOT EXISTS extraction_read_drawer ON extraction_read(drawer_id);
CREATE INDEX IF NOT EXISTS embedding_drawer ON embedding(drawer_seq);
CREATE INDEX IF NOT EXISTS embedded_drawer ON embedded(drawer_seq);
CREATE INDEX IF NOT EXISTS drawer_band_drawer ON drawer_band(drawer_id);
CREATE INDEX IF NOT EXISTS entity_alias_entity ON entity_alias(entity_id);
CREATE INDEX IF NOT EXISTS entity_key_variant_entity ON entity_key_variant(entity_id);
CREATE INDEX IF NOT EXISTS entity_hint_other ON entity_hint(other_id);

-- What a forget leaves: when, by whom, which scope and how much went, and never any of the content.
CREATE TABLE tombstone (
    id TEXT PRIMARY KEY,
    at TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    scope TEXT NOT NULL,                -- JSON
    counts TEXT NOT NULL                -- JSON
);
CREATE INDEX tombstone_at ON tombstone(at);
