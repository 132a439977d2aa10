"""Per-thread scheduling of the default graph: share of wall time on a CPU, share runnable but waiting
for one (the run queue), and time slices a second, of every busy thread of every node process, from
``/proc/<pid>/task/<tid>/schedstat``. Tells a starved thread (long run-queue waits, many short slices)
from a busy one, which CPU shares alone do not.

    .venv/bin/python benchmarks/bench_graph_schedstat.py [--seconds 15] [--warmup 20] [name:=value ...]

Starts the graph as ``bench_digital_latency.py`` does (digital mode, recorder recording).
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path

from bench_digital_latency import STARTED, launch_command, start_graph


def threads(pids: dict[str, int]) -> dict[tuple[str, int], tuple[str, int, int, int]]:
    """(process, tid) -> (thread name, ns on CPU, ns runnable waiting, slices) as of now."""
    readings = {}
    for process, pid in pids.items():
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
                on_cpu, waiting, slices = map(int, Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split())
            except OSError:  # the thread ended
                continue
            readings[(process, int(tid))] = (name, on_cpu, waiting, slices)
    return readings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for the graph")
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds after the graph is up before measuring")
    options = parser.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="bench_schedstat_"))
    launcher, output = start_graph(launch_command(options.arguments, log_dir), log_dir)
    try:
        pids = {match.group(1): int(match.group(2)) for match in STARTED.finditer(output.read_text())}
        time.sleep(options.warmup)
        before, started = threads(pids), time.monotonic()
        time.sleep(options.seconds)
        after, wall_ns = threads(pids), (time.monotonic() - started) * 1e9
    finally:
        launcher.send_signal(signal.SIGINT)
        launcher.wait(60)
    rows = []
    for key, (name, on_cpu, waiting, slices) in after.items():
        if key in before:
            _, on_cpu0, waiting0, slices0 = before[key]
            rows.append((key[0], name, 100 * (on_cpu - on_cpu0) / wall_ns, 100 * (waiting - waiting0) / wall_ns,
                         (slices - slices0) / options.seconds))
    print(f"{'process':24s} {'thread':18s} {'on CPU %':>8s} {'runnable %':>10s} {'slices/s':>8s}")
    for process, name, on_cpu, waiting, rate in sorted(rows, key=lambda row: -row[2]):
        if on_cpu >= 1.0:
            print(f"{process:24s} {name:18s} {on_cpu:8.1f} {waiting:10.1f} {rate:8.0f}")
    print(f"total on CPU {sum(row[2] for row in rows):.1f} % of one core, runnable waiting {sum(row[3] for row in rows):.1f} %")


if __name__ == "__main__":
    main()
