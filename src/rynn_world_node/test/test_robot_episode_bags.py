"""The training reader reads episode bags with the project's one typestore (``rynn_common.bag_types``) and
the camera's one Image decoder.

The reader once built its own typestore from ``Path(__file__).parents[3]``: the source tree's
rynn_teleop_msgs, a folder that does not exist once the package is installed (copied into
site-packages), so an installed reader knew none of the project's types. Bags the suite writes carry
their message definitions, which hid that; a bag without them (rosbag2 sqlite3 bags before Iron store
none) needs the typestore, found through the ament index as the recorder finds it.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from recorded_bags import drop_message_definitions
from rynn_common.description import CameraIntrinsics
from rynn_robot_bridge.episodes.bag_writer import EpisodeBagWriter
from rynn_world.data.robot_episodes import read_episode

SOURCES = Path(__file__).resolve().parents[2]  # src/
REPOSITORY = SOURCES.parent
PACKAGES = {"rynn_common": "rynn_common", "rynn_retarget": "rynn_retarget", "rynn_robot_bridge": "rynn_robot_bridge",
            "rynn_world": "rynn_world_node"}  # Python package -> its folder in src/
INTRINSICS = CameraIntrinsics(32, 24, 30.0, 30.0, 16.0, 12.0)
FRAMES = 3


def write_episode(episode_dir: Path, extra_image=None) -> Path:
    """A bag-only episode (no frames.npz, so the actions come from its RobotAction messages): frame k is
    all k, its action k; ``extra_image`` (an Image's fields) is written after them as an image as it came."""
    writer = EpisodeBagWriter(episode_dir / "bag", INTRINSICS)
    points = np.tile([0.0, 0.0, 0.5], (2, 21, 1))
    for k in range(FRAMES):
        stamp_ns = (k + 1) * 62_500_000
        writer.write_frame(np.full((24, 32, 3), k, np.uint8), stamp_ns)
        writer.write_skeleton(points, np.array([True, True]), np.full((2, 3), np.nan), stamp_ns)
        writer.write_action(np.full(54, float(k)), stamp_ns)
    if extra_image is not None:
        types = writer.store.types
        header = types["std_msgs/msg/Header"](stamp=types["builtin_interfaces/msg/Time"](sec=1, nanosec=0), frame_id="")
        image = types["sensor_msgs/msg/Image"](header=header, is_bigendian=0, **extra_image)
        writer.copy_message("image", writer.store.serialize_cdr(image, "sensor_msgs/msg/Image"), 10**9)
    writer.close({})
    return episode_dir


def install_copies(prefix: Path) -> Path:
    """The suite's Python packages copied (not linked) into ``prefix``'s site-packages, as colcon installs
    them without --symlink-install; returns that site-packages."""
    site = Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))
    for package, folder in PACKAGES.items():
        shutil.copytree(SOURCES / folder / package, site / package, ignore=shutil.ignore_patterns("__pycache__", "checkpoints"))
    return site


INSTALLED_READER = """
import sys
from pathlib import Path

from rynn_world.data import robot_episodes

assert Path(robot_episodes.__file__).is_relative_to(sys.argv[1]), robot_episodes.__file__
print(robot_episodes.read_episode(Path(sys.argv[2])).actions[:, 0].tolist())
"""


def test_an_installed_reader_reads_a_bag_without_message_definitions(tmp_path):
    episode = write_episode(tmp_path / "episode")
    drop_message_definitions(episode / "bag")
    with AnyReader([episode / "bag"], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        assert "rynn_teleop_msgs/msg/RobotAction" not in reader.typestore.types, "the bag still defines the type"
    site = install_copies(tmp_path / "prefix")
    # The ament index as the venv's .pth sets it (the installed share folders), nothing from the source tree.
    env = {k: v for k, v in os.environ.items() if k not in ("AMENT_PREFIX_PATH", "PYTHONPATH")} | {"PYTHONPATH": str(site)}
    result = subprocess.run([sys.executable, "-c", INSTALLED_READER, str(site), str(episode)], capture_output=True,
                            text=True, timeout=300, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == str([float(k) for k in range(FRAMES)])


BUILDS_A_TYPESTORE = re.compile(r"\b(get_typestore|get_types_from_msg|get_types_from_idl|register_types)\b")


def test_no_module_but_bag_types_builds_a_typestore():
    """Every package, benchmark and script reads and writes bags with ``rynn_common.bag_types.make_typestore``.
    The training reader registered rynn_teleop_msgs' definitions itself; the operator replay and
    bench_ab_fidelity read with a Jazzy-only typestore, which knows no BimanualSkeleton."""
    modules = [path for path in [*SOURCES.rglob("*.py"), *(REPOSITORY / "benchmarks").rglob("*.py"),
                                 *(REPOSITORY / "scripts").rglob("*.py"), *(REPOSITORY / "test" / "support").rglob("*.py")]
               if "test" not in path.relative_to(REPOSITORY).parts[2:-1]]  # not src/<package>/test/
    builders = sorted(str(path.relative_to(REPOSITORY)) for path in modules if BUILDS_A_TYPESTORE.search(path.read_text()))
    assert builders == ["src/rynn_common/rynn_common/bag_types.py"], builders


@pytest.mark.parametrize("image, error", [
    (dict(height=24, width=32, encoding="yuv422", step=64, data=np.zeros(24 * 64, np.uint8)),
     "32x24 yuv422 image: unsupported encoding 'yuv422'"),
    (dict(height=24, width=32, encoding="rgb8", step=93, data=np.zeros(24 * 93, np.uint8)),
     "32x24 rgb8 image: step 93 is shorter than a 32-pixel rgb8 row"),
    (dict(height=24, width=32, encoding="rgb8", step=96, data=np.zeros(23 * 96, np.uint8)),
     "32x24 rgb8 image: 2208 bytes of data for 24 rows of step 96"),
    (dict(height=0, width=0, encoding="rgb8", step=0, data=np.zeros(0, np.uint8)),
     "0x0 rgb8 image: empty image 0x0"),
])
def test_a_bad_image_in_a_bag_gets_the_camera_decoders_error(image, error, tmp_path):
    """Each bad image is refused with what is wrong with it: an encoding the decoder does not know, rows
    shorter than the pixels, data that is not ``height`` rows, an empty image. The reader's own decoder
    refused the first with another text and left the others to fail in NumPy ("cannot reshape array",
    "all input arrays must have the same shape")."""
    episode = write_episode(tmp_path / "episode", extra_image=image)
    with pytest.raises(ValueError, match=error):
        read_episode(episode)


def test_the_reader_reads_what_the_writer_wrote(tmp_path):
    episode = read_episode(write_episode(tmp_path / "episode"))
    assert episode.frames.shape == (FRAMES, 24, 32, 3) and episode.intrinsics == INTRINSICS
    assert [int(frame.max()) for frame in episode.frames] == list(range(FRAMES))
    assert episode.actions[:, 0].tolist() == list(range(FRAMES))
