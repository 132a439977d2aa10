"""Soak: the default graph for N minutes, switching real/digital, recording, with random faults.

Starts src/rynn_world_node/config/teleop_graph.yaml through the embedded launcher with ``record:=true``
(as ``bench_digital_latency`` does), then, from this separate process over DDS:

* switches ``/rynn/set_mode`` between real and digital every ``--switch-s`` seconds, and
  records one episode per switch period (``/rynn/recorder/start`` / ``stop``, through
  rynn_common.service_calls: a request lost to a respawned recorder is sent again, and counted);
* injects a fault every ``--fault-s`` seconds on average (every kind once per round, in
  random order): /tf stamped a day
  ahead, NaN /tf, malformed LCM robot-state packets, a NaN action on /rynn/action, a
  stale action stream (the retarget node stopped with SIGSTOP for 0.5 s), and a SIGKILL
  of the recorder (the graph respawns it and it recovers the killed episode);
* every ``--sample-s`` seconds prints RSS, threads and open fds of every node process
  (the current process after a respawn);
* at the end prints per topic the messages lost (recorder: transport-lost and failed
  writes per episode; /rynn/action: sequence gaps inside every bag, less the periods the
  retarget node counted as never published: its sequence numbers the 200 Hz periods) next
  to what the nodes counted as rejected (every bad /tf message and NaN action injected must be
  counted), reads every bag back with rosbags and compares its message
  counts with the recorder's summary, and says PASS/FAIL for each check.

    .venv/bin/python benchmarks/bench_soak.py [--minutes 30] [--switch-s 20] [--fault-s 15] [--seed 0] [name:=value ...]

Exit status 1 if a check failed. The machine line says how loaded the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import psutil

from bench_digital_latency import STARTED, call, free_lcm_url, machine_info, spin_for, start_graph  # sources first on sys.path
from rynn_common.ros_names import ACTION_TOPIC, DIAGNOSTICS_TOPIC, RECORDER_SERVICES, SET_MODE_SERVICE, TF_TOPIC
from rynn_common.service_calls import node_service_caller
from rynn_retarget.operator.frame import TRACKER_NAMES, OperatorFrames
from rynn_world.launcher.graph import load_graph  # from the sources, as the nodes it starts

ONE_DAY_NS = 86_400 * 10**9
STATE_CHANNEL = "RYNN_ROBOT_STATE"  # src/rynn_robot_bridge/config/robot.yaml
INTRUDER_FRAME = "bench_soak_intruder"  # marks the NaN actions this benchmark injects
SERVICE_TIMEOUT_S = 120.0  # a recorder flushing a bag on a starved machine answers late; a missing answer is a failure, not an exit
SHUTDOWN_TIMEOUT_S = 300.0
STARTUP_DEADLINE_S = 900.0
FAULTS = ("future_tf", "nan_tf", "malformed_lcm", "nan_action", "stale_action", "recorder_kill")


def is_operator_sample(msg) -> bool:
    """A tracker node's /tf sample: every transform from the operator's world frame to one of its trackers
    (what the retarget node takes). robot_state_publisher shares /tf with other frames."""
    frames = OperatorFrames()
    trackers = {getattr(frames, name) for name in TRACKER_NAMES}
    return bool(msg.transforms) and all(
        t.header.frame_id == frames.world and t.child_frame_id in trackers for t in msg.transforms)


def next_period(previous: float, period: float) -> float:
    """The next time a periodic action is due: a loop that fell behind skips what it missed, no burst."""
    return previous + period * max(1, int((time.monotonic() - previous) // period) + 1)


def fault_schedule(rng: random.Random):
    """Every fault once per round, in a random order each round: a short soak still meets each kind."""
    while True:
        round_ = list(FAULTS)
        rng.shuffle(round_)
        yield from round_


def launch_command(arguments: list[str], log_dir: Path) -> list[str]:
    defaults = {"record": "true", "record_dir": str(log_dir / "bags"), "lcm_url": free_lcm_url()}
    given = {item.partition(":=")[0] for item in arguments}
    chosen = [f"{name}:={value}" for name, value in defaults.items() if name not in given] + arguments
    return [sys.executable, "-m", "rynn_world.launcher", *chosen, "--log-dir", str(log_dir)]


def node_pids(output: Path) -> dict[str, int]:
    """Each node's current pid (the launcher logs a new "started" line for every respawn)."""
    return {name: int(pid) for name, pid in STARTED.findall(output.read_text())}


