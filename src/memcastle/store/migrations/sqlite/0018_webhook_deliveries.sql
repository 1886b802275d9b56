-- The deliveries a miner's webhook accepted, by the sender's delivery id: one seen again within a week runs nothing.
CREATE TABLE webhook_delivery (
    miner TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (miner, delivery_id)
);
CREATE INDEX webhook_delivery_received ON webhook_delivery(received_at);
