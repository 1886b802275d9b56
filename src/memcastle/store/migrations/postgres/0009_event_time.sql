-- Event time and record time (docs/lifecycle.md). A mined drawer is valid from when its document's revision
-- happened (the origin's occurred_at: a commit's time, a session's start, a note's date, a file's modification),
-- never later than when it was mined; `created_at` stays when the palace learnt it, and `closed_at` says when the
-- palace learnt that it closed (its `valid_to` is when that happened). `closed_reason` says why a drawer closed
-- without a successor ("removed at source").
ALTER TABLE drawer ADD COLUMN closed_at TEXT COLLATE "C";
ALTER TABLE drawer ADD COLUMN closed_reason TEXT;
UPDATE drawer SET closed_at = valid_to WHERE valid_to IS NOT NULL;

-- Validity recomputed from the stored origins, oldest version first: each version opens at its event time when that
-- is after the version before it opened (else at the moment it was mined, as before), and a superseded version
-- closes when its successor opens.
CREATE TEMP TABLE event_time ON COMMIT DROP AS
WITH RECURSIVE chain(seq, id, opened) AS (
    SELECT d.seq, d.id,
           CASE WHEN d.origin->>'occurred_at' IS NOT NULL
                THEN LEAST((d.origin->>'occurred_at') COLLATE "C", d.created_at) ELSE d.valid_from END
    FROM drawer d
    WHERE d.supersedes IS NULL OR NOT EXISTS (SELECT 1 FROM drawer p WHERE p.id = d.supersedes)
    UNION ALL
    SELECT n.seq, n.id,
           CASE WHEN n.origin->>'occurred_at' IS NOT NULL
                 AND LEAST((n.origin->>'occurred_at') COLLATE "C", n.created_at) > chain.opened
                THEN LEAST((n.origin->>'occurred_at') COLLATE "C", n.created_at) ELSE n.valid_from END
    FROM drawer n JOIN chain ON n.supersedes = chain.id
)
SELECT seq, opened FROM chain;
CREATE UNIQUE INDEX event_time_seq ON event_time(seq);
UPDATE drawer d SET valid_from = e.opened FROM event_time e WHERE e.seq = d.seq AND d.valid_from <> e.opened;
UPDATE drawer d SET valid_to = s.valid_from FROM drawer s WHERE s.id = d.superseded_by AND d.valid_to <> s.valid_from;
