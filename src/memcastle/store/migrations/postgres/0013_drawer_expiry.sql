-- A drawer's own expiry (docs/lifecycle.md, "Expiry"): a note or checkpoint kept for so long. After it, the drawer
-- reads as closed with the reason "expired"; `[[lifecycle]]` rules may give matching drawers an earlier one.
ALTER TABLE drawer ADD COLUMN expires_at TEXT COLLATE "C";
