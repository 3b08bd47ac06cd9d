"""Component types and configuration keys allowed in ``collector-config/*.yaml``.

Pinned Collector: **otelcol-contrib v0.159.0** (contrib release of 2026-08-17; core modules
v0.159.0 / v1.65.0). No Collector binary can be fetched on the build machines (none is
published on PyPI, npm or Debian), so these configs are checked statically against this allowlist
instead of ``otelcol-contrib validate``.

Sources, at that version unless a different one is named:

* core ``receiver/otlpreceiver/README.md`` and ``metadata.yaml`` (type ``otlp``), with
  ``config/confighttp/README.md`` and ``config/configgrpc/README.md`` for the server keys;
* core ``exporter/otlphttpexporter/README.md`` and ``metadata.yaml`` (``type: otlp_http``,
  ``deprecated_type: otlphttp``; renamed in v0.144.0, core CHANGELOG "Deprecations");
* core ``exporter/exporterhelper/README.md`` (``timeout``, ``retry_on_failure``,
  ``sending_queue`` including ``storage`` and ``batch``);
* core ``processor/memorylimiterprocessor/README.md``;
* contrib ``processor/transformprocessor/README.md`` (OTTL; the ``context``/``statements`` form);
* contrib ``extension/storage/filestorage/README.md`` (type ``file_storage``);
* contrib ``exporter/loadbalancingexporter/README.md`` (renamed ``loadbalancing`` ->
  ``load_balancing`` in v0.153.0 with the old name kept as a deprecated alias; pkg.go.dev README of
  v0.154.0; ``protocol.otlp`` is an OTLP gRPC exporter template without ``endpoint``).
* contrib ``exporter/clickhouseexporter`` (type ``clickhouse``; beta for traces and logs). The
  v0.159.0 tag itself could not be read here (the contrib repository is too large to fetch and no
  Go module proxy is reachable), so the keys listed are those present on both sides of it: in
  ``config.go`` of 2024 (contrib commit 0769c478: ``endpoint``, ``username``, ``password``,
  ``database``, ``connection_params``, ``logs_table_name``, ``traces_table_name``, ``ttl``,
  ``table_engine.{name,params}``, ``cluster_name``, ``create_schema``, ``async_insert``, with
  exporterhelper's ``timeout``, ``retry_on_failure`` and ``sending_queue``) and in the 2026
  ``config.schema.yaml`` (commit 09ea2f42) and ``README.md`` (commit 000d4c7c), which document the
  same keys plus ``compress`` (added in 2024, PR #34365, values ``none``/``zstd``/``lz4``/``gzip``/
  ``deflate``/``br``/``true``) and ``json`` (the config option that replaced the ``clickhouse.json``
  feature gate, removed in v0.153.0). Keys whose first version could not be dated (``tls``,
  ``profiles_table_name``) and the metrics tables, whose shape changed in between, are left out.
  ``ttl`` is rendered only into the DDL the exporter runs itself (``internal/sqltemplates/
  traces_table.sql`` commit 2bf6b9e1, ``{{.TTL}}``), so it does nothing with ``create_schema: false``.
  The INSERT column lists are ``internal/sqltemplates/traces_insert.sql`` (commit 61540ced) and
  ``logs_insert.sql`` (commit 2cbebc60; ``EventName`` is appended when ``DESC TABLE`` shows it).

The keys were collected by reading those documents (via the research notes above, which read the
core repository at commit 934999fb), not by running a binary: treat a key missing here as "not
verified", not as "invalid". Only the subset of keys these configs use, plus close neighbours, is
listed; add a key here only with its source.
"""

from __future__ import annotations

from dataclasses import dataclass

PINNED_COLLECTOR = "otelcol-contrib"
PINNED_VERSION = "v0.159.0"


@dataclass(frozen=True)
class Leaf:
    """A scalar value; ``choices`` restricts it to documented values when given."""

    choices: tuple[object, ...] | None = None


@dataclass(frozen=True)
class ListOf:
    """A list whose items each follow ``item``."""

    item: object


@dataclass(frozen=True)
class FreeMap:
    """A mapping whose keys are chosen by the user (e.g. HTTP headers); values are scalars."""


LEAF = Leaf()
STRINGS = ListOf(LEAF)
DURATION = LEAF

