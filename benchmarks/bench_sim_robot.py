"""Simulated robot figures: physics vs real time, render FPS, LCM command-to-state latency, episodes/hour.

    .venv/bin/python benchmarks/bench_sim_robot.py [--seconds 5] [--episodes 2]
    .venv/bin/python benchmarks/bench_sim_robot.py --backends [--repeats 3]
    .venv/bin/python benchmarks/bench_sim_robot.py --multisamples [--repeats 3 --frames 20]

``--backends`` compares the offscreen GL backends and llvmpipe thread counts side by
side instead: MuJoCo fixes its backend at import, so each one runs in a fresh child
process, the configurations alternating over the repeats (the machine is shared and
noisy; alternating spreads the load over all of them alike); medians are printed.

Latency is measured across two processes over real UDP multicast (ttl=0):
this process sends 200 Hz commands, a child runs the real-time simulated
robot (500 Hz control, state published every cycle) and echoes the sequence
of the last accepted command in its state; latency = state arrival - send time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge", "rynn_world_node")]

import numpy as np

import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.sim.simulator import HeadCameraView, SimulatedRobot

LATENCY_PORT = 7600 + os.getpid() % 90
CHILD = """
import sys, time, signal
sys.path[:0] = {paths!r}
import rynn_robot_bridge.sim  # noqa: F401  (headless GL first)
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.sim.realtime import RealtimeSimRobot
from rynn_robot_bridge.sim.simulator import SimulatedRobot
config = load_robot_config().with_lcm_url({url!r}).with_sim(render_rate_hz=0.0)
runtime = RealtimeSimRobot(config, SimulatedRobot("empty"))
runtime.start()
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
try:
    while True:
        time.sleep(0.5)
finally:
    runtime.stop()
    print("overruns", runtime.stats.overruns, "steps", runtime.stats.steps, flush=True)
"""


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, MUJOCO_GL={os.environ.get('MUJOCO_GL')}, "
            f"LP_NUM_THREADS={os.environ.get('LP_NUM_THREADS')}")


def bench_physics(seconds: float) -> None:
    for scene in ("empty", "dual_picking", "bimanual_lifting"):
        robot = SimulatedRobot(scene)
        steps = int(seconds * 500)
        start = time.perf_counter()
        for k in range(steps):
            robot.set_joint_targets(robot.home_pose + 0.1 * np.sin(k * 0.002))
            robot.step()
        elapsed = time.perf_counter() - start
        print(f"physics {scene:>16}: {steps / elapsed:8.0f} steps/s at 500 Hz control = {seconds / elapsed:5.1f}x real time")


def bench_render(frames: int) -> None:
    """Wall time and CPU time (this process, all threads: a software GL renders on its own threads) a frame,
    with the live camera's anti-aliasing (robot.yaml's sim.multisamples) and with MuJoCo's default 4."""
    print(f"GL: {os.environ.get('MUJOCO_GL')}")
    live = load_robot_config().sim.multisamples
    for scene, width, height, samples in (("empty", 640, 480, live), ("empty", 640, 480, 4),
                                          ("dual_picking", 640, 480, live), ("dual_picking", 832, 480, live)):
        robot = SimulatedRobot(scene, camera=D435I_COLOR.scaled(width, height))
        view = HeadCameraView(robot.model, robot.camera, samples)
        view.render(robot.data)  # context creation
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(frames):
            robot.step(17)
            view.render(robot.data)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        view.close()
        robot.close()
        label = f"{samples}x MSAA" + (" (the live camera's)" if samples == live else "")
        print(f"render {scene} {width}x{height}, {label}: {frames / elapsed:6.1f} FPS ({1000 * elapsed / frames:.1f} ms/frame wall, "
              f"{1000 * cpu / frames:.1f} ms CPU a frame incl. physics steps)")


