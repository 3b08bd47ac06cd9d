"""Static checks of collector-config/*.yaml (no Collector binary can run here; see the README)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from . import allowlist

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO / "collector-config"
CONFIG_FILES = ("local.yaml", "vendor.yaml", "scaleout.yaml", "fleet.yaml")
KINDS = ("receivers", "processors", "exporters", "extensions")
ENV_REF = re.compile(r"\$\{env:([A-Z][A-Z0-9_]*)(?::-([^}]*))?\}")


def load(name: str) -> dict:
    with open(CONFIG_DIR / name, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def component_type(component_id: str) -> str:
    return component_id.split("/", 1)[0]


def defined(config: dict, kind: str) -> set[str]:
    return set(config.get(kind) or {})


def pipelines(config: dict) -> dict[str, dict]:
    return config["service"]["pipelines"]


def vendor_transform() -> dict:
    config = load("vendor.yaml")
    (pid,) = [p for p in defined(config, "processors") if component_type(p) == "transform"]
    return config["processors"][pid]


def walk_schema(value, schema, path: str) -> list[str]:
    """Return the config paths in ``value`` that ``schema`` does not allow."""
    problems: list[str] = []
    if isinstance(schema, allowlist.Leaf):
        if isinstance(value, (dict, list)):
            problems.append(f"{path}: expected a scalar")
        elif schema.choices is not None and value not in schema.choices:
            problems.append(f"{path}: {value!r} not in {schema.choices}")
    elif isinstance(schema, allowlist.FreeMap):
        if not isinstance(value, dict) or any(isinstance(v, (dict, list)) for v in value.values()):
            problems.append(f"{path}: expected a flat mapping")
    elif isinstance(schema, allowlist.ListOf):
        if not isinstance(value, list):
            problems.append(f"{path}: expected a list")
        else:
            for i, item in enumerate(value):
                problems += walk_schema(item, schema.item, f"{path}[{i}]")
    elif isinstance(schema, dict):
        if value is None:
            return problems  # an empty block (`batch:`) means "defaults"
        if not isinstance(value, dict):
            return [f"{path}: expected a mapping"]
        for key, sub in value.items():
            if key not in schema:
                problems.append(f"{path}.{key}: key not in allowlist")
            else:
                problems += walk_schema(sub, schema[key], f"{path}.{key}")
    else:  # pragma: no cover - allowlist bug
        raise TypeError(f"bad schema node at {path}: {schema!r}")
    return problems


def with_env_defaults(value):
    """``value`` as the Collector expands it with no environment set: ``${env:X:-d}`` gives ``d``; None if any
    reference has no default."""
    if not isinstance(value, str):
        return value
    if any(m.group(2) is None for m in ENV_REF.finditer(value)):
        return None
    return ENV_REF.sub(lambda m: m.group(2), value)


def receiver_endpoints(config: dict) -> dict[str, str]:
    """Map ``receiver/protocol`` to its endpoint, as expanded with no environment, for every receiver protocol."""
    out = {}
    for rid, rconf in (config.get("receivers") or {}).items():
        for proto, pconf in ((rconf or {}).get("protocols") or {}).items():
            out[f"{rid}/{proto}"] = with_env_defaults((pconf or {}).get("endpoint"))
    return out


def is_loopback_hostport(hostport: str) -> bool:
    host = hostport.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- structure ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_config_parses_with_known_top_level_sections(name):
    """Each config file is valid YAML whose top-level and service sections are known ones."""
    config = load(name)
    assert isinstance(config, dict)
    assert set(config) <= allowlist.TOP_LEVEL
    assert set(config["service"]) <= allowlist.SERVICE_KEYS
    assert pipelines(config), "no pipelines"
    for pname, pipe in pipelines(config).items():
        assert component_type(pname) in allowlist.PIPELINE_SIGNALS, pname
        assert set(pipe) <= allowlist.PIPELINE_KEYS, pname
        assert pipe.get("receivers") and pipe.get("exporters"), pname


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_pipelines_reference_only_defined_components(name):
    """Every receiver, processor and exporter a pipeline names, and every service extension, is defined."""
    config = load(name)
    for pname, pipe in pipelines(config).items():
        for kind in ("receivers", "processors", "exporters"):
            missing = set(pipe.get(kind) or []) - defined(config, kind)
            assert not missing, f"{name} {pname} {kind}: undefined {missing}"
    missing = set(config["service"].get("extensions") or []) - defined(config, "extensions")
    assert not missing, f"{name}: undefined extensions {missing}"


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_every_defined_component_is_used(name):
    """Every defined receiver, processor and exporter sits in a pipeline, and every extension is enabled."""
    config = load(name)
    for kind in ("receivers", "processors", "exporters"):
        used = {c for pipe in pipelines(config).values() for c in pipe.get(kind) or []}
        unused = defined(config, kind) - used
        assert not unused, f"{name}: {kind} defined but unused: {unused}"
    unused = defined(config, "extensions") - set(config["service"].get("extensions") or [])
    assert not unused, f"{name}: extensions defined but not enabled: {unused}"


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_queue_storage_names_an_enabled_file_storage_extension(name):
    """Every exporter queue's ``storage`` is a file_storage extension listed in service.extensions."""
    config = load(name)
    enabled = set(config["service"].get("extensions") or [])
    for eid, econf in (config.get("exporters") or {}).items():
        queues = [(econf or {}).get("sending_queue")]
        queues.append(((econf or {}).get("protocol") or {}).get("otlp", {}).get("sending_queue"))
        for queue in filter(None, queues):
            storage = queue.get("storage")
            if storage is not None:
                assert storage in enabled, f"{name} {eid}: storage {storage} not enabled"
                assert component_type(storage) == "file_storage"


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_component_types_are_current_names_in_allowlist(name):
    """Every component type is allowlisted for the pinned version and none is a deprecated alias."""
    config = load(name)
    for kind in KINDS:
        for cid in defined(config, kind):
            ctype = component_type(cid)
            assert ctype not in allowlist.DEPRECATED_ALIASES, f"{name}: deprecated {ctype}"
            assert ctype in allowlist.COMPONENTS[kind], f"{name}: {kind} type {ctype!r} not allowed"


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_every_config_key_is_in_allowlist(name):
    """Every configuration key, recursively, and every enumerated value is documented for the pinned version."""
    config = load(name)
    problems = []
    for kind in KINDS:
        for cid, cconf in (config.get(kind) or {}).items():
            schema = allowlist.COMPONENTS[kind][component_type(cid)]
            problems += walk_schema(cconf, schema, f"{kind}.{cid}")
    assert not problems, "\n".join(problems)