TLS_CLIENT = {
    "insecure": Leaf((True, False)),
    "insecure_skip_verify": Leaf((True, False)),
    "ca_file": LEAF,
    "cert_file": LEAF,
    "key_file": LEAF,
    "server_name_override": LEAF,
    "min_version": LEAF,
    "max_version": LEAF,
}

RETRY_ON_FAILURE = {
    "enabled": Leaf((True, False)),
    "initial_interval": DURATION,
    "randomization_factor": LEAF,
    "multiplier": LEAF,
    "max_interval": DURATION,
    "max_elapsed_time": DURATION,
}

SENDING_QUEUE = {
    "enabled": Leaf((True, False)),
    "num_consumers": LEAF,
    "wait_for_result": Leaf((True, False)),
    "block_on_overflow": Leaf((True, False)),
    "sizer": Leaf(("requests", "items", "bytes")),
    "queue_size": LEAF,
    "storage": LEAF,  # the id of a storage extension; checked separately against `extensions`
    "batch": {
        "flush_timeout": DURATION,
        "min_size": LEAF,
        "max_size": LEAF,
        "sizer": Leaf(("items", "bytes")),
    },
}

EXPORTER_HELPER = {
    "timeout": DURATION,
    "retry_on_failure": RETRY_ON_FAILURE,
    "sending_queue": SENDING_QUEUE,
}

COMPRESSION = Leaf(("gzip", "zstd", "zlib", "deflate", "snappy", "lz4", "none", ""))

HTTP_CLIENT = {
    "endpoint": LEAF,
    "tls": TLS_CLIENT,
    "headers": FreeMap(),
    "compression": COMPRESSION,
    "read_buffer_size": LEAF,
    "write_buffer_size": LEAF,
    "timeout": DURATION,
}

GRPC_CLIENT = {
    "endpoint": LEAF,
    "tls": TLS_CLIENT,
    "headers": FreeMap(),
    "compression": COMPRESSION,
    "balancer_name": LEAF,
    "write_buffer_size": LEAF,
    "wait_for_ready": Leaf((True, False)),
}

OTLP_HTTP_EXPORTER = {
    **HTTP_CLIENT,
    **EXPORTER_HELPER,
    "traces_endpoint": LEAF,
    "metrics_endpoint": LEAF,
    "logs_endpoint": LEAF,
    "encoding": Leaf(("proto", "json")),
}

# `load_balancing.protocol.otlp`: every OTLP gRPC exporter option except `endpoint`.
OTLP_GRPC_TEMPLATE = {k: v for k, v in {**GRPC_CLIENT, **EXPORTER_HELPER}.items() if k != "endpoint"}

LOAD_BALANCING_EXPORTER = {
    "routing_key": Leaf(("traceID", "service", "resource", "metric", "streamID", "attributes")),
    "protocol": {"otlp": OTLP_GRPC_TEMPLATE},
    "resolver": {
        "static": {"hostnames": STRINGS},
        "dns": {"hostname": LEAF, "port": LEAF, "interval": DURATION, "timeout": DURATION},
        "k8s": {"service": LEAF, "ports": ListOf(LEAF)},
    },
}

HTTP_SERVER = {
    "endpoint": LEAF,
    "traces_url_path": LEAF,
    "max_request_body_size": LEAF,
    "include_metadata": Leaf((True, False)),
    "compression_algorithms": STRINGS,
    "read_timeout": DURATION,
    "cors": {"allowed_origins": STRINGS, "allowed_headers": STRINGS, "max_age": LEAF},
}

GRPC_SERVER = {
    "endpoint": LEAF,
    "max_recv_msg_size_mib": LEAF,
    "max_concurrent_streams": LEAF,
    "include_metadata": Leaf((True, False)),
}

OTLP_RECEIVER = {"protocols": {"grpc": GRPC_SERVER, "http": HTTP_SERVER}}

MEMORY_LIMITER_PROCESSOR = {
    "check_interval": DURATION,
    "limit_mib": LEAF,
    "spike_limit_mib": LEAF,
    "limit_percentage": LEAF,
    "spike_limit_percentage": LEAF,
}

