"""Shared helpers for the benchmarks: medians, memory peak, and the machine line for tables."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import time
from collections.abc import Callable


def timed_runs(fn: Callable[[], object], runs: int, *, setup: Callable[[], object] | None = None,
               warmup: int = 1) -> list[float]:
    """Seconds per run of ``fn`` (``setup`` untimed before each run), after ``warmup`` runs."""
    out = []
    for i in range(warmup + runs):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        if i >= warmup:
            out.append(dt)
    return out


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def spread_ms(samples: list[float]) -> str:
    return f"{min(samples) * 1000:.1f}-{max(samples) * 1000:.1f}"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def machine_line() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"
