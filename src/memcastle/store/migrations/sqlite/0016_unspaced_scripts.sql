-- Scripts written without spaces (Chinese, Japanese, Korean, Thai, …) are indexed a character at a time
-- (memcastle.model.scripts): the text the full-text index holds for such a drawer is made by the store, so the
-- insert trigger leaves those drawers to it, listed in drawer_fts_pending; the drawers already indexed whole are
-- listed to be indexed again (indexed_raw = 1: their old entries are deleted first).
CREATE TABLE drawer_fts_pending (
    seq INTEGER PRIMARY KEY,
    indexed_raw INTEGER NOT NULL
);
INSERT INTO drawer_fts_pending(seq, indexed_raw) SELECT seq, 1 FROM drawer WHERE content GLOB '*[฀-๿຀-໿က-႟ᄀ-ᇿក-៿぀-ゟ゠-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿𠀀-𪛟]*';
DROP TRIGGER drawer_fts_insert;
CREATE TRIGGER drawer_fts_insert AFTER INSERT ON drawer WHEN new.content NOT GLOB '*[฀-๿຀-໿က-႟ᄀ-ᇿក-៿぀-ゟ゠-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿𠀀-𪛟]*' BEGIN
    INSERT INTO drawer_fts(rowid, content) VALUES (new.seq, new.content);
END;
CREATE TRIGGER drawer_fts_unspaced AFTER INSERT ON drawer WHEN new.content GLOB '*[฀-๿຀-໿က-႟ᄀ-ᇿក-៿぀-ゟ゠-ヿ㄰-㆏ㇰ-ㇿ㐀-䶿一-鿿가-힯豈-﫿𠀀-𪛟]*' BEGIN
    INSERT INTO drawer_fts_pending(seq, indexed_raw) VALUES (new.seq, 0);
END;
