-- The neighbours' words in the lexical leg (ADR 0056): a drawer's full-text row has a second column holding the words
-- next to it — the end of the chunk before it and the start of the one after it in its document, or, for a drawer
-- written alone (a note, a checkpoint), of the drawers written alone before and after it in its room by event time
-- (memcastle.store.sql.neighbours). The column ranks at a low weight (`search.context_weight`); snippets, coverage
-- and highlighting read the drawer's own text. The words are kept in `drawer_context`, with the neighbours they came
-- from, because FTS5 deletes an external-content row only when told the words it indexed. The store indexes a
-- drawer when the transaction that writes it commits (no trigger: a drawer is indexed once, with its neighbours).
-- The index is rebuilt here without neighbours; the drawers stored before get theirs from a pass in the background,
-- from `after_seq` on (`drawer_context_owed`; the row goes when it is done), the search correct all along.
CREATE TABLE drawer_context (
    seq INTEGER PRIMARY KEY REFERENCES drawer(seq),
    before_seq INTEGER,
    after_seq INTEGER,
    context TEXT NOT NULL
);
-- The drawers that hold a drawer's words in their context, found when it is forgotten.
CREATE INDEX drawer_context_before ON drawer_context(before_seq);
CREATE INDEX drawer_context_after ON drawer_context(after_seq);
CREATE VIEW drawer_indexed AS
    SELECT d.seq, d.content, coalesce(c.context, '') AS context
    FROM drawer d LEFT JOIN drawer_context c ON c.seq = d.seq;
DROP TRIGGER drawer_fts_insert;
DROP TABLE drawer_fts;
CREATE VIRTUAL TABLE drawer_fts USING fts5(
    content,
    context,
    content = 'drawer_indexed',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO drawer_fts(drawer_fts) VALUES ('rebuild');
DELETE FROM drawer_fts_rescan;
INSERT INTO drawer_fts_rescan(after_seq) SELECT 0 WHERE EXISTS (SELECT 1 FROM drawer);
CREATE TABLE drawer_context_owed (
    after_seq INTEGER NOT NULL
);
INSERT INTO drawer_context_owed(after_seq) SELECT 0 WHERE EXISTS (SELECT 1 FROM drawer);
-- The drawers written alone before and after one in its room, by event time.
CREATE INDEX drawer_room_time ON drawer(room_id, valid_from, seq) WHERE valid_to IS NULL;
