"""The operator console's settings; the node declares each as a parameter (rynn_common.node_settings)."""

from __future__ import annotations

from dataclasses import dataclass

from rynn_world.console.board import RECORDER_SOURCE


@dataclass(frozen=True)
class ConsoleSettings:
    host: str = "127.0.0.1"  # a loopback address, unless access_token_file is set (rynn_world.console.access)
    access_token_file: str = ""  # a file (mode 600) holding the token every control then requires
    port: int = 8080  # the next free one if taken
    max_width: int = 640  # the large camera's JPEG width
    other_max_width: int = 320
    max_fps: float = 15.0  # JPEGs to the browser at most this often
    jpeg_quality: int = 70
    urdf_path: str = ""  # empty: the packaged rynn_bimanual.urdf
    recorder_node: str = RECORDER_SOURCE  # whose `task` parameter the console sets
    calibrate_service: str = "/retarget_node/calibrate"
    camera_stale_after_s: float = 2.0
    service_timeout_s: float = 10.0
    # False: the 3D view shows no robots or trackers. A browser without a GPU draws the two robots'
    # meshes in software on every pose update (5 a second), most of its CPU on a small machine.
    robot_view: bool = True
    skeleton_overlay: bool = False
    operator_frame: str = "operator_world"  # the tracker node's frames.world
