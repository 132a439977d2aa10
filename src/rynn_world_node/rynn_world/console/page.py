"""The console's web page, built with viser (its web client ships in the wheel: works offline).

Layout: the canonical camera large in a panel docked left with the other source small below
it; the 3D view (robot measured, robot commanded as a ghost, operator trackers) in the middle;
the controls and health on the right. The 3D view is in the robot's base_link, framed on the
robot at start; the operator's trackers appear where they drive it (rynn_world.console.targets).
Every element is server-wide, so several browsers see the same page; a control's callback receives
only the request, never a browser handle, so a closed browser leaves nothing behind.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import viser
import viser.transforms as vtf
from viser.extras import ViserUrdf

from rynn_common.ros_names import IMAGE_TOPIC

GHOST_RGBA = (0.25, 0.55, 1.0, 0.35)  # the commanded robot: translucent blue over the measured one
CAMERA_PANEL_WIDTH = 660
TRACKER_AXES_M = 0.08
ROTATION_DEADBAND_RAD = np.deg2rad(0.5)  # a joint frame moving less is not re-sent to the browsers
VIEW_DIRECTION = np.array([1.0, -0.75, 0.55])  # the start view: from the robot's front right, above [base_link]
VIEW_DISTANCE = 2.6  # x the robot's radius (its link origins around their centre), at least MIN_VIEW_DISTANCE_M
MIN_VIEW_DISTANCE_M = 1.2


def task_line(task: str) -> str:
    """What the page says the next episode's task is."""
    return f"Task for the next episode: {html.escape(task)}" if task else "Task for the next episode: (none)"


@dataclass(frozen=True)
class ConsoleActions:
    """What the page's controls ask for; called on the web server's thread, must not block."""

    set_mode: Callable[[str], None]  # "real" | "digital"
    record: Callable[[str, str], None]  # action ("start" | "stop" | "discard"), task text
    calibrate: Callable[[], None]
    overlay: Callable[[bool], None]
    clients_changed: Callable[[int], None]  # number of connected browsers
    # (viser event, control label) -> whether that browser may use the control (rynn_world.console.access)
    allowed: Callable[[object, str], bool] = lambda _event, _control: True


