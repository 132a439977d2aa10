from glob import glob

from setuptools import find_packages, setup

PACKAGE = "rynn_world"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", sorted(glob("launch/*.py"))),
        (f"share/{PACKAGE}/config", sorted(glob("config/*.yaml"))),
    ],
    package_data={"rynn_world": ["checkpoints/*/*/*.json", "checkpoints/*/*/*.safetensors", "checkpoints/*/*.md"]},
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="Rynn Teleop maintainers",
    maintainer_email="maintainers@rynn-teleop.org",
    description="Action-conditioned video world model and its ROS 2 node for Rynn teleoperation.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "world_model_node = rynn_world.nodes.world_model_node:main",
            "operator_console = rynn_world.nodes.operator_console:main",
            "rynn_world_train_vae = rynn_world.training.train_vae:main",
            "rynn_world_train = rynn_world.training.train:main",
            "rynn_world_distill = rynn_world.training.distill:main",
            "rynn_world_evaluate = rynn_world.evaluation.evaluate:main",
            "generate_episodes = rynn_world.episodes.generate:main",
            "rynn_launch = rynn_world.launcher.cli:main",
            "rynn_demo = rynn_world.demo:main",
        ],
    },
)
