"""OTLP/gRPC for the sink: TraceService and LogsService on grpcio, on the sink's one write path.

The handlers take the request's raw bytes (no deserializer), so a request is parsed once, by
the same code as an HTTP body.  grpcio enforces the message size (after decompression: over it,
``RESOURCE_EXHAUSTED`` naming the limit and without RetryInfo, i.e. not retryable); status codes
follow the OTLP specification: ``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` when the sink
is full, ``UNAVAILABLE`` (also with RetryInfo) when it cannot make the request durable,
``INVALID_ARGUMENT`` for an undecodable request, and an OK with ``partial_success`` when some items
were rejected.

Calls beyond the handler threads queue for one.  Neither grpcio's ``maximum_concurrent_rpcs`` nor
an HTTP/2 stream limit is set: the first refuses with a bare ``RESOURCE_EXHAUSTED`` and the second
with ``REFUSED_STREAM`` (the client sees ``UNAVAILABLE``), neither with RetryInfo, so senders that
retry only with it drop the batch.  A queued call has not been read yet: it holds no more than its
stream's flow-control window; a call waiting too long for the sink gets ``RESOURCE_EXHAUSTED`` with
RetryInfo from :meth:`OTLPSink.ingest`, or its own deadline passes (retryable too).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

if TYPE_CHECKING:
    from otel_inputs.exporter._sink import Answer, OTLPSink

_log = logging.getLogger(__name__)

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"


def _abort(context: grpc.ServicerContext, code: grpc.StatusCode, message: str, retry_after_s: float | None) -> None:
    if retry_after_s is not None:
        info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=int(retry_after_s)))
        detail = any_pb2.Any()
        detail.Pack(info)
        status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(code, message)


def _handler(sink: OTLPSink, signal: str) -> Any:
    def export(request: bytes, context: grpc.ServicerContext) -> bytes:
        answer: Answer = sink.ingest(signal, request, False)
        if answer.ok:
            return answer.body(False)
        if answer.retry:
            code = grpc.StatusCode.UNAVAILABLE if answer.unavailable else grpc.StatusCode.RESOURCE_EXHAUSTED
            _abort(context, code, answer.message, sink.config.retry_after_s)
        elif answer.http_status == 413:
            _abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, answer.message, None)
        else:
            _abort(context, grpc.StatusCode.INVALID_ARGUMENT, answer.message, None)
        raise AssertionError("unreachable: abort raises")

    return grpc.unary_unary_rpc_method_handler(export)  # bytes in, bytes out


class GRPCServer:
    """A grpcio server on ``host:port`` (0 picks a free port) serving both OTLP services."""

    def __init__(self, sink: OTLPSink, host: str, port: int) -> None:
        cfg = sink.config
        self._pool = ThreadPoolExecutor(max_workers=cfg.grpc_workers, thread_name_prefix="otel-inputs-collect-grpc")
        self.server = grpc.server(
            self._pool,
            options=[
                ("grpc.max_receive_message_length", cfg.max_body_bytes),
                ("grpc.max_send_message_length", 4 * 1024 * 1024),
                ("grpc.so_reuseport", 0),
                ("grpc.max_connection_idle_ms", int(cfg.keep_alive_s * 1000) * 60),
            ],
        )
        self.server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler(TRACE_SERVICE, {"Export": _handler(sink, "traces")}),
            grpc.method_handlers_generic_handler(LOGS_SERVICE, {"Export": _handler(sink, "logs")}),
        ))  # fmt: skip
        target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.port = self.server.add_insecure_port(target)
        if not self.port:
            raise OSError(f"cannot listen on {target} for OTLP/gRPC")
        self.host = host

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=5).wait(10)
        self._pool.shutdown(wait=True)


__all__ = ["GRPCServer", "LOGS_SERVICE", "TRACE_SERVICE"]
