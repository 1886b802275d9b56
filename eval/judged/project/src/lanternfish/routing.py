"""Route planning: order the stops of a delivery run and split it into legs."""

from math import asin, cos, radians, sin, sqrt


def haversine_km(a, b):
    """Great-circle distance between two (lat, lon) points in kilometres."""
    lat1, lon1, lat2, lon2 = map(radians, (*a, *b))
    h = sin((lat2 - lat1) / 2) ** 2 + cos(lat1) * cos(lat2) * sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371 * asin(sqrt(h))


def plan_route(hub, stops):
    """Nearest-neighbour order from the hub, then 2-opt swaps until no swap shortens the run."""
    order, here, left = [], hub, list(stops)
    while left:
        nearest = min(left, key=lambda stop: haversine_km(here, stop))
        order.append(nearest)
        left.remove(nearest)
        here = nearest
    return improve_two_opt([hub, *order])
