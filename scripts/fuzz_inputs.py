"""Fuzz every input of the running teleoperation graph over real DDS, then check it survived.

Starts the default graph (tiny world model, 320x240 camera, recorder recording; the console
runs but subscribes only while a browser is connected) on its own DDS domain, on localhost,
with its own LCM port. It finds every topic a node of the graph subscribes to and every
``/rynn/...`` and ``calibrate`` service, and sends each input, at most ``--rate`` messages a second:

* structurally valid messages with hostile values, made from a message the graph itself
  published on that topic (or a default one): NaN / +-inf / huge floats, integer extremes,
  empty and huge sequences (an image's data 8 MiB), a sequence one element short or long,
  every element 1000 (far beyond any joint limit), empty, 64 KiB and wrong frame ids and
  encodings, stamps zero, 1970, a day ahead and at the end of time;
* malformed CDR bytes, published raw: empty, the header alone, cut short, random, a length
  field set to 2^32-1, an unknown encapsulation;
* service requests: SetMode with modes that do not exist, the recorder's and calibration
  Trigger services called out of order, the recorder's ``task`` parameter with a wrong type and
  64 KiB of text.

Afterwards: every node process is alive; every command the bridge sent the robot on LCM (the
fuzzer listens on the command channel) was finite and within the URDF's joint limits; the mode
switch still works (digital, then real); the recording episode, once the recorder reports joint states written
into it, stops into a bag that reads back (rosbags) and holds them. Each
node's ``dropped.*`` and ``rejected.*`` counters (``/diagnostics``) are read before and after each
input; the table shows, per input, the reasons counted by the nodes that read it, less the ones that
move without any fuzzing (load: late cycles, superseded samples)::

    .venv/bin/python scripts/fuzz_inputs.py --out outputs/fuzz

prints the table (input, cases, messages, counted by reason) and writes ``fuzz_report.json``
there; the exit status is 1 when a check failed. ``--repeat 1 --settle 0.5 --baseline 3`` is the short run
test/test_fuzz_inputs_graph.py makes.
"""

from __future__ import annotations

import argparse
import array
import copy
import importlib
import json
import math
import os
import random
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for package in ("rynn_common", "rynn_retarget", "rynn_world_node", "rynn_robot_bridge"):
    sys.path.insert(0, str(REPO / "src" / package))

FLOAT_TYPES = ("float", "double")
INT_RANGES = {
    "int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "byte": (0, 255), "octet": (0, 255), "char": (0, 255),
    "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1), "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-2**63, 2**63 - 1), "uint64": (0, 2**64 - 1),
}
HUGE_ELEMENTS = 200_000  # a numeric sequence this long (1.6 MB of doubles)
HUGE_BYTES = 8 << 20  # a byte sequence (an image's data) this long
LONG_TEXT = "x" * 65536
MAX_CASES_PER_INPUT = 80
DAY_S = 86_400
STARTED = re.compile(r"\[rynn_launch\] started (\S+) \(pid (\d+)")
INTAKE_NODE = re.compile(r"^_(.+)_intake$")  # rynn_common.polled_input: a node's hidden subscribing node
SETTLE_S = 2.5  # before and after each input: its readers' /diagnostics (1-5 Hz) report the counters it moved
DISCOVERY_S = 120.0  # at most this long for the graph's subscriptions to be discovered (2 cores under load)
STEADY_S = 3.0  # the discovered inputs are complete once they held still this long
CALL_TIMEOUT_S = 60.0  # a node still working through the flood answers late (seen: 10-20 s, recorder, 2 cores)
RECORDER_NODE = "rynn_recorder"  # its /diagnostics status: the recording episode and what it wrote, per topic
BASELINE_S = 10.0  # the nodes report /diagnostics at 1-5 Hz: wait this long before reading counters


# --- hostile messages (plain rosidl introspection: any message type) ---------------------------------

@dataclass
class Case:
    name: str
    message: object = None  # a message object, or
    raw: bytes | None = None  # CDR bytes published as they are


