-- A drawer's vectors a caller supplied (`PUT /api/drawers/{id}/embedding`) rather than the embed sweep computed: the
-- mark says so, and the sweep's own write for the drawer (a model change re-embeds it) clears it.
ALTER TABLE embedded ADD COLUMN supplied INTEGER NOT NULL DEFAULT 0;
