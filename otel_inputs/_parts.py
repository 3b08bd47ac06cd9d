"""Exchange parts (docs/wire.md, the exchange-part event): bounded, non-blocking copies of the logical
request and output.

Each physical attempt has two independently captured parts, ``logical_request`` and
``observable_output``.  The agent thread encodes a part, hashes it and hands it to an
:class:`EvidenceQueue`; :meth:`EvidenceQueue.submit` returns a :class:`PartReceipt` at once and never
waits for the disk.  One background writer thread per queue hands an accepted part (possibly
truncated) to :meth:`ArtifactStore.put_part <otel_inputs.store.ArtifactStore.put_part>`, which
stores its bytes as a content-addressed object and its structured receipt, the authority on
persistence, as a row of the store's catalog (docs/store.md).

Bounds (defaults; every one configurable through :class:`PartLimits` or the environment):

=====================================  ==========  ================================================
environment variable                   default     meaning
=====================================  ==========  ================================================
``OTEL_INPUTS_PART_MAX_BYTES``         262144      bytes kept of one part; more is ``truncated``
``OTEL_INPUTS_RUN_MAX_PARTS``          128         accepted parts per run
``OTEL_INPUTS_RUN_MAX_BYTES``          16777216    accepted bytes per run
``OTEL_INPUTS_PART_MAX_PENDING``       32          parts queued or in flight, all runs together
``OTEL_INPUTS_PART_MAX_PENDING_BYTES`` 4194304     bytes queued or in flight
``OTEL_INPUTS_PART_WRITE_TIMEOUT_S``   2.0         seconds from submit to durable before ``timed_out``
=====================================  ==========  ================================================

An unparsable or non-positive environment value falls back to the default (observation must not
stop the agent because of a typo).  Over any budget, ``submit`` answers ``not_captured`` /
``capacity_exceeded`` / ``not_queued`` immediately: a full queue is never backpressure.

Persistence states: ``queued`` (accepted, NOT durable) -> ``stored`` | ``failed``; a part not settled
within the write timeout of its submit is ``timed_out`` but keeps its pending capacity reserved
until the underlying write really settles, and then becomes ``stored`` or ``failed``.  Gaps
(``not_captured``) are recorded on the span event only; they are never queued, so they cannot take
capacity from real evidence.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import errno
import hashlib
import json
import logging
import os
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from otel_inputs import names
from otel_inputs._policy import AdmissionDecision
from otel_inputs.store import ArtifactStore
from otel_inputs.types import (
    CaptureDecision,
    GapReason,
    PartCapture,
    PartDispatch,
    PartName,
    PartPersistence,
    PartReason,
    PersistenceFailure,
)

_log = logging.getLogger("otel_inputs")

RECEIPT_VERSION = 1
KiB = 1024
MiB = 1024 * KiB
_DETAIL_MAX = 160
_RECENT_RECEIPTS = 1024  # settled receipts kept in memory for receipt(); the store is the authority
_TRACKED_RUNS = 4096  # per-run budgets remembered; the oldest idle run is forgotten beyond this
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def attempt_key(attempt_id: str) -> str:
    """A fixed-width name for an attempt id, as part refs carry it (docs/wire.md)."""
    return hashlib.sha256(attempt_id.encode("utf-8", "surrogatepass")).hexdigest()


# Plain dict look-ups: Enum(value) costs microseconds on the agent's thread.
_DISPATCH_BY_VALUE: dict[str, PartDispatch] = {m.value: m for m in PartDispatch}
_PART_BY_VALUE: dict[str, PartName] = {m.value: m for m in PartName}


def coerce_dispatch(value: PartDispatch | str | None) -> PartDispatch:
    """The dispatch value to record; anything unrecognised (None, typos, bools) is ``unknown``."""
    if value is True or value is False:  # a bool is not a dispatch fact (False == 0 must not match)
        return PartDispatch.UNKNOWN
    try:
        return _DISPATCH_BY_VALUE.get(value, PartDispatch.UNKNOWN)  # type: ignore[arg-type]
    except TypeError:  # unhashable
        return PartDispatch.UNKNOWN  # never guess not_dispatched


def _part(value: PartName | str) -> PartName:
    part = _PART_BY_VALUE.get(value) if isinstance(value, str) else None
    if part is None:
        raise ValueError(f"unknown exchange part {value!r}")
    return part


def _bounded(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _DETAIL_MAX else line[: _DETAIL_MAX - 1] + "…"


# -- encoders -------------------------------------------------------------------------------------
def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Enum):
        return obj.value
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    dump = getattr(obj, "model_dump", None)  # pydantic v2 message objects
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"{type(obj).__name__} is not JSON-encodable")


def _canonical(body: Mapping[str, Any]) -> bytes:
    # Sorted keys and compact separators make equal requests byte-identical, so their digests match.
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False, default=_jsonable)
    return text.encode("utf-8")  # strict: lone surrogates are an encoding failure, not silent bytes


def encode_logical_request(route: str | None, model: str | None, messages: Any,
                           tools: Any = None, options: Mapping[str, Any] | None = None) -> bytes:
    """The effective provider-neutral SDK input as canonical UTF-8 JSON; unknown fields are ``null``.

    Not a prompt template and not HTTP bytes.  ``None`` stays ``null`` (not ``""``/``[]``), so a
    reader can tell "not given" from "given empty".  Raises ``TypeError``/``ValueError`` on content
    that has no canonical JSON form (:func:`observe_part` turns that into an ``unencodable`` gap).
    """
    return _canonical({"kind": PartName.LOGICAL_REQUEST.value, "schema_version": 1, "route": route,
                       "model": model, "messages": messages, "tools": tools, "options": options})


def encode_observable_output(text: str | None = None, tool_calls: Any = None, usage: Mapping[str, Any] | None = None,
                             settlement: Any = None) -> bytes:
    """Observed text, tool calls, partial usage and settlement as canonical UTF-8 JSON.

    Missing content stays ``null``: an interrupted stream with no text is ``"text": null``, never
    ``""``, and unknown usage is ``null``, never ``0``.
    """
    return _canonical({"kind": PartName.OBSERVABLE_OUTPUT.value, "schema_version": 1, "text": text,
                       "tool_calls": tool_calls, "usage": usage, "settlement": settlement})


# -- limits ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PartLimits:
    """The bounds above; configurable policy, not a promise that every part fits."""

    max_part_bytes: int = 256 * KiB
    max_run_parts: int = 128
    max_run_bytes: int = 16 * MiB
    max_pending_parts: int = 32
    max_pending_bytes: int = 4 * MiB
    write_timeout_s: float = 2.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if not getattr(self, f.name) > 0:
                raise ValueError(f"PartLimits.{f.name} must be positive")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PartLimits:
        env = os.environ if env is None else env
        base = cls()
        values: dict[str, Any] = {}
        for key, attr, conv in (
            (names.ENV_PART_MAX_BYTES, "max_part_bytes", int),
            (names.ENV_RUN_MAX_PARTS, "max_run_parts", int),
            (names.ENV_RUN_MAX_BYTES, "max_run_bytes", int),
            (names.ENV_PART_MAX_PENDING, "max_pending_parts", int),
            (names.ENV_PART_MAX_PENDING_BYTES, "max_pending_bytes", int),
            (names.ENV_PART_WRITE_TIMEOUT_S, "write_timeout_s", float),
        ):
            raw = env.get(key)
            if raw is None or not raw.strip():
                continue
            try:
                value = conv(raw.strip())
                if not value > 0:
                    raise ValueError(raw)
                values[attr] = value
            except ValueError:
                _log.warning("otel_inputs: ignoring %s=%r (want a positive number); using %r",
                             key, raw, getattr(base, attr))
        return cls(**values)


# -- receipts -------------------------------------------------------------------------------------
@dataclass(slots=True)
class PartReceipt:
    """One part's outcome as known at a point in time; ``history`` lists its persistence states.

    A snapshot: the queue never mutates a receipt it has handed out (updates are new objects).  Not
    frozen only because frozen dataclass construction costs microseconds on the agent's thread.
    """

    run_id: str
    attempt_id: str
    part: PartName
    capture: PartCapture
    dispatch: PartDispatch
    persistence: PartPersistence
    reason: str | None = None
    detail: str | None = None
    ref: str | None = None
    sha256: str | None = None
    size_bytes: int | None = None
    original_size_bytes: int | None = None
    captured_at_ns: int | None = None
    written_at: str | None = None
    persistence_reason: PersistenceFailure | None = None
    persistence_detail: str | None = None
    history: tuple[PartPersistence, ...] = ()

    @property
    def has_bytes(self) -> bool:
        return self.capture is not PartCapture.NOT_CAPTURED


def part_ref(attempt_id: str, part: PartName | str) -> str:
    return f"{names.PART_REF_PREFIX}{attempt_key(attempt_id)}/{_part(part).value}"


def gap_receipt(run_id: str, attempt_id: str, part: PartName | str, reason: str,
                dispatch: PartDispatch | str | None = None, detail: str | None = None) -> PartReceipt:
    """A ``not_captured`` receipt that never touched the queue (admission refusal, encode failure)."""
    return PartReceipt(run_id, attempt_id, _part(part), PartCapture.NOT_CAPTURED, coerce_dispatch(dispatch),
                       PartPersistence.NOT_QUEUED, reason=str(reason),
                       detail=_bounded(detail) if detail else None, captured_at_ns=time.time_ns(),
                       history=(PartPersistence.NOT_QUEUED,))


def receipt_json(receipt: PartReceipt, **extra: Any) -> dict[str, Any]:
    """The receipt body the store records (its keys, plus identity; docs/store.md)."""
    r = receipt
    body: dict[str, Any] = {"receipt_version": RECEIPT_VERSION, "runId": r.run_id, "attemptId": r.attempt_id,
                            "part": r.part.value, "capture": r.capture.value, "dispatch": r.dispatch.value,
                            "persistence": r.persistence.value}
    optional = {"reason": r.reason, "detail": r.detail, "ref": r.ref, "sha256": r.sha256, "size_bytes": r.size_bytes,
                "original_size_bytes": r.original_size_bytes, "captured_at_ns": r.captured_at_ns,
                "written_at": r.written_at, "persistence_detail": r.persistence_detail,
                "persistence_reason": r.persistence_reason.value if r.persistence_reason else None}
    body.update({k: v for k, v in optional.items() if v is not None})
    body.update(extra)
    return body


def _failure_reason(exc: BaseException) -> PersistenceFailure:
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, errno.EDQUOT):
        return PersistenceFailure.DISK_FULL
    if code == errno.EROFS:
        return PersistenceFailure.READ_ONLY
    if code in (errno.EACCES, errno.EPERM):
        return PersistenceFailure.PERMISSION_DENIED
    if code in (errno.ENOTDIR, errno.EEXIST, errno.ENOENT, errno.EISDIR):
        return PersistenceFailure.STORE_UNAVAILABLE
    return PersistenceFailure.WRITE_ERROR


# -- the queue ------------------------------------------------------------------------------------
@dataclass
class _Job:
    receipt: PartReceipt
    data: bytes = field(repr=False)
    deadline: float
    written_at: str | None = None


@dataclass
class _RunBudget:
    parts: int = 0
    bytes: int = 0
    recorded: set[tuple[str, PartName]] = field(default_factory=set)


_queues: weakref.WeakSet[EvidenceQueue] = weakref.WeakSet()


if hasattr(os, "register_at_fork"):  # runs in the (single-threaded) child right after fork
    os.register_at_fork(after_in_child=lambda: [q._reset_after_fork() for q in list(_queues)])


def _flush_all_at_exit() -> None:
    for q in list(_queues):
        try:
            q.flush(q.limits.write_timeout_s)
        except Exception:
            pass


atexit.register(_flush_all_at_exit)


class EvidenceQueue:
    """A bounded pending set of parts and ONE lazily started writer thread (restarted after fork).

    ``put_fn(store, receipt, data)`` persists a receipt (or a function returning it once the bytes are
    durable) and its bytes (``None``: the receipt only); it defaults to :meth:`ArtifactStore.put_part` and tests inject a slow or failing one.  Nothing
    here raises into the agent: failures become receipts.
    """

    def __init__(self, store: ArtifactStore | str | os.PathLike[str], limits: PartLimits | None = None, *,
                 put_fn: Callable[[ArtifactStore, Any, bytes | None], None] = ArtifactStore.put_part,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
        self.limits = limits or PartLimits.from_env()
        self._put = put_fn
        self._clock = clock
        self._init_state()
        self._runs: collections.OrderedDict[str, _RunBudget] = collections.OrderedDict()
        self._warned: set[PersistenceFailure] = set()
        _queues.add(self)

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._todo: collections.deque[_Job] = collections.deque()
        self._pending: dict[tuple[str, PartName], _Job] = {}  # queued or in flight: capacity reserved
        self._recent: collections.OrderedDict[tuple[str, PartName], PartReceipt] = collections.OrderedDict()
        self._pending_bytes = 0
        self._thread: threading.Thread | None = None
        self._counts = {"submitted": 0, "stored": 0, "failed": 0, "rejected": 0, "timed_out_total": 0}

    def _reset_after_fork(self) -> None:
        # The parent's writer owns the parent's pending parts; the child starts empty with fresh
        # locks (the old ones may have been held by a thread that does not exist here).
        runs = self._runs
        self._init_state()
        self._runs = runs

    # -- agent thread ---------------------------------------------------------------------------
    def submit(self, run_id: str, attempt_id: str, part_name: PartName | str, data: bytes,
               dispatch: PartDispatch | str | None = PartDispatch.UNKNOWN) -> PartReceipt:
        """Accept a part for asynchronous persistence or refuse it, without ever waiting for I/O."""
        part = _part(part_name)
        disp = coerce_dispatch(dispatch)
        if type(data) is not bytes:  # a caller's bytearray could change after we hashed it
            data = bytes(data)
        size = len(data)
        limit = self.limits.max_part_bytes
        capture, reason, detail, original = PartCapture.CAPTURED, None, None, None
        if size > limit:
            data = bytes(memoryview(data)[:limit])
            capture, reason, original = PartCapture.TRUNCATED, PartReason.PART_LIMIT.value, size
            detail = f"kept {limit} of {size} bytes"
            size = limit
        # Hashing happens before the lock so concurrent agent threads never wait on each other's hashes.
        digest = hashlib.sha256(data).hexdigest()
        now_ns = time.time_ns()
        key = (attempt_id, part)
        with self._lock:
            refusal = self._refusal_locked(run_id, key, size)
            if refusal is not None:
                self._counts["rejected"] += 1
                return PartReceipt(run_id, attempt_id, part, PartCapture.NOT_CAPTURED, disp,
                                   PartPersistence.NOT_QUEUED, reason=refusal[0], detail=refusal[1],
                                   original_size_bytes=original, captured_at_ns=now_ns,
                                   history=(PartPersistence.NOT_QUEUED,))
            budget = self._runs[run_id]
            budget.parts += 1
            budget.bytes += size
            budget.recorded.add(key)
            receipt = PartReceipt(run_id, attempt_id, part, capture, disp, PartPersistence.QUEUED,
                                  reason=reason, detail=detail, ref=part_ref(attempt_id, part), sha256=digest,
                                  size_bytes=size, original_size_bytes=original, captured_at_ns=now_ns,
                                  history=(PartPersistence.QUEUED,))
            job = _Job(receipt, data, self._clock() + self.limits.write_timeout_s)
            self._pending[key] = job
            self._pending_bytes += size
            self._todo.append(job)
            self._counts["submitted"] += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="otel-inputs-parts", daemon=True)
                self._thread.start()
            self._cond.notify()
        return receipt

    def _refusal_locked(self, run_id: str, key: tuple[str, PartName], size: int) -> tuple[str, str] | None:
        lim = self.limits
        budget = self._runs.get(run_id)
        if budget is None:
            budget = self._runs[run_id] = _RunBudget()
            if len(self._runs) > _TRACKED_RUNS:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        if key in budget.recorded or key in self._pending:
            return PartReason.ALREADY_RECORDED.value, "this part of this attempt was already accepted"
        cap = PartReason.CAPACITY_EXCEEDED.value
        if budget.parts + 1 > lim.max_run_parts:
            return cap, f"run part budget of {lim.max_run_parts} reached"
        if budget.bytes + size > lim.max_run_bytes:
            return cap, f"run byte budget of {lim.max_run_bytes} reached"
        if len(self._pending) + 1 > lim.max_pending_parts:
            return cap, f"{lim.max_pending_parts} parts already pending"
        if self._pending_bytes + size > lim.max_pending_bytes:
            return cap, f"pending byte budget of {lim.max_pending_bytes} reached"
        return None

    # -- writer thread --------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._todo:
                    self._cond.wait()
                job = self._todo.popleft()
            try:
                outcome, failure, note = self._persist(job)
            except BaseException as exc:  # the writer must outlive any single part
                outcome, failure, note = PartPersistence.FAILED, PersistenceFailure.WRITE_ERROR, _bounded(repr(exc))
            self._settle(job, outcome, failure, note)

    def _persist(self, job: _Job) -> tuple[PartPersistence, PersistenceFailure | None, str | None]:
        try:
            self._put(self.store, lambda: self._receipt_body(job, PartPersistence.STORED, None, None), job.data)
        except Exception as exc:
            failure = _failure_reason(exc)
            note = _bounded(f"{failure.value}: {getattr(exc, 'strerror', None) or type(exc).__name__}")
            try:  # best effort: a failed receipt, so the store itself explains the gap
                self._put(self.store, self._receipt_body(job, PartPersistence.FAILED, failure, note), None)
            except Exception:
                pass
            return PartPersistence.FAILED, failure, note
        with self._lock:
            job.receipt = dataclasses.replace(job.receipt, written_at=job.written_at)
        return PartPersistence.STORED, None, None

    def _receipt_body(self, job: _Job, state: PartPersistence, failure: PersistenceFailure | None,
                      note: str | None) -> dict[str, Any]:
        """The receipt the store records for ``job`` in ``state``."""
        extra: dict[str, Any] = {}
        if self._clock() > job.deadline:
            extra["settled_after_timeout"] = True
        if state is PartPersistence.STORED:
            job.written_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        r = dataclasses.replace(job.receipt, persistence=state, persistence_reason=failure, persistence_detail=note,
                                written_at=job.written_at if state is PartPersistence.STORED else None)
        return receipt_json(r, **extra)

    def _settle(self, job: _Job, outcome: PartPersistence, failure: PersistenceFailure | None,
                note: str | None) -> None:
        with self._cond:
            self._mark_timed_out_locked(job, self._clock())
            r = job.receipt
            job.receipt = dataclasses.replace(r, persistence=outcome, persistence_reason=failure,
                                              persistence_detail=note, history=r.history + (outcome,))
            key = (r.attempt_id, r.part)
            self._pending.pop(key, None)  # capacity is released only now, never at the timeout
            self._pending_bytes -= len(job.data)
            self._counts["stored" if outcome is PartPersistence.STORED else "failed"] += 1
            self._recent[key] = job.receipt
            if len(self._recent) > _RECENT_RECEIPTS:
                self._recent.popitem(last=False)
            self._cond.notify_all()
        if failure is not None and failure not in self._warned:  # once per kind: a dead disk must not flood logs
            self._warned.add(failure)
            _log.warning("otel_inputs: part %s of attempt %s not stored: %s", r.part.value, r.attempt_id, note)

    def _mark_timed_out_locked(self, job: _Job, now: float) -> None:
        if now > job.deadline and job.receipt.persistence is PartPersistence.QUEUED:
            job.receipt = dataclasses.replace(job.receipt, persistence=PartPersistence.TIMED_OUT,
                                              history=job.receipt.history + (PartPersistence.TIMED_OUT,))
            self._counts["timed_out_total"] += 1

    def _sweep_locked(self) -> None:
        now = self._clock()
        for job in self._pending.values():
            self._mark_timed_out_locked(job, now)

    # -- observation ----------------------------------------------------------------------------
    def receipt(self, attempt_id: str, part_name: PartName | str) -> PartReceipt | None:
        """The live receipt of a part submitted in this process (recent ones only), else ``None``."""
        key = (attempt_id, _part(part_name))
        with self._lock:
            self._sweep_locked()
            job = self._pending.get(key)
            return job.receipt if job is not None else self._recent.get(key)

    def stats(self) -> dict[str, int]:
        """Counts: ``queued``/``timed_out`` are unsettled now; stored/failed/rejected are cumulative."""
        with self._lock:
            self._sweep_locked()
            timed_out = sum(1 for j in self._pending.values() if j.receipt.persistence is PartPersistence.TIMED_OUT)
            return {
                "queued": len(self._pending) - timed_out,
                "timed_out": timed_out,
                "pending_parts": len(self._pending),
                "pending_bytes": self._pending_bytes,
                **self._counts,
            }

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every accepted part has settled (stored or failed); ``False`` on timeout."""
        timeout = self.limits.write_timeout_s if timeout is None else timeout
        with self._cond:
            done = self._cond.wait_for(lambda: not self._pending, timeout)
            self._sweep_locked()
            return done

    def forget_run(self, run_id: str) -> None:
        """Drop a finished run's budget bookkeeping (its stored parts are untouched)."""
        with self._lock:
            self._runs.pop(run_id, None)


