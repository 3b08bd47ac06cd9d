"""Evidence bundles: `otel-inputs bundle` writes one tar that `otel-inputs bundle verify` checks offline.

Driven through the real CLI (click's runner) on real DuckDB files and a real store; archives are
tampered with the standard tarfile module, as an attacker with the file would.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from access_fixture import OPEN_RUN, AccessFixture, build_access_fixture
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from otel_inputs import names
from otel_inputs.store import ArtifactStore, purge, revoke_source
from otel_inputs.exporter.cli import main
from otel_inputs.viewer._access import current_access
from otel_inputs.viewer._bundle import MANIFEST, BundleInvalid, bundle_bytes, verify_bundle

APP = str(Path(__file__).resolve().parents[2] / "viewer" / "app.py")


@pytest.fixture()
def fx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AccessFixture:
    """A fresh two-run fixture per test, with no access policy unless a test sets one."""
    monkeypatch.delenv(names.ENV_ACCESS_POLICY, raising=False)
    return build_access_fixture(tmp_path / "fx")


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def make(fx: AccessFixture, attempt_id: str, out: Path) -> tuple[int, str]:
    return cli("bundle", attempt_id, "-o", str(out), "--db", str(fx.db_path), "--store", str(fx.store_path))


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def rewrite(path: Path, out: Path, change) -> Path:  # noqa: ANN001
    """Copy the archive member by member, letting ``change(name, data)`` alter, drop (None) or keep each."""
    with tarfile.open(path) as src, tarfile.open(out, "w") as dst:
        for m in src.getmembers():
            data = change(m.name, src.extractfile(m).read())  # type: ignore[union-attr]
            if data is None:
                continue
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out


def add_member(path: Path, info: tarfile.TarInfo, data: bytes = b"") -> None:
    with tarfile.open(path, "a") as tar:
        info.size = len(data) if info.isreg() else 0
        tar.addfile(info, io.BytesIO(data) if info.isreg() else None)


def test_bundle_round_trip_holds_rows_snapshots_parts_and_verifies(fx: AccessFixture, tmp_path: Path) -> None:
    """A bundle has every row table, each snapshot and part byte for byte, a manifest of SHA-256s, and verifies."""
    out = tmp_path / "open-1.tar"
    code, text = make(fx, fx.open_id, out)
    assert code == 0, text
    assert "manifest sha256 " in text
    files = members(out)
    manifest = json.loads(files[MANIFEST])
    assert set(manifest["tables"]) == {"agent_attempts", "agent_attempt_inputs", "agent_artifacts",
                                       "agent_exchange_parts", "agent_attempt_steps", "agent_attempt_messages"}
    assert manifest["tables"]["agent_attempts"] == 1 and manifest["tables"]["agent_attempt_inputs"] == 4
    assert manifest["tables"]["agent_attempt_steps"] == 1
    store = ArtifactStore(fx.store_path, create=False)
    for item in store.attempt(fx.open_id).items:
        entry = next(s for s in manifest["snapshots"] if s["input_id"] == item.input_id)
        assert entry["status"] == "included"
        assert hashlib.sha256(files[entry["member"]]).hexdigest() == item.sha256
    part = manifest["parts"][0]
    assert part["status"] == "included" and fx.open_markers["part"].encode() in files[part["member"]]
    listed = {m["name"]: m for m in manifest["members"]}
    assert set(listed) == set(files) - {MANIFEST}
    assert all(hashlib.sha256(files[n]).hexdigest() == m["sha256"] for n, m in listed.items())
    rows = json.loads(files["rows/agent_attempts.json"])
    assert rows[0]["task_prompt"].startswith(fx.open_markers["task"]) and manifest["withheld"] == []
    code, text = cli("bundle", "verify", str(out))
    assert code == 0 and "OK" in text, text
    assert verify_bundle(out)["attempt_id"] == fx.open_id


def test_bundle_without_steps_and_messages_tables_says_not_recorded(builder, tmp_path: Path) -> None:  # noqa: ANN001
    """Where the database has no steps/messages tables the manifest says "not recorded", never zero rows."""
    import duckdb

    builder.attempt("plain-1", 0, run_id="r", item_count=0)
    db, store = builder.write()
    con = duckdb.connect(str(db))  # a database whose writer predates the steps and messages tables
    con.execute("DROP VIEW IF EXISTS agent_attempt_messages")
    con.execute("DROP TABLE IF EXISTS agent_attempt_steps")
    con.close()
    out = tmp_path / "b.tar"
    assert cli("bundle", "plain-1", "-o", str(out), "--db", str(db), "--store", str(store))[0] == 0
    tables = json.loads(members(out)[MANIFEST])["tables"]
    assert tables["agent_attempt_steps"] == tables["agent_attempt_messages"] == \
        "not recorded (table absent in this database)"
    assert tables["agent_attempts"] == 1 and tables["agent_attempt_inputs"] == 0


@pytest.mark.parametrize("attack", ["tampered", "missing", "extra", "traversal", "absolute", "symlink", "manifest"])
def test_verify_refuses_tampered_missing_extra_and_unsafe_members(fx: AccessFixture, tmp_path: Path, attack: str) -> None:
    """Each alteration of a good bundle is named by verify, which exits non-zero."""
    good = tmp_path / "good.tar"
    assert make(fx, fx.open_id, good)[0] == 0
    bad = tmp_path / f"{attack}.tar"
    if attack == "tampered":
        rewrite(good, bad, lambda n, d: d + b"!" if n == "snapshots/input-0001.bin" else d)
        expected = "tampered member 'snapshots/input-0001.bin'"
    elif attack == "missing":
        rewrite(good, bad, lambda n, d: None if n == "parts/logical_request.bin" else d)
        expected = "missing member 'parts/logical_request.bin'"
    elif attack == "extra":
        rewrite(good, bad, lambda n, d: d)
        add_member(bad, tarfile.TarInfo("snapshots/input-0099.bin"), b"smuggled")
        expected = "extra member 'snapshots/input-0099.bin'"
    elif attack == "traversal":
        rewrite(good, bad, lambda n, d: d)
        add_member(bad, tarfile.TarInfo("snapshots/../../evil.sh"), b"#!/bin/sh\n")
        expected = "unsafe member name 'snapshots/../../evil.sh'"
    elif attack == "absolute":
        rewrite(good, bad, lambda n, d: d)
        add_member(bad, tarfile.TarInfo("/etc/cron.d/evil"), b"* * * * * root true\n")
        expected = "unsafe member name '/etc/cron.d/evil'"
    elif attack == "symlink":
        rewrite(good, bad, lambda n, d: d)
        link = tarfile.TarInfo("rows/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        add_member(bad, link)
        expected = "member 'rows/link' is not a regular file"
    else:  # the manifest itself lists a traversal name
        def change(n: str, d: bytes) -> bytes:
            if n != MANIFEST:
                return d
            m = json.loads(d)
            m["members"].append({"name": "../outside", "size": 0, "sha256": hashlib.sha256(b"").hexdigest()})
            return json.dumps(m).encode()
        rewrite(good, bad, change)
        expected = "the manifest lists an unsafe member name '../outside'"
    with pytest.raises(BundleInvalid) as err:
        verify_bundle(bad)
    assert any(expected in p for p in err.value.problems), err.value.problems
    result = CliRunner().invoke(main, ["bundle", "verify", str(bad)])
    assert result.exit_code != 0 and expected in result.output


def test_verify_refuses_a_file_that_is_not_a_bundle(tmp_path: Path) -> None:
    """Random bytes and a tar without a manifest are refused with a reason."""
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"not a tar at all" * 100)
    with pytest.raises(BundleInvalid, match="not a readable tar archive"):
        verify_bundle(junk)
    empty = tmp_path / "empty.tar"
    with tarfile.open(empty, "w"):
        pass
    with pytest.raises(BundleInvalid, match="manifest.json is missing"):
        verify_bundle(empty)


def test_purged_attempt_bundle_lists_bytes_as_purged_and_holds_no_content(fx: AccessFixture, tmp_path: Path) -> None:
    """A purged attempt's bundle includes no snapshot or part bytes, nulls the content columns, and says why."""
    purge(ArtifactStore(fx.store_path, create=False), attempt_ids=[fx.open_id])
    out = tmp_path / "purged.tar"
    assert make(fx, fx.open_id, out)[0] == 0
    raw = out.read_bytes()
    assert [k for k, v in fx.open_markers.items() if v.encode() in raw] == []
    manifest = verify_bundle(out)
    assert {s["status"] for s in manifest["snapshots"]} == {"purged"}
    assert [p["status"] for p in manifest["parts"]] == ["withheld"]
    assert not any(m["name"].startswith(("snapshots/", "parts/")) for m in manifest["members"])
    assert any(w.startswith("agent_attempts.task_prompt: The task text is withheld") for w in manifest["withheld"])
    assert any(w.startswith("agent_attempt_steps.tool_arguments: ") for w in manifest["withheld"])
    rows = json.loads(members(out)["rows/agent_attempts.json"])
    assert rows[0]["task_prompt"] is None and rows[0]["task_sha256"]  # identity kept


