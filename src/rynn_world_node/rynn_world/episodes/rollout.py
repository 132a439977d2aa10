"""One paired episode: operator (task or synthetic) -> real retargeting -> simulated robot -> bag.

Runs in-process and as fast as the CPU allows (the simulator is stepped, not
paced), but on the same clocks as the live system: operator frames and
smoothed commands at 200 Hz, physics at 500 Hz, camera frames at 16 FPS.
Everything is a function of the seed, so an episode can be regenerated bit
for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rynn_common.description import D435I_COLOR
from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig, neutral_frame
from rynn_retarget.operator.task_operator import TaskOperator, arm_mappings, rest_hands
from rynn_retarget.operator.task_plan import plan_task, sample_style
from rynn_retarget.pipeline import RetargetPipeline
from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
from rynn_robot_bridge.sim.scenes import TASKS
from rynn_robot_bridge.sim.simulator import SimulatedRobot

OPERATORS = ("task", "synthetic")
SETTLE_S = 0.6  # after a task plan ends: objects come to rest before the success check

# The synthetic operator's script that best matches each task (it is not object-aware).
TASK_MOTIONS = {
    "dual_picking": "grasp",
    "block_pushing": "push",
    "bimanual_lifting": "bimanual_lift",
    "lid_placement": "pinch",
}


@dataclass(frozen=True)
class EpisodeSettings:
    operator: str = "task"  # "task": plans from the scene (OPERATORS); "synthetic": scripted, not object-aware
    duration_s: float = 0.0  # 0: the task plan's length + SETTLE_S (4 s for the synthetic operator)
    scene_variation: bool = True  # seeded sizes, colours, distractors, table, lights, camera jitter (sim.scene_variation)
    fps: float = 16.0
    command_rate_hz: float = 200.0
    control_rate_hz: float = 500.0
    image_width: int = 640
    image_height: int = 480


def episode_seed(base_seed: int, task: str, index: int) -> int:
    """Independent, reproducible seed per (run seed, task, episode index)."""
    return int(np.random.SeedSequence([base_seed, TASKS.index(task), index]).generate_state(1)[0])


@dataclass
class Episode:
    """An episode set up and not yet run: the scene, the calibrated retargeting, the operator and how long."""

    task: str
    seed: int
    settings: EpisodeSettings
    robot: SimulatedRobot
    pipeline: RetargetPipeline
    operator: SyntheticOperator | TaskOperator
    duration_s: float


def start_episode(task: str, seed: int, settings: EpisodeSettings) -> Episode:
    """The seeded scene with the robot at rest and the operator that will drive it (``run_episode`` runs it)."""
    intrinsics = D435I_COLOR.scaled(settings.image_width, settings.image_height)
    robot = SimulatedRobot(task, seed=seed, camera=intrinsics, control_rate_hz=settings.control_rate_hz,
                           vary_scene=settings.scene_variation)
    pipeline = RetargetPipeline()
    operator, duration_s = make_operator(task, seed, settings, pipeline, robot)
    return Episode(task, seed, settings, robot, pipeline, operator, duration_s)


def record_episode(task: str, seed: int, settings: EpisodeSettings, bag_path: Path) -> tuple[dict, dict]:
    """Write the bag at ``bag_path`` (must not exist); return (summary, frame-aligned arrays)."""
    return run_episode(start_episode(task, seed, settings), bag_path)


def run_episode(episode: Episode, bag_path: Path) -> tuple[dict, dict]:
    """Run ``episode`` to its end, writing the bag at ``bag_path``; closes its simulator."""
    task, seed, settings, robot, pipeline, operator, duration_s = (
        episode.task, episode.seed, episode.settings, episode.robot, episode.pipeline, episode.operator,
        episode.duration_s)
    intrinsics = robot.camera
    scene = scene_metadata(robot)
    smoother = pipeline.make_smoother()
    writer = EpisodeBagWriter(bag_path, intrinsics)
    frames = {"stamp_ns": [], "action": [], "joint_position": [], "object_mask": [], "object_position": []}
    try:
        writer.write_reference_image(robot.render(), 0)
        skeleton, skeleton_valid, elbows = np.zeros((2, 21, 3)), np.zeros(2, dtype=bool), np.full((2, 3), np.nan)
        command_period = 1.0 / settings.command_rate_hz
        next_frame_s = 0.0
        for tick in range(int(round(duration_s * settings.command_rate_hz))):
            t = tick * command_period
            output = pipeline.step(operator.frame_at(t), t)
            if output is not None:
                smoother.set_target(output.action)
                skeleton, skeleton_valid = output.skeleton_camera, output.skeleton_valid
                elbows = pipeline.elbows_in_camera(output.action)  # as the retarget node publishes them
            command, velocity = smoother.step()
            robot.set_joint_targets(command, velocity)
            stamp = _ns(t)
            writer.write_action(command, stamp)
            if t + 1e-9 >= next_frame_s:
                next_frame_s += 1.0 / settings.fps
                writer.write_frame(robot.render(), stamp)
                writer.write_skeleton(skeleton, skeleton_valid, elbows, stamp)
                frames["stamp_ns"].append(stamp)
                frames["action"].append(command.copy())
                frames["joint_position"].append(robot.joint_positions())
                frames["object_mask"].append(robot.object_mask())
                frames["object_position"].append([robot.data.body(n).xpos.copy() for n in robot.task.object_names()])
            while robot.time < t + command_period - 1e-9:
                robot.step()
            writer.write_joint_state(robot.joint_positions(), robot.joint_velocities(), robot.joint_efforts(),
                                     _ns(robot.time))
        success = robot.task.success(robot.model, robot.data)
        summary = {
            "task": task,
            "seed": seed,
            "success": bool(success),
            "frames": len(frames["stamp_ns"]),
            "duration_s": duration_s,
            "fps": settings.fps,
            "image_width": settings.image_width,
            "image_height": settings.image_height,
            "operator": settings.operator,
            "scene": scene,
            "mask_objects": robot.task.object_names(),  # object_mask label i + 1, object_position column i
            "operator_motion": TASK_MOTIONS[task] if settings.operator == "synthetic" else "task_plan",
            "retarget_counters": {k: int(v) for k, v in pipeline.counters.items()},
            "holds": robot.task.holds.summary() if robot.task.holds else {},  # objects the task must pick
            "objects_off_table": robot.objects_off_table(),
            "physics_warnings": robot.physics_warnings(),
        }
        writer.write_episode_summary(summary, _ns(duration_s))
        writer.close({"task": task, "success": str(bool(success)).lower(), "seed": str(seed)})
    finally:
        robot.close()
    return summary, {k: np.asarray(v) for k, v in frames.items()}


def make_operator(task: str, seed: int, settings: EpisodeSettings, pipeline: RetargetPipeline,
                  robot: SimulatedRobot) -> tuple[SyntheticOperator | TaskOperator, float]:
    """The episode's operator and duration; calibrates ``pipeline`` on the operator's neutral pose and
    rests ``robot`` at the neutral action, as a live session starts."""
    if settings.operator not in OPERATORS:
        raise ValueError(f"unknown operator {settings.operator!r}; choose one of {OPERATORS}")
    if settings.operator == "synthetic":
        duration = settings.duration_s or 4.0
        operator = SyntheticOperator(SyntheticOperatorConfig(motion=TASK_MOTIONS[task], seed=seed, period_s=duration))
        pipeline.calibrate(operator.frame_at(0.0))
        robot.reset(pipeline.neutral_action())
        return operator, duration
    pipeline.calibrate(neutral_frame(seed))
    robot.reset(pipeline.neutral_action())
    style = sample_style(np.random.default_rng([seed, 1]))
    plan = plan_task(robot.task.state(robot.data), rest_hands(pipeline), style)
    operator = TaskOperator(plan, arm_mappings(pipeline), seed=seed)
    return operator, settings.duration_s or plan.duration + SETTLE_S


def scene_metadata(robot: SimulatedRobot) -> dict:
    """The scene as the episode started: object poses and sizes, and the variation applied (if any)."""
    objects = {name: {"position": obj.position.round(5).tolist(), "yaw": round(obj.yaw, 5),
                      "half_extents": obj.half_extents.round(5).tolist()}
               for name, obj in robot.task.state(robot.data).objects.items()}
    return {"objects": objects, "variation": robot.variation.as_dict() if robot.variation else None}


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))
