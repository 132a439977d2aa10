"""Point the ROS 2 wheels' exported CMake include paths at this interpreter.

The message wheels on PyPI were built in a manylinux container and their
``*__rosidl_generator_pyExport.cmake`` files name that machine's Python and
NumPy include directories. A colcon build of our own interface package links
against those targets, so the paths must exist here. Idempotent: rerun after
reinstalling any message wheel.
"""

from __future__ import annotations

import re
import sys
import sysconfig
from pathlib import Path

import numpy

FOREIGN_PATHS = re.compile(r'INTERFACE_INCLUDE_DIRECTORIES "([^"]*)"')


def local_include_dirs() -> str:
    return f"{sysconfig.get_paths()['include']};{numpy.get_include()}"


def fix(prefix: Path) -> int:
    """Rewrite every export file under ``prefix/share``; return how many changed."""
    wanted = f'INTERFACE_INCLUDE_DIRECTORIES "{local_include_dirs()}"'
    changed = 0
    for path in prefix.glob("share/*/cmake/*__rosidl_generator_pyExport.cmake"):
        text = path.read_text()
        new = FOREIGN_PATHS.sub(
            lambda m: wanted if "include/python" in m.group(1) else m.group(0), text
        )
        if new != text:
            path.write_text(new)
            changed += 1
    return changed


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix)
    print(f"fix_ros_wheel_cmake: rewrote {fix(root)} CMake export file(s) under {root}/share")
