"""The pages, one module per concern like `memcastle.services`: search, drawers (one drawer, browsing), jobs, login,
forget, knowledge (preferences and facts)."""