class Observer:
    """The independent subscriber: /rynn/action sequence gaps, per-node rejected/dropped counters.

    Its own node, spun by its own thread (on the main loop's executor, one callback per pass between
    service calls and fault injections, it fell further behind). Still, on a machine at load 40 this
    process is starved too and its KEEP_LAST queue overflows unseen: its gaps are reported, not checked;
    what the graph lost is read from the bags (``read_back``)."""

    def __init__(self):
        import threading

        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import RobotAction

        self.node = node = rclpy.create_node("bench_soak_observer")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self.last_sequence: int | None = None
        self.action_gaps = 0
        self.actions = 0
        self.producer_restarts = 0
        self.counters: dict[str, dict[str, int]] = {}  # node -> "rejected.x"/"dropped.x"/"events.x" -> count
        reliable = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(RobotAction, ACTION_TOPIC, self._on_action, reliable)
        node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, self._on_diagnostics, reliable)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while not self.stopping.is_set():
            self.executor.spin_once(timeout_sec=0.1)

    def close(self) -> None:
        """Its thread stops before the executor and rclpy do (with a 5 s join a starved thread still spun after
        ``rclpy.shutdown()`` and died on the invalid context)."""
        self.stopping.set()
        self.thread.join()
        self.executor.shutdown()
        self.node.destroy_node()

    def _on_action(self, msg) -> None:
        if msg.header.frame_id == INTRUDER_FRAME:
            return
        self.actions += 1
        if self.last_sequence is not None:
            if msg.sequence > self.last_sequence:
                self.action_gaps += msg.sequence - self.last_sequence - 1
            else:
                self.producer_restarts += 1  # a new producer counts from 0 again
        self.last_sequence = msg.sequence

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            counts = {kv.key: int(kv.value) for kv in status.values
                      if kv.key.split(".")[0] in ("rejected", "dropped", "events") and kv.value.lstrip("-").isdigit()}
            if counts:
                self.counters.setdefault(status.name.split(":")[0], {}).update(counts)


class FaultInjector:
    def __init__(self, node, executor, observer: Observer, lcm_url: str, launcher_output: Path):
        import lcm
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rynn_teleop_msgs.msg import RobotAction
        from tf2_msgs.msg import TFMessage

        self.node, self.executor, self.observer, self.output = node, executor, observer, launcher_output
        reliable = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.tf_pub = node.create_publisher(TFMessage, TF_TOPIC, reliable)
        self.action_pub = node.create_publisher(RobotAction, ACTION_TOPIC, reliable)
        self.latest_tf = None
        # Deep enough that the tracker's samples are not all replaced by robot_state_publisher's /tf in between.
        node.create_subscription(TFMessage, TF_TOPIC, self._on_tf, 10)
        self.lcm = lcm.LCM(lcm_url)
        self.injected: Counter = Counter()
        self.bad_tf_sent: Counter = Counter()  # /tf messages each bad-/tf fault published

    def _on_tf(self, msg) -> None:
        """Keep the tracker node's latest sample (not one of ours) as the template of the bad ones."""
        if not is_operator_sample(msg):
            return  # robot_state_publisher's /tf: a bad copy of it would miss the retarget node
        first = msg.transforms[0]
        lead_ns = first.header.stamp.sec * 10**9 + first.header.stamp.nanosec - self.node.get_clock().now().nanoseconds
        if abs(lead_ns) < 10**9 and np.isfinite(first.transform.translation.x):
            self.latest_tf = msg

    def inject(self, fault: str) -> str:
        self.injected[fault] += 1
        return getattr(self, fault)()

    def _bad_tf(self, shift_ns: int, translation: float | None) -> str:
        import copy

        if self.latest_tf is None:
            return "no tracker sample seen yet: skipped"
        for _ in range(5):
            msg = copy.deepcopy(self.latest_tf)
            now = self.node.get_clock().now().nanoseconds + shift_ns
            for transform in msg.transforms:
                transform.header.stamp.sec, transform.header.stamp.nanosec = now // 10**9, now % 10**9
                if translation is not None:
                    transform.transform.translation.x = translation
            self.tf_pub.publish(msg)
            self.executor.spin_once(timeout_sec=0.01)
        return "5 /tf messages"

    def future_tf(self) -> str:
        message = self._bad_tf(ONE_DAY_NS, None)
        self.bad_tf_sent["future_tf"] += 5 if message == "5 /tf messages" else 0
        return message + " stamped +1 day"

    def nan_tf(self) -> str:
        message = self._bad_tf(0, float("nan"))
        self.bad_tf_sent["nan_tf"] += 5 if message == "5 /tf messages" else 0
        return message + " with NaN positions"

    def malformed_lcm(self) -> str:
        rng = random.Random(self.injected["malformed_lcm"])
        for _ in range(20):
            self.lcm.publish(STATE_CHANNEL, bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300))))
        return f"20 random packets on {STATE_CHANNEL}"

    def nan_action(self) -> str:
        from rynn_teleop_msgs.msg import RobotAction

        msg = RobotAction(positions=[float("nan")] * 54, sequence=0)
        msg.header.frame_id = INTRUDER_FRAME
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self.action_pub.publish(msg)
        return "one NaN action on /rynn/action"

    def stale_action(self) -> str:
        """Stop the retarget node's process (its container when composed) for 0.5 s: no actions."""
        pids = node_pids(self.output)
        container = next((entry.get("container", "") for entry in load_graph().nodes if entry["name"] == "retarget_node"), "")
        name = "retarget_node" if "retarget_node" in pids else container
        if name not in pids:
            return "no retarget_node process found: skipped"
        os.kill(pids[name], signal.SIGSTOP)
        try:
            spin_for(self.executor, 0.5)
        finally:
            os.kill(pids[name], signal.SIGCONT)
        return f"{name} process stopped 0.5 s (actions stale)"

    def recorder_kill(self) -> str:
        ready_before = self.output.read_text().count("rynn_recorder ready")
        os.kill(node_pids(self.output)["rynn_recorder"], signal.SIGKILL)
        deadline = time.monotonic() + 120
        while self.output.read_text().count("rynn_recorder ready") == ready_before:
            if time.monotonic() > deadline:
                return "recorder SIGKILLed and NOT back after 120 s"
            spin_for(self.executor, 0.2)
        return "recorder SIGKILLed, respawned"