class DeadbandUrdf(ViserUrdf):
    """viser's URDF view, posed cheaply: only the joint frames that turned visibly are re-sent.

    Each frame update is a message to every browser, and yourdfpy's scene-graph kinematics costs
    milliseconds per pose; the synthetic operator moves all 54 joints a little all the time, so
    two robots posed through ``update_cfg`` cost more CPU than the rest of the console. A
    revolute joint's frame is its fixed origin turned about its axis by the joint angle, so
    the pose is one quaternion product per moved joint (fixed and revolute joints only:
    what rynn_bimanual.urdf has; another joint type gets viser's own ``update_cfg``).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        joints = self._joint_map_values
        self._exact = all(j.type in ("fixed", "revolute", "continuous") and j.mimic is None for j in joints)
        names = list(self._urdf.actuated_joint_names)
        self._joint_index = np.array([names.index(j.name) if j.type != "fixed" else -1 for j in joints])
        origins = np.stack([np.eye(4) if j.origin is None else j.origin for j in joints])
        self._origin_wxyz = np.stack([vtf.SO3.from_matrix(o[:3, :3]).wxyz for o in origins])
        self._origin_xyz = origins[:, :3, 3] * self._scale
        axes = np.stack([np.array([1.0, 0.0, 0.0]) if j.axis is None else np.asarray(j.axis, float) for j in joints])
        self._axes = axes / np.linalg.norm(axes, axis=1, keepdims=True)
        self._sent_angle = np.full(len(joints), np.nan)  # nothing sent yet

    def update_cfg(self, configuration: np.ndarray) -> None:
        if not self._exact:
            super().update_cfg(configuration)
            return
        angles = np.where(self._joint_index >= 0, np.asarray(configuration)[np.maximum(self._joint_index, 0)], 0.0)
        moved = ~(np.abs(angles - self._sent_angle) < ROTATION_DEADBAND_RAD)  # NaN (never sent) counts as moved
        for i in np.flatnonzero(moved):
            half = 0.5 * angles[i]
            turn = np.concatenate([[np.cos(half)], np.sin(half) * self._axes[i]])
            self._joint_frames[i].wxyz = _quaternion_product(self._origin_wxyz[i], turn)
            if np.isnan(self._sent_angle[i]):
                self._joint_frames[i].position = self._origin_xyz[i]  # a revolute joint's origin never moves
        self._sent_angle[moved] = angles[moved]


def robot_view_pose(robot: ViserUrdf) -> tuple[np.ndarray, np.ndarray]:
    """(look-at point, camera position) that frame the robot as its description poses it at zero:
    the centre of its link origins, seen from its front right at a distance that fits them all."""
    urdf = robot._urdf
    origins = np.array([urdf.get_transform(link)[:3, 3] for link in urdf.link_map])
    centre = (origins.min(axis=0) + origins.max(axis=0)) / 2.0
    radius = float(np.linalg.norm(origins - centre, axis=1).max())
    direction = VIEW_DIRECTION / np.linalg.norm(VIEW_DIRECTION)
    return centre, centre + direction * max(VIEW_DISTANCE * radius, MIN_VIEW_DISTANCE_M)


def _quaternion_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b for wxyz quaternions."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array([aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw])


def _placeholder(width: int, height: int) -> np.ndarray:
    return np.full((height, width, 3), 48, dtype=np.uint8)


class ConsolePage:
    """Owns the viser server and every element on the page."""

    def __init__(self, host: str, port: int, urdf_path: Path, actions: ConsoleActions, jpeg_quality: int,
                 overlay_on: bool, robot_view: bool = True):
        self.jpeg_quality = jpeg_quality
        self.server = viser.ViserServer(host=host, port=port, label="Rynn operator console", verbose=False)
        self.server.gui.configure_theme(control_width="large", show_share_button=False, show_logo=False)
        self.server.gui.main_panel.dock_right()  # a sidebar of its own: it does not cover the 3D view of the robot
        self.server.gui.set_panel_label("Rynn operator console")
        self._build_cameras(overlay_on, actions)
        self._build_controls(actions)
        self._build_scene(urdf_path, robot_view)
        self._trackers: dict[str, viser.FrameHandle] = {}
        self.server.on_client_connect(lambda _client: actions.clients_changed(len(self.server.get_clients())))
        self.server.on_client_disconnect(lambda _client: actions.clients_changed(len(self.server.get_clients())))

    @property
    def port(self) -> int:
        return self.server.get_port()

    # --- building ----------------------------------------------------------------------------

    def _build_cameras(self, overlay_on: bool, actions: ConsoleActions) -> None:
        gui = self.server.gui
        cameras = gui.add_panel()
        with cameras.add_tab("Camera (canonical)"):
            self.camera_caption = gui.add_markdown("waiting for frames")  # above: seen without scrolling
            self.camera = gui.add_image(_placeholder(640, 480), label=IMAGE_TOPIC,
                                        format="jpeg", jpeg_quality=self.jpeg_quality)
            overlay = gui.add_checkbox("Operator skeleton overlay", initial_value=overlay_on)
            overlay.on_update(lambda event: actions.overlay(bool(overlay.value)) if actions.allowed(event, "Overlay")
                              else setattr(overlay, "value", not overlay.value))  # refused: set back
        cameras.dock_left()
        cameras.set_width(CAMERA_PANEL_WIDTH)
        other = gui.add_panel()
        with other.add_tab("Other source"):
            self.other_camera = gui.add_image(_placeholder(320, 240), label="", format="jpeg",
                                              jpeg_quality=self.jpeg_quality)
            self.other_caption = gui.add_markdown("waiting for the mode")
        other.dock_below(cameras)

    def _build_controls(self, actions: ConsoleActions) -> None:
        gui = self.server.gui
        self.banner = gui.add_html("", visible=False)
        with gui.add_folder("Mode"):
            self.mode_text = gui.add_markdown("Mode: waiting for /rynn/mode")
            real = gui.add_button("Real", color="green")
            digital = gui.add_button("Digital", color="violet")
            real.on_click(lambda event: actions.allowed(event, "Real") and actions.set_mode("real"))
            digital.on_click(lambda event: actions.allowed(event, "Digital") and actions.set_mode("digital"))
            self.mode_answer = gui.add_markdown("")
        with gui.add_folder("Recording"):
            self.task = gui.add_text("Task", initial_value="")
            # The task as this server has it: the browser sends typing throttled (50 ms, later when starved),
            # so what Start records is what this line shows, not what the input box shows.
            task_echo = gui.add_markdown(task_line(""))
            accepted_task = [""]  # what the task was before a refused edit

            def on_task(event) -> None:
                if not actions.allowed(event, "Task"):
                    self.task.value = accepted_task[0]
                    return
                accepted_task[0] = self.task.value
                task_echo.content = task_line(self.task.value)

            self.task.on_update(on_task)
            buttons = {action: gui.add_button(action.capitalize(), color=color)
                       for action, color in (("start", "red"), ("stop", "gray"), ("discard", "orange"))}
            for action, button in buttons.items():
                button.on_click(lambda event, a=action: actions.allowed(event, a.capitalize())
                                and actions.record(a, self.task.value))
            self.record_answer = gui.add_markdown("")
            self.recording = gui.add_markdown("**Not recording.**")
        with gui.add_folder("Calibration"):
            calibrate = gui.add_button("Calibrate operator pose")
            calibrate.on_click(lambda event: actions.allowed(event, "Calibrate") and actions.calibrate())
            self.calibrate_answer = gui.add_markdown("")
        with gui.add_folder("Health"):
            self.loop_rate = gui.add_markdown("")
            self.faults = gui.add_markdown("")
            self.timings = gui.add_markdown("")
            self.counters = gui.add_markdown("")

    def _build_scene(self, urdf_path: Path, robot_view: bool) -> None:
        scene = self.server.scene
        scene.add_grid("/grid", width=3.0, height=3.0, cell_size=0.25)
        if not robot_view:
            self.robot = self.ghost = None
            scene.add_label("/robot/off", "3D robot view off (operator_console robot_view:=false)", position=(0.0, 0.0, 0.8))
            return
        self.robot = DeadbandUrdf(self.server, urdf_path, root_node_name="/robot/measured")
        self.ghost = DeadbandUrdf(self.server, urdf_path, root_node_name="/robot/commanded", mesh_color_override=GHOST_RGBA)
        look_at, position = robot_view_pose(self.robot)
        self.server.initial_camera.look_at, self.server.initial_camera.position = look_at, position
        scene.add_frame("/targets", show_axes=False)  # base_link, as the robots

    @property
    def robot_view(self) -> bool:
        """Whether the 3D view shows the robots (the ``robot_view`` setting)."""
        return self.robot is not None

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The 3D robots' actuated joints (none with the robot view off)."""
        return tuple(self.robot.get_actuated_joint_names()) if self.robot is not None else ()

    # --- updates (any thread) ----------------------------------------------------------------

    def show_camera(self, rgb: np.ndarray) -> None:
        self.camera.image = rgb

    def show_other_camera(self, rgb: np.ndarray) -> None:
        self.other_camera.image = rgb

    def show_robot(self, measured: np.ndarray | None, commanded: np.ndarray | None) -> None:
        with self.server.atomic():
            if measured is not None:
                self.robot.update_cfg(measured)
            if commanded is not None:
                self.ghost.update_cfg(commanded)

    def show_targets(self, poses: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """label -> (position xyz, quaternion wxyz) in base_link: where the trackers drive the robot."""
        with self.server.atomic():
            for name, (xyz, wxyz) in poses.items():
                handle = self._trackers.get(name)
                if handle is None:
                    handle = self._trackers[name] = self.server.scene.add_frame(
                        f"/targets/{name}", axes_length=TRACKER_AXES_M, axes_radius=TRACKER_AXES_M / 10)
                    self.server.scene.add_label(f"/targets/{name}/label", name)
                handle.position, handle.wxyz = xyz, wxyz

    def show_banner(self, text: str) -> None:
        self.banner.visible = bool(text)
        self.banner.content = (
            f'<div style="background:#c62828;color:#fff;padding:8px;font-weight:bold">{html.escape(text)}</div>'
            if text else ""
        )

    def stop(self) -> None:
        self.server.stop()
