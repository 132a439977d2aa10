"""Arm IK figures: accuracy on random reachable targets, synthetic streams, solve time, shoulder prior.

    .venv/bin/python benchmarks/bench_ik.py [--targets 500]
    .venv/bin/python benchmarks/bench_ik.py --compare REV [--seconds 10 --repeats 3]
    .venv/bin/python benchmarks/bench_ik.py --stop-rule [--targets 300]

``--stop-rule`` prints what ending a solve after ``fruitless_escapes`` escapes in a row that did not
lower the best error costs (solves left worse) and saves (iterations), per target kind.
``--compare`` times one retargeted sample of the working tree against the retarget package as
committed at git revision REV, both in this process, on the same synthetic operator frames, in
alternating order (a shared, loaded machine drifts too much between runs to compare runs).
"""

import argparse
import dataclasses
import importlib
import io
import os
import platform
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src" / p) for p in ("rynn_common", "rynn_retarget")]

from rynn_retarget.config import load_retarget_config
from rynn_retarget.kinematics.arm_ik import ArmIkSolver
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig
from rynn_retarget.pipeline import RetargetPipeline

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "src" / "rynn_retarget" / "config" / "retarget.yaml"


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def random_targets(pipeline, count):
    config = pipeline.config.arm_ik
    rng = np.random.default_rng(0)
    for restarts in (0, 10):
        config_r = type(config)(**{**config.__dict__, "max_iterations": 100, "restarts": restarts})
        pos, ang = [], []
        for side in ("left", "right"):
            arm = pipeline.arms[side]
            solver = ArmIkSolver(arm, config_r)
            for _ in range(count // 2):
                q_true = rng.uniform(arm.lower, arm.upper)
                result = solver.solve(arm.ee_pose(q_true), pipeline.config.neutral_arm(side))
                pos.append(result.position_error)
                ang.append(np.rad2deg(result.orientation_error))
        pos, ang = np.array(pos), np.array(ang)
        ok = np.mean((pos < 1e-3) & (ang < 1.0))
        print(f"random reachable targets (FK of uniform q, cold start from neutral, restarts={restarts}): "
              f"{100 * ok:.1f}% within 1 mm / 1 deg; median {1e3 * np.median(pos):.3f} mm / {np.median(ang):.3f} deg")


def stream(pipeline, seconds, use_prior=True):
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    weights = {side: pipeline.solvers[side]._weights.copy() for side in ("left", "right")}
    if not use_prior:
        for solver in pipeline.solvers.values():
            solver._weights[:] = 0.0
    q = {side: pipeline.config.neutral_arm(side) for side in ("left", "right")}
    times, pos, ang, elbow_gap = [], [], [], []
    for index in range(int(seconds * 120)):
        frame = operator.frame_at(index / 120)
        elapsed = 0.0
        for side in ("left", "right"):
            start = time.perf_counter()
            target, elbow = pipeline.arm_target(side, frame.trackers)
            result = pipeline.solvers[side].solve(target, q[side], elbow)
            elapsed += time.perf_counter() - start
            q[side] = result.q
            pos.append(result.position_error)
            ang.append(np.rad2deg(result.orientation_error))
            shoulder = pipeline.arms[side].elbow_position(np.zeros(7)) + np.array([0, 0, 0.30])
            reference_dir = (elbow - shoulder) / np.linalg.norm(elbow - shoulder)
            robot_dir = pipeline.arms[side].elbow_position(result.q) - shoulder
            elbow_gap.append(np.linalg.norm(shoulder + 0.30 * reference_dir - shoulder - robot_dir))
        times.append(elapsed)
    for side in ("left", "right"):
        pipeline.solvers[side]._weights[:] = weights[side]
    return np.array(times), np.array(pos), np.array(ang), np.array(elbow_gap)


def stop_rule_cases(pipeline, count, seconds):
    """(kind, side, target, start, elbow) solves: cold from neutral to targets out of reach (random
    reachable poses pushed 1.1-1.8x further from the shoulder) and near the joint limits (3 joints
    within 3 % of their range from a limit), and the synthetic operator stream warm-started as
    the node does."""
    rng = np.random.default_rng(3)
    arm, neutral = pipeline.arms["left"], pipeline.config.neutral_arm("left")
    shoulder = arm.elbow_position(np.zeros(7)) + np.array([0, 0, 0.30])
    span = arm.upper - arm.lower
    cases = []
    for _ in range(count // 2):
        target = arm.ee_pose(rng.uniform(arm.lower, arm.upper))
        target[:3, 3] = shoulder + rng.uniform(1.1, 1.8) * (target[:3, 3] - shoulder)
        cases.append(("out of reach", "left", target, neutral, None))
    for _ in range(count // 2):
        q = rng.uniform(arm.lower, arm.upper)
        near = rng.choice(7, 3, replace=False)
        q[near] = np.where(rng.integers(0, 2, 3) == 1, arm.upper[near] - 0.03 * span[near], arm.lower[near] + 0.03 * span[near])
        cases.append(("near limits", "left", arm.ee_pose(q), neutral, None))
    operator = SyntheticOperator(SyntheticOperatorConfig(motion="all", seed=0))
    q = {side: pipeline.config.neutral_arm(side) for side in ("left", "right")}
    for index in range(int(seconds * 120)):
        frame = operator.frame_at(index / 120)
        for side in q:
            target, elbow = pipeline.arm_target(side, frame.trackers)
            cases.append(("stream", side, target, q[side], elbow))
            q[side] = pipeline.solvers[side].solve(target, q[side], elbow).q
    return cases


def stop_rule(pipeline, count, seconds):
    cases = stop_rule_cases(pipeline, count, seconds)
    kinds = np.array([case[0] for case in cases])
    for max_iterations in (pipeline.config.arm_ik.max_iterations, 100):
        results = {}
        for fruitless in (0, 1, 2, 3):
            config = dataclasses.replace(pipeline.config.arm_ik, max_iterations=max_iterations, fruitless_escapes=fruitless)
            solvers = {side: ArmIkSolver(pipeline.arms[side], config) for side in ("left", "right")}
            results[fruitless] = [solvers[side].solve(target, start, elbow) for _, side, target, start, elbow in cases]
        for fruitless in (1, 2, 3):
            for kind in ("out of reach", "near limits", "stream"):
                pairs = [(old, new) for old, new, k in zip(results[0], results[fruitless], kinds) if k == kind]
                loss = np.array([np.hypot(new.position_error, new.orientation_error)
                                 - np.hypot(old.position_error, old.orientation_error) for old, new in pairs])
                print(f"max_iterations {max_iterations}, fruitless_escapes {fruitless} vs 0, {kind}: {len(pairs)} solves, "
                      f"{(loss > 1e-9).sum()} worse (largest by {loss.max():.2g}), iterations "
                      f"{sum(old.iterations for old, _ in pairs)} -> {sum(new.iterations for _, new in pairs)}")


def package_at(revision: str, root: Path):
    """(pipeline factory, synthetic operator module) of the rynn_retarget package (code and
    retarget.yaml) committed at ``revision``, unpacked under ``root`` and imported under its own
    package name so it runs beside the working tree's; its guard takes only its own frame type,
    hence its own synthetic operator."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "src/rynn_retarget"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="data")
    name = "rynn_retarget_at_" + re.sub(r"\W", "_", revision)
    package = root / name
    (root / "src" / "rynn_retarget" / "rynn_retarget").rename(package)
    for source in package.rglob("*.py"):
        source.write_text(re.sub(r"\brynn_retarget(?=\.|\s+import)", name, source.read_text()))
    sys.path.insert(0, str(root))
    config = importlib.import_module(f"{name}.config").load_retarget_config(root / "src" / "rynn_retarget" / "config" / "retarget.yaml")
    pipeline = importlib.import_module(f"{name}.pipeline")
    return (lambda: pipeline.RetargetPipeline(config)), importlib.import_module(f"{name}.operator.synthetic")


def synthetic_frames(synthetic, seconds: float) -> list:
    operator = synthetic.SyntheticOperator(synthetic.SyntheticOperatorConfig(motion="all", seed=0))
    return [operator.frame_at(index / 120) for index in range(int(seconds * 120))]


class SampleTimer:
    """Per-sample time of a pipeline's ``step`` and of its arm solves and hand retargets within it."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.parts = {"arms": 0.0, "hands": 0.0}
        self.samples = {"step": [], "arms": [], "hands": []}
        self.iterations = 0
        for side in ("left", "right"):
            pipeline.solvers[side].solve = self._timed(pipeline.solvers[side].solve, "arms")
            pipeline.hands[side].retarget = self._timed(pipeline.hands[side].retarget, "hands")

    def _timed(self, method, part):
        def timed(*args):
            start = time.perf_counter()
            result = method(*args)
            self.parts[part] += time.perf_counter() - start
            return result
        return timed

    def step(self, frame):
        self.parts = {"arms": 0.0, "hands": 0.0}
        start = time.perf_counter()
        output = self.pipeline.step(frame, frame.stamp)
        self.samples["step"].append(time.perf_counter() - start)
        for part, seconds in self.parts.items():
            self.samples[part].append(seconds)
        self.iterations += sum(result.iterations for result in output.ik.values()) if output else 0
        return output


def compare(revision: str, seconds: float, repeats: int) -> None:
    """Working tree vs ``revision`` on the same frames, alternating which runs first; a fresh pair of
    pipelines per repeat, so both start every repeat from the same state."""
    revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", revision],
                              capture_output=True, check=True, text=True).stdout.strip()
    names = (revision, "working tree")
    timers = {name: [] for name in names}
    largest_difference = 0.0
    with tempfile.TemporaryDirectory(prefix="bench_ik_") as root:
        baseline, baseline_synthetic = package_at(revision, Path(root))
        frames = {revision: synthetic_frames(baseline_synthetic, seconds),
                  "working tree": synthetic_frames(sys.modules[SyntheticOperator.__module__], seconds)}
        for _ in range(repeats):
            pair = {revision: SampleTimer(baseline()), "working tree": SampleTimer(RetargetPipeline(load_retarget_config(CONFIG)))}
            for index in range(len(frames[revision])):
                order = names if index % 2 == 0 else names[::-1]
                outputs = {name: pair[name].step(frames[name][index]) for name in order}
                if all(output is not None for output in outputs.values()):
                    largest_difference = max(largest_difference, float(np.abs(
                        outputs[revision].action - outputs["working tree"].action).max()))
            for name in names:
                timers[name].append(pair[name])
    print(f"{len(frames[revision])} synthetic operator samples (all motions, 120 Hz) x {repeats} repeats, "
          f"alternating; load avg {os.getloadavg()[0]:.2f}; per sample in us, min / median:")
    for part in ("step", "arms", "hands"):
        cells = []
        for name in names:
            values = 1e6 * np.concatenate([timer.samples[part] for timer in timers[name]])
            cells.append(f"{name} {values.min():7.1f} / {np.median(values):7.1f}")
        print(f"  {part:6s} " + "   ".join(cells))
    print("  arm iterations per repeat: " + ", ".join(f"{name} {timers[name][0].iterations}" for name in names))
    print(f"  largest |action difference| between the two: {largest_difference:.3g} rad")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--compare", metavar="REV", help="time one sample against the package at git revision REV")
    parser.add_argument("--repeats", type=int, default=3, help="with --compare: passes over the frames")
    parser.add_argument("--stop-rule", action="store_true", help="losses and savings of the fruitless-escape stop")
    args = parser.parse_args()
    if args.stop_rule:
        stop_rule(RetargetPipeline(load_retarget_config(CONFIG)), args.targets, args.seconds)
        return
    if args.compare:
        compare(args.compare, args.seconds, args.repeats)
        return
    pipeline = RetargetPipeline(load_retarget_config(CONFIG))
    print(f"machine: {machine()}; config {CONFIG.name}; arm_ik {pipeline.config.arm_ik}")
    random_targets(pipeline, args.targets)
    times, pos, ang, gap = stream(pipeline, args.seconds)
    ok = np.mean((pos < 1e-3) & (ang < 1.0))
    print(f"synthetic operator stream ({args.seconds:.0f} s at 120 Hz, all motions, warm start): "
          f"{100 * ok:.1f}% within 1 mm / 1 deg, max {1e3 * pos.max():.2f} mm / {ang.max():.2f} deg")
    print(f"solve time both arms per frame: median {1e3 * np.median(times):.3f} ms, p99 {1e3 * np.percentile(times, 99):.3f} ms "
          f"(per arm median {0.5e3 * np.median(times):.3f} ms)")
    _, _, _, gap_off = stream(pipeline, args.seconds, use_prior=False)
    print(f"elbow distance to tracker-derived reference: with prior median {1e3 * np.median(gap):.1f} mm "
          f"(p95 {1e3 * np.percentile(gap, 95):.1f}); without median {1e3 * np.median(gap_off):.1f} mm "
          f"(p95 {1e3 * np.percentile(gap_off, 95):.1f})")


if __name__ == "__main__":
    main()
