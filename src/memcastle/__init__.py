"""MemCastle: a local-first, always-on memory server for AI agents."""

__version__ = "0.1.0"
