-- Each host's store catalog state, folded from its store facts (docs/wire.md, "The store fact";
-- docs/clickhouse.md, "Store state"). A fact is a log record in otel_logs stating one item's whole
-- state after a change, numbered by that store's catalog; for one item the highest number wins, so
-- the fold is independent of arrival order and of duplicates. Apply after otel_tables.sql.
--
-- The host is the record's resource host.name (else service.instance.id): a fact is filed under the
-- host that sent it, and the viewer applies it only to attempts whose spans came from that host and
-- name the same store id, so one host's facts never decide another host's items.

CREATE TABLE IF NOT EXISTS otel_inputs_store_state (
    host String CODEC(ZSTD(1)),
    store_id LowCardinality(String),
    attempt_id String CODEC(ZSTD(1)),
    item_key String CODEC(ZSTD(1)),  -- input id, 'part:<name>', '' (the attempt), or an object's SHA-256
    state LowCardinality(String),
    reason LowCardinality(String),
    sha256 FixedString(32) CODEC(ZSTD(1)),  -- the bytes a captured item names (unhexed; zeros: none)
    run_id String CODEC(ZSTD(1)),
    revoked_at DateTime64(9) CODEC(Delta(8), ZSTD(1)),  -- 0: not revoked
    at DateTime64(9) CODEC(Delta(8), ZSTD(1)),  -- when the item entered this state
    seq UInt64 CODEC(ZSTD(1))
) ENGINE = ReplacingMergeTree(seq)
ORDER BY (host, store_id, attempt_id, item_key);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_store_state_mv TO otel_inputs_store_state AS
SELECT if(ResourceAttributes['host.name'] != '', ResourceAttributes['host.name'],
          ResourceAttributes['service.instance.id']) AS host,
       LogAttributes['otel_inputs.store.id'] AS store_id,
       LogAttributes['otel_inputs.attempt.id'] AS attempt_id,
       LogAttributes['otel_inputs.store.item_key'] AS item_key,
       LogAttributes['otel_inputs.store.state'] AS state,
       LogAttributes['otel_inputs.store.reason'] AS reason,
       toFixedString(unhex(LogAttributes['otel_inputs.store.item_sha256']), 32) AS sha256,
       LogAttributes['otel_inputs.run.id'] AS run_id,
       fromUnixTimestamp64Nano(toInt64OrZero(LogAttributes['otel_inputs.store.revoked_at'])) AS revoked_at,
       Timestamp AS at,
       toUInt64OrZero(LogAttributes['otel_inputs.store.seq']) AS seq
FROM otel_logs
WHERE (if(EventName != '', EventName, LogAttributes['event.name']) = 'otel_inputs.store.item_state'
       -- a writer without the event name (rotel's ClickHouse exporter writes no EventName column,
       -- docs/clickhouse.md): a store fact is the only record carrying these two of our attributes
       OR (EventName = '' AND mapContains(LogAttributes, 'otel_inputs.store.state')
           AND mapContains(LogAttributes, 'otel_inputs.store.seq')))
  -- what a store writes, and nothing else: a hostile or broken sender's record is dropped, never folded
  AND match(store_id, '^[0-9a-f]{32}$') AND seq > 0
  AND state IN ('captured', 'not_captured', 'evicted', 'purged', 'deleted', 'uploaded', 'upload_failed')
  AND length(host) BETWEEN 1 AND 256 AND length(attempt_id) <= 256 AND length(item_key) <= 256
  AND length(reason) <= 64 AND length(run_id) <= 256
  AND match(LogAttributes['otel_inputs.store.item_sha256'], '^([0-9a-f]{64})?$');

-- The latest fact received from each host's store: how current a fleet viewer's decisions are.
CREATE TABLE IF NOT EXISTS otel_inputs_store_hosts (
    host String,
    store_id LowCardinality(String),
    received_at DateTime64(3),
    seq UInt64
) ENGINE = ReplacingMergeTree(received_at)
ORDER BY (host, store_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS otel_inputs_store_hosts_mv TO otel_inputs_store_hosts AS
SELECT host, store_id, now64(3) AS received_at, max(seq) AS seq
FROM otel_inputs_store_state
GROUP BY host, store_id;
