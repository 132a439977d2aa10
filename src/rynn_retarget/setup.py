from glob import glob

from setuptools import find_packages, setup

PACKAGE = "rynn_retarget"

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
    description="Operator inputs and retargeting for Rynn teleoperation.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "tracker_node = rynn_retarget.nodes.tracker_node:main",
            "glove_node = rynn_retarget.nodes.glove_node:main",
            "retarget_node = rynn_retarget.nodes.retarget_node:main",
        ],
    },
)