TRANSFORM_PROCESSOR = {
    "error_mode": Leaf(("ignore", "silent", "propagate")),
    "trace_statements": ListOf(
        {
            "context": Leaf(("resource", "scope", "span", "spanevent")),
            "conditions": STRINGS,
            "statements": STRINGS,
            "error_mode": Leaf(("ignore", "silent", "propagate")),
        }
    ),
    "log_statements": ListOf(
        {
            "context": Leaf(("resource", "scope", "log")),
            "conditions": STRINGS,
            "statements": STRINGS,
            "error_mode": Leaf(("ignore", "silent", "propagate")),
        }
    ),
}

FILE_STORAGE_EXTENSION = {
    "directory": LEAF,
    "timeout": DURATION,
    "fsync": Leaf((True, False)),
    "create_directory": Leaf((True, False)),
    "directory_permissions": LEAF,
    "compaction": {
        "on_start": Leaf((True, False)),
        "on_rebound": Leaf((True, False)),
        "directory": LEAF,
        "max_transaction_size": LEAF,
        "rebound_needed_threshold_mib": LEAF,
        "rebound_trigger_threshold_mib": LEAF,
        "check_interval": DURATION,
        "cleanup_on_start": Leaf((True, False)),
    },
}

CLICKHOUSE_EXPORTER = {
    **EXPORTER_HELPER,
    "endpoint": LEAF,
    "username": LEAF,
    "password": LEAF,
    "database": LEAF,
    "connection_params": FreeMap(),
    "traces_table_name": LEAF,
    "logs_table_name": LEAF,
    "ttl": DURATION,
    "create_schema": Leaf((True, False)),
    "async_insert": Leaf((True, False)),
    "compress": Leaf(("none", "zstd", "lz4", "gzip", "deflate", "br", "true")),
    "json": Leaf((True, False)),
    "cluster_name": LEAF,
    "table_engine": {"name": LEAF, "params": LEAF},
}

# The columns the stock exporter's INSERT statements name (Map variant); the DDL an operator applies
# must have every one of them (the README: "Column names and types must be the same").
CLICKHOUSE_TRACES_INSERT_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind",
    "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration",
    "StatusCode", "StatusMessage", "Events.Timestamp", "Events.Name", "Events.Attributes",
    "Links.TraceId", "Links.SpanId", "Links.TraceState", "Links.Attributes",
)
CLICKHOUSE_LOGS_INSERT_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "TraceFlags", "SeverityText", "SeverityNumber", "ServiceName",
    "Body", "ResourceSchemaUrl", "ResourceAttributes", "ScopeSchemaUrl", "ScopeName", "ScopeVersion",
    "ScopeAttributes", "LogAttributes",
)
CLICKHOUSE_LOGS_OPTIONAL_INSERT_COLUMNS = ("EventName",)  # written only when DESC TABLE shows it
CLICKHOUSE_DEFAULT_TABLES = {"traces_table_name": "otel_traces", "logs_table_name": "otel_logs"}

# kind -> component type -> key schema.  The current names at the pinned version only.
COMPONENTS: dict[str, dict[str, object]] = {
    "receivers": {"otlp": OTLP_RECEIVER},
    "processors": {
        "memory_limiter": MEMORY_LIMITER_PROCESSOR,
        "transform": TRANSFORM_PROCESSOR,
    },
    "exporters": {
        "otlp_http": OTLP_HTTP_EXPORTER,
        "load_balancing": LOAD_BALANCING_EXPORTER,
        "clickhouse": CLICKHOUSE_EXPORTER,
    },
    "extensions": {"file_storage": FILE_STORAGE_EXTENSION},
}

# Stability at the pinned version, for the traces signal (component READMEs / metadata.yaml).
STABILITY = {
    "otlp": "stable",
    "memory_limiter": "beta",
    "transform": "beta",
    "otlp_http": "stable",
    "load_balancing": "beta",
    "clickhouse": "beta",
    "file_storage": "beta",
}

# Old names still accepted as deprecated aliases; the configs must use the current names.
DEPRECATED_ALIASES = {
    "otlphttp": "otlp_http",
    "loadbalancing": "load_balancing",
}

TOP_LEVEL = {"extensions", "receivers", "processors", "exporters", "connectors", "service"}
SERVICE_KEYS = {"extensions", "pipelines", "telemetry"}
PIPELINE_KEYS = {"receivers", "processors", "exporters"}
PIPELINE_SIGNALS = {"traces", "logs"}  # attempt spans, and GenAI log events (the sink takes /v1/logs)
