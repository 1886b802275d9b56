"""Addresses the tests talk to."""

LOCAL = "http://127.0.0.1"  # an in-process client must name a loopback host: the daemon answers no other
