"""The retargeter side by side with the field's libraries, same inputs, one process.

Arms (the project's robot URDF, both arms, no elbow prior; success = within 1 mm and 1 deg):
project DLS IK vs pink (pin-pink + quadprog) vs Pinocchio's CLIK recipe, on cold starts
from the neutral pose and on tracking joint sines at 120 Hz (warm start).
Hands (the project's generated hand and the vendor WUJI right-hand URDF): project vs
dex-retargeting's vector and DexPilot optimisers, on the synthetic operator (fingertip error)
and on skeletons made by the hand's own FK along a joint trajectory (joint error, truth known).

Peers come from requirements/benchmarks.txt; a peer that is not installed is skipped and said:
    .venv/bin/python -m pip install -c requirements/constraints.txt -r requirements/benchmarks.txt
    .venv/bin/python benchmarks/bench_retarget_peers.py [--targets 1000] [--episodes 4]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_retarget")]

from rynn_common.description import default_urdf_path
from rynn_common.description.joint_limits import joint_limits_from_urdf
from rynn_common.description.kinematic_model import load_model
from rynn_retarget.config import load_retarget_config
from rynn_retarget.kinematics.arm_ik import ArmIkConfig, ArmIkSolver
from rynn_retarget.kinematics.hand_retarget import DISTAL_JOINT_INDICES, TIPS, HandRetargeter
from rynn_retarget.kinematics.robot_model import build_arm_chain, hand_chain_from_urdf
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "src" / "rynn_retarget" / "config" / "retarget.yaml"
WUJI = ROOT.parent / "shared" / "robots" / "wuji_hand_description" / "urdf" / "right.urdf"
POSITION_OK, ANGLE_OK = 1e-3, np.deg2rad(1.0)
TRACK_RATE_HZ = 120.0
BENT_BACK = -0.2  # rad on a distal joint: no human finger does that while grasping
COLD_ITERATIONS = 100  # every arm solver gets the same iteration budget from a cold start


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (load {load:.1f}, shared), "
            f"Python {platform.python_version()}, numpy {np.__version__}, pinocchio {pin.__version__}")


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


# ---------------------------------------------------------------- arms


class ProjectArm:
    """The project's solver with the live configuration (src/rynn_retarget/config/retarget.yaml), no elbow prior."""

    def __init__(self, chain, config: ArmIkConfig, iterations: int, restarts: int = 0):
        self.solver = ArmIkSolver(chain, ArmIkConfig(**{**config.__dict__, "max_iterations": iterations,
                                                        "restarts": restarts}))

    def solve(self, target, q_start):
        return self.solver.solve(target, q_start).q


class PinkArm:
    """pink: differential IK as a QP (quadprog) with configuration and velocity limits as constraints.

    One QP per iteration, integrated with dt = 1 (IK, not velocity control), until the frame
    task is within the project's stopping tolerances or the iteration budget is spent.
    """

    def __init__(self, chain, iterations: int, stop=(1e-4, 1e-3)):
        import pink
        from pink.tasks import FrameTask

        self.pink = pink
        self.chain = chain
        self.task = FrameTask(f"{chain.side}_ee_link", position_cost=1.0, orientation_cost=1.0)
        self.iterations = iterations
        self.stop = stop

    def solve(self, target, q_start):
        configuration = self.pink.Configuration(self.chain.model, self.chain.data, np.array(q_start, dtype=float))
        goal = pin.SE3(target[:3, :3], target[:3, 3])
        self.task.set_target(goal)
        for _ in range(self.iterations):
            error = pin.log6(configuration.get_transform_frame_to_world(self.task.frame).actInv(goal))
            if np.linalg.norm(error.linear) < self.stop[0] and np.linalg.norm(error.angular) < self.stop[1]:
                break
            velocity = self.pink.solve_ik(configuration, [self.task], 1.0, solver="quadprog")
            configuration.integrate_inplace(velocity, 1.0)
        return configuration.q.copy()


class ClikArm:
    """Pinocchio's documented CLIK recipe (log6 error, damped J^T (J J^T + d I)^-1, DT = 0.1),
    with the joint limits clipped after each step."""

    def __init__(self, chain, iterations: int, stop=1e-4, dt=0.1, damping=1e-6):
        self.chain, self.iterations, self.stop, self.dt, self.damping = chain, iterations, stop, dt, damping
        self.frame = chain.ee_frame

    def solve(self, target, q_start):
        model, data = self.chain.model, self.chain.data
        goal = pin.SE3(target[:3, :3], target[:3, 3])
        q = np.array(q_start, dtype=float)
        for _ in range(self.iterations):
            pin.framesForwardKinematics(model, data, q)
            current_to_goal = data.oMf[self.frame].actInv(goal)
            error = pin.log6(current_to_goal).vector
            if np.linalg.norm(error) < self.stop:
                break
            jacobian = pin.computeFrameJacobian(model, data, q, self.frame, pin.LOCAL)
            jacobian = -pin.Jlog6(current_to_goal.inverse()) @ jacobian
            velocity = -jacobian.T @ np.linalg.solve(jacobian @ jacobian.T + self.damping * np.eye(6), error)
            q = np.clip(pin.integrate(model, q, velocity * self.dt), self.chain.lower, self.chain.upper)
        return q


