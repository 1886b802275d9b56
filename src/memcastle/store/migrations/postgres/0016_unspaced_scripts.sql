-- Scripts written without spaces (Chinese, Japanese, Korean, Thai, …) are indexed a character at a time
-- (memcastle.model.scripts, through fulltext.search_text): the drawers holding such text are indexed again by the
-- store's step for this migration (`PostgresStore.AFTER_MIGRATION`), in the migration's own transaction.
SELECT 1;
