-- Scripts written without spaces (Chinese, Japanese, Korean, Thai, …) are indexed a character at a time
-- (memcastle.model.scripts): the store indexes such a drawer again, spaced, in the transaction that inserts it. The
-- drawers stored before are found by a scan the store runs at open, from `after_seq` on, batch by batch (a crash
-- resumes it); the row goes when the scan is done.
CREATE TABLE drawer_fts_rescan (
    after_seq INTEGER NOT NULL
);
INSERT INTO drawer_fts_rescan(after_seq) VALUES (0);
