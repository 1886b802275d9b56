-- Near-duplicate bookkeeping keyed by the drawer's integer sequence rather than its 36-character id (the band rows
-- were a third of a mined palace), and a queue of drawers whose copies are still to be looked for: a mine files a
-- document's drawers, bands and signatures in one transaction and links copies a batch of drawers at a time.
CREATE TABLE drawer_band_seq (
    band INTEGER NOT NULL,
    drawer_seq INTEGER NOT NULL REFERENCES drawer(seq),
    PRIMARY KEY (band, drawer_seq)
) WITHOUT ROWID;
INSERT INTO drawer_band_seq(band, drawer_seq)
    SELECT b.band, d.seq FROM drawer_band b JOIN drawer d ON d.id = b.drawer_id;
DROP TABLE drawer_band;
ALTER TABLE drawer_band_seq RENAME TO drawer_band;
CREATE INDEX drawer_band_drawer ON drawer_band(drawer_seq);

CREATE TABLE drawer_signature_seq (
    drawer_seq INTEGER PRIMARY KEY REFERENCES drawer(seq),
    signature BLOB NOT NULL
);
INSERT INTO drawer_signature_seq(drawer_seq, signature)
    SELECT d.seq, s.signature FROM drawer_signature s JOIN drawer d ON d.id = s.drawer_id;
DROP TABLE drawer_signature;
ALTER TABLE drawer_signature_seq RENAME TO drawer_signature;

CREATE TABLE near_pending (
    drawer_seq INTEGER PRIMARY KEY REFERENCES drawer(seq)
);
