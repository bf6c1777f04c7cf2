"""A process's memory and CPU so far, read from /proc (Linux)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cpu_seconds", "rss_kb"]


def rss_kb(pid: int | None) -> dict[str, int | None]:
    """Resident and peak resident memory (kB) of a process, from /proc."""
    figures: dict[str, int | None] = {"rss_kb": None, "peak_rss_kb": None}
    if pid is None:
        return figures
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return figures
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            figures["rss_kb"] = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            figures["peak_rss_kb"] = int(line.split()[1])
    return figures


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
