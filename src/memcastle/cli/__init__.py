"""The command line: a thin HTTP client of the daemon (except `serve`)."""
