-- The neighbours' words in the lexical leg (ADR 0056), as SQLite's migration 21: a drawer's context — the end of the
-- drawer before it and the start of the one after (memcastle.store.sql.neighbours) — with its own full-text vector
-- and length, ranked beside the drawer's own at `search.context_weight`. A row is written when the transaction that
-- writes the drawer commits; the drawers stored before get theirs from a pass in the background, from `after_seq` on.
CREATE TABLE drawer_context (
    seq BIGINT PRIMARY KEY REFERENCES drawer(seq),
    before_seq BIGINT,
    after_seq BIGINT,
    context TEXT NOT NULL,
    token_count INTEGER NOT NULL,
    search TSVECTOR NOT NULL
);
CREATE INDEX drawer_context_search ON drawer_context USING GIN (search);
CREATE INDEX drawer_context_before ON drawer_context(before_seq);
CREATE INDEX drawer_context_after ON drawer_context(after_seq);
CREATE TABLE drawer_context_owed (
    after_seq BIGINT NOT NULL
);
INSERT INTO drawer_context_owed(after_seq) SELECT 0 WHERE EXISTS (SELECT 1 FROM drawer);
-- The drawers written alone before and after one in its room, by event time.
CREATE INDEX drawer_room_time ON drawer(room_id, valid_from, seq) WHERE valid_to IS NULL;
