"""The task operator's plans, through the real retarget chain: the hand reaches the object it plans to
take, closes only once it is there, and the whole stream is a function of the seed."""

from __future__ import annotations

import numpy as np
import pytest

from rynn_common.task_scenes import SceneObject, SceneState
from rynn_retarget.operator.synthetic import neutral_frame
from rynn_retarget.operator.task_operator import TaskOperator, arm_mappings, rest_hands
from rynn_retarget.operator.task_plan import (
    APPLE_GRASP_POINT,
    ARRIVE_S,
    BANANA_GRASP_POINT,
    TRIPOD_GRASP_POINT,
    OperatorStyle,
    axis_angle_matrix,
    hand_point,
    object_point,
    plan_task,
    rotation_vector,
    sample_style,
)
from rynn_retarget.pipeline import ARM_SLICES, RetargetPipeline


def scene(task: str) -> SceneState:
    """Objects where the simulator's scenes put them (middle of their sampled ranges)."""
    objects = {
        "dual_picking": [SceneObject("plate", np.array([0.40, 0.0, 0.006]), 0.0, np.array([0.11, 0.11, 0.006])),
                         SceneObject("apple", np.array([0.40, 0.04, 0.047]), 0.5, np.full(3, 0.035)),
                         SceneObject("banana", np.array([0.40, -0.04, 0.028]), 0.2, np.array([0.077, 0.024, 0.016]))],
        "block_pushing": [SceneObject("block", np.array([0.38, 0.2, 0.035]), 0.3, np.full(3, 0.035))],
        "bimanual_lifting": [SceneObject("plush", np.array([0.26, 0.0, 0.055]), 0.2, np.array([0.08, 0.065, 0.055])),
                             SceneObject("tray", np.array([0.54, 0.0, 0.0]), 0.0, np.array([0.11, 0.14, 0.02]))],
        "lid_placement": [SceneObject("box", np.array([0.43, -0.12, 0.0]), 0.1, np.array([0.08, 0.06, 0.05])),
                          SceneObject("lid", np.array([0.38, 0.14, 0.004]), -0.3, np.array([0.09, 0.07, 0.004]),
                                      grip_point=np.array([0.0, 0.0, 0.022]))],
    }[task]
    return SceneState(task, {o.name: o for o in objects})


@pytest.fixture(scope="module")
def pipeline():
    pipeline = RetargetPipeline()
    pipeline.calibrate(neutral_frame(3))
    return pipeline


def operator_for(pipeline, task: str, style: OperatorStyle, seed: int = 3) -> TaskOperator:
    return TaskOperator(plan_task(scene(task), rest_hands(pipeline), style), arm_mappings(pipeline), seed=seed)


def commanded_palm(operator: TaskOperator, side: str, t: float) -> np.ndarray:
    """Where the retarget pipeline commands the robot palm at ``t``, fed the operator's frames at 50 Hz."""
    pipeline = RetargetPipeline()
    pipeline.calibrate(neutral_frame(3))
    for now in np.arange(0.0, t + 1e-9, 0.02):
        pipeline.step(operator.frame_at(now), now)
    return pipeline.arms[side].palm_pose(pipeline.action[ARM_SLICES[side]])


@pytest.mark.parametrize(("task", "side", "obj", "point"), [
    ("dual_picking", "left", "apple", APPLE_GRASP_POINT),
    ("dual_picking", "right", "banana", BANANA_GRASP_POINT),
    ("lid_placement", "left", "lid", TRIPOD_GRASP_POINT),
    ("lid_placement", "right", "lid", TRIPOD_GRASP_POINT),
])
def test_the_commanded_hand_reaches_the_object_to_grasp(pipeline, task, side, obj, point):
    style = OperatorStyle(hand=side, aim_error=np.array([0.02, -0.02, 0.02]))
    operator = operator_for(pipeline, task, style)
    start, end = operator.plan.phase_times(side, "grasp")[0]
    palm = commanded_palm(operator, side, end)
    held = palm[:3, :3] @ hand_point(point, side) + palm[:3, 3]
    target = scene(task).object(obj)
    target = object_point(target, target.grip_point) if target.grip_point is not None else target.position  # the lid's knob
    assert np.linalg.norm(held - target) < 0.015  # the first aim was 3.5 cm off and got corrected


def test_the_squeezing_palms_of_the_lift_reach_the_plush_sides(pipeline):
    operator = operator_for(pipeline, "bimanual_lifting", OperatorStyle())
    _, end = operator.plan.phase_times("left", "grasp")[0]
    plush = scene("bimanual_lifting").object("plush")
    left = commanded_palm(operator, "left", end)[:3, 3]
    right = commanded_palm(operator, "right", end)[:3, 3]
    assert left[1] > plush.position[1] > right[1]
    assert left[1] - right[1] < 2 * plush.half_extents[1] + 0.02  # pressing in, not just touching
    assert abs(0.5 * (left[1] + right[1]) - plush.position[1]) < 0.01