def _element_type(type_name: str) -> tuple[str, str]:
    """('sequence' | 'array' | 'single', element type) of a rosidl field type string."""
    if type_name.startswith("sequence<"):
        return "sequence", type_name[len("sequence<"):-1].split(",")[0].strip()
    if type_name.endswith("]"):
        return "array", type_name[:type_name.index("[")]
    return "single", type_name


def _message_class(type_name: str):
    package, name = type_name.split("/")[0], type_name.split("/")[-1]
    return getattr(importlib.import_module(f"{package}.msg"), name)


def _get(msg, path):
    for step in path:
        msg = msg[step] if isinstance(step, int) else getattr(msg, step)
    return msg


def _set(msg, path, value) -> None:
    parent = _get(msg, path[:-1])
    if isinstance(path[-1], int):
        parent[path[-1]] = value
    else:
        setattr(parent, path[-1], value)


def _variant(template, path, value, name: str) -> Case | None:
    msg = copy.deepcopy(template)
    try:
        _set(msg, path, value)
    except (AssertionError, TypeError, ValueError, OverflowError, IndexError):
        return None  # the Python message type itself refuses the value: it cannot be sent
    return Case(name, message=msg)


def _numeric_sequence(kind: str, element: str, values) -> object:
    if kind == "array":
        return np.asarray(values, dtype=np.float64 if element in FLOAT_TYPES else np.int64)
    code = {"float": "f", "double": "d", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
            "uint32": "I", "int64": "q", "uint64": "Q"}.get(element)
    if element in ("octet", "byte"):
        return bytes(values)
    return array.array(code, values) if code else list(values)


def field_cases(template, path: list, type_name: str, value, now_s: float) -> list[Case]:
    kind, element = _element_type(type_name)
    label = ".".join(str(p) for p in path)
    cases: list[Case | None] = []
    if kind == "single":
        if element in FLOAT_TYPES:
            huge = 3e38 if element == "float" else 1e300
            cases += [_variant(template, path, v, f"{label}={n}") for n, v in
                      (("nan", math.nan), ("inf", math.inf), ("-inf", -math.inf), ("huge", -huge))]
        elif element in INT_RANGES:
            low, high = INT_RANGES[element]
            cases += [_variant(template, path, v, f"{label}={v}") for v in (low, high) if v != value]
        elif element == "boolean":
            cases.append(_variant(template, path, not value, f"{label} flipped"))
        elif element in ("string", "wstring"):
            cases += [_variant(template, path, "", f"{label} empty"), _variant(template, path, LONG_TEXT, f"{label} 64 KiB")]
            if label.endswith("frame_id"):
                cases.append(_variant(template, path, "hostile_frame", f"{label} wrong"))
            if label.endswith("encoding"):
                cases += [_variant(template, path, "bogus", f"{label} bogus"), _variant(template, path, "32FC1", f"{label} 32FC1")]
        elif element == "builtin_interfaces/Time":
            time_class = type(value)
            for name, sec, nanosec in (("zero", 0, 0), ("1970", 1, 0), ("a day ahead", int(now_s) + DAY_S, 0),
                                       ("end of time", 2**31 - 1, 999_999_999)):
                cases.append(_variant(template, path, time_class(sec=sec, nanosec=nanosec), f"{label} {name}"))
        elif "/" in element:
            for sub_field, sub_type in value.get_fields_and_field_types().items():
                cases += field_cases(template, [*path, sub_field], sub_type, getattr(value, sub_field), now_s)
        return [c for c in cases if c is not None]

    length = len(value)
    if element in FLOAT_TYPES or element in INT_RANGES or element in ("octet", "byte"):
        big = HUGE_BYTES if element in ("uint8", "octet", "byte", "char") else HUGE_ELEMENTS
        if kind == "sequence":
            cases += [_variant(template, path, _numeric_sequence(kind, element, []), f"{label} empty"),
                      _variant(template, path, _numeric_sequence(kind, element, [0] * big), f"{label} huge ({big})")]
            if length:
                cases += [_variant(template, path, _numeric_sequence(kind, element, list(value)[:-1]), f"{label} one short"),
                          _variant(template, path, _numeric_sequence(kind, element, [*list(value), list(value)[-1]]),
                                   f"{label} one long")]
        if length and element in FLOAT_TYPES:
            for name, bad in (("nan", math.nan), ("inf", math.inf)):
                values = [float(v) for v in value]
                values[0] = bad
                cases.append(_variant(template, path, _numeric_sequence(kind, element, values), f"{label}[0]={name}"))
            cases.append(_variant(template, path, _numeric_sequence(kind, element, [1e3] * length), f"{label} all 1000"))
    elif element in ("string", "wstring"):
        cases += [_variant(template, path, [], f"{label} empty"), _variant(template, path, ["j"] * 10_000, f"{label} 10000")]
        if length:
            cases.append(_variant(template, path, ["", *list(value)[1:]], f"{label}[0] empty"))
    elif "/" in element:
        if kind == "sequence":
            cases.append(_variant(template, path, [], f"{label} empty"))
            if length:
                cases.append(_variant(template, path, [copy.deepcopy(value[0]) for _ in range(500)], f"{label} 500 copies"))
        if length:
            for sub_field, sub_type in value[0].get_fields_and_field_types().items():
                cases += field_cases(template, [*path, 0, sub_field], sub_type, getattr(value[0], sub_field), now_s)
    return [c for c in cases if c is not None]


