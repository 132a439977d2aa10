"""Cost of the bridge: camera relay overhead at 640x480 rgb8 30 FPS, 200 Hz LCM command jitter, and LCM floods.

Three processes over real DDS and LCM: a camera publisher sends every frame both
to the bridge's private real-camera topic and to a direct topic; this process
subscribes to the canonical topic (publisher -> bridge -> subscriber) and to the
direct one (publisher -> subscriber), so both latencies come from the same frames
in one run. It also plays the robot on LCM (state at 500 Hz, commands recorded)
and the operator (/rynn/action at 100 Hz), so the bridge streams motion commands.
The bridge's CPU (bench_digital_latency.CpuMeter) is measured without and with the camera.

Floods (issue 17 row 10): a separate sender process publishes ``--flood-rate``
LCM messages/s on the bridge's multicast group for ``--flood-seconds`` each:
undecodable bytes on the state channel, then well-formed states whose sequence
goes backwards (each one decoded, validated and rejected; the bridge holds the
robot meanwhile). Printed: commands/s reaching the robot, the largest gap, the
bridge's receive counters, and the kernel's UDP receive-buffer drops (system-wide).

    .venv/bin/python benchmarks/bench_bridge.py [--seconds 20] [--flood-rate 5000] [--skip-camera]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench_digital_latency import REPO, SOURCES, CpuMeter, machine_info  # also sets up sys.path and the ROS environment
from rynn_common.ros_names import ACTION_TOPIC, CAMERA_FRAME, IMAGE_TOPIC, REAL_IMAGE_TOPIC, STATUS_TOPIC

WIDTH, HEIGHT, FPS = 640, 480, 30.0
DIRECT_TOPIC = "/bench/direct/camera/color/image_raw"


def camera_qos():
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)


def run_camera_publisher() -> None:
    """The camera process: the same stamped frame to the bridge's input and to the direct topic."""
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header

    rclpy.init()
    node = rclpy.create_node("bench_camera")
    to_bridge = node.create_publisher(Image, REAL_IMAGE_TOPIC, camera_qos())
    direct = node.create_publisher(Image, DIRECT_TOPIC, camera_qos())
    pixels = np.random.default_rng(0).integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8).tobytes()
    count = [0]

    def publish():
        image = Image(header=Header(stamp=node.get_clock().now().to_msg(), frame_id=CAMERA_FRAME),
                      height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3)
        image.data = pixels
        count[0] += 1
        first, second = (to_bridge, direct) if count[0] % 2 else (direct, to_bridge)  # neither path always goes first
        first.publish(image)
        second.publish(image)

    node.create_timer(1.0 / FPS, publish)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


class BenchRobot:
    """The robot on LCM: state at 500 Hz, every command's arrival time and sender utime recorded."""

    def __init__(self, url: str, state_channel: str, command_channel: str):
        import lcm

        from rynn_common.action_layout import ACTION_DIM
        from rynn_robot_bridge.lcm_protocol import RobotState, decode_command, encode_state

        self.arrivals: list[tuple[float, int, bool]] = []  # (monotonic arrival, sender utime, motion?)
        self._out, self._in = lcm.LCM(url), lcm.LCM(url)
        self._decode = decode_command
        self._in.subscribe(command_channel, self._on_command)
        self._stop = threading.Event()
        zeros = np.zeros(ACTION_DIM)

        def publish_states():
            sequence = 0
            while not self._stop.wait(0.002):
                sequence += 1
                self._out.publish(state_channel, encode_state(RobotState(0, sequence, -1, 0, zeros, zeros, zeros, 0, 0, 0, 0, 0, 0, 0, 0)))

        def receive():
            while not self._stop.is_set():
                self._in.handle_timeout(20)

        self._threads = [threading.Thread(target=publish_states, daemon=True), threading.Thread(target=receive, daemon=True)]
        for thread in self._threads:
            thread.start()

    def _on_command(self, _channel, data):
        command = self._decode(data)
        self.arrivals.append((time.monotonic(), command.utime, command.enable))

    def close(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=1.0)


def run_flooder(url: str, channel: str, kind: str, rate: float, seconds: float) -> None:
    """The flood process: ``rate`` messages/s on ``channel`` for ``seconds``, paced in 10 ms batches."""
    import lcm

    from rynn_common.action_layout import ACTION_DIM
    from rynn_robot_bridge.lcm_protocol import RobotState, encode_state

    zeros = np.zeros(ACTION_DIM)
    packet = (b"\x5a" * 700 if kind == "garbage"
              else encode_state(RobotState(0, 1, -1, 0, zeros, zeros, zeros, 0, 0, 0, 0, 0, 0, 0, 0)))
    sender = lcm.LCM(url)
    start = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - start) < seconds:
        while sent < rate * elapsed:
            sender.publish(channel, packet)
            sent += 1
        time.sleep(0.01)
    print(f"flooder sent {sent} {kind} messages in {time.monotonic() - start:.1f} s", flush=True)


