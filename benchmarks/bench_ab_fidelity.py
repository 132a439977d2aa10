"""Live A/B fidelity: the digital camera against the real one for the same operator stream.

Run A (real): the launched graph (config/teleop_graph.yaml through the embedded launcher) in a
task scene with the synthetic operator, real mode, the recorder recording one episode of
``--seconds``. Run B (digital): the same graph with ``source:=replay replay_path:=<A's bag>``
(the trackers from /tf and the gloves from /rynn/operator/hands, replayed with their recorded
timing), in real mode until the replay starts a pass, then switched to digital: the world model
starts from A's first camera frame (``reference_image``; no real camera frame reaches it) and is
never re-anchored (``reanchor_every`` beyond the run), so the curve is its free drift
(``--reanchor-every 17``: the node's default, on its last generated frame). With
``--compare-raw`` a second digital run replays the same bag with ``static_camera:=false`` (the frames as
decoded, not composited on the reference), printed after the served one.

Each digital frame represents the operator sample its stamp names; that sample's tracker poses are
found in A's /tf (replayed poses are A's own) and the digital frame is compared, at the model's
resolution, with A's newest real frame at that instant. Printed: PSNR/SSIM per second of the
episode and overall, next to copy-the-reference (A's first frame against the same real frames),
and the drift curve (per second since the digital stream started). The machine line says how
loaded the machine was.

    nice -n 10 .venv/bin/python benchmarks/bench_ab_fidelity.py [--seconds 8] [--scene dual_picking] [--compare-raw] [name:=value ...]
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_digital_latency import call, launch_command, machine_info, start_graph  # also sets up sys.path
from rynn_common.ros_names import IMAGE_TOPIC, RECORDER_SERVICES, SET_MODE_SERVICE, TF_TOPIC

NEVER = 1000000  # reanchor_every beyond any run: the model's free drift

TRACKERS = ("chest", "left_wrist", "right_wrist", "left_upper_arm", "right_upper_arm")


def record_episode(arguments: list[str], log_dir: Path, seconds: float, before_recording=None) -> Path:
    """Start the graph, optionally wait for ``before_recording(node, executor)``, record ``seconds``; the bag."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import Image
    from std_srvs.srv import Trigger

    log_dir.mkdir(parents=True, exist_ok=True)
    command = launch_command(arguments, log_dir)
    print(f"graph: {' '.join(command[1:])}", flush=True)
    launcher, output = start_graph(command, log_dir)
    rclpy.init()
    node = rclpy.create_node("bench_ab_fidelity")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        frames = []
        node.create_subscription(Image, IMAGE_TOPIC, lambda msg: frames.append(1), 2)
        deadline = time.monotonic() + 180
        while not frames and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        if not frames:
            sys.exit(f"no canonical camera frames; see {output}")
        if before_recording is not None:
            before_recording(node, executor)
        started = call(executor, node.create_client(Trigger, RECORDER_SERVICES["start"]), Trigger.Request())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        call(executor, node.create_client(Trigger, RECORDER_SERVICES["stop"]), Trigger.Request())
    finally:
        node.destroy_node()
        rclpy.shutdown()
        launcher.send_signal(signal.SIGINT)
        launcher.wait(timeout=120)
    exits = [line for line in output.read_text().splitlines() if "exited" in line and "[rynn_launch]" in line]
    if exits:
        print("node exits:\n" + "\n".join(exits), flush=True)
    episode = Path(started.message)
    return episode if (episode / "metadata.yaml").is_file() else next(p.parent for p in episode.rglob("metadata.yaml"))


def read_bag(bag: Path) -> tuple[np.ndarray, np.ndarray, list]:
    """(tracker sample stamps [s], (N, 15) tracker translations, camera frames [(stamp, rgb)])."""
    from rosbags.highlevel import AnyReader

    from rynn_common.bag_types import make_typestore
    from rynn_robot_bridge.camera_messages import image_to_rgb

    names = {f"operator_{n}": i for i, n in enumerate(TRACKERS)}
    stamps, poses, frames = [], [], []
    with AnyReader([bag], default_typestore=make_typestore()) as reader:
        connections = [c for c in reader.connections if c.topic in (TF_TOPIC, IMAGE_TOPIC)]
        for connection, _, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == IMAGE_TOPIC:
                frames.append((msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9, image_to_rgb(msg)))
                continue
            pose = np.full(15, np.nan)
            for t in msg.transforms:
                if t.child_frame_id in names:
                    i = names[t.child_frame_id]
                    pose[3 * i: 3 * i + 3] = (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z)
                    stamp = t.header.stamp.sec + t.header.stamp.nanosec * 1e-9
            if np.isfinite(pose).all():
                stamps.append(stamp)
                poses.append(pose)
    return np.array(stamps), np.array(poses), frames


