"""Inside the web process: what it holds, for the memory phase to tell settling from a leak.

``/bench-heap/`` (bench/urls.py, served only by the bench's settings) answers, after a full
collection, how many objects the garbage collector tracks and how many memory blocks Python
has allocated: a leak of Python objects per round grows both in step with the rounds, where
RSS also moves with the allocator's arenas and fragmentation. With
``MRTRWEB_BENCH_TRACEMALLOC=1`` the process traces allocations from start-up, and the answer
also names the source lines that grew most since ``?baseline=1`` was asked (slow: for finding
a leak, not for the figures).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import threading
import tracemalloc

from django.http import HttpRequest, JsonResponse

TRACING = os.environ.get("MRTRWEB_BENCH_TRACEMALLOC") == "1"
if TRACING and not tracemalloc.is_tracing():
    tracemalloc.start(12)

_lock = threading.Lock()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _native() -> dict[str, int]:
    """Outside Python's objects: what SQLite holds (its page caches, one per connection, so
    one per thread that used the database) and what glibc's malloc holds in use and free
    (free but kept is fragmentation, not a leak). Empty where those libraries are not there."""
    figures: dict[str, int] = {}
    try:
        sqlite = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
        sqlite.sqlite3_memory_used.restype = ctypes.c_int64
        figures["sqlite_bytes"] = int(sqlite.sqlite3_memory_used())
    except (OSError, AttributeError):
        pass
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        figures["malloc_in_use_bytes"] = int(info.uordblks + info.hblkhd)
        figures["malloc_free_bytes"] = int(info.fordblks)
    except (OSError, AttributeError):
        pass
    return figures


_baseline: list[tracemalloc.Snapshot] = []


def heap(request: HttpRequest) -> JsonResponse:
    with _lock:
        gc.collect()
        figures: dict[str, object] = {
            "gc_objects": len(gc.get_objects()),
            "allocated_blocks": sys.getallocatedblocks(),
            "uncollectable": len(gc.garbage),
            "threads": threading.active_count(),
            **_native(),
        }
        if tracemalloc.is_tracing():
            figures["traced_bytes"] = tracemalloc.get_traced_memory()[0]
            snapshot = tracemalloc.take_snapshot().filter_traces(
                (tracemalloc.Filter(False, tracemalloc.__file__),)
            )
            if request.GET.get("baseline") or not _baseline:
                _baseline[:] = [snapshot]
            else:
                grown = snapshot.compare_to(_baseline[0], "traceback")[:12]
                figures["top_growth"] = [
                    {
                        "size_diff": stat.size_diff,
                        "count_diff": stat.count_diff,
                        "where": stat.traceback.format()[-6:],
                    }
                    for stat in grown
                ]
    return JsonResponse(figures)