# -- admission-first entry point for the recorder ---------------------------------------------------
def observe_part(queue: EvidenceQueue | None, decision: AdmissionDecision | None, *, run_id: str, attempt_id: str,
                 part: PartName | str, encode: Callable[[], bytes],
                 dispatch: PartDispatch | str | None = PartDispatch.UNKNOWN) -> PartReceipt:
    """Check admission, THEN encode, then submit; every failure is a gap receipt, never an exception.

    ``encode`` is only called when content capture was admitted, so opted-out content is never
    traversed or serialised.  An invalid ``part`` is a caller bug and raises ``ValueError``.
    """
    part = _part(part)
    try:
        if decision is None:  # admission never ran (the observer failed): content must not be read
            return gap_receipt(run_id, attempt_id, part, PartReason.OBSERVER_ERROR.value, dispatch)
        if decision.decision is not CaptureDecision.ADMITTED:
            return gap_receipt(run_id, attempt_id, part, str(decision.gap_reason or GapReason.POLICY_OPT_OUT), dispatch)
        if queue is None:
            return gap_receipt(run_id, attempt_id, part, PartReason.STORE_UNAVAILABLE.value, dispatch)
        try:
            data = encode()
        except Exception as exc:
            return gap_receipt(run_id, attempt_id, part, PartReason.UNENCODABLE.value, dispatch,
                               detail=f"{type(exc).__name__}: {exc}")
        return queue.submit(run_id, attempt_id, part, data, dispatch)
    except Exception as exc:  # observation never vetoes the agent call
        _log.warning("otel_inputs: part observation failed for attempt %s: %s", attempt_id, exc)
        return gap_receipt(run_id, attempt_id, part, PartReason.OBSERVER_ERROR.value, dispatch)


