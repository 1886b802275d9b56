-- A person's marks on a drawer (docs/lifecycle.md): a pinned drawer always enters the wake-up bundle and the recall
-- of its wing; a hidden one is left out of search, recall and wake-up unless asked for. A new version keeps them.
ALTER TABLE drawer ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
ALTER TABLE drawer ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
CREATE INDEX drawer_pinned ON drawer(room_id, seq) WHERE pinned;
