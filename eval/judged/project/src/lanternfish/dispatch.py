"""Dispatch events: published to the RabbitMQ topic exchange, dead letters to dispatch.dlq."""

import json

EXCHANGE = "dispatch.events"
ROUTING_KEYS = ("order.created", "courier.assigned", "leg.completed")


def publish(channel, kind: str, payload: dict) -> None:
    if kind not in ROUTING_KEYS:
        raise ValueError(f"unknown dispatch event {kind!r}")
    channel.basic_publish(exchange=EXCHANGE, routing_key=kind, body=json.dumps(payload).encode())

