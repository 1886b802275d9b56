"""What both SQL backends share, written once: every rule that is not SQL, and the SQL that means the same on both.

    base.py     Tx (one connection in one transaction, `?` placeholders); SqlStore, the abstract base of both palaces
                (connections, dialect facts); Role, the base of the role objects a palace is composed of
    rows.py     row → value mappers (both backends hand back the same rows: JSON as text, flags as 0/1 or bool)
    filters.py  the scope and time predicates (SPEC §3), applied inside every query before ranking and limit
    drawers.py  drawers, wings, rooms, marks; supersession and the replayed write
    search.py   the eligibility every search leg filters by, and the lexical leg's reads beside its index
    embeddings.py  which drawers still need vectors; vector writes and reads (each backend stores them its own way)
    mining.py   sources, documents and the order in which a document's changes are applied
    jobs.py     job records: coalescing, the transition table with lease fencing, checkpoints, stop requests
    graph.py    extraction: the drawers an extractor has still to read, one batch's graph written together
    entities.py entities by name, alias or key variant, their mentions and hints
    facts.py    facts, the links between them, explicit decisions
    near.py     near-duplicate bookkeeping: band keys, signatures, the queue of drawers still to be linked, their links
    vectors.py  what a write of passage vectors means (which rows, whether the drawer is then embedded)
    forgetting.py  a scope's drawers and everything derived from them, erased in one transaction, and tombstones
    archive.py  the palace as portable records (export and import), read from one snapshot, loaded idempotently
    miners.py   miners defined through the API, every miner's enabled state and last run
    requests.py idempotency keys: claim, record what the request wrote, release

What stays in each backend: connections and migrations, and — as its own small subclass of a role — full-text search
(FTS5 vs tsvector + BM25), vector storage, job claims (one writer vs SKIP LOCKED and lease takeover), locks, and the
whole-palace copy (`store/postgres/copying.py` on PostgreSQL). Each backend composes its palace of these roles.
"""
