-- How many passages the drawer has in all, on each of its vector rows: the embed sweep stores a drawer's first
-- passage before its others (every drawer is found by meaning early, completely later), and search treats a drawer
-- as still waiting for its vectors until all of them are in. NULL on rows stored whole, before this column.
ALTER TABLE embedding ADD COLUMN passages INTEGER;
