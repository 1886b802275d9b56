-- Miners (docs/triggers.md): those defined through the API, kept in the palace beside the config file's (`spec`, a
-- JSON MinerSpec; NULL for a config file's miner, whose definition stays in the file), whether each is enabled, and
-- the last run a trigger or a person asked for.
CREATE TABLE miner (
    name TEXT PRIMARY KEY,
    spec TEXT,
    enabled INTEGER NOT NULL DEFAULT 1,
    last_job_id TEXT,
    last_run_at TEXT,
    last_trigger TEXT,
    updated_at TEXT NOT NULL
);
