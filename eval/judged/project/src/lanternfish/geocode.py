"""Waymark geocoding client: a retry budget, jittered backoff and a cache in front of the vendor."""

import random
import time

RETRY_BUDGET = 3
BACKOFF_CAP_SECONDS = 8
RESOLVED_TTL = 24 * 3600
FAILED_TTL = 3600


class WaymarkClient:
    def __init__(self, http, cache):
        self.http = http
        self.cache = cache

    def lookup(self, address: str):
        key = " ".join(address.lower().split())
        if (hit := self.cache.get(key)) is not None:
            return hit
        for attempt in range(RETRY_BUDGET):
            answer = self.http.get("/geocode", params={"q": address})
            if answer.status_code != 429:
                break
            time.sleep(min(BACKOFF_CAP_SECONDS, 2**attempt) * random.uniform(0.5, 1.0))
        point = answer.json().get("point") if answer.status_code == 200 else None
        self.cache.set(key, point, ttl=RESOLVED_TTL if point else FAILED_TTL)
        return point
