"""The sink's write-ahead log on real files: group commit, replay order, torn and corrupt records, ownership."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from otel_inputs.exporter._wal import Kind, WALBusy, WriteAheadLog


def test_concurrent_appends_share_fsyncs_and_replay_in_order(tmp_path: Path) -> None:
    """Appends from 8 threads are each durable on return, share fsyncs, and replay complete and in sequence order."""
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    refs = []
    lock = threading.Lock()

    def worker(t: int) -> None:
        for i in range(25):
            ref = wal.append(Kind.TRACES, f"{t}-{i}".encode() * 2000)
            with lock:
                refs.append(ref)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(refs) == 200 and wal.syncs < 200
    wal.close()
    again = WriteAheadLog(tmp_path / "wal")
    replayed = again.open()
    assert [r.seq for r in replayed] == list(range(1, 201))
    assert {again.read(r) for r in replayed} == {f"{t}-{i}".encode() * 2000 for t in range(8) for i in range(25)}
    assert again.append(Kind.LOGS, b"next").seq == 201  # numbering continues past the replayed records
    again.close()


def test_landed_records_are_not_replayed_and_their_segments_go(tmp_path: Path) -> None:
    """Records up to the landed mark are skipped at open; wholly landed segments are deleted."""
    wal = WriteAheadLog(tmp_path / "wal", segment_bytes=1000)
    wal.open()
    for i in range(10):
        wal.append(Kind.TRACES, bytes([i]) * 600)  # a new segment after every second record
    wal.landed(6)
    assert sorted(p.name[-6:-4] for p in (tmp_path / "wal").glob("wal-*.log")) == ["07", "09"]
    wal.close()
    again = WriteAheadLog(tmp_path / "wal", segment_bytes=1000)
    assert [r.seq for r in again.open(landed=8)] == [9, 10]
    again.close()


def test_corrupt_record_is_quarantined_and_its_neighbours_replay(tmp_path: Path) -> None:
    """A record whose checksum fails is moved aside; the records before and after it still replay."""
    wal = WriteAheadLog(tmp_path / "wal")
    wal.open()
    refs = [wal.append(Kind.TRACES, bytes([65 + i]) * 100) for i in range(3)]
    wal.close()
    with open(refs[1].path, "r+b") as fh:
        fh.seek(refs[1].offset + 10)
        fh.write(b"\x00")
    again = WriteAheadLog(tmp_path / "wal")
    assert [r.seq for r in again.open()] == [1, 3]
    assert list((tmp_path / "wal").glob("bad-*.rec"))
    again.close()


def test_a_second_owner_is_refused(tmp_path: Path) -> None:
    """Two logs on one directory (two receivers on one database) cannot both be open."""
    first = WriteAheadLog(tmp_path / "wal")
    first.open()
    with pytest.raises(WALBusy):
        WriteAheadLog(tmp_path / "wal").open()
    first.close()
    WriteAheadLog(tmp_path / "wal").open()
