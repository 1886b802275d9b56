"""This machine's footprint of a daemon: which daemon serves which palace, and its access tokens."""
