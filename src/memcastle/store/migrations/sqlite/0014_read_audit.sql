-- The read audit (docs/security.md, "The read audit"): who read what, when — the operation, the query (redacted)
-- and the ids each answer returned, never the text. Kept for `audit.retention`; a forgotten drawer's ids go with it.
CREATE TABLE read_audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    interface TEXT NOT NULL,
    operation TEXT NOT NULL,
    token TEXT,
    client TEXT,
    session TEXT,
    query TEXT
);
CREATE INDEX read_audit_at ON read_audit(at);
CREATE INDEX read_audit_token ON read_audit(token, at);
CREATE INDEX read_audit_client ON read_audit(client, at);
CREATE TABLE read_audit_item (
    audit_id INTEGER NOT NULL REFERENCES read_audit(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    item_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (audit_id, kind, position)
);
CREATE INDEX read_audit_item_id ON read_audit_item(item_id);