def test_allowlist_schema_rejects_unknown_and_misvalued_keys():
    """The key checker itself flags an unknown key, a wrong enumerated value and a wrong shape."""
    schema = allowlist.COMPONENTS["exporters"]["otlp_http"]
    assert walk_schema({"endpoint": "http://x", "sending_queue": {"storage": "s"}}, schema, "e") == []
    assert walk_schema({"endpoitn": "http://x"}, schema, "e") == ["e.endpoitn: key not in allowlist"]
    assert walk_schema({"encoding": "xml"}, schema, "e")
    assert walk_schema({"retry_on_failure": True}, schema, "e")


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_env_references_use_collector_syntax(name):
    """Every ``$`` in a config is a ``${env:NAME}`` or ``${env:NAME:-default}`` reference."""
    text = (CONFIG_DIR / name).read_text(encoding="utf-8")
    body = "\n".join(line.split(" #", 1)[0] for line in text.splitlines() if not line.lstrip().startswith("#"))
    refs = re.findall(r"\$\{[^}]*\}|\$", body)
    bad = [r for r in refs if not re.fullmatch(r"\$\{env:[A-Z][A-Z0-9_]*(:-[^}]*)?\}", r)]
    assert not bad, f"{name}: {bad}"


@pytest.mark.parametrize("name", CONFIG_FILES)
def test_receivers_bind_loopback(name):
    """Every receiver endpoint binds a loopback address unless the environment says otherwise, never 0.0.0.0 by default."""
    endpoints = receiver_endpoints(load(name))
    assert endpoints
    for where, endpoint in endpoints.items():
        assert endpoint, f"{name} {where}: no explicit endpoint"
        assert is_loopback_hostport(endpoint), f"{name} {where}: {endpoint}"


