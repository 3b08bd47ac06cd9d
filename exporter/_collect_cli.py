"""``otel-inputs collect``: a thin click layer over :class:`otel_inputs.exporter._sink.OTLPSink`."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from otel_inputs.exporter._convert import default_workers, skip_pandas_probe, use_system_memory_pool
from otel_inputs.exporter._sink import OTLPSink, SinkConfig
from otel_inputs.exporter._wal import WALBusy


@click.command("collect")
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="DuckDB file to land spans in (created if missing).")
@click.option("--store", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Artifact store whose catalog's artifact status is landed in agent_artifacts.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to bind; loopback by default, so nothing is exposed unless asked.")
@click.option("--port", default=4318, show_default=True, type=click.IntRange(0, 65535),
              help="OTLP/HTTP port (0 picks a free one).")
@click.option("--grpc-port", default=4317, show_default=True, type=click.IntRange(0, 65535),
              help="OTLP/gRPC port (0 picks a free one).")
@click.option("--no-grpc", is_flag=True, help="Do not serve OTLP/gRPC.")
@click.option("--convert-workers", type=click.IntRange(0, 64), default=None,
              help="Processes converting requests under a backlog (default: one less than the cores, at most 2; "
                   "0: the writer converts).")
def collect(db_path: Path, store: Path | None, host: str, port: int, grpc_port: int, no_grpc: bool,
            convert_workers: int | None) -> None:
    """Receive OTLP traces and logs (HTTP /v1/traces and /v1/logs, protobuf or JSON, gzip; gRPC
    TraceService and LogsService) and land them in DuckDB; a 200 / OK means the request is durable."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    done = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    skip_pandas_probe()  # this process is only a sink: no pandas, ~45 MiB less
    use_system_memory_pool()  # freed Arrow memory goes back to the OS between batches
    workers = default_workers() if convert_workers is None else convert_workers
    sink = OTLPSink(db_path, store=store, host=host, port=port, grpc_port=None if no_grpc else grpc_port,
                    config=SinkConfig(convert_workers=workers))
    try:
        sink.start()
    except WALBusy as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}: {exc.strerror or exc}") from exc
    # The actual endpoints (port 0 picks a free one); tests and scripts read these lines.
    grpc_note = f"; OTLP/gRPC on {sink.grpc_endpoint}" if sink.grpc_endpoint else ""
    click.echo(f"otel-inputs collect listening on {sink.endpoint} -> {db_path}{grpc_note}", err=True)
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