def test_revoked_and_evicted_bytes_are_listed_never_included(fx: AccessFixture, tmp_path: Path) -> None:
    """A revoked source is listed as revoked and an evicted one as evicted; neither's bytes are in the archive."""
    store = ArtifactStore(fx.store_path, create=False)
    revoke_source(store, fx.notes_dir, reason="consent withdrawn")
    out = tmp_path / "revoked.tar"
    assert make(fx, fx.open_id, out)[0] == 0
    manifest = verify_bundle(out)
    by_seq = {s["seq"]: s for s in manifest["snapshots"]}
    assert by_seq[1]["status"] == "revoked" and "consent withdrawn" in by_seq[1]["reason"]
    assert fx.open_markers["notes"].encode() not in out.read_bytes()
    assert by_seq[0]["status"] == "included"
    with store.catalog.write() as con:  # what a retention pass records for an evicted attempt
        con.execute("UPDATE items SET artifact_status = 'evicted', status_reason = 'disk_budget' "
                    "WHERE attempt_id = ? AND artifact_status = 'available'", [fx.open_id])
    out2 = tmp_path / "evicted.tar"
    assert make(fx, fx.open_id, out2)[0] == 0
    statuses = {s["seq"]: s["status"] for s in verify_bundle(out2)["snapshots"]}
    assert statuses == {0: "evicted", 1: "revoked", 2: "evicted", 3: "evicted"}
    assert not any(n.startswith("snapshots/") for n in members(out2))


