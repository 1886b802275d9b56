"""Durable background jobs: the worker pool and the context a job handler works through."""
