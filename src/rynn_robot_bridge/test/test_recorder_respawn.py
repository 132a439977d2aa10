"""A recorder respawned after SIGKILLs must hear the nodes that kept running (docs/reliability.md, Soak).

The 30-minute soak of 2026-12-03 killed the recorder twice 48 s apart; the recorder the launcher
respawned came up ("recorder up") but never answered ``/rynn/recorder/start`` again. Reproduced
with the recorder alone: the long-lived processes (publishers, the service caller) still mapped
the killed recorder's shared-memory port, ``/dev/shm/fastrtps_port<N> (deleted)``, while the
respawned one read a new segment at that name, so nothing they sent reached it. The respawned
recorder now marks dead readers' ports "not ok" before its participant exists
(rynn_common.fastdds_shm), and the senders open the port again.

Real processes only: recorders started as the launcher starts them, killed with SIGKILL, and this
test's node as the node that keeps running (it publishes a camera and joint states and calls the
services through rynn_common.service_calls, as the soak and the console do). The case is made
without luck: the second recorder of each pair is stopped (SIGSTOP) the moment its participant holds
its port, before its reader first waits; when no port watchdog marks that port within 3 s while this
node writes to it, the soak's state is there, and the recorder is then SIGKILLed. Without the fix the
next recorder never answered (2026-12-03: 30 s without an answer, this process still mapping
``fastrtps_port<N> (deleted)``).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from ros_test_tools import read_log, wait_for_log, wait_until
from rynn_common.fastdds_shm import port_flags_offset, release_dead_ports
from rynn_common.service_calls import node_service_caller

pytestmark = [pytest.mark.ros, pytest.mark.slow]

SHM_DIR = Path("/dev/shm")
ROUNDS = 3  # kill pairs: one while recording, then the next one in start-up
STARTUP_DEADLINE_S = 120.0
STOPPED_S = 3.0  # a port watchdog checks each port every >= 1 s and marks a frozen reader on its second look
ANSWER_BOUND_S = 60.0  # a respawned recorder that hears us answers in ~5-15 s (the first request is often lost)
RECORD_S = 1.5
RECORD_BEFORE_KILL_S = 2.0  # the killed episode's bag: the next recorder recovers it at start-up
JOINT_STATES_HZ = 200.0
CAMERA_HZ = 10.0

if not SHM_DIR.is_dir():
    pytest.skip("no /dev/shm: Fast DDS shared memory is Linux-only here", allow_module_level=True)


def shared_memory_ports(pid: int) -> list[int]:
    """The Fast DDS ports process ``pid`` reads: the reader lock files (``fastrtps_port<N>_el``) it holds open."""
    ports = []
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:  # the process is gone
        return ports
    for fd in fds:
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        name = Path(target).name
        if name.startswith("fastrtps_port") and name.endswith("_el"):
            ports.append(int(name[len("fastrtps_port"):-len("_el")]))
    return sorted(ports)


def port_is_ok(port: int) -> bool | None:
    """The port's "ok" flag as Fast DDS keeps it in the segment; None when the segment or its header is not found."""
    try:
        segment = (SHM_DIR / f"fastrtps_port{port}").read_bytes()
    except OSError:
        return None
    offset = port_flags_offset(segment, port)
    return None if offset is None else bool(segment[offset] & 1)


def maps_port(port: int) -> bool:
    """Whether this process maps the segment now at ``/dev/shm/fastrtps_port<port>`` (it writes to that port)."""
    try:
        inode = (SHM_DIR / f"fastrtps_port{port}").stat().st_ino
    except OSError:
        return False
    with open("/proc/self/maps") as maps:
        return any(line.split()[4] == str(inode) and line.rstrip().endswith(f"/fastrtps_port{port}") for line in maps
                   if len(line.split()) >= 6)


def recorder_config(tmp_path: Path) -> Path:
    config = tmp_path / "recorder.yaml"
    config.write_text(yaml.safe_dump({
        "output_dir": str(tmp_path / "recordings"), "flush_period_s": 0.3,
        "topics": ["/camera/camera/color/image_raw sensor_msgs/msg/Image", "/joint_states sensor_msgs/msg/JointState",
                   "/rynn/mode std_msgs/msg/String"],
        "latched_topics": ["/rynn/mode"]}))
    return config


def start_recorder(start_process, config: Path, name: str):
    """As the graph launcher starts it (``python -m ... --ros-args -r __node:=rynn_recorder``, nice 5)."""
    return start_process(["-m", "rynn_robot_bridge.nodes.recorder_node", "--ros-args", "-r", "__node:=rynn_recorder",
                          "-p", f"config_file:={config}"], name, RYNN_NICE="5")


def test_a_dead_readers_port_is_marked_not_ok_and_a_live_ones_is_left_alone(tmp_path, start_process, ros_node):
    dead = start_recorder(start_process, recorder_config(tmp_path), "recorder_killed")
    assert wait_for_log(dead, "recorder up"), read_log(dead)
    dead_ports = shared_memory_ports(dead.pid)
    live_ports = shared_memory_ports(os.getpid())  # this test's own participant
    assert dead_ports and live_ports, (dead_ports, live_ports)

    dead.send_signal(signal.SIGKILL)
    dead.wait(timeout=30)
    released = release_dead_ports()

    for port in dead_ports:  # marked now, or already by this process's port watchdog ...
        if port in released.marked + released.already_not_ok:
            assert port_is_ok(port) is not True, port
        else:  # ... or a sender has already replaced it (Fast DDS's zombie test removes the lock file)
            assert not (SHM_DIR / f"fastrtps_port{port}_el").exists(), (port, released)
    for port in live_ports:  # a live reader's lock is held: never touched
        assert port not in released.marked + released.already_not_ok + released.unrecognised, (port, released)


