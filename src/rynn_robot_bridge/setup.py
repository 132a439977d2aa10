from glob import glob

from setuptools import find_packages, setup

PACKAGE = "rynn_robot_bridge"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/config", sorted(glob("config/*.yaml"))),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="Rynn Teleop maintainers",
    maintainer_email="maintainers@rynn-teleop.org",
    description="Real/digital robot bridge, LCM protocol, simulated robot and recording for Rynn teleoperation.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "bridge_node = rynn_robot_bridge.nodes.bridge_node:main",
            "sim_robot_node = rynn_robot_bridge.nodes.sim_robot_node:main",
            "realsense_camera_node = rynn_robot_bridge.nodes.realsense_camera_node:main",
            "robot_state_publisher_node = rynn_robot_bridge.nodes.robot_state_publisher_node:main",
            "recorder_node = rynn_robot_bridge.nodes.recorder_node:main",
            "recover_episodes = rynn_robot_bridge.recording.recover:main",
            "export_lerobot = rynn_robot_bridge.export.lerobot:main",
            "export_clips = rynn_robot_bridge.export.clips:main",
        ],
    },
)
