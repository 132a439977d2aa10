"""A node process that yields the CPU to the teleoperation loop: the graph's ``nice`` (rynn_world's
teleop_graph.yaml) reaches the process as ``RYNN_NICE`` and the node runner applies it at start.

On two cores the graph needs more CPU than there is; who loses is a choice. The world model, the
200 Hz retarget output and the bridge come first; the recorder (deep queues: it catches up), the
robot description's TF, the console and the simulated robot (a stand-in for hardware with its own
computer) yield. With the kernel's autogroup scheduling (the default on desktop and server kernels)
each session shares the CPU as one entity and a thread's nice counts only inside its session; the
embedded launcher starts each node in its own session, so the session's (autogroup's) nice is set too.
Only lowering priority is offered: raising it needs privileges a user does not have.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

NICE_ENV = "RYNN_NICE"
MAX_NICE = 19


def requested_nice(environ: Mapping[str, str] = os.environ) -> int:
    """``RYNN_NICE`` as a nice value 0..19 (unset or empty: 0); anything else is a clear error."""
    text = environ.get(NICE_ENV, "").strip()
    if not text:
        return 0
    try:
        nice = int(text)
    except ValueError:
        raise ValueError(f"{NICE_ENV}={text!r} must be an integer 0..{MAX_NICE}") from None
    if not 0 <= nice <= MAX_NICE:
        raise ValueError(f"{NICE_ENV}={nice} must be 0..{MAX_NICE} (only lowering priority is possible without privileges)")
    return nice


def lower_priority(nice: int) -> list[str]:
    """Every thread of this process at ``nice`` (threads started later inherit it) and, when the process
    leads its own session, its autogroup too. What was set, for the node's log."""
    if nice == 0:
        return []
    for thread in os.listdir("/proc/self/task"):  # imports may already have started threads (BLAS pools)
        try:
            os.setpriority(os.PRIO_PROCESS, int(thread), nice)
        except (ProcessLookupError, PermissionError):
            pass
    applied = [f"nice {nice}"]
    autogroup = Path("/proc/self/autogroup")
    if os.getsid(0) == os.getpid() and autogroup.exists():  # never a shell's session that started us
        try:
            autogroup.write_text(str(nice))
            applied.append(f"autogroup nice {nice}")
        except OSError:
            pass
    return applied