def udp_receive_buffer_errors() -> int:
    """The kernel's count of UDP datagrams dropped for a full receive buffer (all sockets of the host)."""
    lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Udp:")]
    return int(lines[1][lines[0].index("RcvbufErrors")])


def command_figures(arrivals, start: float, end: float) -> str:
    """Commands/s (motion and holds) arriving between monotonic ``start`` and ``end``, and the largest gap
    between two of them on the bridge's send clock (utime)."""
    window = [(utime * 1e-6, moving) for arrived, utime, moving in arrivals if start <= arrived <= end]
    times = np.array([t for t, _ in window])
    motion = sum(moving for _, moving in window)
    gap = np.diff(times).max() * 1e3 if times.size > 1 else float("inf")
    return f"{times.size / (end - start):6.1f} commands/s ({motion / (end - start):6.1f} motion), max gap {gap:6.1f} ms"


def motion_arrivals(arrivals) -> np.ndarray:
    """(arrival time [s], sender utime [us]) rows of the motion commands (holds excluded)."""
    return np.array([(t, u) for t, u, motion in arrivals if motion], dtype=np.float64)


def percentiles_ms(values) -> str:
    arr = np.asarray(values) * 1e3
    return f"p50 {np.percentile(arr, 50):7.3f} ms  p99 {np.percentile(arr, 99):7.3f} ms  (n={arr.size})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window with the camera on")
    parser.add_argument("--flood-rate", type=float, default=5000.0, help="LCM messages/s of each flood (0: no floods)")
    parser.add_argument("--flood-seconds", type=float, default=10.0, help="length of each flood")
    parser.add_argument("--skip-camera", action="store_true", help="only the command stream and the floods")
    parser.add_argument("--camera-publisher", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--flooder", nargs=3, metavar=("URL", "CHANNEL", "KIND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.camera_publisher:
        run_camera_publisher()
        return
    if args.flooder:
        run_flooder(*args.flooder, args.flood_rate, args.flood_seconds)
        return

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rynn_teleop_msgs.msg import RobotAction, TeleopStatus
    from sensor_msgs.msg import Image

    from rynn_common.action_layout import ACTION_DIM
    from rynn_common.description.joint_limits import joint_limits_from_urdf
    from rynn_common.ros_conversions import make_robot_action

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, SOURCES), os.environ.get("PYTHONPATH", "")]))
    url = f"udpm://239.255.76.67:{7600 + int(os.environ['ROS_DOMAIN_ID'])}?ttl=0"
    bridge = subprocess.Popen(
        [sys.executable, "-m", "rynn_robot_bridge.nodes.bridge_node", "--ros-args", "-p", "start_mode:=real",
         "-p", f"lcm.url:={url}", "-p", "lcm.command_channel:=BENCH_COMMAND", "-p", "lcm.state_channel:=BENCH_STATE"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
    )
    camera = None
    # The measuring robot's own socket gets a large buffer, so a flood cannot hide the bridge's commands from it.
    robot = BenchRobot(f"{url}&recv_buf_size=4194304", "BENCH_STATE", "BENCH_COMMAND")
    rclpy.init()
    node = rclpy.create_node("bench_bridge")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    latencies: dict[str, list[float]] = {"direct": [], "bridge": []}

    def on_image(path):
        return lambda msg: latencies[path].append(
            (node.get_clock().now().nanoseconds - (msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)) * 1e-9)

    node.create_subscription(Image, DIRECT_TOPIC, on_image("direct"), camera_qos())
    node.create_subscription(Image, IMAGE_TOPIC, on_image("bridge"), camera_qos())
    statuses: list = []
    node.create_subscription(TeleopStatus, STATUS_TOPIC, statuses.append, 10)
    action_pub = node.create_publisher(RobotAction, ACTION_TOPIC, 10)
    hold_pose = joint_limits_from_urdf().clamp(np.zeros(ACTION_DIM))
    node.create_timer(0.01, lambda: action_pub.publish(make_robot_action(hold_pose, time.time())))

    def spin_until(predicate, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
            if predicate():
                return True
        return False

    try:
        if not spin_until(lambda: sum(motion for _, _, motion in robot.arrivals) > 200, 60.0):
            raise SystemExit("the bridge never streamed motion commands")
        idle_seconds = min(10.0, args.seconds)
        arrivals_before = len(robot.arrivals)
        cpu, wall_start = CpuMeter({"bridge": bridge.pid}), time.monotonic()
        cpu.start()
        spin_until(lambda: False, idle_seconds)
        cpu_idle = cpu.shares()["bridge"]
        idle_arrivals = motion_arrivals(robot.arrivals[arrivals_before:])
        idle_figures = command_figures(robot.arrivals, wall_start, time.monotonic())

        floods = []
        for kind in ("garbage", "stale_state") if args.flood_rate > 0 else ():
            rejected_before = statuses[-1].rejected_inputs if statuses else 0
            kernel_drops_before = udp_receive_buffer_errors()
            flooder = subprocess.Popen([sys.executable, __file__, "--flooder", url, "BENCH_STATE", kind,
                                        "--flood-rate", str(args.flood_rate), "--flood-seconds", str(args.flood_seconds)],
                                       cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
            flooding_from = time.monotonic() + 1.0  # the sender's start-up is not part of the flood
            spin_until(lambda flooder=flooder: flooder.poll() is not None, args.flood_seconds + 30.0)
            flooding_until = time.monotonic()
            sent_line = flooder.communicate()[0].strip()
            counted = [-1]  # the bridge drains what its receive buffer holds: wait until its count stops growing

            def count_settled(counted=counted) -> bool:
                settled, counted[0] = statuses[-1].rejected_inputs == counted[0], statuses[-1].rejected_inputs
                return settled

            while not count_settled():
                spin_until(lambda: False, 0.5)
            floods.append((kind, sent_line, command_figures(robot.arrivals, flooding_from, flooding_until),
                           statuses[-1].rejected_inputs - rejected_before, udp_receive_buffer_errors() - kernel_drops_before))
            spin_until(lambda: False, 2.0)  # motion resumes before the next phase

        if not args.skip_camera:
            camera = subprocess.Popen([sys.executable, __file__, "--camera-publisher"], cwd=REPO, env=env)
            if not spin_until(lambda: len(latencies["bridge"]) > 30 and len(latencies["direct"]) > 30, 60.0):
                raise SystemExit("no frames arrived on both paths")
            for samples in latencies.values():
                samples.clear()
            arrivals_before = len(robot.arrivals)
            cpu.start()
            wall_start = time.monotonic()
            spin_until(lambda: False, args.seconds)
            window = time.monotonic() - wall_start
            cpu_camera = cpu.shares()["bridge"]
            camera_arrivals = motion_arrivals(robot.arrivals[arrivals_before:])
    finally:
        for proc in (camera, bridge):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=10)
        robot.close()
        node.destroy_node()
        rclpy.try_shutdown()

    print("bench_bridge: rynn_robot_bridge bridge_node relay and command stream")
    print(f"machine: {machine_info()}")
    print(f"config: bridge in real mode, LCM {url}, robot state 500 Hz, actions 100 Hz")
    print(f"command stream, no flood ({idle_seconds:.0f} s): {idle_figures}")
    for kind, sent_line, figures, rejected, kernel_drops in floods:
        print(f"flood {kind:11s} {args.flood_rate:g}/s on the state channel ({sent_line}): {figures}; "
              f"bridge rejected {rejected}, kernel receive-buffer drops {kernel_drops} (all UDP sockets)")
    if args.skip_camera:
        return
    relay = next((s for s in statuses[-1].latencies if s.stage == "camera_relay"), None) if statuses else None
    print(f"camera: {WIDTH}x{HEIGHT} rgb8 at {FPS:g} FPS, RELIABLE depth 2 on both paths; camera window {window:.1f} s")
    print(f"camera latency  direct  publisher -> subscriber          {percentiles_ms(latencies['direct'])}")
    print(f"camera latency  bridged publisher -> bridge -> subscriber {percentiles_ms(latencies['bridge'])}")
    overhead_p50 = 1e3 * (np.median(latencies['bridge']) - np.median(latencies['direct']))
    print(f"relay overhead (bridged - direct)                        p50 {overhead_p50:7.3f} ms  "
          f"p99 {1e3 * (np.percentile(latencies['bridge'], 99) - np.percentile(latencies['direct'], 99)):7.3f} ms")
    if relay is not None:
        print(f"bridge callback (offer + publish, from /rynn/status)     p50 {relay.p50 * 1e3:7.3f} ms  p99 {relay.p99 * 1e3:7.3f} ms")
    print(f"frames: direct {len(latencies['direct'])}, bridged {len(latencies['bridge'])} "
          f"(expected ~{FPS * window:.0f} each)")
    print(f"bridge CPU: {cpu_idle:.1f}% of one core without camera (200 Hz commands, 500 Hz state, 100 Hz actions), "
          f"{cpu_camera:.1f}% with the 30 FPS relay -> relay costs {cpu_camera - cpu_idle:.1f}%")
    for label, arrivals in (("camera off", idle_arrivals), ("camera on ", camera_arrivals)):
        received_period, sent_period = np.diff(arrivals[:, 0]), np.diff(arrivals[:, 1]) * 1e-6
        print(f"200 Hz commands, {label}: |period - 5 ms| at the bridge (utime) {percentiles_ms(np.abs(sent_period - 0.005))}; "
              f"at the robot (arrival) {percentiles_ms(np.abs(received_period - 0.005))}; max gap {received_period.max() * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
