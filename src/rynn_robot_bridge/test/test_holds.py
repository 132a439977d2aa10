"""The hold record tells a pick from a push: an object counts as held only while it touches the robot and
nothing else, measured on real MuJoCo contacts."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from rynn_robot_bridge.sim.holds import HoldWatch, held_bodies, robot_bodies

# A fixed "palm" (a body without joints: part of the robot) and a free ball per case: one resting on the palm
# in the air, one on the floor, one on the floor that another robot part presses down.
SCENE = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="palm" pos="0 0 0.3"><geom type="box" size="0.05 0.05 0.01"/></body>
    <body name="press" pos="0.5 0 0.078"><geom type="box" size="0.05 0.05 0.01"/></body>
    <body name="on_palm" pos="0 0 0.345"><freejoint/><geom type="sphere" size="0.035" mass="0.15"/></body>
    <body name="on_floor" pos="-0.5 0 0.035"><freejoint/><geom type="sphere" size="0.035" mass="0.15"/></body>
    <body name="pressed_to_floor" pos="0.5 0 0.035"><freejoint/><geom type="sphere" size="0.035" mass="0.15"/></body>
  </worldbody>
</mujoco>
"""
BALLS = ("on_palm", "on_floor", "pressed_to_floor")


@pytest.fixture
def scene():
    model = mujoco.MjModel.from_xml_string(SCENE)
    return model, mujoco.MjData(model)


def test_robot_bodies_are_those_fixed_below_the_world(scene):
    model, _ = scene
    robot = robot_bodies(model)
    assert robot[model.body("palm").id] and robot[model.body("press").id]
    assert not robot[0]  # the world's own geoms: floor, table
    assert not any(robot[model.body(name).id] for name in BALLS)  # free objects


def test_only_an_object_touching_nothing_but_the_robot_is_held(scene):
    model, data = scene
    watch = HoldWatch(model, {"on_palm": 0.30, "on_floor": 0.035, "pressed_to_floor": 0.035})
    steps = 250
    for _ in range(steps):
        mujoco.mj_step(model, data)
        watch.update(data, model.opt.timestep)
    assert data.body("on_palm").xpos[2] > 0.33  # it stayed on the palm
    assert watch.held_s["on_palm"] == pytest.approx(steps * model.opt.timestep, abs=0.02)
    assert watch.raised_m["on_palm"] == pytest.approx(0.045, abs=0.005)  # above the start height it was given
    assert watch.held_s["on_floor"] == 0.0 and watch.held_s["pressed_to_floor"] == 0.0
    touching = {frozenset(model.body(int(b)).name for b in model.geom_bodyid[pair]) for pair in data.contact.geom}
    assert frozenset({"pressed_to_floor", "press"}) in touching  # the robot, and the floor too
    watch.reset()
    assert watch.summary()["on_palm"] == {"held_s": 0.0, "raised_m": 0.0}


def test_held_bodies_from_contact_pairs():
    robot = np.array([False, True, True, False, False])  # world, two robot links, two objects
    contacts = np.array([[1, 3], [3, 2],  # object 3: robot links only -> held
                         [4, 0], [2, 4]])  # object 4: the robot and the world -> not held
    np.testing.assert_array_equal(held_bodies(contacts, np.array([3, 4]), robot), [True, False])
    np.testing.assert_array_equal(held_bodies(np.zeros((0, 2), dtype=int), np.array([3]), robot), [False])
