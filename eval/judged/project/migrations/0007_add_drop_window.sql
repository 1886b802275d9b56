-- Drop windows: the time range promised to the recipient, stored in UTC.
ALTER TABLE orders ADD COLUMN drop_window_start TIMESTAMP NULL;
ALTER TABLE orders ADD COLUMN drop_window_end TIMESTAMP NULL;
CREATE INDEX orders_drop_window ON orders (drop_window_start, drop_window_end);