def pose_error(chain, q, target):
    current = chain.ee_pose(q)
    position = np.linalg.norm(current[:3, 3] - target[:3, 3])
    angle = np.linalg.norm(pin.log3(target[:3, :3] @ current[:3, :3].T))
    return position, angle


def cold_targets(chains, count, seed=0):
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        chain = chains[("left", "right")[index % 2]]
        cases.append((chain.side, chain.ee_pose(rng.uniform(chain.lower, chain.upper))))
    return cases


def sine_episodes(chain, episodes, seconds, seed):
    """Joint sines over 80 % of each joint's range (to within 10 % of both limits), 120 Hz."""
    rng = np.random.default_rng(seed)
    middle, half_range = (chain.lower + chain.upper) / 2, (chain.upper - chain.lower) / 2
    times = np.arange(int(seconds * TRACK_RATE_HZ)) / TRACK_RATE_HZ
    result = []
    for _ in range(episodes):
        frequency = rng.uniform(0.05, 0.3, chain.model.nq)
        phase = rng.uniform(0, 2 * np.pi, chain.model.nq)
        result.append(middle + 0.8 * half_range * np.sin(2 * np.pi * frequency * times[:, None] + phase))
    return result


def run_cold(solvers, chains, cases, neutral):
    ok, times = [], []
    for side, target in cases:
        start = time.perf_counter()
        q = solvers[side].solve(target, neutral[side])
        times.append(time.perf_counter() - start)
        position, angle = pose_error(chains[side], q, target)
        ok.append(position < POSITION_OK and angle < ANGLE_OK)
    return 100 * np.mean(ok), np.array(times)


def run_tracking(solvers, chains, episodes):
    """Warm-started from the previous solution; the first frame starts at the episode's true q."""
    ok, position_errors, times, missed = [], [], [], {}
    for side, trajectories in episodes.items():
        missed[side] = 0
        for trajectory in trajectories:
            q = trajectory[0].copy()
            for q_true in trajectory:
                target = chains[side].ee_pose(q_true)
                start = time.perf_counter()
                q = solvers[side].solve(target, q)
                times.append(time.perf_counter() - start)
                position, angle = pose_error(chains[side], q, target)
                good = position < POSITION_OK and angle < ANGLE_OK
                ok.append(good)
                missed[side] += not good
                position_errors.append(position)
    return 100 * np.mean(ok), np.array(position_errors), np.array(times), missed


def arm_peers(args):
    config = load_retarget_config(CONFIG)
    model = load_model(default_urdf_path())
    limits = joint_limits_from_urdf(default_urdf_path())
    chains = {side: build_arm_chain(model, side, limits) for side in ("left", "right")}
    neutral = {side: config.neutral_arm(side) for side in ("left", "right")}
    track_iterations = config.arm_ik.max_iterations
    print(f"\narms: project URDF, config {CONFIG.name} arm_ik (max_iterations {track_iterations} when tracking, "
          f"{COLD_ITERATIONS} cold), {args.targets} cold targets, {args.episodes} episodes x {args.seconds:.0f} s "
          f"per arm at {TRACK_RATE_HZ:.0f} Hz")
    peers = {"project": lambda chain, iterations: ProjectArm(chain, config.arm_ik, iterations)}
    try:
        import pink  # noqa: F401
        import quadprog  # noqa: F401

        peers["pink (pin-pink + quadprog)"] = lambda chain, iterations: PinkArm(chain, iterations)
    except ImportError as missing:
        print(f"SKIPPED pink: not installed ({missing}); pip install -c requirements/constraints.txt "
              "-r requirements/benchmarks.txt")
    peers["Pinocchio CLIK"] = lambda chain, iterations: ClikArm(chain, 10 * iterations)

    cases = cold_targets(chains, args.targets)
    episodes = {side: sine_episodes(chains[side], args.episodes, args.seconds, seed=1 + i)
                for i, side in enumerate(("left", "right"))}
    rows = {name: {} for name in peers}
    for name, make in peers.items():
        cold = {side: make(chains[side], COLD_ITERATIONS) for side in chains}
        rows[name]["cold"], rows[name]["cold_times"] = run_cold(cold, chains, cases, neutral)
        track = {side: make(chains[side], track_iterations) for side in chains}
        rate, errors, times, missed = run_tracking(track, chains, episodes)
        rows[name].update(track=rate, track_p99=1e3 * np.percentile(errors, 99), track_times=times, missed=missed)
    restarts = {side: ProjectArm(chains[side], config.arm_ik, COLD_ITERATIONS, restarts=10) for side in chains}
    restart_rate, _ = run_cold(restarts, chains, cases, neutral)

    names = list(peers)
    base_time = np.median(rows["project"]["track_times"])
    table(
        "Arms (both arms, no elbow prior; success = within 1 mm and 1 deg)",
        [""] + names,
        [
            ["cold start from neutral, random reachable targets"] + [f"{rows[n]['cold']:.1f} %" for n in names],
            ["project with 10 random restarts"] + [f"{restart_rate:.1f} %"] + ["-"] * (len(names) - 1),
            ["tracking at 120 Hz, joint sines over 80 % of range"]
            + [f"{rows[n]['track']:.1f} %, p99 {rows[n]['track_p99']:.1f} mm" for n in names],
            ["missed tracking frames left / right"]
            + [f"{rows[n]['missed']['left']} / {rows[n]['missed']['right']}" for n in names],
            ["time per solve, tracking: median / p99 ms"]
            + [f"{1e3 * np.median(rows[n]['track_times']):.3f} / {1e3 * np.percentile(rows[n]['track_times'], 99):.3f}"
               for n in names],
            ["median time, tracking (ratio to project)"]
            + [f"{np.median(rows[n]['track_times']) / base_time:.2f}" for n in names],
            ["time per solve, cold: median / p99 ms"]
            + [f"{1e3 * np.median(rows[n]['cold_times']):.2f} / {1e3 * np.percentile(rows[n]['cold_times'], 99):.2f}"
               for n in names],
        ],
    )


