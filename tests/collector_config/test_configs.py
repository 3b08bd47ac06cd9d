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
CONFIG_FILES = ("local.yaml", "vendor.yaml", "scaleout.yaml")
KINDS = ("receivers", "processors", "exporters", "extensions")



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


def receiver_endpoints(config: dict) -> dict[str, str]:
    """Map ``receiver/protocol`` to its endpoint for every receiver protocol."""
    out = {}
    for rid, rconf in (config.get("receivers") or {}).items():
        for proto, pconf in ((rconf or {}).get("protocols") or {}).items():
            out[f"{rid}/{proto}"] = (pconf or {}).get("endpoint")
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
    """Every receiver endpoint binds a loopback address, never 0.0.0.0 or a public interface."""
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
