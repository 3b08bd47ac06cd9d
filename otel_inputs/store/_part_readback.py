"""Reading an exchange part back from the store: the receipt first, then bytes only when they match it."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from otel_inputs.store._store import ReadbackError, attempt_key
from otel_inputs.types import PartName, PartPersistence

PARTS_DIR = "parts"  # <store>/parts/<attempt_key>/<part>.{bin,json}, written by otel_inputs._parts
_RECEIPT_MAX = 64 * 1024
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _part(value: PartName | str) -> PartName:
    if not isinstance(value, str):
        raise ValueError(f"unknown exchange part {value!r}")
    return PartName(value)


def _part_paths(store_root: str | os.PathLike[str], attempt_id: str, part_name: PartName | str) -> tuple[Path, Path]:
    try:
        part = _part(part_name)
    except ValueError as exc:
        raise ReadbackError("not_found", "unknown part name") from exc
    directory = Path(store_root) / PARTS_DIR / attempt_key(attempt_id)
    return directory / f"{part.value}.bin", directory / f"{part.value}.json"


def read_part_receipt(store_root: str | os.PathLike[str], attempt_id: str, part_name: PartName | str) -> dict[str, Any]:
    """The stored receipt of one part; :class:`ReadbackError` (``not_found``/``integrity_mismatch``) otherwise."""
    _bin, path = _part_paths(store_root, attempt_id, part_name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(_RECEIPT_MAX + 1)
    except FileNotFoundError as exc:
        raise ReadbackError("not_found", "no stored receipt for this part") from exc
    except OSError as exc:
        raise ReadbackError("not_found", f"part receipt unreadable: {exc.strerror or exc}") from exc
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ReadbackError("integrity_mismatch", "part receipt is not valid JSON") from exc
    if not isinstance(body, dict) or body.get("attemptId") != attempt_id or body.get("part") != _part(part_name).value:
        raise ReadbackError("integrity_mismatch", "part receipt does not belong to the requested attempt and part")
    return body


def read_part(store_root: str | os.PathLike[str], attempt_id: str, part_name: PartName | str) -> bytes:
    """The stored bytes of one part, returned only after their size and SHA-256 match the receipt."""
    receipt = read_part_receipt(store_root, attempt_id, part_name)
    if receipt.get("persistence") != PartPersistence.STORED.value:
        raise ReadbackError("not_found", f"part was not stored (persistence {receipt.get('persistence')!r})")
    digest, size = receipt.get("sha256"), receipt.get("size_bytes")
    if not isinstance(digest, str) or not _HEX64.match(digest) or not isinstance(size, int) or size < 0:
        raise ReadbackError("integrity_mismatch", "part receipt has a malformed digest or size")
    bin_path, _json = _part_paths(store_root, attempt_id, part_name)
    try:
        fd = os.open(bin_path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(size + 1)  # one byte more than recorded exposes an appended tail
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ELOOP):
            raise ReadbackError("not_found", "part bytes are missing from the store") from exc
        raise ReadbackError("not_found", f"part bytes unreadable: {exc.strerror or exc}") from exc
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise ReadbackError("integrity_mismatch", "part bytes do not match the recorded size and SHA-256")
    return data