def bench_multisamples(repeats: int, frames: int) -> None:
    """What anti-aliasing costs the live 640x480 camera and what it changes in the world model's view: for each
    task, CPU ms a frame with 0 and 4 samples (alternating, medians), and PSNR at the model's 208x128 input
    between the two and against the episode generator's own 208x128 render (4 samples, the training data)."""
    from rynn_robot_bridge.sim.scenes import TASKS
    from rynn_world.image_input import to_model_rgb

    def psnr(a: np.ndarray, b: np.ndarray) -> float:
        return float(10 * np.log10(255.0 ** 2 / np.mean((a.astype(float) - b.astype(float)) ** 2)))

    print("task             | CPU ms a frame, 0 / 4 samples | PSNR at 208x128: 0 vs 4 | vs the generator's render: 0 / 4")
    for task in TASKS:
        live = SimulatedRobot(task, seed=1, vary_scene=True)
        trained = SimulatedRobot(task, seed=1, vary_scene=True, camera=D435I_COLOR.scaled(208, 128))
        live.step(100)
        trained.step(100)
        cpu: dict[int, list[float]] = {0: [], 4: []}
        seen: dict[int, np.ndarray] = {}
        for _ in range(repeats):
            for samples in (0, 4):
                view = HeadCameraView(live.model, live.camera, samples)
                seen[samples] = to_model_rgb(view.render(live.data), 128, 208)
                start = time.process_time()
                for _ in range(frames):
                    view.render(live.data)
                cpu[samples].append(1000 * (time.process_time() - start) / frames)
                view.close()
        generated = to_model_rgb(trained.render(), 128, 208)
        live.close()
        trained.close()
        print(f"{task:<16} | {np.median(cpu[0]):6.1f} / {np.median(cpu[4]):6.1f} | {psnr(seen[0], seen[4]):6.2f} dB | "
              f"{psnr(seen[0], generated):6.2f} / {psnr(seen[4], generated):6.2f} dB")


BACKEND_CONFIGS = [(gl, threads) for gl in ("egl", "osmesa") for threads in ("0", "1", "2")]
BACKEND_CHILD = """
import json, sys, time
sys.path[:0] = {paths!r}
import mujoco
import numpy as np
import rynn_robot_bridge.sim  # noqa: F401
from rynn_common.description import D435I_COLOR
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.sim.realtime import RealtimeSimRobot
from rynn_robot_bridge.sim.simulator import HeadCameraView, SimulatedRobot

camera = D435I_COLOR.scaled(640, 480)
robot = SimulatedRobot("empty", camera=camera)
view = HeadCameraView(robot.model, camera, load_robot_config().sim.multisamples)
data = mujoco.MjData(robot.model)
view.render(data)  # context creation and first-frame set-up
walls, cpus = [], []
for k in range({frames}):  # the camera loop's work: a moved pose, kinematics, render
    data.qpos[:] = robot.data.qpos
    data.qpos[:7] += 0.2 * np.sin(0.1 * k)
    wall, cpu = time.perf_counter(), time.process_time()
    mujoco.mj_kinematics(robot.model, data)
    mujoco.mj_camlight(robot.model, data)
    view.render(data)
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
view.close()
runtime = RealtimeSimRobot(load_robot_config().with_lcm_url({url!r}), robot, on_frame=lambda rgb, t: None)
runtime.start()
stats = runtime.stats
deadline = time.monotonic() + 60
while stats.frames < 2 and time.monotonic() < deadline:  # the camera thread's GL context is up
    time.sleep(0.05)
frames, steps, overruns, cpu = stats.frames, stats.steps, stats.overruns, time.process_time()
stats.longest_cycle_gap_s = 0.0
time.sleep({seconds})
cpu = time.process_time() - cpu
print(json.dumps(dict(render_ms=1000 * float(np.median(walls)), render_cpu_ms=1000 * float(np.median(cpus)),
                      live_fps=(stats.frames - frames) / {seconds}, live_steps_per_s=(stats.steps - steps) / {seconds},
                      live_overruns=stats.overruns - overruns, live_gap_ms=1000 * stats.longest_cycle_gap_s,
                      live_cpu=cpu / {seconds})))
runtime.stop()
"""