# --- local pipeline -------------------------------------------------------------------------------


def test_local_exports_to_sink_with_persistent_queue_and_endless_retries():
    """local.yaml sends OTLP/HTTP protobuf to the sink's /v1/traces through a persistent queue, retrying forever."""
    config = load("local.yaml")
    (eid,) = defined(config, "exporters")
    assert component_type(eid) == "otlp_http"
    exp = config["exporters"][eid]
    default_url = re.fullmatch(r"\$\{env:[A-Z_]+:-(.+)\}", exp["traces_endpoint"]).group(1)
    url = urlsplit(default_url)
    assert url.scheme == "http" and url.path == "/v1/traces"
    assert is_loopback_hostport(url.netloc)
    assert exp.get("encoding", "proto") == "proto"
    assert exp["retry_on_failure"]["enabled"] is True
    assert exp["retry_on_failure"]["max_elapsed_time"] == 0
    assert exp["sending_queue"]["enabled"] is True
    assert component_type(exp["sending_queue"]["storage"]) == "file_storage"
    # The sink port must not collide with the Collector's own receivers.
    assert url.port not in {int(e.rsplit(":", 1)[1]) for e in receiver_endpoints(config).values()}


# --- vendor redaction -----------------------------------------------------------------------------


def test_vendor_exporter_is_only_reached_through_redaction():
    """Every pipeline exporting to the vendor runs the content-stripping transform, failing closed."""
    config = load("vendor.yaml")
    vendor = {e for e, c in config["exporters"].items() if "VENDOR_OTLP_ENDPOINT" in str(c.get("endpoint"))}
    assert vendor, "no exporter reads VENDOR_OTLP_ENDPOINT"
    transform_ids = {p for p in defined(config, "processors") if component_type(p) == "transform"}
    for pname, pipe in pipelines(config).items():
        if vendor & set(pipe["exporters"]):
            assert transform_ids & set(pipe.get("processors") or []), pname
            assert not set(pipe["exporters"]) - vendor, f"{pname} mixes vendor and other exporters"
    assert vendor_transform()["error_mode"] == "propagate"


def test_vendor_config_also_feeds_local_sink_unredacted():
    """vendor.yaml's traces and logs each also reach the local sink (/v1/traces, /v1/logs) without the transform."""
    config = load("vendor.yaml")
    local = {
        name: p
        for name, p in pipelines(config).items()
        if any("127.0.0.1" in str(config["exporters"][e].get("traces_endpoint")) for e in p["exporters"])
    }
    assert sorted(local) == ["logs/local", "traces/local"]
    for pipe in local.values():
        assert not any(component_type(p) == "transform" for p in pipe.get("processors") or [])
    (sink,) = {e for p in local.values() for e in p["exporters"]}
    logs_url = re.fullmatch(r"\$\{env:[A-Z_]+:-(.+)\}", config["exporters"][sink]["logs_endpoint"]).group(1)
    assert urlsplit(logs_url).path == "/v1/logs" and is_loopback_hostport(urlsplit(logs_url).netloc)


def test_vendor_traces_and_logs_both_pass_the_redaction():
    """Both signals that reach the vendor exporter (traces and logs) run the redacting transform."""
    config = load("vendor.yaml")
    vendor_pipes = [name for name, p in pipelines(config).items() if "otlp_http/vendor" in p["exporters"]]
    assert sorted(vendor_pipes) == ["logs/vendor", "traces/vendor"]


# --- scale-out ------------------------------------------------------------------------------------