# ---------------------------------------------------------------- hands


class ProjectHand:
    """The project's retargeter with the live configuration, unfiltered solutions (peers unfiltered too)."""

    def __init__(self, chain, config):
        self.retargeter = HandRetargeter(chain, config)

    def reset(self):
        self.retargeter.reset()

    def solve(self, points):
        return self.retargeter.solve(points)


class DexHand:
    """dex-retargeting (vector or DexPilot) on the same URDF, warm-started, its low-pass filter off.

    The vector method fits wrist -> fingertip and wrist -> middle-joint (PIP; thumb MCP) vectors,
    DexPilot its own wrist/fingertip set with pinch projection; both scaled like the project.
    """

    def __init__(self, kind, urdf, side, scale, joint_names):
        from dex_retargeting.retargeting_config import RetargetingConfig

        tips = [f"{side}_finger{n}_tip_link" for n in range(1, 6)]
        config = {"type": kind, "urdf_path": str(urdf), "scaling_factor": scale, "low_pass_alpha": -1.0}
        if kind == "vector":
            config.update(
                target_origin_link_names=[f"{side}_palm_link"] * 10,
                target_task_link_names=tips + [f"{side}_finger{n}_link3" for n in range(1, 6)],
                target_link_human_indices=np.array([[0] * 10, list(TIPS) + [2, 6, 10, 14, 18]]),
            )
        else:
            config.update(wrist_link_name=f"{side}_palm_link", finger_tip_link_names=tips)
        self.retargeting = RetargetingConfig.from_dict(config).build()
        dex_order = list(self.retargeting.joint_names)
        self.to_project = [dex_order.index(name) for name in joint_names]
        indices = self.retargeting.optimizer.target_link_human_indices
        self.origin, self.task = indices[0], indices[1]

    def reset(self):
        self.retargeting.reset()

    def solve(self, points):
        return self.retargeting.retarget(points[self.task] - points[self.origin])[self.to_project]


def hand_joint_episodes(chain, episodes, seconds, seed=5):
    """Human-like joint trajectories of the robot hand itself: every flexion joint between straight
    (never bent back) and 85 % of its upper limit, abduction over 60 % of its range, smooth sines."""
    rng = np.random.default_rng(seed)
    low = np.maximum(chain.lower, 0.0)
    high = 0.85 * chain.upper
    abduction = np.array([4 * finger + 1 for finger in range(1, 5)])  # joint2 of fingers 2-5
    middle = (chain.lower + chain.upper) / 2
    low[abduction] = middle[abduction] + 0.6 * (chain.lower[abduction] - middle[abduction])
    high[abduction] = middle[abduction] + 0.6 * (chain.upper[abduction] - middle[abduction])
    times = np.arange(int(seconds * TRACK_RATE_HZ)) / TRACK_RATE_HZ
    result = []
    for _ in range(episodes):
        frequency = rng.uniform(0.15, 0.5, chain.model.nq)
        phase = rng.uniform(0, 2 * np.pi, chain.model.nq)
        wave = 0.5 - 0.5 * np.cos(2 * np.pi * frequency * times[:, None] + phase)
        result.append(low + (high - low) * wave)
    return result


