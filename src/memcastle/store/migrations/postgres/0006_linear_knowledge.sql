-- Lookups the extraction sweep makes per name and per fact, so no batch reads every entity or every fact of a
-- subject. Entity keys of six characters or more are stored with each of their one-character deletions: two keys
-- within one edit of each other share at least one of these variants (the one-edit candidate lookup, SPEC §4).
CREATE TABLE entity_key_variant (
    variant TEXT NOT NULL,
    entity_id TEXT NOT NULL REFERENCES entity(id),
    PRIMARY KEY (variant, entity_id)
);

INSERT INTO entity_key_variant(variant, entity_id)
SELECT key, id FROM entity WHERE length(key) >= 6
ON CONFLICT DO NOTHING;

INSERT INTO entity_key_variant(variant, entity_id)
SELECT substr(e.key, 1, p.i - 1) || substr(e.key, p.i + 1), e.id
FROM entity e CROSS JOIN LATERAL generate_series(1, length(e.key)) AS p(i)
WHERE length(e.key) >= 6
ON CONFLICT DO NOTHING;

-- The newest facts making the same claim, and the newest open facts of a subject and predicate.
CREATE INDEX assertion_claim ON assertion(subject, predicate, object, valid_from, id);
CREATE INDEX assertion_open ON assertion(subject, predicate, valid_from, id) WHERE valid_to IS NULL;
-- The explicit decisions among a few facts' links (inference never overrides one), without reading inferred links.
CREATE INDEX fact_link_explicit_from ON fact_link(from_id) WHERE origin = 'explicit';
CREATE INDEX fact_link_explicit_to ON fact_link(to_id) WHERE origin = 'explicit';
