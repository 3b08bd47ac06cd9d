"""A real failing fsync under the sink's write-ahead log: refused (503) while it fails, accepting
again once the disk recovers (no restart), and nothing refused is ever landed (so a sender's retry
cannot land a log record twice).

The failing disk is real: an ext4 file system on a loop device whose backing file lies on a small
tmpfs.  Writes go to the page cache; when the tmpfs is full, writeback fails and fsync returns an
error, exactly as a failing or full device does.  Needs root (mount, losetup).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import query
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from sink_client import post

from otel_inputs.exporter import OTLPSink
from otel_inputs.exporter._wal import wal_dir

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def failing_disk(db_path: Path) -> Iterator[Path]:
    """The sink's write-ahead log directory on ext4 over a loop device backed by a 16 MiB tmpfs; yields the tmpfs."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("mount", "mkfs.ext4", "losetup")):
        pytest.skip("a loop-mounted file system needs root, mount, losetup and mkfs.ext4")
    backing = db_path.parent / "backing"
    backing.mkdir()
    wal = wal_dir(db_path)
    wal.mkdir()
    mounted: list[Path] = []
    try:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(backing)], capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here")
        mounted.append(backing)
        image = backing / "ext4.img"
        with open(image, "wb") as fh:
            fh.truncate(64 * 1024 * 1024)  # sparse: its blocks take tmpfs room only when written
        subprocess.run(["mkfs.ext4", "-q", "-O", "^has_journal", "-E", "nodiscard", str(image)], check=True)
        done = subprocess.run(["mount", "-o", "loop,errors=continue,discard", str(image), str(wal)], capture_output=True)
        if done.returncode:
            pytest.skip(f"cannot loop-mount: {done.stderr.decode().strip()}")
        mounted.append(wal)
        yield backing
    finally:
        for path in reversed(mounted):
            subprocess.run(["umount", "-l", str(path)], check=False)


def _logs(body: str, size: int = 0) -> bytes:
    req = ExportLogsServiceRequest()
    rec = req.resource_logs.add().scope_logs.add().log_records.add(time_unix_nano=1_764_460_800_000_000_000)
    rec.body.string_value = body
    if size:
        rec.attributes.add(key="padding").value.string_value = "p" * size
    return req.SerializeToString()


def _fill(directory: Path) -> None:
    """Take every free byte of ``directory``'s file system with one more filler file."""
    st = os.statvfs(directory)
    with open(directory / f"filler-{len(list(directory.glob('filler-*')))}", "wb") as fh:
        fh.write(b"\1" * (st.f_bavail * st.f_frsize))


def _bodies(db: Path) -> list[tuple[str, int]]:
    return query(db, 'SELECT "Body", count(*) FROM otel_logs GROUP BY 1 ORDER BY 1')


def test_failed_fsync_refuses_then_recovers_without_restart_and_lands_nothing_refused(
        db_path: Path, failing_disk: Path) -> None:  # fmt: skip
    """While fsync fails requests get 503; once the disk has room the same receiver answers 200 again, and each record lands exactly once."""
    sink = OTLPSink(db_path, port=0).start()
    acknowledged = ["first"]
    try:
        assert post(sink.logs_endpoint, _logs("first"))[0] == 200
        refused: list[str] = []
        for i in range(20):  # until the full device makes an fsync fail (freed blocks may give a little room)
            _fill(failing_disk)
            status, headers, reply = post(sink.logs_endpoint, _logs(f"during-{i}", 1 << 20))
            if status == 200:
                acknowledged.append(f"during-{i}")
                continue
            assert status == 503 and headers.get("retry-after") == "1" and b"durable" in reply, (status, reply)
            refused.append(f"during-{i}")
            break
        assert refused, "the full device never made an fsync fail"
        _fill(failing_disk)  # whatever the refused record's cut-off freed
        status, _, reply = post(sink.logs_endpoint, _logs("still-full", 1 << 20))
        assert status == 503, reply  # still failing: still refused
        refused.append("still-full")
        for filler in failing_disk.glob("filler-*"):
            filler.unlink()  # the device has room again
        for body in refused:  # the senders retry, to the same receiver (no restart)
            status, _, reply = post(sink.logs_endpoint, _logs(body, 1 << 20))
            assert status == 200, reply
            acknowledged.append(body)
        assert post(sink.logs_endpoint, _logs("after"))[0] == 200
        acknowledged.append("after")
        assert sink.flush(60)
    finally:
        sink.stop()
    expected = sorted((body, 1) for body in acknowledged)
    assert _bodies(db_path) == expected
    OTLPSink(db_path, port=0).start().stop()  # a restart replays the log: still exactly once
    assert _bodies(db_path) == expected
