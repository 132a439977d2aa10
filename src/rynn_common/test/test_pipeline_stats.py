"""PipelineStats is written from worker threads while a status timer reads it: no count is lost,
no reader sees a half-written state or crashes on a dictionary that changes size under it."""

import sys
import threading

from builtin_interfaces.msg import Time

from rynn_common.pipeline_stats import PipelineStats
from rynn_common.ros_conversions import make_diagnostics, make_teleop_status

WRITERS, ROUNDS = 4, 5000


def test_counts_from_many_threads_add_up_while_a_reader_polls():
    stats = PipelineStats(window=50)
    start = threading.Barrier(WRITERS + 1)
    done = threading.Event()
    reader_errors: list[BaseException] = []
    readings = [0]

    def write(worker: int) -> None:
        start.wait()
        for i in range(ROUNDS):
            stats.drop("stale")
            stats.reject(f"reason_{i % 7}")  # new keys appear while the reader iterates
            stats.record(f"stage_{worker}_{i % 3}", 1e-3)
            stats.count_output()
            if i % 10 == 0:
                stats.set_fault(f"fault_{worker}", f"round {i}")
            elif i % 10 == 5:
                stats.clear_fault(f"fault_{worker}")

    def read() -> None:
        start.wait()
        try:
            while not done.is_set():
                snapshot = stats.snapshot()
                assert snapshot.dropped_total <= WRITERS * ROUNDS
                make_teleop_status(stats, "node", 0, Time())
                make_diagnostics(stats, "node", "hw", Time())
                readings[0] += 1
        except BaseException as error:  # reported below, not swallowed
            reader_errors.append(error)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    reader = threading.Thread(target=read)
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows: most interleavings
    try:
        for thread in [*threads, reader]:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        reader.join()
    finally:
        sys.setswitchinterval(switch_interval)

    assert not reader_errors, reader_errors
    assert readings[0] > 0
    snapshot = stats.snapshot()
    assert snapshot.dropped == {"stale": WRITERS * ROUNDS}
    assert snapshot.rejected_total == WRITERS * ROUNDS
    assert snapshot.outputs == WRITERS * ROUNDS
    assert {s.stage: s.count for s in snapshot.latencies} == {
        f"stage_{w}_{k}": len(range(k, ROUNDS, 3)) for w in range(WRITERS) for k in range(3)}
    assert dict(snapshot.faults) == {}  # every writer's last fault toggle was a clear


def test_readers_get_copies_that_cannot_change_the_counts():
    stats = PipelineStats()
    stats.drop("stale", 2)
    view = stats.dropped
    stats.drop("stale")
    assert view["stale"] == 2 and stats.dropped["stale"] == 3 and stats.dropped["never"] == 0
    try:
        view["stale"] = 0
    except TypeError:
        pass
    else:
        raise AssertionError("a reader's view must be read-only")
    stats.set_totals(outputs=7, dropped={"lost": 4}, rejected={"bad": 1})
    snapshot = stats.snapshot()
    assert (snapshot.outputs, snapshot.dropped["lost"], snapshot.dropped["stale"], snapshot.rejected_total) == (7, 4, 3, 1)


def test_percentiles_are_numpys_floats_from_one_sort():
    """The status messages' p50/p99 equal np.percentile's exactly (any window length, ties, one sample)."""
    import numpy as np

    from rynn_common.pipeline_stats import percentiles

    rng = np.random.default_rng(0)
    for trial in range(3000):
        samples = rng.random(int(rng.integers(1, 600))) * rng.choice([1e-4, 1.0, 250.0])
        if trial % 3 == 0:
            samples = np.round(samples, 3)  # ties
        assert percentiles(samples, (50, 99, 0, 100)) == [float(np.percentile(samples, q)) for q in (50, 99, 0, 100)]
    stats = PipelineStats(window=5)
    for seconds in (0.5, 0.1, 0.4, 0.2, 0.3, 9.0):  # the window keeps the last five
        stats.record("stage", seconds)
    summary = stats.latencies["stage"]
    assert (summary.last, summary.p50, summary.count) == (9.0, 0.3, 6)
    assert summary.p99 == float(np.percentile([0.1, 0.4, 0.2, 0.3, 9.0], 99))


def test_events_reach_the_diagnostics_and_neither_status_total():
    """An event (a cycle planned another way) is no input dropped or rejected: /rynn/status's totals leave it out."""
    stats = PipelineStats()
    stats.drop("stale")
    stats.set_totals(events={"approach_unsynchronized_steps": 2})
    status = make_teleop_status(stats, "node", 0, Time())
    assert (status.dropped_inputs, status.rejected_inputs) == (1, 0)
    diagnostics = make_diagnostics(stats, "node", "hw", Time()).status[0]
    assert {kv.key: kv.value for kv in diagnostics.values}["events.approach_unsynchronized_steps"] == "2"
    assert diagnostics.level == diagnostics.OK
