"""``rynn_demo``: the whole suite in one command, on a machine without ROS 2 installed.

The synthetic operator drives the real teleoperation graph (started by the embedded launcher,
the same graph as ``ros2 launch rynn_world digital_teleop.launch.py``). The demo records one
digital-mode episode (world model) and one real-mode episode (the simulated robot behind the
robot's LCM protocol), switching with /rynn/set_mode between them, then exports both bags to a
LeRobot dataset and writes one MP4 per episode (camera | operator skeleton side by side) and a
summary (episodes, frames, FPS achieved, latencies) to ``<out>/summary.{json,md}``.

    rynn_demo [--out outputs/demo] [--seconds 10] [--settle 5] [--model-config embedded_cpu] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rynn_common.ros_names import IMAGE_TOPIC

MODES = ("digital", "real")
DIGITAL_FPS_FLOOR = 15.8  # the world model's 16 FPS clock, less what a 2 s counting window rounds off


@dataclass
class DemoSettings:
    out: Path = Path("outputs/demo")
    seconds: float = 10.0  # recorded per episode
    model_config: str = "embedded_cpu"
    checkpoint: str = ""  # empty: the packaged default model
    scene: str = "dual_picking"
    camera_width: int = 320
    camera_height: int = 240
    fps: int = 16  # export and video frame rate (the world model's)
    startup_timeout_s: float = 240.0
    # streaming before each recording starts, as an operator would: the first seconds after the graph
    # comes up (or a switch) also pay one-time costs (the model's first steps, nodes still starting)
    settle_s: float = 5.0
    # The whole graph shares the machine's cores: on a small CPU, lighter operator input, a
    # 15 Hz simulated camera and one torch thread leave the world model room to stream.
    node_overrides: tuple[str, ...] = (
        "world_model_node.torch_threads=1",
        "tracker_node.rate_hz=60.0",
        "glove_node.rate_hz=60.0",
        "sim_robot.sim.render_rate_hz=15.0",
    )


def run_demo(settings: DemoSettings, progress: bool = True) -> dict:
    """Run the session and the exports; returns the summary (also written to ``out``)."""
    out = settings.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    clear_previous_demo(out)
    launcher = start_graph(settings, out)
    try:
        episodes = record_session(settings, launcher, progress)
    finally:
        stop_graph(launcher)
    return finish(settings, out, episodes, progress)


DEMO_PRODUCTS = ("bags", "lerobot", "videos", "logs", "launcher.log", "summary.json", "summary.md")


def clear_previous_demo(out: Path) -> None:
    """A second run replaces the first one's products (the LeRobot export refuses a non-empty
    directory, and old bags would be exported with the new ones); nothing else in ``out`` is touched."""
    previous = [out / name for name in DEMO_PRODUCTS if (out / name).exists()]
    if previous:
        print(f"replacing the previous demo in {out}", flush=True)
    for path in previous:
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def start_graph(settings: DemoSettings, out: Path) -> subprocess.Popen:
    lcm_port = random.Random(os.getpid() ^ time.time_ns()).randint(20000, 29000)
    arguments = {
        "mode": "digital",
        "record": "true",
        "record_dir": str(out / "bags"),
        "model_config": settings.model_config,
        "checkpoint": settings.checkpoint,
        "scene": settings.scene,
        "camera_width": str(settings.camera_width),
        "camera_height": str(settings.camera_height),
        "lcm_url": f"udpm://239.255.76.67:{lcm_port}?ttl=0",
    }
    command = [sys.executable, "-m", "rynn_world.launcher", *(f"{k}:={v}" for k, v in arguments.items()),
               "--log-dir", str(out / "logs")]
    for override in settings.node_overrides:
        command += ["--set", override]
    log = (out / "launcher.log").open("w")
    print(f"starting the teleoperation graph (logs: {out / 'logs'})", flush=True)
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop_graph(launcher: subprocess.Popen) -> None:
    if launcher.poll() is None:
        launcher.send_signal(signal.SIGINT)
        try:
            launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


def record_session(settings: DemoSettings, launcher: subprocess.Popen, progress: bool) -> list[dict]:
    """Drive the running graph over DDS: one recorded episode per mode."""
    from rynn_world.demo_session import DemoSession

    session = DemoSession()
    try:
        session.wait_for_camera(settings.startup_timeout_s, launcher, "digital")
        episodes = []
        for mode in MODES:
            if mode != session.mode:
                session.switch_mode(mode, launcher)
                session.wait_for_camera(settings.startup_timeout_s, launcher, mode)
            session.spin_for(settings.settle_s)
            episodes.append(session.record_episode(f"{settings.scene} ({mode})", settings.seconds, mode, progress))
        return episodes
    finally:
        session.close()


def finish(settings: DemoSettings, out: Path, episodes: list[dict], progress: bool) -> dict:
    from rynn_robot_bridge.export.lerobot import export

    bags = [Path(e["bag"]) for e in episodes]
    info, skipped = export(bags, out / "lerobot", settings.fps, task=settings.scene, progress=progress)
    if skipped:
        raise RuntimeError(f"LeRobot export skipped episodes: {skipped}")
    for episode in episodes:
        episode["video"] = str(write_side_by_side(Path(episode["bag"]), out / "videos", settings.fps))
    summary = {
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], "load_average": os.getloadavg()[0]},
        "episodes": episodes,
        "lerobot": {"path": str(out / "lerobot"), "episodes": info["total_episodes"], "frames": info["total_frames"]},
        "digital_real_time": digital_verdict(episodes),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(summary_markdown(summary))
    print(summary_markdown(summary), flush=True)
    return summary


def write_side_by_side(bag: Path, directory: Path, fps: int) -> Path:
    """camera | depth-aware operator skeleton, one MP4 per recorded episode."""
    from rynn_robot_bridge.export.bag_episode import load_episode
    from rynn_world.data.video import write_video
    from rynn_world.skeleton import SkeletonRenderer

    episode = load_episode(bag, fps, with_skeleton=True)
    height, width = episode.image_shape[:2]
    renderer = SkeletonRenderer(episode.intrinsics.scaled(width, height))
    frames = []
    for index, rgb in enumerate(episode.frames()):
        skeleton = renderer.render(episode.skeleton_points[index], valid=episode.skeleton_valid[index])
        frames.append(np.concatenate([rgb, skeleton], axis=1))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{bag.name}_{episode.mode_label}.mp4"
    write_video(path, np.stack(frames), fps)
    return path


def recorded_camera_fps(episode: dict) -> float:
    """Canonical camera frames the recorder wrote into the episode's bag, per recorded second."""
    written = episode["recorder"].get("topics", {}).get(IMAGE_TOPIC, {}).get("written", 0)
    return written / episode["seconds"]


