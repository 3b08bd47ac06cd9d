"""An S3-API server for the bucket tests: moto's server mode on 127.0.0.1, the real s3fs client,
and a loopback TCP relay in front of it that a test can pause (a bucket that stops answering)."""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'otel-inputs[dev]')")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'otel-inputs[objects]')")

from moto.server import ThreadedMotoServer  # noqa: E402

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class S3:
    endpoint: str

    def options(self, endpoint: str | None = None, *, timeout_s: float = 60.0, **extra: object) -> dict:
        """s3fs options for this server (or a relay in front of it): bounded timeouts, one try."""
        return {"endpoint_url": endpoint or self.endpoint, "key": "testing", "secret": "testing",
                "skip_instance_cache": True,
                "config_kwargs": {"connect_timeout": timeout_s, "read_timeout": timeout_s,
                                  "retries": {"max_attempts": 1}}, **extra}

    def client(self) -> s3fs.S3FileSystem:
        return s3fs.S3FileSystem(**self.options())

    def new_bucket(self) -> str:
        name = "b-" + secrets.token_hex(6)
        self.client().mkdir(name)
        return name

    def read_only_user(self) -> tuple[str, str]:
        """(access key id, secret) of a new IAM user that may only read (GetObject, ListBucket)."""
        import boto3

        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name="us-east-1")
        user = "reader-" + secrets.token_hex(6)
        iam.create_user(UserName=user)
        policy = {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}]}
        iam.put_user_policy(UserName=user, PolicyName="read-only", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=user)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    @contextmanager
    def iam_enforced(self) -> Iterator[None]:
        """Inside the block moto checks every request against IAM, as a real bucket does."""
        self._reset_auth("0")
        try:
            yield
        finally:
            self._reset_auth("inf")

    def _reset_auth(self, count: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/reset-auth", count.encode(), method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=10).read()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """A moto S3 server on 127.0.0.1 for this module, with test credentials in the environment."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # fsspec caches filesystem instances by their options: one made for an earlier module's server
    # (stopped since) must not answer for this one, nor this one's outlive it.
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        yield S3(f"http://{host}:{port}")
    finally:
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class Relay:
    """Forwards 127.0.0.1:<port> to the S3 server; while paused, connections are accepted but not
    served (the bucket hangs), so a client's read timeout or a stuck upload can be produced at will."""

    target: tuple[str, int]
    sock: socket.socket = field(default_factory=lambda: socket.create_server(("127.0.0.1", 0)))
    running: threading.Event = field(default_factory=threading.Event)
    accepted: int = 0
    rewrite: tuple[bytes, bytes] | None = None  # bytes changed on their way to the server (same length)
    _stop: bool = False
    _conns: list[socket.socket] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def start(self) -> Relay:
        self.sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True, name="test-relay").start()
        return self

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        for _ in range(600):  # paused for at most 60 s
            if self.running.wait(0.1) or self._stop:
                break
        if self._stop:
            return
        try:
            upstream = socket.create_connection(self.target, timeout=10)
        except OSError:
            return
        self._conns.append(upstream)

        def pump(src: socket.socket, dst: socket.socket, rewrite: tuple[bytes, bytes] | None = None) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data.replace(*rewrite) if rewrite else data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        threading.Thread(target=pump, args=(upstream, conn), daemon=True).start()
        pump(conn, upstream, self.rewrite)

    def close(self) -> None:
        self._stop = True
        self.running.set()
        for s in [self.sock, *self._conns]:
            try:
                s.close()
            except OSError:
                pass


@pytest.fixture
def relay(s3: S3) -> Iterator[Relay]:
    """A pausable relay to the module's S3 server (starts paused)."""
    host, port = s3.endpoint.removeprefix("http://").split(":")
    r = Relay((host, int(port))).start()
    try:
        yield r
    finally:
        r.close()