def test_loadbalancing_routes_by_trace_id_to_defined_loopback_backends():
    """The front tier's load_balancing exporter routes by traceID to static loopback backends defined here."""
    config = load("scaleout.yaml")
    (lb_id,) = [e for e in defined(config, "exporters") if component_type(e) == "load_balancing"]
    lb = config["exporters"][lb_id]
    assert lb["routing_key"] == "traceID"
    assert "endpoint" not in lb["protocol"]["otlp"]
    hostnames = lb["resolver"]["static"]["hostnames"]
    assert len(hostnames) >= 2 and len(set(hostnames)) == len(hostnames)
    assert all(is_loopback_hostport(h) for h in hostnames)
    grpc_receivers = {
        ep: rid.rsplit("/", 1)[0]
        for rid, ep in receiver_endpoints(config).items()
        if rid.endswith("/grpc")
    }
    assert set(hostnames) <= set(grpc_receivers), "every backend must be a gRPC receiver here"
    front = [p for p in pipelines(config).values() if lb_id in p["exporters"]]
    assert len(front) == 1
    assert not {grpc_receivers[h] for h in hostnames} & set(front[0]["receivers"]), "routing loop"


def shard_sinks() -> dict[str, int]:
    """Map each load-balanced backend to the sink port its shard pipeline forwards to."""
    config = load("scaleout.yaml")
    (lb_id,) = [e for e in defined(config, "exporters") if component_type(e) == "load_balancing"]
    by_endpoint = {ep: rid.rsplit("/", 1)[0] for rid, ep in receiver_endpoints(config).items()}
    out = {}
    for host in config["exporters"][lb_id]["resolver"]["static"]["hostnames"]:
        receiver = by_endpoint[host]
        (pipe,) = [p for p in pipelines(config).values() if receiver in p["receivers"]]
        (exporter,) = pipe["exporters"]
        assert component_type(exporter) == "otlp_http"
        exp = config["exporters"][exporter]
        url = urlsplit(exp["traces_endpoint"])
        assert url.path == "/v1/traces" and is_loopback_hostport(url.netloc)
        assert component_type(exp["sending_queue"]["storage"]) == "file_storage"
        out[host] = url.port
    return out


def test_each_shard_forwards_to_its_own_sink():
    """Every load-balanced backend forwards over OTLP/HTTP with a persistent queue to a distinct sink port."""
    ports = shard_sinks()
    assert len(set(ports.values())) == len(ports)


def test_readme_documents_one_sink_per_shard_with_its_own_db():
    """The README gives an ``otel-inputs collect`` command with a distinct DuckDB file for every shard port."""
    readme = (CONFIG_DIR / "README.md").read_text(encoding="utf-8")
    config_text = (CONFIG_DIR / "scaleout.yaml").read_text(encoding="utf-8")
    dbs = set()
    for port in shard_sinks().values():
        for text in (readme, config_text):
            match = re.search(rf"otel-inputs collect --db (\S+\.duckdb) --port {port}\b", text)
            assert match, f"no sink command for port {port}"
        dbs.add(match.group(1))
    assert len(dbs) == len(shard_sinks())


def test_readme_states_pinned_version_components_and_no_binary_in_ci():
    """The README names the pinned Collector version, every component type used, and says no Collector runs in CI."""
    readme = (CONFIG_DIR / "README.md").read_text(encoding="utf-8")
    assert f"{allowlist.PINNED_COLLECTOR} {allowlist.PINNED_VERSION}" in readme
    assert "No Collector binary runs in CI" in readme
    used = {component_type(c) for name in CONFIG_FILES for k in KINDS for c in defined(load(name), k)}
    for ctype in used:
        row = rf"\| `{ctype}` \| \w+ \| {allowlist.STABILITY[ctype]} \|"
        assert re.search(row, readme), f"README component table lacks {ctype}"
    for name in CONFIG_FILES:
        assert f"otelcol-contrib --config collector-config/{name}" in readme


# --- fleet: agents -> Collector -> ClickHouse -----------------------------------------------------

