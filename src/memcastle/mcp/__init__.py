"""The MCP interface: tools over `Services` (`server`), mounted at /mcp by the daemon (`endpoint`, built off the
start-up path); a stdio bridge (`bridge`). Import the submodules: this package imports nothing heavy."""