def message_cases(template, now_s: float) -> list[Case]:
    cases = []
    for name, type_name in template.get_fields_and_field_types().items():
        cases += field_cases(template, [name], type_name, getattr(template, name), now_s)
    return cases


def malformed_cases(raw: bytes, rng: random.Random) -> list[Case]:
    """CDR bytes no message serializes to (``raw``: a good message of the topic's type)."""
    cases = [Case("cdr empty", raw=b""), Case("cdr header only", raw=raw[:4]),
             Case("cdr cut in half", raw=raw[:max(4, len(raw) // 2)]), Case("cdr one byte short", raw=raw[:-1]),
             Case("cdr random", raw=raw[:4] + bytes(rng.getrandbits(8) for _ in range(max(0, len(raw) - 4)))),
             Case("cdr unknown encapsulation", raw=b"\x7f\x7f" + raw[2:])]
    for offset in range(4, min(len(raw) - 4, 68), 4):
        cases.append(Case(f"cdr length at {offset} = 2^32-1", raw=raw[:offset] + b"\xff\xff\xff\xff" + raw[offset + 4:]))
    return cases


def cases_for(template, raw: bytes, seed: int, now_s: float) -> list[Case]:
    rng = random.Random(seed)
    structured = message_cases(template, now_s)
    if len(structured) > MAX_CASES_PER_INPUT:
        structured = rng.sample(structured, MAX_CASES_PER_INPUT)
    return structured + malformed_cases(raw, rng)


# --- the graph and what the fuzzer watches -------------------------------------------------------------

@dataclass
class Watch:
    """What the fuzzer reads from the graph while it runs (filled by callbacks and the LCM thread)."""

    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> dropped.* / rejected.* -> n
    counters_at: float = 0.0
    modes: list[str] = field(default_factory=list)
    commands: int = 0
    command_violations: list[str] = field(default_factory=list)
    recorder: dict[str, str] = field(default_factory=dict)  # "recording" (episode name) and episode/<topic>.<count>
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_diagnostics(self, msg) -> None:
        with self.lock:
            for status in msg.status:
                values = {kv.key: kv.value for kv in status.values if kv.key.split(".")[0] in ("dropped", "rejected")}
                self.counters[status.name] = {key: int(value) for key, value in values.items()}
                if status.name == RECORDER_NODE:
                    self.recorder = {kv.key: kv.value for kv in status.values
                                     if kv.key == "recording" or kv.key.startswith("episode/")}
            self.counters_at = time.monotonic()

    def episode_written(self, episode: str, topic: str) -> int:
        """Messages of ``topic`` the recorder reports written into ``episode`` (0 while it reports another)."""
        with self.lock:
            if self.recorder.get("recording") != episode:
                return 0
            return int(self.recorder.get(f"episode{topic}.written", 0))

    def snapshot(self) -> dict[str, dict[str, int]]:
        with self.lock:
            return copy.deepcopy(self.counters)


def listen_to_commands(url: str, channel: str, watch: Watch, stop: threading.Event) -> threading.Thread:
    """Every command the bridge sends the robot, checked against the URDF's limits."""
    import lcm

    from rynn_common.description.joint_limits import joint_limits_from_urdf
    from rynn_robot_bridge.lcm_protocol import decode_command

    limits = joint_limits_from_urdf()
    connection = lcm.LCM(url)

    def on_command(_channel, data) -> None:
        command = decode_command(data)
        with watch.lock:
            watch.commands += 1
            position = command.position
            if position.shape != limits.lower.shape or not np.all(np.isfinite(position)):
                watch.command_violations.append(f"command {command.sequence}: non-finite or wrong length")
            elif np.any(position < limits.lower - 1e-9) or np.any(position > limits.upper + 1e-9):
                joint = int(np.argmax(np.maximum(limits.lower - position, position - limits.upper)))
                watch.command_violations.append(f"command {command.sequence}: joint {joint} at {position[joint]:.4f} rad "
                                                f"outside [{limits.lower[joint]:.4f}, {limits.upper[joint]:.4f}]")

    connection.subscribe(channel, on_command)

    def run() -> None:
        while not stop.is_set():
            connection.handle_timeout(100)

    thread = threading.Thread(target=run, name="fuzz-lcm", daemon=True)
    thread.start()
    return thread


def read_stopped_episode(answer, record_dir: Path) -> dict:
    """The episode a recorder stop ``answer`` names, read back from ``record_dir`` with the reader the exporter
    uses (rosbags, as ``rynn_robot_bridge.export.bag_episode``): its messages by topic, or why it could not be."""
    from rosbags.rosbag2 import Reader

    if answer is None or not answer.success:
        return {"error": "the stop was not answered" if answer is None else f"the stop failed: {answer.message[:200]}"}
    try:
        bag = record_dir / json.loads(answer.message)["episode"]
        with Reader(bag) as reader:
            indexed = {c.topic: c.msgcount for c in reader.connections}
            read = sum(1 for _ in reader.messages())
    except Exception as error:  # any reason the bag does not read back is the finding
        return {"error": f"{type(error).__name__}: {error}"[:300]}
    return {"bag": str(bag), "messages": read, "indexed": sum(indexed.values()), "topics": indexed}


def counter_delta(before: dict, after: dict) -> dict[str, int]:
    delta = {}
    for node, values in after.items():
        for key, value in values.items():
            change = value - before.get(node, {}).get(key, 0)
            if change > 0:
                delta[f"{node}: {key}"] = change
    return delta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "outputs" / "fuzz")
    parser.add_argument("--rate", type=float, default=100.0, help="messages per second, all inputs together")
    parser.add_argument("--repeat", type=int, default=2, help="times each case is sent")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--only", default="", help="fuzz only the inputs whose name contains this")
    parser.add_argument("--settle", type=float, default=SETTLE_S,
                        help="seconds waited before and after each input for the counters it moved (shorter: a "
                             "late report may count toward the next input)")
    parser.add_argument("--baseline", type=float, default=BASELINE_S,
                        help="seconds watched without fuzzing to find the background counters")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()  # the recorder's directory, whatever the nodes' working directory
    args.out.mkdir(parents=True, exist_ok=True)

    os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random().randint(101, 200)))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("", 0))
        lcm_url = f"udpm://239.255.76.67:{probe.getsockname()[1]}?ttl=0"

    import psutil
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.serialization import deserialize_message, serialize_message
    from rynn_teleop_msgs.srv import SetMode
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from rynn_common.ros_names import DIAGNOSTICS_TOPIC, JOINT_STATES_TOPIC, MODE_TOPIC, RECORDER_SERVICES, SET_MODE_SERVICE
    from rynn_robot_bridge.config import LcmSettings
    from rynn_world.console.graph_session import start_graph

    started = time.monotonic()
    print(f"starting the graph (ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, LCM {lcm_url})", flush=True)
    session = start_graph(["model_config:=tiny", "camera_width:=320", "camera_height:=240", "record:=true",
                           f"record_dir:={args.out / 'bags'}", f"lcm_url:={lcm_url}"],
                          args.out / "logs")
    launcher_log = session.output.read_text()
    pids = {name: int(pid) for name, pid in STARTED.findall(launcher_log)}
    print(f"graph up in {time.monotonic() - started:.0f} s: {', '.join(sorted(pids))}", flush=True)

    rclpy.init()
    node = rclpy.create_node("rynn_fuzzer")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    watch, stop_listening = Watch(), threading.Event()
    lcm_thread = listen_to_commands(lcm_url, LcmSettings().command_channel, watch, stop_listening)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(DiagnosticArray, DIAGNOSTICS_TOPIC, watch.on_diagnostics, 50)
    node.create_subscription(String, MODE_TOPIC, lambda m: watch.modes.append(m.data), latched)

    def spin_for(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=min(0.05, max(0.0, end - time.monotonic())))

    def spin_until(predicate, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while not predicate() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        return bool(predicate())

    def call(client, request, seconds: float = CALL_TIMEOUT_S):
        if not client.wait_for_service(timeout_sec=seconds):
            return None
        future = client.call_async(request)
        spin_until(future.done, seconds)
        return future.result() if future.done() else None

    report: dict = {"inputs": [], "services": [], "checks": {}}
    failures: list[str] = []
    spin_until(lambda: watch.modes, 60.0)
    start_service, stop_service, discard_service = (RECORDER_SERVICES[verb] for verb in ("start", "stop", "discard"))
    recorder_start = call(node.create_client(Trigger, start_service), Trigger.Request())
    print(f"recording: {recorder_start.message if recorder_start else 'no answer'}", flush=True)

    # Every topic some node of the graph subscribes to, with a message the graph published on it as the template.
    def graph_inputs() -> dict:
        found = {}
        for topic, types in node.get_topic_names_and_types():
            subscribers = [info for info in node.get_subscriptions_info_by_topic(topic) if info.node_name != "rynn_fuzzer"]
            if subscribers and topic != "/parameter_events" and topic != "/rosout":
                found[topic] = (types[0], subscribers)
        return found

    def shape(found: dict) -> dict:
        return {topic: sorted(info.node_name for info in subscribers) for topic, (_, subscribers) in found.items()}

    # Discovery under load takes a while: the inputs are complete once they held still for STEADY_S.
    inputs, steady_since, deadline = {}, time.monotonic(), time.monotonic() + DISCOVERY_S
    while time.monotonic() < deadline and not (inputs and time.monotonic() - steady_since >= STEADY_S):
        spin_for(0.5)
        found = graph_inputs()
        if shape(found) != shape(inputs):
            inputs, steady_since = found, time.monotonic()
    templates: dict[str, bytes] = {}
    for topic, (type_name, _) in inputs.items():
        node.create_subscription(_message_class(type_name), topic,
                                 lambda raw, t=topic: templates.__setitem__(t, raw),
                                 QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT), raw=True)
    spin_for(5.0)
    print(f"{len(inputs)} input topics: {', '.join(sorted(inputs))}", flush=True)
    # Counters that move without any fuzzing (load: late cycles, superseded samples) are background, not reactions.
    quiet = watch.snapshot()
    spin_for(args.baseline)
    background = set(counter_delta(quiet, watch.snapshot()))
    report["background_counters"] = sorted(background)
    print(f"background counters (moving in {args.baseline:.0f} s without fuzzing): {sorted(background)}", flush=True)

    period = 1.0 / args.rate
    for index, (topic, (type_name, subscribers)) in enumerate(sorted(inputs.items())):
        if args.only and args.only not in topic:
            continue
        message_class = _message_class(type_name)
        raw = templates.get(topic) or serialize_message(message_class())
        template = deserialize_message(raw, message_class)
        cases = cases_for(template, raw, args.seed + index, time.time())
        durable = any(info.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for info in subscribers)
        publisher = node.create_publisher(message_class, topic, QoSProfile(
            depth=10, reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if durable else DurabilityPolicy.VOLATILE))
        wanted = len(subscribers)
        spin_until(lambda p=publisher, n=wanted: p.get_subscription_count() >= n, 10.0)
        spin_for(args.settle)
        before = watch.snapshot()
        sent = unsendable = 0
        for _ in range(args.repeat):
            for case in cases:
                try:
                    publisher.publish(case.raw if case.raw is not None else case.message)
                    sent += 1
                except Exception as error:  # the fuzzer's own side refused it: counted, not sent
                    unsendable += 1
                    print(f"  {topic} {case.name}: not sent ({type(error).__name__}: {error})", flush=True)
                spin_for(period)
        if durable:  # leave no hostile latched sample behind for late joiners
            publisher.publish(template)
        spin_for(args.settle)
        delta = counter_delta(before, watch.snapshot())
        dead = [name for name, pid in pids.items() if not psutil.pid_exists(pid)
                or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE]
        readers = {INTAKE_NODE.sub(r"\1", i.node_name) for i in subscribers}  # as their /diagnostics name them
        # A reason counts for this input when a node that reads it counted it and it is not background.
        own = {k: n for k, n in delta.items() if k not in background and k.split(":")[0] in readers}
        entry = {"input": topic, "type": type_name, "subscribers": sorted(readers),
                 "cases": len(cases), "malformed_cdr_cases": sum(c.raw is not None for c in cases),
                 "messages": sent, "unsendable": unsendable, "dead_after": dead, "counted": own,
                 "elsewhere": {k: n for k, n in delta.items() if k not in own}}
        report["inputs"].append(entry)
        print(f"{topic}: {len(cases)} cases, {sent} messages; counted {own}; elsewhere {entry['elsewhere']}"
              + (f"; DEAD: {dead}" if dead else ""), flush=True)
        node.destroy_publisher(publisher)
        if dead:
            failures.append(f"after {topic}: {', '.join(dead)} died")
            break

    # Services, once the nodes have worked through the flood (their reports come again).
    spin_until(lambda: time.monotonic() - watch.counters_at < 1.0, 60.0)
    service_cases = []
    set_mode = node.create_client(SetMode, SET_MODE_SERVICE)
    for mode in (2, 7, 128, 255, 1, 0):
        answer = call(set_mode, SetMode.Request(mode=mode))
        service_cases.append((f"{SET_MODE_SERVICE} mode={mode}", None if answer is None else (answer.success, answer.message)))
    triggers = {name: node.create_client(Trigger, name)
                for name in (stop_service, discard_service, start_service, "/retarget_node/calibrate")}
    for name in (stop_service, stop_service, discard_service, discard_service, start_service, start_service,
                 "/retarget_node/calibrate", "/retarget_node/calibrate"):
        answer = call(triggers[name], Trigger.Request())
        service_cases.append((name, None if answer is None else (answer.success, answer.message[:120])))
    parameters = node.create_client(SetParameters, "/rynn_recorder/set_parameters")
    for label, value in (("task as an integer", ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=7)),
                         ("task 64 KiB", ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=LONG_TEXT)),
                         ("task NaN double", ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=math.nan))):
        answer = call(parameters, SetParameters.Request(parameters=[Parameter(name="task", value=value)]))
        result = None if answer is None or not answer.results else (answer.results[0].successful, answer.results[0].reason[:120])
        service_cases.append((f"/rynn_recorder/set_parameters {label}", result))
    call(triggers[stop_service], Trigger.Request())
    answer = call(triggers[start_service], Trigger.Request())  # with the task the last request left
    service_cases.append((f"{start_service} after those", None if answer is None else (answer.success, answer.message[:120])))
    recording = answer.message if answer is not None and answer.success else ""  # the episode's path
    call(parameters, SetParameters.Request(parameters=[Parameter(name="task", value=ParameterValue(
        type=ParameterType.PARAMETER_STRING, string_value="after the fuzz"))]))
    answer = call(triggers[start_service], Trigger.Request())  # the episode the checks below stop
    if answer is not None and answer.success:
        recording = answer.message
    report["services"] = [{"call": name, "answer": answer} for name, answer in service_cases]
    for name, answer in service_cases:
        print(f"{name}: {answer}", flush=True)
        if answer is None:
            failures.append(f"{name}: no answer")

    # The graph afterwards.
    switched = {}
    for label, mode in (("digital", SetMode.Request.MODE_DIGITAL), ("real", SetMode.Request.MODE_REAL)):
        for _ in range(5):  # the bridge refuses real mode while the (starved) robot state is not trusted: ask again
            answer = call(set_mode, SetMode.Request(mode=mode))
            if answer is not None and answer.success and spin_until(lambda m=label: watch.modes[-1:] == [m], 30.0):
                break
            spin_for(1.0)
        switched[label] = watch.modes[-1:] == [label]
    # Live data reaches the episode before it stops (its latched topics alone would not show the recorder works).
    spin_until(lambda: watch.episode_written(Path(recording).name, JOINT_STATES_TOPIC) > 0, CALL_TIMEOUT_S)
    stopped = call(triggers[stop_service], Trigger.Request())
    episode = read_stopped_episode(stopped, args.out / "bags")
    spin_for(SETTLE_S)
    dead = [name for name, pid in pids.items() if not psutil.pid_exists(pid)
            or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE]
    stop_listening.set()
    lcm_thread.join(timeout=2.0)
    with watch.lock:
        report["checks"] = {
            "nodes_alive": not dead and session.launcher.poll() is None, "dead": dead,
            "commands_seen": watch.commands, "commands_outside_limits": watch.command_violations[:20],
            "mode_switch": switched, "last_recording_stopped": bool(stopped and stopped.success),
            "last_recording_readable": "error" not in episode and episode["messages"] == episode["indexed"]
            and episode["topics"].get(JOINT_STATES_TOPIC, 0) > 0,
            "last_recording": episode,
        }
    checks = report["checks"]
    if not checks["nodes_alive"]:
        failures.append(f"nodes died: {dead}")
    if checks["commands_outside_limits"] or not checks["commands_seen"]:
        failures.append(f"commands: {checks['commands_seen']} seen, outside limits: {checks['commands_outside_limits']}")
    if not all(switched.values()):
        failures.append(f"mode switch: {switched}")
    if not checks["last_recording_stopped"] or not checks["last_recording_readable"]:
        failures.append(f"the last recording did not stop into a readable bag: {episode}")
    report["failures"] = failures
    report["seconds"] = round(time.monotonic() - started, 1)
    (args.out / "fuzz_report.json").write_text(json.dumps(report, indent=2, default=str))

    print("\n| input | cases (malformed CDR) | messages | dropped or rejected, by node: reason |\n| --- | --- | --- | --- |")
    for entry in report["inputs"]:
        counted = "; ".join(f"{key.replace(': ', ' ')} {n}" for key, n in sorted(entry["counted"].items())) or "none"
        print(f"| `{entry['input']}` | {entry['cases']} ({entry['malformed_cdr_cases']}) | {entry['messages']} | {counted} |")
    print("\nLeft out above: counters of nodes that do not read the input, and background ones (moving without "
          f"fuzzing): {', '.join(report['background_counters'])}")
    print(f"\nchecks: {json.dumps(checks)}\n{'FAIL: ' + '; '.join(failures) if failures else 'PASS'} "
          f"({report['seconds']:.0f} s)", flush=True)
    executor.shutdown()
    node.destroy_node()
    rclpy.try_shutdown()
    session.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
