"""One CPU reader for the benchmarks: bench_digital_latency.CpuMeter. A second /proc or psutil
reader elsewhere would measure the same thing with its own rules (children, clock ticks, exited
processes), so figures from two benchmarks would stop being comparable."""

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
CPU_READERS = re.compile(r"/proc/\{?\w*\}?/stat\b|cpu_times\(|SC_CLK_TCK")


def test_only_cpu_meter_reads_process_cpu_time():
    readers = sorted(path.name for path in BENCHMARKS.glob("*.py") if CPU_READERS.search(path.read_text()))
    assert readers == ["bench_digital_latency.py"], readers
