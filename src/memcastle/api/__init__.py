"""The REST interface: parse, call one service, render; errors translated in `api.errors`."""
