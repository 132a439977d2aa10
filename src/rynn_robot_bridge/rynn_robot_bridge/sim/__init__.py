"""The simulated TIANJI M6 stand-in (MuJoCo), ROS- and LCM-free.

Importing this package chooses the headless OpenGL backend first, because
MuJoCo fixes it at import time.
"""

from rynn_robot_bridge.sim.headless_gl import configure_headless_gl

configure_headless_gl()