def bench_backends(repeats: int, frames: int, seconds: float) -> None:
    """Per backend and llvmpipe thread count (LP_NUM_THREADS; unset, llvmpipe takes one a core): a 640x480 frame
    of the empty scene alone (wall and CPU ms, median), then the real-time robot with its 30 Hz camera for
    ``seconds``: frames/s, control steps/s (500 wanted), cycles dropped, longest silence of the state stream
    and CPU cores used."""
    paths = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge")]
    url = f"udpm://239.255.76.67:{LATENCY_PORT}?ttl=0"
    child = BACKEND_CHILD.format(paths=paths, frames=frames, seconds=seconds, url=url)
    results: dict[tuple[str, str], list[dict]] = {config: [] for config in BACKEND_CONFIGS}
    for _ in range(repeats):
        for gl, threads in BACKEND_CONFIGS:
            env = {**os.environ, "MUJOCO_GL": gl, "PYOPENGL_PLATFORM": gl, "LP_NUM_THREADS": threads}
            run = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                print(f"{gl} LP_NUM_THREADS={threads}: failed: {run.stderr.strip().splitlines()[-1:]}")
                continue
            results[(gl, threads)].append(json.loads(run.stdout.strip().splitlines()[-1]))
    print(f"load average {os.getloadavg()[0]:.1f}; {repeats} alternating runs each, medians (min-max of the run medians)")
    print("backend  LP_NUM_THREADS | render ms wall | render ms CPU | live FPS | steps/s | overruns | longest state gap ms | cores")
    for (gl, threads), runs in results.items():
        if runs:
            cells = [_spread([run[key] for run in runs], digits) for key, digits in (
                ("render_ms", 1), ("render_cpu_ms", 1), ("live_fps", 1), ("live_steps_per_s", 0), ("live_overruns", 0),
                ("live_gap_ms", 1), ("live_cpu", 2))]
            print(f"{gl:>7}  {threads:>14} | " + " | ".join(cells))


def _spread(values: list[float], digits: int) -> str:
    return f"{np.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def bench_latency(seconds: float) -> None:
    import lcm

    from rynn_robot_bridge.lcm_protocol import decode_state, encode_command

    url = f"udpm://239.255.76.67:{LATENCY_PORT}?ttl=0"
    paths = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_robot_bridge")]
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(paths=paths, url=url)], stdout=subprocess.PIPE, text=True)
    try:
        lc = lcm.LCM(url)
        sent: dict[int, float] = {}
        latencies: list[float] = []
        first = []

        def on_state(channel, data):
            state = decode_state(data)
            if not first:
                first.append(state.position)
            send_time = sent.pop(state.last_command_sequence, None)
            if send_time is not None:
                latencies.append(time.perf_counter() - send_time)

        lc.subscribe("RYNN_ROBOT_STATE", on_state)
        deadline = time.monotonic() + 60
        while not first and time.monotonic() < deadline:
            lc.handle_timeout(100)
        if not first:
            raise RuntimeError("the simulated robot process published no state within 60 s")
        sequence, period, next_send = 0, 1 / 200, time.perf_counter()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if time.perf_counter() >= next_send:
                sequence += 1
                sent[sequence] = time.perf_counter()
                lc.publish("RYNN_ROBOT_COMMAND", encode_command(first[0], sequence))
                next_send += period
            lc.handle_timeout(1)
    finally:
        child.terminate()
        child_report = child.communicate(timeout=10)[0].strip()
    ms = 1000 * np.asarray(latencies)
    print(f"LCM command->state latency over UDP, 200 Hz commands, {len(ms)}/{sequence} matched: "
          f"p50 {np.percentile(ms, 50):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms, max {ms.max():.2f} ms "
          f"(sim process: {child_report})")


def bench_generator(episodes: int, duration: float) -> None:
    from rynn_robot_bridge.sim.scenes import TASKS
    from rynn_world.episodes.generate import generate
    from rynn_world.episodes.rollout import EpisodeSettings

    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        tasks = list(TASKS)[: max(1, episodes)]
        generate(Path(out), tasks, 1, 0, EpisodeSettings(duration_s=duration), progress=False)
        elapsed = time.perf_counter() - start
    per_episode = elapsed / len(tasks)
    print(f"generator: {len(tasks)} episodes of {duration:.0f} s at 640x480 / 16 FPS in {elapsed:.1f} s = "
          f"{3600 / per_episode:.0f} episodes/hour ({per_episode / duration:.2f} s per simulated second)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per physics / latency run")
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--episode-seconds", type=float, default=4.0)
    parser.add_argument("--backends", action="store_true", help="only compare the GL backends and llvmpipe threads")
    parser.add_argument("--multisamples", action="store_true",
                        help="only compare the live camera with 0 and 4 anti-aliasing samples on the task scenes")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per configuration (--backends, --multisamples)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.backends:
        bench_backends(args.repeats, args.frames, args.seconds)
        return
    if args.multisamples:
        bench_multisamples(args.repeats, args.frames)
        return
    bench_physics(args.seconds)
    bench_render(args.frames)
    bench_latency(args.seconds)
    bench_generator(args.episodes, args.episode_seconds)


if __name__ == "__main__":
    main()
