-- Near-duplicate candidates: MinHash band keys per drawer (a key already includes the drawer's wing and room).
CREATE TABLE drawer_band (
    band BIGINT NOT NULL,
    drawer_id TEXT NOT NULL REFERENCES drawer(id),
    PRIMARY KEY (band, drawer_id)
);

-- The MinHash signature itself, so candidates are compared by signature before any text is read.
CREATE TABLE drawer_signature (
    drawer_id TEXT PRIMARY KEY REFERENCES drawer(id),
    signature BYTEA NOT NULL
);
