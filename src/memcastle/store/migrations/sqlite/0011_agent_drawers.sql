-- An agent's drawers (diary entries, checkpoints, notes it wrote) newest first, for the wake-up bundle: it reads
-- what it answers with, not every current drawer.
CREATE INDEX drawer_agent ON drawer(source_agent, seq) WHERE source_agent IS NOT NULL;