OTEL_TABLES_SQL = REPO / "clickhouse" / "otel_tables.sql"
FLEET_DOC = REPO / "docs" / "fleet.md"


def ddl_columns(sql: str) -> dict[str, set[str]]:
    """Map each ``CREATE TABLE`` in ``sql`` to its column names; a Nested column gives ``Name.Sub`` names."""
    tables: dict[str, set[str]] = {}
    body = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    for match in re.finditer(r"CREATE TABLE IF NOT EXISTS (\w+) \((.*?)\n\) ENGINE", body, re.S):
        columns: set[str] = set()
        nested: str | None = None
        for line in match.group(2).splitlines():
            line = line.strip()
            if not line or line.startswith("INDEX "):
                continue
            if line.startswith(")"):
                nested = None
                continue
            name = line.split()[0]
            if line.split()[1:2] == ["Nested"]:
                nested = name
            elif nested:
                columns.add(f"{nested}.{name}")
            else:
                columns.add(name)
        tables[match.group(1)] = columns
    return tables


def clickhouse_exporters(config: dict) -> dict[str, dict]:
    return {e: c for e, c in (config.get("exporters") or {}).items() if component_type(e) == "clickhouse"}


def test_ddl_parser_reads_nested_columns_and_skips_indexes():
    """The DDL reader used below gives plain and Nested column names and ignores indexes and comments."""
    sql = ("-- x\nCREATE TABLE IF NOT EXISTS t (\n    A String CODEC(ZSTD(1)), -- note\n    E Nested (\n"
           "        Name String\n    ) CODEC(ZSTD(1)),\n    INDEX i A TYPE bloom_filter GRANULARITY 1\n) ENGINE = MergeTree;")
    assert ddl_columns(sql) == {"t": {"A", "E.Name"}}


def test_allowlist_schema_knows_the_clickhouse_exporter_keys_only():
    """The clickhouse schema takes a documented config, and flags a misspelt key, an undocumented compression and a nested param."""
    schema = allowlist.COMPONENTS["exporters"]["clickhouse"]
    ok = {"endpoint": "tcp://h:9000", "create_schema": False, "compress": "zstd", "connection_params": {"a": "1"},
          "sending_queue": {"storage": "file_storage/q", "batch": {"min_size": 1}}}
    assert walk_schema(ok, schema, "e") == []
    assert walk_schema({"traces_table": "t"}, schema, "e") == ["e.traces_table: key not in allowlist"]
    assert walk_schema({"compress": "snappy"}, schema, "e")
    assert walk_schema({"connection_params": {"a": {"b": 1}}}, schema, "e")


def test_fleet_exporter_writes_the_tables_of_our_ddl():
    """fleet.yaml's clickhouse exporter writes exactly the two tables clickhouse/otel_tables.sql creates, traces to the span table."""
    (exp,) = clickhouse_exporters(load("fleet.yaml")).values()
    tables = ddl_columns(OTEL_TABLES_SQL.read_text(encoding="utf-8"))
    assert set(tables) == {exp["traces_table_name"], exp["logs_table_name"]}
    assert "SpanAttributes" in tables[exp["traces_table_name"]]
    assert "LogAttributes" in tables[exp["logs_table_name"]]


def test_our_ddl_has_every_column_the_stock_exporter_inserts():
    """Every column the stock exporter's INSERTs name (and its optional EventName) exists in our DDL's table of that signal."""
    (exp,) = clickhouse_exporters(load("fleet.yaml")).values()
    tables = ddl_columns(OTEL_TABLES_SQL.read_text(encoding="utf-8"))
    missing_traces = set(allowlist.CLICKHOUSE_TRACES_INSERT_COLUMNS) - tables[exp["traces_table_name"]]
    logs = allowlist.CLICKHOUSE_LOGS_INSERT_COLUMNS + allowlist.CLICKHOUSE_LOGS_OPTIONAL_INSERT_COLUMNS
    missing_logs = set(logs) - tables[exp["logs_table_name"]]
    assert (missing_traces, missing_logs) == (set(), set())


