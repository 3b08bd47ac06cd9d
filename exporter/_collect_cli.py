"""``otel-inputs collect``: a thin click layer over :class:`otel_inputs.exporter._sink.OTLPSink`."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from otel_inputs.exporter._sink import OTLPSink, skip_pandas_probe, use_system_memory_pool


@click.command("collect")
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="DuckDB file to land spans in (created if missing).")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Artifact store whose manifests are landed in agent_artifacts.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; loopback by default, so nothing is exposed unless asked.")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535))
def collect(db_path: Path, store: Path | None, host: str, port: int) -> None:
    """Receive OTLP/HTTP traces on /v1/traces (protobuf or JSON, gzip) and land them in DuckDB."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    done = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    skip_pandas_probe()  # this process is only a sink: no pandas, ~45 MiB less
    use_system_memory_pool()  # freed Arrow memory goes back to the OS between batches
    sink = OTLPSink(db_path, store=store, host=host, port=port)
    try:
        sink.start()
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    # The actual endpoint (port 0 picks a free one); tests and scripts read this line.
    click.echo(f"otel-inputs collect listening on {sink.endpoint} -> {db_path}", err=True)
    try:
        while not done.wait(0.5):
            pass
    finally:
        click.echo("otel-inputs collect: stopping, flushing accepted spans", err=True)
        sink.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    click.echo("otel-inputs collect: stopped", err=True)


COMMANDS = (collect,)
