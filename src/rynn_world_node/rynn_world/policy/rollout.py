"""Closed-loop evaluation of a policy on the simulated TIANJI M6, through the bridge's command path.

A trial is the scene a recorded episode of the same seed starts from (``episodes.rollout.start_episode``:
the seeded task scene with its variation, the robot at rest at the operator's neutral action), run
for as long as the task operator's own episode of that seed (its plan + settle time) times
``horizon_factor``, then judged by the scene's own success check, as the generator labels episodes.

Before the trial clock starts, the bridge takes the robot over as a deployment's bring-up does: it is
sent the rest pose (the operator's neutral action, where the robot stands) until its commander has left
the reduced-limit approach it makes after any hold and tracks (``PRE_ROLL_MAX_S``). Without that the
policy's first seconds run inside the approach (arms at 0.5 rad/s, following a moving target it never
reaches), and not even a demonstration replayed open loop pushes the block to the right zone.

Per 200 Hz command cycle, in one process and on the simulator's clock (stepped as fast as the CPU
allows, so trials are deterministic for a seed):

- on the 16 FPS camera clock: the head camera renders at the recorded episodes' size, the frame
  becomes the policy's input through ``dataset.policy_image`` (the training path's conversion), the
  policy gets it with the measured joint state and its 54-D action goes into the bridge's
  ``RobotCommander`` as a ``/rynn/action`` message would (``submit_action``: size / NaN checks, the
  action watchdog);
- the commander's cycle (real mode: the reduced-limit approach after a hold, then the joint-limit and
  velocity clamp) makes the command, encoded and decoded with the robot's LCM message types
  (``lcm_protocol``) exactly as ``LcmRobotLink.send`` puts it on the wire;
- the simulated robot takes it as ``sim.realtime`` does: the ``CommandGate`` (limits, sequence,
  watchdog) sets the servo targets for the 500 Hz physics steps, and its state goes back to the
  commander as an encoded/decoded LCM state message (``update_measured``: the state validator).

What this leaves out of the deployed graph: the UDP multicast transport and the ROS 2 ``/rynn/action``
topic between processes, and wall-clock pacing (a policy slower than 16 FPS would see older frames).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

import rynn_robot_bridge.sim  # noqa: F401  (headless GL before mujoco loads)
from rynn_robot_bridge.bridge.commander import Phase, RobotCommander
from rynn_robot_bridge.bridge.mode import Mode
from rynn_robot_bridge.bridge.settings import load_bridge_settings
from rynn_robot_bridge.config import load_robot_config
from rynn_robot_bridge.lcm_protocol import MODE_HOLD, MODE_POSITION, RobotState, decode_command, decode_state, encode_command, encode_state
from rynn_robot_bridge.robot_safety import CommandGate
from rynn_robot_bridge.sim.simulator import SimulatedRobot

from ..episodes.rollout import EpisodeSettings, episode_seed, start_episode
from .dataset import policy_image

PRE_ROLL_MAX_S = 2.0  # the bridge's approach to the rest pose must end (tracking) within this, or the trial fails to start
EVAL_SEED = 1000  # run seed of evaluation scenes: episode_seed(EVAL_SEED, task, i), never a training seed (0 ...)


@dataclass(frozen=True)
class RolloutSettings:
    image_width: int = 208  # the camera as the training episodes were recorded (the world model's size)
    image_height: int = 128
    fps: float = 16.0
    horizon_factor: float = 1.25  # trial length: the task operator's episode length for the seed times this
    # How the 16 FPS actions reach the 200 Hz command stream: "hold" publishes each action once per frame
    # (the bridge holds it); "interpolate" publishes, every command cycle, the straight line from the
    # previous action to the newest over one frame period (one frame of delay, no steps).
    command_mode: str = "interpolate"
    scene_variation: bool = True


@dataclass
class TrialResult:
    task: str
    seed: int
    success: bool
    duration_s: float
    frames: int
    cpu_s: float
    commands_rejected: int  # by the robot's command gate
    actions_rejected: int  # by the bridge's action inbox
    objects_off_table: list = field(default_factory=list)
    start_positions: dict = field(default_factory=dict)  # task object -> xyz (m, base_link) at the start
    end_positions: dict = field(default_factory=dict)  # ... and at the end, when success was judged
    images: np.ndarray | None = None  # (T, H, W, 3) the policy's inputs, when asked for


class _SimulatedLcmRobot:
    """The simulated robot's side of the LCM protocol, stepped: what ``sim.realtime`` does per control cycle."""

    def __init__(self, robot: SimulatedRobot, controller):
        self.robot = robot
        self.gate = CommandGate(robot.limits.lower, robot.limits.upper, robot.limits.velocity,
                                watchdog_timeout_s=controller.watchdog_timeout_ms / 1000.0,
                                max_sequence_gap=controller.max_sequence_gap,
                                limit_tolerance=controller.joint_limit_tolerance_rad)
        self.rejected = 0
        self.steps = 0  # physics steps taken
        self._sequence = 0

    def receive(self, packet: bytes, now: float) -> None:
        if self.gate.submit(decode_command(packet), now):
            self.rejected += 1

    def control_step(self, now: float) -> None:
        self.gate.update(now)
        target, velocity = self.gate.joint_targets(self.robot.joint_positions())
        self.robot.set_joint_targets(target, velocity)
        self.robot.step()
        self.steps += 1

    def state_packet(self) -> bytes:
        self._sequence += 1
        robot, gate = self.robot, self.gate
        return encode_state(RobotState(
            utime=int(robot.time * 1e6), sequence=self._sequence, last_command_sequence=gate.last_sequence,
            last_command_utime=gate.last_utime, position=robot.joint_positions(), velocity=robot.joint_velocities(),
            effort=robot.joint_efforts(), fault_flags=int(gate.fault_flags), **vars(gate.counters)))