def test_fleet_schema_is_the_operators_and_no_inert_ttl():
    """The exporter runs no DDL (create_schema false), so it sets no ttl, which only the exporter's own DDL would use."""
    (exp,) = clickhouse_exporters(load("fleet.yaml")).values()
    assert exp["create_schema"] is False
    assert "ttl" not in exp and "table_engine" not in exp and "cluster_name" not in exp


def test_fleet_queue_is_persistent_fsynced_and_retries_forever():
    """The clickhouse exporter queues on an enabled, fsynced file_storage extension, batches in the queue and never gives up."""
    config = load("fleet.yaml")
    (exp,) = clickhouse_exporters(config).values()
    queue = exp["sending_queue"]
    assert queue["enabled"] is True
    assert queue["storage"] in config["service"]["extensions"]
    assert component_type(queue["storage"]) == "file_storage"
    assert config["extensions"][queue["storage"]]["fsync"] is True
    assert queue["batch"]["min_size"] <= queue["batch"]["max_size"]
    assert exp["retry_on_failure"]["enabled"] is True and exp["retry_on_failure"]["max_elapsed_time"] == 0
    # Exporter-side batching replaces the batch processor (the exporter's README); none is configured.
    assert not any(component_type(p) == "batch" for p in defined(config, "processors"))


def test_fleet_traces_and_logs_reach_clickhouse_unchanged():
    """Traces and logs both reach the clickhouse exporter through memory_limiter only, so otel_inputs.* attributes and bodies pass as sent."""
    config = load("fleet.yaml")
    (eid,) = clickhouse_exporters(config)
    reaching = {name: p for name, p in pipelines(config).items() if eid in p["exporters"]}
    assert {component_type(name) for name in reaching} == {"traces", "logs"}
    for pipe in reaching.values():
        assert [component_type(p) for p in pipe.get("processors") or []] == ["memory_limiter"]


def test_fleet_secrets_and_site_settings_come_from_the_environment():
    """The password is an env reference with no default, and endpoint, database and user are env references with defaults."""
    (exp,) = clickhouse_exporters(load("fleet.yaml")).values()
    password = ENV_REF.fullmatch(exp["password"])
    assert password and password.group(2) is None
    for key in ("endpoint", "database", "username"):
        ref = ENV_REF.fullmatch(exp[key])
        assert ref and ref.group(2), key
    default = urlsplit(with_env_defaults(exp["endpoint"]))
    assert default.scheme in {"tcp", "clickhouse", "http", "https"} and is_loopback_hostport(default.netloc)


def test_fleet_doc_applies_our_sql_to_the_configured_database_in_order():
    """docs/fleet.md applies otel_tables.sql, projection_functions.sql, projection.sql and store_state.sql, in that order, to the exporter's default database."""
    (exp,) = clickhouse_exporters(load("fleet.yaml")).values()
    database = with_env_defaults(exp["database"])
    doc = FLEET_DOC.read_text(encoding="utf-8")
    applied = re.findall(rf"clickhouse-client [^\n]*--database {database} [^\n]*< clickhouse/(\w+)\.sql", doc)
    assert applied == ["otel_tables", "projection_functions", "projection", "store_state"]
    for name in applied:
        assert (REPO / "clickhouse" / f"{name}.sql").is_file()


def test_fleet_doc_runs_the_pinned_collector_image_with_fleet_yaml():
    """docs/fleet.md runs the contrib image of the pinned version with collector-config/fleet.yaml, and names every variable fleet.yaml reads."""
    doc = FLEET_DOC.read_text(encoding="utf-8")
    assert f"otel/opentelemetry-collector-contrib:{allowlist.PINNED_VERSION.lstrip('v')}" in doc
    assert "collector-config/fleet.yaml" in doc
    for name in {m.group(1) for m in ENV_REF.finditer((CONFIG_DIR / "fleet.yaml").read_text(encoding="utf-8"))}:
        assert f"`{name}`" in doc, name
