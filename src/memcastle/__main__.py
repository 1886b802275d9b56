"""`python -m memcastle …`: the same command line as the `memcastle` script, for a client that needs an absolute
interpreter path instead of a script on PATH."""

from memcastle.cli.main import run

run()