def wait_for_pass_start(first_pose: np.ndarray):
    """A callback that spins until the replayed trackers come back to the episode's first pose, then
    switches the graph to digital (the world model anchors on its reference image there)."""

    def wait(node, executor):
        from rynn_teleop_msgs.srv import SetMode
        from tf2_msgs.msg import TFMessage

        seen = []

        def on_tf(msg):
            pose = {t.child_frame_id: t.transform.translation for t in msg.transforms}
            if "operator_chest" in pose:
                seen.append(np.array([c for n in TRACKERS for p in [pose[f"operator_{n}"]] for c in (p.x, p.y, p.z)]))

        node.create_subscription(TFMessage, TF_TOPIC, on_tf, 100)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.01)
            if seen and np.abs(seen[-1] - first_pose).max() < 1e-9:
                switched = call(executor, node.create_client(SetMode, SET_MODE_SERVICE), SetMode.Request(mode=SetMode.Request.MODE_DIGITAL))
                print(f"replay pass started: set_mode digital {switched.success} {switched.message}", flush=True)
                return
            seen.clear()
        sys.exit("the replay never came back to the episode's first operator pose")

    return wait


def per_second(times: np.ndarray, values: np.ndarray) -> list[tuple[int, float, int]]:
    bins = np.floor(times).astype(int)
    return [(b, float(values[bins == b].mean()), int((bins == b).sum())) for b in np.unique(bins)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("arguments", nargs="*", metavar="name:=value", help="launch arguments for both runs")
    parser.add_argument("--seconds", type=float, default=8.0, help="episode length (and digital run length)")
    parser.add_argument("--scene", default="dual_picking", help="simulated task scene")
    parser.add_argument("--log-dir", help="keep logs and bags here (default: a temporary directory)")
    parser.add_argument("--reanchor-every", type=int, default=NEVER,
                        help="the world model's reanchor_every (default: never, the free drift; the node's default is 17)")
    parser.add_argument("--compare-raw", action="store_true",
                        help="also replay with static_camera=false (frames as decoded, not composited on the reference)")
    options = parser.parse_args()

    import cv2

    from rynn_world.model.configs import get_config

    given = {a.partition(":=")[0]: a.partition(":=")[2] for a in options.arguments}
    config = get_config(given.get("model_config", "embedded_cpu"))
    common = [f"scene:={options.scene}", "console:=false", "camera_width:=320", "camera_height:=240", *options.arguments]
    with tempfile.TemporaryDirectory(prefix="bench_ab_") as tmp:
        root = Path(options.log_dir or tmp)
        print(f"machine: {machine_info()}", flush=True)
        real_bag = record_episode(["mode:=real", "source:=synthetic", f"record_dir:={root / 'real_bags'}", *common],
                                  root / "real", options.seconds)
        real_stamps, real_poses, real_frames = read_bag(real_bag)
        reference = root / "reference.png"
        cv2.imwrite(str(reference), cv2.cvtColor(real_frames[0][1], cv2.COLOR_RGB2BGR))
        variants = {"composited on the reference (served)": ("digital", [])}  # label: (log directory, launch arguments)
        if options.compare_raw:
            variants["as decoded (static_camera=false)"] = ("digital_raw", ["--set", "world_model_node.static_camera=false"])
        digital = {}
        for label, (name, extra) in variants.items():
            digital_bag = record_episode(
                ["mode:=real", "source:=replay", f"replay_path:={real_bag}", f"record_dir:={root / (name + '_bags')}",
                 *common, "--set", f"world_model_node.reference_image={reference}",
                 "--set", "world_model_node.real_image_topic=/rynn/bench/no_real_camera",
                 "--set", f"world_model_node.reanchor_every={options.reanchor_every}", *extra],
                root / name, options.seconds, before_recording=wait_for_pass_start(real_poses[0]))
            digital[label] = read_bag(digital_bag)
            print(f"machine at the end: {machine_info()}\nreal bag {real_bag}: {len(real_frames)} frames; "
                  f"digital bag {digital_bag}: {len(digital[label][2])} frames", flush=True)
    for label, (digital_stamps, digital_poses, digital_frames) in digital.items():
        report(label, config, options.scene, options.reanchor_every, real_stamps, real_poses, real_frames,
               digital_stamps, digital_poses, digital_frames)


def report(label, config, scene, reanchor_every, real_stamps, real_poses, real_frames, digital_stamps, digital_poses,
           digital_frames):
    """Match each digital frame to the real frame of its operator instant and print the tables."""
    from rynn_world.evaluation.metrics import psnr, ssim
    from rynn_world.image_input import to_model_rgb

    real_frame_stamps = np.array([s for s, _ in real_frames])
    start = real_stamps[0]
    model_size = (config.height, config.width)
    reference_rgb = to_model_rgb(real_frames[0][1], *model_size)
    rows = []  # (episode time, time since the digital stream started, digital PSNR, SSIM, copy PSNR, SSIM)
    first_digital = None
    for stamp, rgb in digital_frames:
        sample = np.searchsorted(digital_stamps, stamp + 1e-9, side="right") - 1
        if sample < 0:
            continue
        match = int(np.argmin(np.abs(real_poses - digital_poses[sample]).max(axis=1)))
        if np.abs(real_poses[match] - digital_poses[sample]).max() > 1e-6:
            continue  # a pose the real episode never had (before the pass started)
        real_index = np.searchsorted(real_frame_stamps, real_stamps[match] + 1e-9, side="right") - 1
        if real_index < 1:
            continue  # before the real episode's first frame, or that frame: the reference itself (copying it is exact)
        truth = to_model_rgb(real_frames[real_index][1], *model_size)[None]
        digital = to_model_rgb(rgb, *model_size)[None]
        first_digital = stamp if first_digital is None else first_digital
        rows.append((real_stamps[match] - start, stamp - first_digital, psnr(digital, truth), ssim(digital, truth),
                     psnr(reference_rgb[None], truth), ssim(reference_rgb[None], truth)))
    if not rows:
        sys.exit("no digital frame matched an instant of the real episode")
    rows = np.array(rows)
    print(f"\nA/B fidelity, {config.name} at {config.width}x{config.height}, scene {scene}, digital frames {label}: "
          f"{len(rows)} matched to the real episode, "
          f"{'no re-anchoring' if reanchor_every >= NEVER else f're-anchored every {reanchor_every} frames'}")
    print(f"{'second of episode':>18} {'frames':>6} {'digital PSNR':>12} {'SSIM':>6} {'copy-ref PSNR':>13} {'SSIM':>6}")
    for (second, p, n), (_, s, _), (_, cp, _), (_, cs, _) in zip(*(per_second(rows[:, 0], rows[:, k]) for k in (2, 3, 4, 5))):
        print(f"{second:>18d} {n:>6d} {p:>12.2f} {s:>6.3f} {cp:>13.2f} {cs:>6.3f}")
    print(f"{'overall':>18} {len(rows):>6d} {rows[:, 2].mean():>12.2f} {rows[:, 3].mean():>6.3f} "
          f"{rows[:, 4].mean():>13.2f} {rows[:, 5].mean():>6.3f}")
    print(f"\ndrift {'without re-anchoring ' if reanchor_every >= NEVER else ''}(per second since the digital stream started):")
    print(f"{'second':>7} {'frames':>6} {'PSNR':>7} {'SSIM':>6} {'PSNR - copy-ref':>16}")
    for (second, p, n), (_, s, _), (_, cp, _) in zip(*(per_second(rows[:, 1], rows[:, k]) for k in (2, 3, 4))):
        print(f"{second:>7d} {n:>6d} {p:>7.2f} {s:>6.3f} {p - cp:>16.2f}")


if __name__ == "__main__":
    main()
