"""The Fast DDS profile every Rynn node process starts with, unless its user chose one.

Camera images (640x480 rgb8, 900 KiB) cross processes at 16-30 FPS: the bridge relays both cameras,
the recorder and the console read the canonical one. Fast DDS's default shared-memory segment
(512 KiB) cannot hold one, so they went over UDP in 64 KiB fragments, which a starved reader lost
(the recorder's "lost in transport" images) and which cost the writer more CPU. The packaged profile
(``fastdds_profile.xml``) gives shared memory 8 MiB segments; UDPv4 stays for other hosts. A reader
needs no profile: it maps the writer's segment, so a user's own subscriber gets the frames the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

PROFILE = Path(__file__).with_name("fastdds_profile.xml")
# Fast DDS 2.x (Jazzy) reads the first, 3.x (Kilted) the second.
PROFILE_VARIABLES = ("FASTRTPS_DEFAULT_PROFILES_FILE", "FASTDDS_DEFAULT_PROFILES_FILE")
FAST_DDS_RMW = ("rmw_fastrtps_cpp", "rmw_fastrtps_dynamic_cpp")


def uses_fast_dds(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether rclpy will make a Fast DDS participant (RMW_IMPLEMENTATION unset is Fast DDS, the default)."""
    return environ.get("RMW_IMPLEMENTATION", FAST_DDS_RMW[0]) in FAST_DDS_RMW


def use_packaged_profile(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Point Fast DDS at the packaged profile in ``environ`` (before rclpy creates a participant):
    not when another RMW is chosen, nor when a profile file or builtin-transport choice is already
    set (the user's wins). Whether it did."""
    if not uses_fast_dds(environ):
        return False
    if any(environ.get(name) for name in (*PROFILE_VARIABLES, "FASTDDS_BUILTIN_TRANSPORTS")):
        return False
    for name in PROFILE_VARIABLES:
        environ[name] = str(PROFILE)
    return True
