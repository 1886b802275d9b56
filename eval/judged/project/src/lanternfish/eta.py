"""Arrival estimates: model minutes per leg, drop windows rendered in the hub's zone."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo


def local_drop_window(start_utc: datetime, end_utc: datetime, hub_zone: str = "Europe/Lisbon"):
    """Render a UTC drop window in the hub's zone; zone names, never fixed offsets (ADR 0006)."""
    zone = ZoneInfo(hub_zone)
    return start_utc.astimezone(zone), end_utc.astimezone(zone)


def eta(now_utc: datetime, legs, model) -> datetime:
    """Now plus the model's predicted minutes for every remaining leg."""
    minutes = sum(model.predict_minutes(leg) for leg in legs)
    return now_utc + timedelta(minutes=minutes)
