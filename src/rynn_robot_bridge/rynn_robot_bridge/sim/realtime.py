"""The simulated robot behind the real LCM protocol, paced to the wall clock (ROS-free).

Three threads, like the real robot's controller box: an LCM receiver
(commands -> command gate), the 500 Hz control loop (watchdog, servo
targets, one physics step, state publication), and a camera loop that copies
the joint state and renders at its own rate, so a slow renderer never stalls
the controller. MuJoCo releases the GIL while it renders, so a frame costs the
control loop CPU time (which the renderer's threads compete for), never the
interpreter lock.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

import lcm
import mujoco
import numpy as np

from rynn_robot_bridge.config import RobotConfig
from rynn_robot_bridge.lcm_protocol import MalformedPacket, RobotState, decode_command, encode_state, now_utime
from rynn_robot_bridge.robot_safety import CommandGate
from rynn_robot_bridge.sim.headless_gl import RendererUnavailable
from rynn_robot_bridge.sim.simulator import HeadCameraView, SimulatedRobot

LOG = logging.getLogger("rynn_robot_bridge.sim")
MAX_CATCH_UP_STEPS = 10  # behind by more than this: drop the backlog instead of racing


@dataclass
class LoopStats:
    steps: int = 0
    overruns: int = 0  # control cycles dropped because the loop fell behind the wall clock
    frames: int = 0
    skipped_frames: int = 0  # frames due while nobody wanted them (no subscriber): not rendered
    longest_cycle_gap_s: float = 0.0  # worst wall time between two control cycles, i.e. the state stream's longest silence


FrameCallback = Callable[[np.ndarray, float], None]  # (rgb HxWx3 uint8, wall-clock capture time [s])
FrameWanted = Callable[[], bool]  # asked when a frame is due; False: nobody would receive it, so skip the render


class RealtimeSimRobot:
    """Owns the simulator, the command gate and the LCM endpoint; ``start()``/``stop()``."""

    def __init__(self, config: RobotConfig, robot: SimulatedRobot, on_frame: FrameCallback | None = None,
                 frame_wanted: FrameWanted = lambda: True):
        self.config = config
        self.robot = robot
        self.on_frame = on_frame
        self.frame_wanted = frame_wanted
        controller = config.controller
        self.gate = CommandGate(
            robot.limits.lower,
            robot.limits.upper,
            robot.limits.velocity,
            watchdog_timeout_s=controller.watchdog_timeout_ms / 1000.0,
            max_sequence_gap=controller.max_sequence_gap,
            limit_tolerance=controller.joint_limit_tolerance_rad,
        )
        self.stats = LoopStats()
        self.render_error: str | None = None
        self._lcm = lcm.LCM(config.lcm.url)
        self._lcm.subscribe(config.lcm.command_channel, self._on_command)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._render_period = 1.0 / config.sim.render_rate_hz if config.sim.render_rate_hz > 0 else 0.0
        self._render_wake = threading.Event()  # a new render rate takes effect now, not after the old period
        self._threads: list[threading.Thread] = []
        self._state_sequence = 0
        self._state_every = max(1, round(controller.control_rate_hz / controller.state_rate_hz))
        self._snapshot = (robot.data.qpos.copy(), robot.data.time)

    def start(self) -> None:
        for target, name in ((self._receive_loop, "lcm_rx"), (self._control_loop, "control"), (self._camera_loop, "camera")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def set_render_rate(self, rate_hz: float) -> None:
        """Render at ``rate_hz`` from now on (the first frame at the new rate is due at once when it is
        faster), e.g. only the occasional anchor frame while the world model drives the camera."""
        if rate_hz <= 0:
            raise ValueError(f"render rate must be > 0 Hz, got {rate_hz}")
        self._render_period = 1.0 / rate_hz
        self._render_wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._render_wake.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def _on_command(self, channel: str, data: bytes) -> None:
        now = time.monotonic()
        try:
            command = decode_command(data)
        except MalformedPacket as exc:
            with self._lock:
                self.gate.reject_malformed()
                count = self.gate.counters.rejected_malformed
            _log_counted(f"dropped malformed packet on {channel}: {exc}", count)
            return
        with self._lock:
            fault = self.gate.submit(command, now)
            if fault:
                count = getattr(self.gate.counters, f"rejected_{fault.name.lower()}")
        if fault:
            _log_counted(f"rejected command seq={command.sequence}: {fault.name}", count)

    def _receive_loop(self) -> None:
        while not self._stop.is_set():
            self._lcm.handle_timeout(50)

    def _control_loop(self) -> None:
        period = self.robot.timestep
        next_tick = last_cycle = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now < next_tick:
                time.sleep(next_tick - now)
                continue
            behind = int((now - next_tick) / period)
            if behind > MAX_CATCH_UP_STEPS:
                self.stats.overruns += behind
                next_tick += behind * period
            now = time.monotonic()
            self.stats.longest_cycle_gap_s = max(self.stats.longest_cycle_gap_s, now - last_cycle)
            last_cycle = now
            self._control_cycle(now)
            next_tick += period

    def _control_cycle(self, now: float) -> None:
        robot = self.robot
        with self._lock:
            self.gate.update(now)
            target, velocity = self.gate.joint_targets(robot.joint_positions())
            robot.set_joint_targets(target, velocity)
            robot.step()
            self.stats.steps += 1
            self._snapshot = (robot.data.qpos.copy(), robot.data.time)
            publish = self.stats.steps % self._state_every == 0
            if publish:
                packet = encode_state(self._state_message())
        if publish:
            self._lcm.publish(self.config.lcm.state_channel, packet)

    def _state_message(self) -> RobotState:
        counters = self.gate.counters
        self._state_sequence += 1
        return RobotState(
            utime=now_utime(),
            sequence=self._state_sequence,
            last_command_sequence=self.gate.last_sequence,
            last_command_utime=self.gate.last_utime,
            position=self.robot.joint_positions(),
            velocity=self.robot.joint_velocities(),
            effort=self.robot.joint_efforts(),
            fault_flags=int(self.gate.fault_flags),
            **vars(counters),
        )

    def _camera_loop(self) -> None:
        """Render from a copy of the state, in this thread's own GL context, when a frame is due and wanted."""
        if self.on_frame is None or self.config.sim.render_rate_hz <= 0:
            return
        try:
            view = HeadCameraView(self.robot.model, self.robot.camera, self.config.sim.multisamples)
        except RendererUnavailable as exc:
            self.render_error = str(exc)
            LOG.error("camera disabled, the robot keeps running: %s", exc)
            return
        data = mujoco.MjData(self.robot.model)
        next_frame = rendered_at = time.monotonic()
        try:
            while not self._stop.is_set():
                delay = next_frame - time.monotonic()
                if delay > 0:
                    if self._render_wake.wait(delay):
                        self._render_wake.clear()
                        next_frame = min(next_frame, rendered_at + self._render_period)
                    continue
                period = self._render_period
                next_frame = max(next_frame + period, time.monotonic() - period)
                if not self.frame_wanted():
                    self.stats.skipped_frames += 1
                    continue
                with self._lock:
                    qpos, sim_time = self._snapshot
                captured, rendered_at = time.time(), time.monotonic()
                data.qpos[:] = qpos
                data.time = sim_time
                mujoco.mj_kinematics(self.robot.model, data)
                mujoco.mj_camlight(self.robot.model, data)
                self.on_frame(view.render(data), captured)
                self.stats.frames += 1
        finally:
            view.close()


def _log_counted(message: str, count: int) -> None:
    """Log the first few drops and then every hundredth, so a flood of bad packets cannot flood the log."""
    if count <= 5 or count % 100 == 0:
        LOG.warning("%s (total %d)", message, count)