def digital_verdict(episodes: list[dict]) -> dict:
    """Whether the digital episode kept the real-time floor: both as the demo's own subscriber saw the
    canonical camera and as the recorder wrote it to the bag (the lower counts), over an episode that
    stayed digital from start to stop."""
    digital = [e for e in episodes if e["mode"] == "digital"]
    seen = min((e["camera_fps"] for e in digital), default=0.0)
    recorded = min((recorded_camera_fps(e) for e in digital), default=0.0)
    only_digital = all(e["recorder"].get("modes_seen") == ["digital"] for e in digital)
    fps = min(seen, recorded)
    return {"camera_fps": fps, "subscriber_fps": seen, "recorded_fps": recorded, "only_digital": only_digital,
            "floor_fps": DIGITAL_FPS_FLOOR, "met": bool(digital) and only_digital and fps >= DIGITAL_FPS_FLOOR}


def summary_markdown(summary: dict) -> str:
    lines = ["| episode | mode | seconds | camera frames | camera FPS (seen / recorded) | world model step p50 ms "
             "| retarget p50 ms | bag |",
             "|---|---|---|---|---|---|---|---|"]
    for e in summary["episodes"]:
        lat = e["latency_p50_ms"]
        lines.append(
            f"| {Path(e['bag']).name} | {e['mode']} | {e['seconds']:.1f} | {e['camera_frames']} "
            f"| {e['camera_fps']:.1f} / {recorded_camera_fps(e):.1f} "
            f"| {lat.get('world_model_node/step', float('nan')):.1f} | {lat.get('retarget_node/retarget', float('nan')):.1f} "
            f"| {e['bag']} |"
        )
    verdict = summary["digital_real_time"]
    machine = summary["machine"]
    lines.append(f"\ndigital episode: {verdict['camera_fps']:.1f} FPS on the canonical camera (the lower of "
                 f"{verdict['subscriber_fps']:.1f} seen by the demo's subscriber and {verdict['recorded_fps']:.1f} "
                 f"written to the bag{'' if verdict['only_digital'] else '; the mode changed during the episode'}), "
                 f"{'at or above' if verdict['met'] else 'BELOW'} the {verdict['floor_fps']:g} FPS real-time floor "
                 "(the model's 16 FPS clock) "
                 f"({machine['cpus']} CPU cores, load average {machine['load_average']:.1f} at the end)")
    lerobot = summary["lerobot"]
    lines.append(f"\nLeRobot dataset: {lerobot['path']} ({lerobot['episodes']} episodes, {lerobot['frames']} frames)")
    lines += [f"video: {e['video']}" for e in summary["episodes"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rynn_demo", description=__doc__.split("\n\n")[0])
    defaults = DemoSettings()
    parser.add_argument("--out", type=Path, default=defaults.out)
    parser.add_argument("--seconds", type=float, default=defaults.seconds, help="recorded per episode")
    parser.add_argument("--settle", type=float, default=defaults.settle_s, help="seconds streamed before each recording")
    parser.add_argument("--model-config", default=defaults.model_config)
    parser.add_argument("--checkpoint", default=defaults.checkpoint)
    parser.add_argument("--scene", default=defaults.scene)
    parser.add_argument("--camera-width", type=int, default=defaults.camera_width)
    parser.add_argument("--camera-height", type=int, default=defaults.camera_height)
    args = parser.parse_args(argv)
    settings = DemoSettings(out=args.out, seconds=args.seconds, settle_s=args.settle, model_config=args.model_config,
                            checkpoint=args.checkpoint, scene=args.scene, camera_width=args.camera_width,
                            camera_height=args.camera_height)
    started = time.monotonic()
    try:
        run_demo(settings)
    except (RuntimeError, TimeoutError) as error:
        print(f"rynn_demo: {error}", file=sys.stderr)
        return 1
    print(f"demo finished in {time.monotonic() - started:.0f} s; everything is in {settings.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
