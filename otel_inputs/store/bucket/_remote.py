"""A bucket (any fsspec URL) as a bytes-only object store: ``<url>/objects/<sha256>`` behind
dvc-objects' few calls (put, has, open, delete, iterate), and the plain locations a span may name.

fsspec (and s3fs for ``s3://``) is imported only when a :class:`RemoteObjects` is made, so capture
needs only the standard library and opentelemetry-api (docs/objects.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from otel_inputs import names
from otel_inputs.store._objects import HEX64

DEFAULT_TIMEOUT_S = 60.0  # one bucket call, whatever the client's own timeouts and retries say
_MD5 = re.compile(r"[0-9a-f]{32}")


_REASON_MAX = 200


class IntegrityError(OSError):
    """The bucket holds something other than the bytes just uploaded."""


def reason(exc: BaseException) -> str:
    """One line saying why a bucket call failed: the kind (refused, timeout, …) and the message."""
    if isinstance(exc, PermissionError):
        kind = "refused"
    elif isinstance(exc, IntegrityError):
        kind = "integrity"
    elif isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower() or "timed out" in str(exc).lower():
        kind = "timeout"
        exc = exc if str(exc) else TimeoutError("no answer from the bucket in time")
    else:
        kind = type(exc).__name__
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{kind}: {text}"[:_REASON_MAX]


class RemoteObjects:
    """Content-addressed objects under ``<url>/objects/<sha256>`` on an fsspec filesystem."""

    def __init__(self, url: str, options: Mapping[str, Any] | None = None) -> None:
        try:
            import fsspec
        except ImportError as exc:  # the objects extra is not installed
            raise RuntimeError(f"{names.ENV_OBJECTS_URL} is set but fsspec is not installed "
                               "(pip install 'otel-inputs[objects]')") from exc
        self.url = url
        self.fs, base = fsspec.core.url_to_fs(url, **dict(options or {}))
        self.base = base.rstrip("/")
        self.prefix = self.base + "/objects/"
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self._local = "file" in protocols or "local" in protocols
        self._s3 = "s3" in protocols
        try:
            self.timeout_s = float(os.environ.get(names.ENV_OBJECTS_TIMEOUT_S) or DEFAULT_TIMEOUT_S)
        except ValueError:
            self.timeout_s = DEFAULT_TIMEOUT_S
        # fsspec's sync wrappers of an async filesystem take a deadline (FSTimeoutError past it)
        self._deadline = {"timeout": self.timeout_s} if getattr(self.fs, "async_impl", False) else {}
        if self._local:
            self.fs.makedirs(self.prefix, exist_ok=True)

    def key(self, digest: str) -> str:
        if not HEX64.fullmatch(digest):
            raise ValueError("not a snapshot digest")
        return self.prefix + digest

    def has(self, digest: str) -> bool:
        return self.fs.exists(self.key(digest))

    def put(self, digest: str, data: bytes) -> None:
        """Upload ``data`` as object ``digest`` and check the bucket holds exactly those bytes.

        A local filesystem writes aside and renames (a crash never leaves a short object under the
        name).  An object store's PUT is atomic; S3 answers it with the MD5 of what it stored
        (the ETag of a single-part, unencrypted PUT), compared here at no extra request; anything
        else is checked by its size (one metadata call).
        """
        key = self.key(digest)
        if self._local:
            tmp = f"{self.prefix}.tmp-{digest}-{secrets.token_hex(4)}"
            self.fs.pipe_file(tmp, data)
            self.fs.mv(tmp, key)
        else:
            out = self.fs.pipe_file(key, data, **self._deadline)
            etag = str(out.get("ETag", "")).strip('"') if self._s3 and isinstance(out, dict) else ""
            if _MD5.fullmatch(etag):  # a plain MD5 (not multipart "-N", not KMS): compare it
                if etag != hashlib.md5(data, usedforsecurity=False).hexdigest():
                    self._remove_wrong(key)
                    raise IntegrityError(f"bucket stored other bytes for {digest} (ETag {etag})")
                return
        size = self.fs.info(key, **self._deadline).get("size")
        if size != len(data):
            self._remove_wrong(key)
            raise IntegrityError(f"bucket object {digest} has {size} of {len(data)} bytes")

    def put_file(self, path: str, name: str) -> None:
        """Upload the local file ``path`` as ``<url>/<name>`` in one PUT (atomic on an object store;
        aside-then-rename on a local filesystem), then check the bucket holds its size."""
        key = f"{self.base}/{name}"
        size = os.path.getsize(path)
        if self._local:
            self.fs.makedirs(key.rsplit("/", 1)[0], exist_ok=True)
            tmp = f"{key}.tmp-{secrets.token_hex(4)}"
            self.fs.put_file(path, tmp)
            self.fs.mv(tmp, key)
        else:
            self.fs.put_file(path, key, **self._deadline)
            self.fs.invalidate_cache(key)
        got = self.fs.info(key, **self._deadline).get("size")
        if got != size:
            raise IntegrityError(f"bucket holds {got} of {size} bytes for {name}")

    def _remove_wrong(self, key: str) -> None:
        """Best effort: reads refuse a wrong object anyway (SHA-256), but it should not linger."""
        try:
            self.fs.rm_file(key, **self._deadline)
        except Exception:  # noqa: BLE001 - the failure being reported matters more
            pass

    def open(self, digest: str, limit: int | None = None) -> bytes:
        """The object's bytes (at most ``limit``); ``FileNotFoundError`` when the bucket has none.
        Unverified: the caller compares them with the recorded SHA-256."""
        key = self.key(digest)
        if limit is None:
            return self.fs.cat_file(key, **self._deadline)
        return self.fs.cat_file(key, start=0, end=limit, **self._deadline)

    def delete(self, digests: Iterable[str]) -> None:
        keys = [self.key(d) for d in digests]
        if not keys:
            return
        try:
            self.fs.rm(keys, **self._deadline)
        except FileNotFoundError:
            pass  # already gone is what we wanted
        self.fs.invalidate_cache(self.prefix)

    def iterate(self) -> Iterator[str]:
        """Every object digest in the bucket (a listing: for audits, never on a hot path)."""
        try:
            paths = self.fs.ls(self.prefix, detail=False)
        except FileNotFoundError:
            return
        for path in paths:
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if HEX64.fullmatch(name):
                yield name


def public_location(url: str | None) -> str | None:
    """``url`` without credentials, query or fragment (what a span may carry), ``None`` if unusable."""
    if not url:
        return None
    parts = urlsplit(url)
    if not parts.scheme:
        return None
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _segments(url: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(scheme, host, path segments) of a plain location; ``None`` for anything else (credentials,
    query, fragment, percent-escapes, ``.``/``..`` or empty segments): such a URL is never followed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    # "%" too: a percent-encoded "/" or ".." must not reach a filesystem that would decode it
    if not parts.scheme or "@" in parts.netloc or parts.query or parts.fragment or "\\" in url or "%" in url:
        return None
    segs = tuple(s for s in parts.path.rstrip("/").split("/"))
    segs = segs[1:] if segs and segs[0] == "" else segs
    if any(s in ("", ".", "..") for s in segs) or any(ord(c) < 32 for c in url):
        return None
    return parts.scheme.lower(), parts.netloc.lower(), segs


def under_roots(location: str, roots: Iterable[str]) -> bool:
    """Whether ``location`` lies at or under one of ``roots`` (whole path segments, same scheme and host)."""
    loc = _segments(location)
    if loc is None:
        return False
    for root in roots:
        r = _segments(root)
        if r is not None and r[:2] == loc[:2] and loc[2][:len(r[2])] == r[2]:
            return True
    return False
