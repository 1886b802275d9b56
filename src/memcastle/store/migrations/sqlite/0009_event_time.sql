-- Event time and record time (docs/lifecycle.md). A mined drawer is valid from when its document's revision
-- happened (the origin's occurred_at: a commit's time, a session's start, a note's date, a file's modification),
-- never later than when it was mined; `created_at` stays when the palace learnt it, and `closed_at` says when the
-- palace learnt that it closed (its `valid_to` is when that happened). `closed_reason` says why a drawer closed
-- without a successor ("removed at source").
ALTER TABLE drawer ADD COLUMN closed_at TEXT;
ALTER TABLE drawer ADD COLUMN closed_reason TEXT;
UPDATE drawer SET closed_at = valid_to WHERE valid_to IS NOT NULL;

-- Validity recomputed from the stored origins, oldest version first: each version opens at its event time when that
-- is after the version before it opened (else at the moment it was mined, as before), and a superseded version
-- closes when its successor opens.
CREATE TEMP TABLE event_time AS
WITH RECURSIVE chain(seq, id, opened) AS (
    SELECT d.seq, d.id,
           CASE WHEN json_extract(d.origin, '$.occurred_at') IS NOT NULL
                THEN min(json_extract(d.origin, '$.occurred_at'), d.created_at) ELSE d.valid_from END
    FROM drawer d
    WHERE d.supersedes IS NULL OR NOT EXISTS (SELECT 1 FROM drawer p WHERE p.id = d.supersedes)
    UNION ALL
    SELECT n.seq, n.id,
           CASE WHEN json_extract(n.origin, '$.occurred_at') IS NOT NULL
                 AND min(json_extract(n.origin, '$.occurred_at'), n.created_at) > chain.opened
                THEN min(json_extract(n.origin, '$.occurred_at'), n.created_at) ELSE n.valid_from END
    FROM drawer n JOIN chain ON n.supersedes = chain.id
)
SELECT seq, opened FROM chain;
CREATE UNIQUE INDEX temp.event_time_seq ON event_time(seq);
UPDATE drawer SET valid_from = (SELECT opened FROM event_time e WHERE e.seq = drawer.seq)
WHERE seq IN (SELECT seq FROM event_time);
UPDATE drawer SET valid_to = (SELECT s.valid_from FROM drawer s WHERE s.id = drawer.superseded_by)
WHERE superseded_by IS NOT NULL AND EXISTS (SELECT 1 FROM drawer s WHERE s.id = drawer.superseded_by);
DROP TABLE event_time;
