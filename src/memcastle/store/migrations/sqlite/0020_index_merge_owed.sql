-- A forget on a full disk erases its drawers at once but may find no room to merge the full-text index without their
-- words (FTS5's `optimize` rewrites the index): the merge is owed, and made when there is room (ADR 0051).
CREATE TABLE index_merge_owed (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    since TEXT NOT NULL
);