class ResourceLog:
    """RSS, threads and open fds of every node's current process, sampled over time."""

    def __init__(self, output: Path):
        self.output = output
        self.samples: list[tuple[float, dict[str, tuple[float, int, int]]]] = []

    def sample(self, elapsed: float) -> None:
        row = {}
        for name, pid in sorted(node_pids(self.output).items()):
            try:
                process = psutil.Process(pid)
                row[name] = (process.memory_info().rss / 2**20, process.num_threads(), process.num_fds())
            except psutil.NoSuchProcess:
                row[name] = (float("nan"), 0, 0)
        self.samples.append((elapsed, row))
        cells = "  ".join(f"{name} {rss:.0f}MB/{threads}t/{fds}fd" for name, (rss, threads, fds) in row.items())
        print(f"[{elapsed / 60:5.1f} min] {cells}", flush=True)

    def report(self) -> None:
        if len(self.samples) < 2:
            return
        (t0, first), (t1, last) = self.samples[0], self.samples[-1]
        minutes = max((t1 - t0) / 60, 1e-9)
        print(f"\n== resources per node, first -> last sample ({minutes:.1f} min apart)")
        print(f"  {'node':20s} {'RSS MB':>16s} {'MB/min':>7s} {'max MB':>7s} {'threads':>9s} {'fds':>9s}")
        for name in last:
            if name not in first:
                continue
            rss = [row[name][0] for _, row in self.samples if name in row]
            print(f"  {name:20s} {first[name][0]:7.0f} -> {last[name][0]:5.0f} "
                  f"{(last[name][0] - first[name][0]) / minutes:7.2f} {np.nanmax(rss):7.0f} "
                  f"{first[name][1]:4d}->{last[name][1]:<4d} {first[name][2]:4d}->{last[name][2]:<4d}")


def action_gaps(store, raw: bytes, msgtype: str, last: dict) -> int:
    """Sequence numbers of the retarget node's actions missing since the last one in this bag (the
    injected NaN actions excluded; a restarted producer counts from 0 again). The sequence numbers its
    200 Hz periods, so a period it skipped or refused to publish (counted) is a gap too."""
    msg = store.deserialize_cdr(raw, msgtype)
    if msg.header.frame_id == INTRUDER_FRAME:
        return 0
    previous, last["sequence"] = last.get("sequence"), msg.sequence
    return msg.sequence - previous - 1 if previous is not None and msg.sequence > previous else 0


