-- Near-duplicate bookkeeping keyed by the drawer's integer sequence rather than its 36-character id, and a queue of
-- drawers whose copies are still to be looked for (see the SQLite migration of the same number).
CREATE TABLE drawer_band_seq (
    band BIGINT NOT NULL,
    drawer_seq BIGINT NOT NULL REFERENCES drawer(seq),
    PRIMARY KEY (band, drawer_seq)
);
INSERT INTO drawer_band_seq(band, drawer_seq)
    SELECT b.band, d.seq FROM drawer_band b JOIN drawer d ON d.id = b.drawer_id;
DROP TABLE drawer_band;
ALTER TABLE drawer_band_seq RENAME TO drawer_band;
ALTER INDEX drawer_band_seq_pkey RENAME TO drawer_band_pkey;
CREATE INDEX drawer_band_drawer ON drawer_band(drawer_seq);

CREATE TABLE drawer_signature_seq (
    drawer_seq BIGINT PRIMARY KEY REFERENCES drawer(seq),
    signature BYTEA NOT NULL
);
INSERT INTO drawer_signature_seq(drawer_seq, signature)
    SELECT d.seq, s.signature FROM drawer_signature s JOIN drawer d ON d.id = s.drawer_id;
DROP TABLE drawer_signature;
ALTER TABLE drawer_signature_seq RENAME TO drawer_signature;
ALTER INDEX drawer_signature_seq_pkey RENAME TO drawer_signature_pkey;

CREATE TABLE near_pending (
    drawer_seq BIGINT PRIMARY KEY REFERENCES drawer(seq)
);