def _wire(command) -> bytes:
    """A bridge command as ``LcmRobotLink.send`` encodes it."""
    return encode_command(command.position, sequence=command.sequence, utime=command.utime,
                          enable=not command.hold, mode=MODE_HOLD if command.hold else MODE_POSITION)


def _command_period(commander: RobotCommander, sim: _SimulatedLcmRobot, action: np.ndarray, now: float,
                    period: float, state_every: int) -> str | None:
    """One command period: ``action`` into the commander's inbox, its command over the wire to the robot, the
    physics to the period's end with the state fed back every ``state_every`` steps; the inbox's refusal, if any."""
    rejection = commander.submit_action(action, now)
    command = commander.cycle(now)
    if command is not None:
        sim.receive(_wire(command), now)
    while sim.robot.time < now + period - 1e-9:
        sim.control_step(sim.robot.time)
        if sim.steps % state_every == 0:
            commander.update_measured(decode_state(sim.state_packet()), sim.robot.time)
    return rejection


def _take_over(commander: RobotCommander, sim: _SimulatedLcmRobot, rest: np.ndarray, period: float,
               state_every: int) -> None:
    """Command ``rest`` until the commander tracks (its approach after the start-up hold is over). The
    robot's clock runs on; the trial starts from wherever it then is."""
    start = sim.robot.time
    while commander.phase != Phase.TRACKING:
        now = sim.robot.time
        if now - start > PRE_ROLL_MAX_S:
            raise RuntimeError(f"the bridge did not take the robot over within {PRE_ROLL_MAX_S} s "
                               f"(phase {commander.phase.name}); faults: {commander.faults(now)}")
        _command_period(commander, sim, rest, now, period, state_every)


def run_trial(policy, task: str, seed: int, settings: RolloutSettings = RolloutSettings(),
              keep_images: bool = False) -> TrialResult:
    """One seeded closed-loop trial of ``policy`` (``train.TrainedPolicy`` or anything with ``reset``,
    ``size`` and ``act(image, state)``); returns the scene's success value at the end."""
    started = time.process_time()
    episode = start_episode(task, seed, EpisodeSettings(
        operator="task", scene_variation=settings.scene_variation, fps=settings.fps,
        image_width=settings.image_width, image_height=settings.image_height))
    robot = episode.robot
    config, bridge = load_robot_config(), load_bridge_settings()
    commander = RobotCommander.from_settings(Mode.REAL, bridge, config.lcm.command_rate_hz)
    sim = _SimulatedLcmRobot(robot, config.controller)
    state_every = max(1, round(config.controller.control_rate_hz / config.controller.state_rate_hz))
    policy.reset()
    height, width = policy.size.image_height, policy.size.image_width
    duration_s = episode.duration_s * settings.horizon_factor
    period = 1.0 / config.lcm.command_rate_hz
    images, actions_rejected = [], 0
    previous = newest = None
    frame_started = 0.0
    if settings.command_mode not in ("hold", "interpolate"):
        raise ValueError(f"command_mode must be 'hold' or 'interpolate', got {settings.command_mode!r}")
    names = robot.task.object_names()
    start_positions = {name: robot.data.body(name).xpos.round(4).tolist() for name in names}
    try:
        commander.update_measured(decode_state(sim.state_packet()), robot.time)
        _take_over(commander, sim, episode.pipeline.neutral_action(), period, state_every)
        origin = next_frame_s = robot.time
        for tick in range(int(round(duration_s * config.lcm.command_rate_hz))):
            now = origin + tick * period
            if now + 1e-9 >= next_frame_s:
                next_frame_s += 1.0 / settings.fps
                image = policy_image(robot.render(), height, width)
                if keep_images:
                    images.append(image)
                previous, newest = newest, policy.act(image, robot.joint_positions())
                frame_started = now
                if previous is None or settings.command_mode == "hold":
                    previous = newest
            fraction = min(1.0, (now - frame_started) * settings.fps)
            if _command_period(commander, sim, previous + fraction * (newest - previous), now, period, state_every):
                actions_rejected += 1
        success = robot.task.success(robot.model, robot.data)
        return TrialResult(task, seed, bool(success), duration_s, int(round(duration_s * settings.fps)),
                           time.process_time() - started, sim.rejected, actions_rejected, robot.objects_off_table(),
                           start_positions, {name: robot.data.body(name).xpos.round(4).tolist() for name in names},
                           np.stack(images) if keep_images else None)
    finally:
        robot.close()


def evaluation_seeds(task: str, trials: int, base_seed: int = EVAL_SEED) -> list[int]:
    """The seeds of ``trials`` evaluation scenes (the generator's seeding with another run seed)."""
    return [episode_seed(base_seed, task, i) for i in range(trials)]
