"""Configuration that does not fail silently: opentelemetry-instrument, configure(), and the no-op warning.

Each case runs in its own Python process, because global OpenTelemetry providers can be set only once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from otel_inputs import names
from otel_inputs.exporter import read_connection

AGENT = textwrap.dedent("""
    import sys
    from otel_inputs import AgentObserver, inline_request
    {setup}
    observer = AgentObserver(agent_name="cfg-agent")
    for attempt_id in sys.argv[1:]:
        with observer.attempt(run_id="run-cfg", request=inline_request("Summarise the log."),
                              attempt_id=attempt_id):
            pass
    {teardown}
""")


def run_agent(tmp_path: Path, *attempt_ids: str, setup: str = "", teardown: str = "",
              env: dict[str, str] | None = None, wrapper: list[str] | None = None) -> subprocess.CompletedProcess:
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(setup=setup, teardown=teardown), encoding="utf-8")
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    full_env.update(env or {})
    cmd = [*(wrapper or []), sys.executable, str(script), *attempt_ids]
    proc = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return proc


def landed(db: Path) -> list[tuple[str, str]]:
    with read_connection(db) as con:
        return con.execute("SELECT attempt_id, run_id FROM agent_attempts ORDER BY attempt_id").fetchall()


def test_opentelemetry_instrument_with_duckdb_exporter_lands_the_attempt(tmp_path: Path) -> None:
    """`opentelemetry-instrument` with OTEL_TRACES_EXPORTER=duckdb (metrics and logs set as documented) lands the attempt."""
    instrument = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    assert instrument, "opentelemetry-distro (dev extra) provides opentelemetry-instrument"
    db = tmp_path / "auto.duckdb"
    has_logs_exporter = any(ep.name == "duckdb" for ep in entry_points(group="opentelemetry_logs_exporter"))
    env = {
        "OTEL_TRACES_EXPORTER": "duckdb",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "duckdb" if has_logs_exporter else "none",
        names.ENV_DB: str(db),
        names.ENV_STORE: str(tmp_path / "store"),
        "OTEL_SERVICE_NAME": "cfg-agent",
    }
    proc = run_agent(tmp_path, "auto-1", env=env, wrapper=[instrument])
    assert landed(db) == [("auto-1", "run-cfg")], proc.stderr
    assert "no-op OpenTelemetry tracer provider" not in proc.stderr


def test_configure_lands_the_attempt_without_the_distro(tmp_path: Path) -> None:
    """A plain `python agent.py` that calls configure(db=..., store=...) lands every attempt, flushed at exit."""
    db = tmp_path / "configured.duckdb"
    setup = f"from otel_inputs.exporter import configure\nprovider = configure(db={str(db)!r}, store={str(tmp_path / 'store')!r})"
    proc = run_agent(tmp_path, "cfg-1", "cfg-2", setup=setup)
    assert landed(db) == [("cfg-1", "run-cfg"), ("cfg-2", "run-cfg")], proc.stderr
    assert "no-op OpenTelemetry tracer provider" not in proc.stderr


def test_configure_returns_the_provider_and_can_leave_the_global_alone(tmp_path: Path) -> None:
    """configure(set_global=False) returns a working provider that AgentObserver can be given, without touching the global one."""
    db = tmp_path / "explicit.duckdb"
    setup = textwrap.dedent(f"""
        from opentelemetry import trace
        from otel_inputs.exporter import configure
        provider = configure(db={str(db)!r}, set_global=False, batch=False)
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        _Observer = AgentObserver
        AgentObserver = lambda **kw: _Observer(tracer_provider=provider, **kw)
    """)
    run_agent(tmp_path, "explicit-1", setup=setup, teardown="provider.shutdown()")
    assert landed(db) == [("explicit-1", "run-cfg")]


def test_plain_python_with_only_env_vars_warns_once_that_nothing_will_land(tmp_path: Path) -> None:
    """Without the distro or configure(), OTEL_TRACES_EXPORTER=duckdb lands nothing, and one warning says what to do."""
    db = tmp_path / "never.duckdb"
    proc = run_agent(tmp_path, "lost-1", "lost-2", "lost-3",
                     setup="import logging\nlogging.basicConfig(level=logging.WARNING)",
                     env={"OTEL_TRACES_EXPORTER": "duckdb", names.ENV_DB: str(db)})
    assert not db.exists()
    assert proc.stderr.count("no-op OpenTelemetry tracer provider") == 1
    assert "configure(db=...)" in proc.stderr and "opentelemetry-instrument" in proc.stderr


def test_sampled_out_attempts_under_a_real_provider_do_not_warn(tmp_path: Path) -> None:
    """A span dropped by a real provider's sampler is intentional and raises no warning."""
    setup = textwrap.dedent("""
        import logging
        logging.basicConfig(level=logging.WARNING)
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
        trace.set_tracer_provider(TracerProvider(sampler=ALWAYS_OFF))
    """)
    proc = run_agent(tmp_path, "sampled-1", setup=setup)
    assert "no-op OpenTelemetry tracer provider" not in proc.stderr


@pytest.mark.skipif(not any(ep.name == "duckdb" for ep in entry_points(group="opentelemetry_logs_exporter")),
                    reason="the duckdb logs exporter (receiver work) is not installed in this checkout yet")
def test_configure_lands_genai_log_events_too(tmp_path: Path) -> None:
    """With EVENT_ONLY, configure() also lands the operation.details log event in otel_logs."""
    db = tmp_path / "events.duckdb"
    # Content (and so the event) is admitted only with a store to capture into.
    setup = (f"from otel_inputs.exporter import configure\n"
             f"provider = configure(db={str(db)!r}, store={str(tmp_path / 'store')!r}, batch=False)")
    code = AGENT.replace('attempt_id=attempt_id)', 'attempt_id=attempt_id, user_message="hello")')
    script = tmp_path / "agent.py"
    script.write_text(code.format(setup=setup, teardown=""), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env[names.ENV_GENAI_CAPTURE_CONTENT] = "EVENT_ONLY"
    proc = subprocess.run([sys.executable, str(script), "ev-1"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with read_connection(db) as con:
        rows = con.execute("SELECT EventName FROM otel_logs WHERE EventName != ?", [names.STORE_FACT_EVENT]).fetchall()
        facts = con.execute("SELECT count(*) FROM otel_logs WHERE EventName = ?", [names.STORE_FACT_EVENT]).fetchone()
    assert rows == [(names.EVENT_INFERENCE_DETAILS,)]
    assert facts[0] > 0  # the store's facts land like any log record (docs/wire.md, "The store fact")
