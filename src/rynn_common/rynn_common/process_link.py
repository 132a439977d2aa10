"""A node process started by the graph launcher stops when the launcher dies, however it dies.

Why: the launcher starts each node in its own session, so a terminal's Ctrl-C reaches only the
launcher, which then stops the nodes in order. A launcher killed with SIGKILL (a test's teardown
that gave up waiting, the OOM killer) could not, and its nodes ran on as orphans, publishing into
the next graph's topics on the same ROS domain. The kernel's parent-death signal (Linux prctl)
closes that gap without a watcher thread. Kept free of rclpy: the launcher imports it too.
"""

from __future__ import annotations

import ctypes
import os
import signal

LAUNCHER_PID_ENV = "RYNN_LAUNCHER_PID"  # set by the graph launcher for the processes it starts
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def stop_with_launcher(signum: int = signal.SIGINT) -> bool:
    """Have the kernel send ``signum`` to this process when the launcher that started it dies
    (nothing without ``LAUNCHER_PID_ENV``, or off Linux). True when the launcher is already gone."""
    launcher = os.environ.get(LAUNCHER_PID_ENV, "")
    if not launcher.isdigit():
        return False
    try:
        linked = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        linked = False
    return linked and os.getppid() != int(launcher)  # it died before the link was made