def read_back(bags: Path, summaries: dict[str, dict]) -> tuple[list[str], Counter]:
    """Every bag opens with rosbags and holds what the recorder says it wrote; returns the failures
    and, per episode, the /rynn/action sequence gaps inside the bag (periods never published, or
    published and never reaching it)."""
    from rosbags.rosbag2 import Reader

    from rynn_common.bag_types import make_typestore
    from rynn_robot_bridge.recording.metadata import SIDECAR_NAME

    failures, gaps = [], Counter()
    store = make_typestore()
    print(f"\n== bags in {bags}")
    for episode in sorted(p for p in bags.iterdir() if p.is_dir()):
        try:
            with Reader(episode) as reader:
                counts, last = Counter(), {}
                for connection, _, raw in reader.messages():
                    counts[connection.topic] += 1
                    if connection.topic == ACTION_TOPIC:
                        gaps[episode.name] += action_gaps(store, raw, connection.msgtype, last)
        except Exception as error:  # any failure to read back is what this check is for
            failures.append(f"{episode.name}: does not read back ({error})")
            print(f"  {episode.name}: UNREADABLE: {error}")
            continue
        sidecar = json.loads((episode / SIDECAR_NAME).read_text())
        written = {topic: entry.get("written", 0) for topic, entry in sidecar.get("topics", {}).items()}
        mismatch = {t: (counts.get(t, 0), n) for t, n in written.items() if counts.get(t, 0) != n}
        if mismatch:
            failures.append(f"{episode.name}: bag vs recorder summary {mismatch}")
        print(f"  {episode.name}: {sidecar.get('state')}, mode {sidecar.get('mode')}, "
              f"{sum(counts.values())} messages on {len(counts)} topics, read back; "
              f"/rynn/action sequence gaps {gaps[episode.name]}"
              f"{'' if not mismatch else f'; MISMATCH {mismatch}'}")
        summaries.setdefault(episode.name, sidecar)
    return failures, gaps


# What the retarget node must count for each bad /tf message it received (a copy of robot_state_publisher's
# /tf would be skipped unseen: the tracker's frames are what makes the injection reach it).
TF_FAULT_COUNTERS = {"future_tf": "rejected.tf_future_stamp", "nan_tf": "rejected.tf_nonfinite"}


def tf_fault_report(sent: Counter, observer: "Observer") -> list[str]:
    """Each bad /tf message this benchmark sent was counted by the retarget node, under its reason."""
    counted = observer.counters.get("retarget_node", {})
    print("\n== bad /tf injected vs. counted by the retarget node")
    failures = []
    for fault, counter in TF_FAULT_COUNTERS.items():
        print(f"  {fault:10s} sent {sent[fault]:4d} messages, {counter} {counted.get(counter, 0)}")
        if counted.get(counter, 0) < sent[fault]:
            failures.append(f"{fault}: {sent[fault]} bad /tf messages sent, the retarget node counted {counted.get(counter, 0)}")
    return failures


def nan_action_report(sent: int, observer: "Observer", bridge_restarts: int) -> list[str]:
    """Each NaN action this benchmark sent was counted by the bridge: it takes every queued action and rejects
    each bad one (none is replaced in its queue unseen), or DDS reported it lost on the way. A shortfall fails."""
    counted = observer.counters.get("rynn_bridge", {})
    rejected = counted.get("rejected.action_non_finite", 0)
    lost = counted.get("dropped.action_lost_in_transport", 0)
    print("\n== NaN actions injected vs. counted by the bridge")
    print(f"  nan_action sent {sent:4d}, rejected.action_non_finite {rejected}, dropped.action_lost_in_transport {lost} "
          f"(valid actions superseded before use: {counted.get('dropped.action_superseded', 0)})")
    if bridge_restarts:
        print(f"  the bridge restarted {bridge_restarts} time(s): its counts start again at each restart")
    if rejected + lost < sent:
        return [f"nan_action: {sent} NaN actions sent, the bridge counted {rejected} rejected + {lost} lost in transport"]
    return []