def test_the_hand_closes_only_once_it_is_at_the_object(pipeline):
    operator = operator_for(pipeline, "dual_picking", OperatorStyle(hesitation_s=0.4))
    plan = operator.plan
    grasp_start, grasp_end = plan.phase_times("left", "grasp")[0]
    descend_end = plan.phase_times("left", "descend")[0][1]
    at_object = plan.hand_at("left", grasp_end).position
    preshape = plan.hand_at("left", descend_end).grip
    for t in np.arange(0.0, grasp_end, 0.02):
        key = plan.hand_at("left", t)
        if key.grip > preshape + 1e-9:
            assert t >= grasp_start and np.linalg.norm(key.position - at_object) < 1e-6
    assert plan.hand_at("left", grasp_end).grip >= preshape + 0.2  # closed on it
    assert grasp_start - descend_end == pytest.approx(ARRIVE_S + 0.4)  # the robot hand arrives, then the hesitation


@pytest.mark.parametrize("order", ["together", "left_first", "right_first"])
def test_dual_picking_takes_the_apple_first_and_picks_both(pipeline, order):
    """The right hand sets off once the apple is lifted (or, left first, once the left hand is back); both
    fruits are lifted, carried and released (picked, not pushed)."""
    plan = plan_task(scene("dual_picking"), rest_hands(pipeline), OperatorStyle(order=order))
    apple_lifted = plan.phase_times("left", "lift")[0][1]
    banana_approach = plan.phase_times("right", "approach")[0][0]
    assert banana_approach >= (plan.phase_times("left", "return")[0][1] if order == "left_first" else apple_lifted)
    for side in ("left", "right"):
        for phase in ("grasp", "lift", "carry", "release"):
            assert plan.phase_times(side, phase), (side, phase)
        start, end = plan.phase_times(side, "lift")[0]
        assert plan.hand_at(side, end).position[2] - plan.hand_at(side, start).position[2] == pytest.approx(0.10)


def test_a_plan_starts_and_ends_at_rest_and_every_phase_is_there(pipeline):
    rest = rest_hands(pipeline)
    for task in ("dual_picking", "block_pushing", "bimanual_lifting", "lid_placement"):
        plan = plan_task(scene(task), rest, sample_style(np.random.default_rng(5)))
        for side in ("left", "right"):
            for t in (0.0, plan.duration + 1.0):
                np.testing.assert_allclose(plan.hand_at(side, t).position, rest[side].position, atol=1e-9)
                assert plan.hand_at(side, t).grip == 0.0
        phases = {k.phase for keys in plan.tracks.values() for k in keys}
        assert {"approach", "release", "retreat", "return"} <= phases, task


def test_the_stream_is_a_function_of_the_seed_and_styles_differ(pipeline):
    style = sample_style(np.random.default_rng(11))
    first, again = operator_for(pipeline, "bimanual_lifting", style), operator_for(pipeline, "bimanual_lifting", style)
    other = operator_for(pipeline, "bimanual_lifting", style, seed=4)
    a, b, c = first.frame_at(2.5), again.frame_at(2.5), other.frame_at(2.5)
    np.testing.assert_array_equal(a.trackers["left_wrist"], b.trackers["left_wrist"])
    np.testing.assert_array_equal(a.right_hand.points, b.right_hand.points)
    wrist = lambda f: np.linalg.inv(f.trackers["chest"]) @ f.trackers["left_wrist"]  # noqa: E731
    wander = np.linalg.norm(wrist(a)[:3, 3] - wrist(c)[:3, 3])
    assert 0.0 < wander < 0.01  # human noise: millimetres, different per seed
    styles = [sample_style(np.random.default_rng(seed)) for seed in range(20)]
    assert len({round(s.speed, 3) for s in styles}) == 20 and {s.hand for s in styles} == {"left", "right"}
    assert {s.order for s in styles} == {"together", "left_first", "right_first"}


def test_an_unknown_task_or_missing_object_is_a_clear_error(pipeline):
    with pytest.raises(ValueError, match="no task plan"):
        plan_task(SceneState("juggling", {}), rest_hands(pipeline), OperatorStyle())
    with pytest.raises(ValueError, match="has no object"):
        plan_task(SceneState("dual_picking", {}), rest_hands(pipeline), OperatorStyle())


def test_the_wrist_mapping_inverts_the_retarget_chain(pipeline):
    operator = operator_for(pipeline, "block_pushing", OperatorStyle())
    operator.noise.wander_m = operator.noise.tremor_m = operator.noise.wander_rad = 0.0
    for t in (0.0, 1.7, 3.1):
        frame = operator.frame_at(t)
        target, _ = pipeline.arm_target("left", frame.trackers)
        mapping = operator.mappings["left"]
        palm = target @ np.linalg.inv(mapping.palm_to_ee)
        key = operator.plan.hand_at("left", t)
        np.testing.assert_allclose(palm[:3, 3], key.position, atol=1e-9)
        np.testing.assert_allclose(palm[:3, :3], key.rotation, atol=1e-9)


def test_rotation_vector_inverts_axis_angle_also_at_zero_and_half_turns():
    for vector in ([0.3, -1.0, 2.0], [np.pi, 0.0, 0.0], [0.0, np.pi - 1e-8, 0.0], [1e-8, 0.0, 0.0], [0.0, 0.0, 0.0]):
        rotation = axis_angle_matrix(np.array(vector))
        back = rotation_vector(rotation)
        assert np.all(np.isfinite(back))
        np.testing.assert_allclose(axis_angle_matrix(back), rotation, atol=1e-7)
    nearly_identity = axis_angle_matrix(np.array([0.4, 0.1, -0.2])) @ axis_angle_matrix(np.array([-0.4, -0.1, 0.2]))
    np.testing.assert_allclose(rotation_vector(nearly_identity), 0.0, atol=1e-9)
