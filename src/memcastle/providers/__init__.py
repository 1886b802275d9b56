"""What the embedding and extraction providers share: running a provider command, calling an HTTP endpoint."""