def test_a_recorder_respawned_after_kills_back_to_back_hears_the_running_nodes(tmp_path, start_process, ros_node):
    from sensor_msgs.msg import Image, JointState
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from rynn_common.qos import LATCHED_QOS
    from rynn_common.ros_names import RECORDER_SERVICES

    config, recordings = recorder_config(tmp_path), tmp_path / "recordings"
    ros_node.create_publisher(String, "/rynn/mode", LATCHED_QOS).publish(String(data="digital"))
    joints = ros_node.create_publisher(JointState, "/joint_states", 10)
    camera = ros_node.create_publisher(Image, "/camera/camera/color/image_raw", 10)
    joint_state = JointState(name=[f"joint_{i}" for i in range(54)], position=[0.0] * 54)
    image = Image(height=480, width=640, encoding="rgb8", step=640 * 3, data=bytes(640 * 480 * 3))  # one 900 KB frame
    ros_node.create_timer(1.0 / JOINT_STATES_HZ, lambda: joints.publish(joint_state))
    ros_node.create_timer(1.0 / CAMERA_HZ, lambda: camera.publish(image))
    callers = {verb: node_service_caller(ros_node, Trigger, RECORDER_SERVICES[verb]) for verb in ("start", "stop")}
    timings: list[str] = []

    def spin_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ros_node.spin_once(0.02)

    def call(verb: str, recorder) -> Trigger.Response:
        """Answered within the bound (any answer: the recorder heard us)."""
        answer = callers[verb].call(Trigger.Request(), ros_node.spin_once, ANSWER_BOUND_S)
        assert answer is not None, (f"{verb} not answered within {ANSWER_BOUND_S:g} s by the respawned recorder "
                                    f"(resent {callers[verb].resent}); {timings}\n{read_log(recorder)}")
        return answer

    def start_recording(recorder) -> None:
        """Started. A refusal that says it is recording counts (a resent start whose first answer was
        lost, rynn_common.service_calls); a busy disk's refusal is asked again."""
        for _ in range(3):
            answer = call("start", recorder)
            if answer.success or answer.message.startswith("already recording"):
                return
        raise AssertionError(f"start refused: {answer.message}; {timings}")

    def respawned_and_heard(name: str):
        """A recorder up, answering start, and recording what this node publishes."""
        spawned = time.monotonic()
        recorder = start_recorder(start_process, config, name)
        assert wait_for_log(recorder, "recorder up"), read_log(recorder)
        up = time.monotonic()
        start_recording(recorder)
        answered = time.monotonic()
        spin_for(RECORD_S)
        episode = max(recordings.glob("episode_*"))  # the newest: this recorder's
        call("stop", recorder)  # answered; the episode closes now or, on a busy disk, a little later
        sidecar = episode / "episode_info.json"
        assert wait_until(lambda: sidecar.exists() and json.loads(sidecar.read_text())["state"] == "complete",
                          ANSWER_BOUND_S, spin=lambda: ros_node.spin_once(0.02)), (episode, timings)
        summary = json.loads(sidecar.read_text())
        timings.append(f"{name}: up {up - spawned:.1f} s, start answered {answered - up:.1f} s later")
        assert summary["topics"].get("/joint_states", {}).get("written", 0) > 0, (summary, timings)
        start_recording(recorder)  # killed while recording: the next one recovers the episode
        return recorder

    recorder = respawned_and_heard("recorder_0")
    unmarked = []  # rounds whose second kill left a port this process writes to that no watchdog marked
    for round_index in range(ROUNDS):
        spin_for(RECORD_BEFORE_KILL_S)
        recorder.send_signal(signal.SIGKILL)  # while recording
        recorder.wait(timeout=30)
        spin_for(1.0)  # the graph's respawn_delay
        starting = start_recorder(start_process, config, f"recorder_{round_index}_killed_starting")
        deadline = time.monotonic() + STARTUP_DEADLINE_S
        while True:
            while not shared_memory_ports(starting.pid) and starting.poll() is None and time.monotonic() < deadline:
                pass  # no sleep: caught the moment its participant opens its port, before its reader first waits
            starting.send_signal(signal.SIGSTOP)
            ports = shared_memory_ports(starting.pid)
            if ports or starting.poll() is not None or time.monotonic() >= deadline:
                break
            starting.send_signal(signal.SIGCONT)  # a lock file it only tried and closed again (a port in use): not its own
        assert ports, read_log(starting)
        spin_for(STOPPED_S)  # this node's port watchdog marks the port of a reader that was waiting or reading
        if any(port_is_ok(port) and maps_port(port) for port in ports):
            unmarked.append(round_index)
        starting.send_signal(signal.SIGKILL)  # the second kill, back to back: in start-up
        starting.wait(timeout=30)
        spin_for(1.0)
        recorder = respawned_and_heard(f"recorder_{round_index + 1}")
    print("\n".join(timings), f"\nrounds whose killed start-up left an unmarked port: {unmarked}; "
          f"requests resent: start {callers['start'].resent}, stop {callers['stop'].resent}")
