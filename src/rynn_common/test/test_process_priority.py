"""RYNN_NICE: what each value gets, and a process started in its own session (as the embedded launcher
starts nodes) ends up with every thread and its autogroup at that nice value."""

import os
import subprocess
import sys

import pytest

from ros_test_tools import autogroup_nice, thread_nice
from rynn_common.process_priority import lower_priority, requested_nice


@pytest.mark.parametrize("text, nice", [(None, 0), ("", 0), (" 7 ", 7), ("0", 0), ("19", 19)])
def test_requested_nice(text, nice):
    assert requested_nice({} if text is None else {"RYNN_NICE": text}) == nice


@pytest.mark.parametrize("text, message", [("-1", "must be 0..19"), ("20", "must be 0..19"), ("high", "must be an integer")])
def test_a_bad_nice_is_a_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        requested_nice({"RYNN_NICE": text})


def test_zero_changes_nothing():
    assert lower_priority(0) == []


def test_every_thread_and_the_sessions_autogroup_yield():
    """A thread started before (as BLAS pools are at import) and one after both run at the nice value."""
    script = (
        "import os, threading, time\n"
        "from rynn_common.process_priority import lower_priority\n"
        "before = threading.Thread(target=time.sleep, args=(30,), daemon=True); before.start()\n"
        "applied = lower_priority(6)\n"
        "after = threading.Thread(target=time.sleep, args=(30,), daemon=True); after.start()\n"
        "print(applied, flush=True)  # once both threads exist\n"
        "time.sleep(30)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        applied = process.stdout.readline()
        autogroup = autogroup_nice(process.pid)
        assert "nice 6" in applied and ("autogroup nice 6" in applied) == (autogroup is not None)
        nice = thread_nice(process.pid)
        assert len(nice) >= 3 and set(nice) == {6}
        assert autogroup in (None, 6)
        assert os.getpriority(os.PRIO_PROCESS, 0) == 0  # the test process itself untouched
    finally:
        process.kill()
        process.wait()