def lost_report(summaries: dict[str, dict], observer: Observer, bag_gaps: Counter) -> list[str]:
    lost, failed, cut = Counter(), Counter(), Counter()
    for summary in summaries.values():
        for topic, entry in summary.get("topics", {}).items():
            lost[topic] += entry.get("lost", 0)
            failed[topic] += entry.get("failed", 0)
            if summary.get("state") == "recovered":  # received after the last flush before the kill
                cut[topic] += max(entry.get("received_before_crash", 0) - entry.get("written", 0), 0)
    print("\n== lost messages per topic (recorder: transport-lost + failed writes, all episodes)")
    failures = []
    for topic in sorted(set(lost) | set(failed) | set(cut)):
        print(f"  {topic:40s} lost {lost[topic]:5d}  failed {failed[topic]:5d}"
              f"  (unflushed at a recorder kill: {cut[topic]})")
        if lost[topic] or failed[topic]:
            failures.append(f"{topic}: {lost[topic]} lost, {failed[topic]} failed")
    reported = sum(summary.get("topics", {}).get(ACTION_TOPIC, {}).get("lost", 0) for summary in summaries.values())
    # Gaps that are no loss: the retarget node's 200 Hz periods it skipped (starved, or stopped by the stale_action
    # fault) or refused to publish, over the whole run (a bound: some fall between episodes, outside any bag).
    retarget = observer.counters.get("retarget_node", {})
    unpublished = retarget.get("dropped.skipped_output_period", 0) + retarget.get("rejected.invalid_command", 0)
    print(f"  /rynn/action in the bags: {sum(bag_gaps.values())} sequence gaps (the recorder reported {reported} lost; "
          f"the retarget node did not publish {unpublished} periods in the whole run)")
    if sum(bag_gaps.values()) > reported + unpublished:  # a KEEP_LAST reader queue overflows without any lost event
        failures.append(f"/rynn/action: {sum(bag_gaps.values()) - reported - unpublished} missing from the bags unreported")
    # This process's own subscription: on a loaded machine it is starved like any other (its KEEP_LAST queue
    # overflows unseen), so its gaps say how much this benchmark kept up, not what the graph lost; the bags say that.
    print(f"  /rynn/action at this benchmark's own subscriber (not a graph loss): {observer.actions} received, "
          f"{observer.action_gaps} sequence gaps (unpublished periods included), {observer.producer_restarts} producer restarts")
    print("\n== counted by the nodes (rejected = refused as invalid, dropped = valid but not used, events = neither, "
          "e.g. the bridge's approach cycles planned per joint)")
    for name, counts in sorted(observer.counters.items()):
        shown = ", ".join(f"{key} {value}" for key, value in sorted(counts.items()) if value)
        print(f"  {name}: {shown or 'nothing'}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for the graph")
    parser.add_argument("--minutes", type=float, default=30.0, help="soak length")
    parser.add_argument("--switch-s", type=float, default=20.0, help="seconds between real/digital switches (one episode each)")
    parser.add_argument("--fault-s", type=float, default=15.0, help="mean seconds between injected faults")
    parser.add_argument("--sample-s", type=float, default=30.0, help="seconds between resource samples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", help="keep logs and bags in this directory (default: a temporary one)")
    options = parser.parse_args()

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rynn_teleop_msgs.srv import SetMode
    from std_srvs.srv import Trigger

    rng = random.Random(options.seed)
    schedule = fault_schedule(rng)
    work = Path(options.keep or tempfile.mkdtemp(prefix="bench_soak_"))
    work.mkdir(parents=True, exist_ok=True)
    command = launch_command(options.arguments, work)
    lcm_url = next(item.partition(":=")[2] for item in command if item.startswith("lcm_url:="))
    print(f"graph: {' '.join(command[1:])}\nmachine: {machine_info()}\n"
          f"soak: {options.minutes:g} min, switch every {options.switch_s:g} s, a fault every ~{options.fault_s:g} s, "
          f"seed {options.seed}; logs and bags in {work}", flush=True)
    # The world model's imports alone took almost 6 min of wall time at load 45: a deadline, returns once up.
    launcher, output = start_graph(command, work, deadline_s=STARTUP_DEADLINE_S)
    rclpy.init()
    node = rclpy.create_node("bench_soak")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    observer = Observer()
    faults = FaultInjector(node, executor, observer, lcm_url, output)
    resources = ResourceLog(output)
    recorder = {verb: node_service_caller(node, Trigger, RECORDER_SERVICES[verb]) for verb in ("start", "stop")}
    set_mode = node.create_client(SetMode, SET_MODE_SERVICE)
    summaries: dict[str, dict] = {}
    failures: list[str] = []
    switches = Counter()
    try:
        started = time.monotonic()
        end = started + options.minutes * 60
        next_switch, next_sample = started, started
        next_fault = started + rng.expovariate(1 / options.fault_s)
        mode, episode = SetMode.Request.MODE_DIGITAL, None

        def noted_if_missing(service: str, answer):
            """The answer, or None with a failure noted (the soak goes on) when it did not come in time."""
            if answer is None:
                failures.append(f"{service} did not answer within {SERVICE_TIMEOUT_S:g} s "
                                f"at {(time.monotonic() - started) / 60:.1f} min")
                print(f"[{(time.monotonic() - started) / 60:5.1f} min] {failures[-1]}", flush=True)
            return answer

        def ask(client, request):
            return noted_if_missing(client.srv_name, call(executor, client, request, timeout=SERVICE_TIMEOUT_S, or_none=True))

        def spin_once(seconds: float) -> None:
            executor.spin_once(timeout_sec=seconds)

        def ask_recorder(verb: str):
            caller = recorder[verb]
            return noted_if_missing(caller.name, caller.call(Trigger.Request(), spin_once, SERVICE_TIMEOUT_S))

        def stop_episode() -> None:
            stopped = ask_recorder("stop")
            if stopped is not None and stopped.success:
                summary = json.loads(stopped.message)
                summaries[summary["episode"]] = summary

        def start_episode() -> str | None:
            started_episode = ask_recorder("start")
            return started_episode.message if started_episode is not None and started_episode.success else None

        while time.monotonic() < end:
            now = time.monotonic()
            if launcher.poll() is not None:
                failures.append(f"the graph stopped (launcher exit {launcher.returncode})")
                break
            if now >= next_sample:
                resources.sample(now - started)
                next_sample = next_period(next_sample, options.sample_s)
            if now >= next_switch:
                if episode is not None:
                    stop_episode()
                wanted = SetMode.Request.MODE_REAL if mode == SetMode.Request.MODE_DIGITAL else SetMode.Request.MODE_DIGITAL
                answer = ask(set_mode, SetMode.Request(mode=wanted))
                switches["accepted" if answer is not None and answer.success else "refused"] += 1
                if answer is not None and answer.success:
                    mode = wanted
                elif answer is not None:  # e.g. real refused while a starved robot's state was silent: asked again next period
                    print(f"[{(now - started) / 60:5.1f} min] switch refused: {answer.message}", flush=True)
                episode = start_episode()
                next_switch = next_period(next_switch, options.switch_s)
            if now >= next_fault:
                fault = next(schedule)
                print(f"[{(now - started) / 60:5.1f} min] fault {fault}: {faults.inject(fault)}", flush=True)
                if fault == "recorder_kill":  # that episode is recovered by the respawned recorder; start another
                    episode = start_episode()
                next_fault = time.monotonic() + rng.expovariate(1 / options.fault_s)
            executor.spin_once(timeout_sec=0.05)
        resources.sample(time.monotonic() - started)
        if episode is not None and launcher.poll() is None:
            stop_episode()
        spin_for(executor, 2.0)  # the last diagnostics
    finally:
        observer.close()
        node.destroy_node()
        rclpy.shutdown()
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGINT)
            try:
                launcher.wait(timeout=SHUTDOWN_TIMEOUT_S)
            except subprocess.TimeoutExpired:  # report what was measured rather than die here
                failures.append(f"the graph did not stop within {SHUTDOWN_TIMEOUT_S:g} s of Ctrl-C: killed")
                launcher.kill()
                launcher.wait()
    if launcher.returncode != 0:
        failures.append(f"the launcher exited {launcher.returncode} (0 after Ctrl-C)")
    launcher_log = output.read_text()
    restarts = {name: launcher_log.count(f"started {name} (pid") - 1 for name in node_pids(output)}
    print(f"\nlauncher exit {launcher.returncode}; restarts per node: {restarts}")
    print(f"switches: {dict(switches)}; faults injected: {dict(faults.injected)}")
    print(f"recorder requests sent again after {recorder['start'].first_attempt_s:g}+ s without an answer: "
          f"start {recorder['start'].resent}, stop {recorder['stop'].resent}")
    resources.report()
    read_failures, bag_gaps = read_back(work / "bags", summaries)
    failures += read_failures + lost_report(summaries, observer, bag_gaps) + tf_fault_report(faults.bad_tf_sent, observer)
    failures += nan_action_report(faults.injected["nan_action"], observer, restarts.get("rynn_bridge", 0))
    print(f"\nmachine at the end: {machine_info()}")
    print("PASS" if not failures else "FAIL:\n  " + "\n  ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
