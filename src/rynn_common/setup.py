from glob import glob

from setuptools import find_packages, setup

PACKAGE = "rynn_common"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    package_data={PACKAGE: ["description/*.urdf", "fastdds_profile.xml"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/urdf", glob(f"{PACKAGE}/description/*.urdf")),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="Rynn Teleop maintainers",
    maintainer_email="maintainers@rynn-teleop.org",
    description="Shared robot description, action layout, message conversions and node runner of Rynn teleoperation.",
    license="Apache-2.0",
)
