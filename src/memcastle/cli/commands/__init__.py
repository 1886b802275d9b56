"""The command groups of `memcastle`, one module each; importing a module registers its commands."""