def test_denied_viewer_gets_no_bundle(fx: AccessFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A viewer the policy denies gets a non-zero exit, no file, and an error naming no content."""
    who = current_access(None).viewer
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps({"default": "deny", "viewers": {who: {"runs": [OPEN_RUN]}}}))
    monkeypatch.setenv(names.ENV_ACCESS_POLICY, str(policy))
    out = tmp_path / "secret.tar"
    result = CliRunner().invoke(main, ["bundle", fx.secret_id, "-o", str(out), "--db", str(fx.db_path),
                                       "--store", str(fx.store_path)])
    assert result.exit_code != 0 and "no bundle written: permission_denied" in result.output
    assert not out.exists() and list(tmp_path.glob(".bundle-*")) == []
    assert [m for m in fx.all_secret_markers if m in result.output] == []
    assert make(fx, fx.open_id, tmp_path / "open.tar")[0] == 0  # the allowed run still exports


def test_viewer_download_button_serves_the_same_verified_bundle(fx: AccessFixture, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The attempt page offers the bundle; the bytes it serves verify and hold the attempt's snapshots."""
    monkeypatch.setenv(names.ENV_DB, str(fx.db_path))
    monkeypatch.setenv(names.ENV_STORE, str(fx.store_path))
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["attempt"] = fx.open_id
    at.run()
    assert not at.exception
    assert [b.label for b in at.get("download_button")] == ["Download evidence bundle (tar with SHA-256 manifest)"]
    data = bundle_bytes(fx.db_path, fx.store_path, fx.open_id, current_access(None).viewer)
    path = tmp_path / "download.tar"
    path.write_bytes(data)
    assert sum(1 for s in verify_bundle(path)["snapshots"] if s["status"] == "included") == 4


def test_purged_attempt_bundle_holds_no_messages_from_the_span_row_or_its_first_step(builder, tmp_path: Path) -> None:  # noqa: ANN001
    """The attempt row's messages JSON, its first model step's messages and its own tool arguments are
    nulled like its prompts when the messages are withheld (a purge), and named in ``withheld``."""
    secret = {"input_messages_json": '[{"role":"user","content":"SECRET-JSON"}]', "step_system_prompt": "SECRET-SYS",
              "step_user_prompt": "SECRET-USER", "step_input_messages_json": '["SECRET-STEP-JSON"]',
              "tool_arguments": '{"path": "SECRET-ARGS"}'}
    builder.attempt("msg-1", 0, run_id="r", item_count=1, user_prompt="SECRET-PROMPT", **secret)
    builder.add_input("msg-1", 0, "notes.md", "context_handoff", "inline", data=b"SECRET-ITEM", media_type="text/plain",
                      preview_kind="text")
    db, store = builder.write()
    out = tmp_path / "open.tar"
    assert cli("bundle", "msg-1", "-o", str(out), "--db", str(db), "--store", str(store))[0] == 0
    assert b"SECRET-STEP-JSON" in out.read_bytes()  # the columns are exported while allowed
    purge(ArtifactStore(store, create=False), attempt_ids=["msg-1"])
    out = tmp_path / "purged.tar"
    assert cli("bundle", "msg-1", "-o", str(out), "--db", str(db), "--store", str(store))[0] == 0
    assert b"SECRET" not in out.read_bytes()
    withheld = verify_bundle(out)["withheld"]
    assert {f"agent_attempts.{c}" for c in secret} <= {w.split(":")[0] for w in withheld}


def test_bundle_create_needs_exactly_one_database(fx: AccessFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither or both of --db / --clickhouse, or a --clickhouse value that is not a ClickHouse URL, is a
    usage error (exit 2) and writes nothing."""
    for var in (names.ENV_DB, names.ENV_CLICKHOUSE):
        monkeypatch.delenv(var, raising=False)
    out = tmp_path / "b.tar"
    runs = {
        "neither": ["bundle", fx.open_id, "-o", str(out)],
        "both": ["bundle", fx.open_id, "-o", str(out), "--db", str(fx.db_path), "--clickhouse", "http://127.0.0.1:1/otel"],
        "not a URL": ["bundle", fx.open_id, "-o", str(out), "--clickhouse", "ftp://127.0.0.1/otel"],
    }
    for case, args in runs.items():
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (case, result.output)
        assert ("exactly one of --db FILE or --clickhouse URL" if case != "not a URL" else "not a ClickHouse URL") \
            in result.output, case
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "fx"]


def test_bundle_command_never_imports_or_asks_streamlit(fx: AccessFixture, tmp_path: Path) -> None:
    """The real `otel-inputs bundle` process writes a verifying bundle without importing Streamlit, so its stderr
    has no "missing ScriptRunContext" or st.user warning (issue 19)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "cli.tar"
    env = {k: v for k, v in os.environ.items() if k not in (names.ENV_ACCESS_POLICY, names.ENV_DB, names.ENV_CLICKHOUSE)}
    proc = subprocess.run(  # -X importtime: every module the process imports is named on stderr
        [sys.executable, "-X", "importtime", "-m", "otel_inputs.exporter.cli", "bundle", fx.open_id, "-o", str(out),
         "--db", str(fx.db_path), "--store", str(fx.store_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "wrote " in proc.stdout and verify_bundle(out)["attempt_id"] == fx.open_id
    warnings = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert warnings == [], warnings
    imported = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "otel_inputs.viewer._bundle" in imported  # the bundle path itself ran in this process
    assert [m for m in imported if m.split(".")[0] == "streamlit"] == []