def run_hand_operator(method, chain, seconds):
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    method.reset()
    errors, times, bent = [], [], []
    for index in range(int(seconds * TRACK_RATE_HZ)):
        points = operator.frame_at(index / TRACK_RATE_HZ).hand(chain.side).points
        start = time.perf_counter()
        q = method.solve(points)
        times.append(time.perf_counter() - start)
        errors.append(np.linalg.norm(chain.keypoints(q)[list(TIPS)] - points[list(TIPS)], axis=1))
        bent.append(q[list(DISTAL_JOINT_INDICES)].min() < BENT_BACK)
    return np.array(errors), np.array(times), 100 * np.mean(bent)


def run_hand_own(method, chain, episodes):
    errors, bent = [], []
    for trajectory in episodes:
        method.reset()
        for q_true in trajectory:
            q = method.solve(chain.keypoints(q_true))
            errors.append(np.abs(q - q_true))
            bent.append(q[list(DISTAL_JOINT_INDICES)].min() < BENT_BACK)
    return np.rad2deg(np.array(errors)), 100 * np.mean(bent)


def hand_peers(args):
    config = load_retarget_config(CONFIG).hand
    hands = {"project hand (generated, right)": (default_urdf_path(), None)}
    if WUJI.exists():
        hands["WUJI right.urdf (vendor)"] = (WUJI, WUJI)
    else:
        print(f"SKIPPED the vendor WUJI hand: {WUJI} not found")
    try:
        import dex_retargeting  # noqa: F401

        have_dex = True
    except ImportError as missing:
        have_dex = False
        print(f"SKIPPED dex-retargeting: not installed ({missing}); pip install -c requirements/constraints.txt "
              "-r requirements/benchmarks.txt")
    print(f"\nhands: config {CONFIG.name} hand settings (EMA off for every method), synthetic operator "
          f"{args.hand_seconds:.0f} s at 120 Hz, {args.episodes} own-trajectory episodes x {args.seconds:.0f} s; "
          f"dex-retargeting runs on the vendor URDF (it needs a hand-only URDF)")
    for hand_name, (urdf, dex_urdf) in hands.items():
        chain = hand_chain_from_urdf(urdf, "right")
        names = [chain.model.names[i] for i in range(1, chain.model.njoints)]
        methods = {"project": ProjectHand(chain, config)}
        if have_dex and dex_urdf is not None:
            methods["dex-retargeting vector"] = DexHand("vector", dex_urdf, "right", config.scale, names)
            methods["DexPilot"] = DexHand("dexpilot", dex_urdf, "right", config.scale, names)
        episodes = hand_joint_episodes(chain, args.episodes, args.seconds)
        rows = {}
        for name, method in methods.items():
            tip_errors, times, bent = run_hand_operator(method, chain, args.hand_seconds)
            joint_errors, own_bent = run_hand_own(method, chain, episodes)
            rows[name] = (tip_errors, times, bent, joint_errors, own_bent)
        base_time = np.median(rows["project"][1])
        table(
            f"Hands: {hand_name}; bent back = a distal joint < {BENT_BACK} rad",
            ["input"] + list(methods),
            [
                ["synthetic operator, fingertip med / p95; bent back"]
                + [f"{1e3 * np.median(r[0]):.1f} / {1e3 * np.percentile(r[0], 95):.1f} mm; {r[2]:.0f} % of frames"
                   for r in rows.values()],
                ["skeleton from the hand's own joint trajectory: joint error med / p95; bent back (truth 0 %)"]
                + [f"{np.median(r[3]):.1f} / {np.percentile(r[3], 95):.1f} deg; {r[4]:.0f} %" for r in rows.values()],
                ["time per hand, median / p99 ms"]
                + [f"{1e3 * np.median(r[1]):.2f} / {1e3 * np.percentile(r[1], 99):.2f}" for r in rows.values()],
                ["median time (ratio to project)"] + [f"{np.median(r[1]) / base_time:.1f}" for r in rows.values()],
            ],
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=int, default=1000, help="cold-start targets (alternating arms)")
    parser.add_argument("--episodes", type=int, default=4, help="tracking episodes per arm")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of one tracking episode")
    parser.add_argument("--hand-seconds", type=float, default=20.0, help="synthetic operator stream per hand method")
    parser.add_argument("--skip-arms", action="store_true")
    parser.add_argument("--skip-hands", action="store_true")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if not args.skip_arms:
        arm_peers(args)
    if not args.skip_hands:
        hand_peers(args)


if __name__ == "__main__":
    main()