# -- span event -----------------------------------------------------------------------------------------
def part_event_attributes(receipt: PartReceipt) -> dict[str, Any]:
    """The ``otel_inputs.exchange_part`` event attributes; absent means unknown, never zero/empty."""
    attrs: dict[str, Any] = {
        names.PART_NAME: receipt.part.value,
        names.PART_CAPTURE: receipt.capture.value,
        names.PART_DISPATCH: receipt.dispatch.value,
        names.PART_PERSISTENCE: receipt.persistence.value,
    }
    if receipt.capture is not PartCapture.CAPTURED and receipt.reason:
        attrs[names.PART_REASON] = receipt.reason
    if receipt.detail:
        attrs[names.PART_DETAIL] = receipt.detail
    if receipt.has_bytes:
        for name, value in ((names.PART_REF, receipt.ref), (names.PART_SHA256, receipt.sha256),
                            (names.PART_SIZE_BYTES, receipt.size_bytes)):
            if value is not None:
                attrs[name] = value
    return attrs


def record_part_event(span: Any, receipt: PartReceipt) -> bool:
    """Add the ``otel_inputs.exchange_part`` event to ``span``; ``False`` (never an exception) on failure."""
    try:
        span.add_event(names.EXCHANGE_PART_EVENT, part_event_attributes(receipt),
                       timestamp=receipt.captured_at_ns or None)
        return True
    except Exception as exc:
        _log.warning("otel_inputs: could not record exchange part event: %s", exc)
        return False
