"""Task plans: where an operator puts each robot hand, and when, to do one of the four scenes' tasks.

A human teleoperator aims at what the camera shows: the robot hand relative to the objects. A plan
is therefore a list of keyframes of robot palm poses (base_link) and hand closures, made from the
scene state at episode start (object poses, no feedback afterwards), with the operator's habits
sampled per episode (``OperatorStyle``: speed, hand used, approach direction, hesitation, a first
aim that is off and corrected). ``rynn_retarget.operator.task_operator`` turns a plan into tracker
and glove frames through the inverse of the calibrated retarget chain.

ROS-free and simulator-free: the scene arrives as plain ``SceneState`` data (``rynn_common.task_scenes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rynn_common.task_scenes import ZONE_Y, SceneObject, SceneState
from rynn_retarget.operator.synthetic import smoothstep

SIDES = ("left", "right")


@dataclass(frozen=True)
class HandKey:
    """One hand at a keyframe: palm pose in base_link and closure (0 open, 1 closed)."""

    position: np.ndarray
    rotation: np.ndarray
    grip: float = 0.0
    grip_kind: str = "power"


@dataclass(frozen=True)
class Keyframe:
    t: float  # s since the episode start: the hand arrives here at ``t``
    phase: str  # what the operator does on the way to this keyframe
    hand: HandKey


@dataclass(frozen=True)
class OperatorStyle:
    """One episode's operator habits, sampled by ``sample_style``."""

    speed: float = 1.0  # > 1 moves faster (durations divided by it)
    hand: str = "left"  # the hand for the task's one-handed parts
    order: str = "together"  # two-object tasks: "together", "left_first", "right_first"
    approach_yaw: float = 0.0  # rad, turn of the approach direction around the vertical
    hesitation_s: float = 0.0  # pause before closing the hand
    aim_error: np.ndarray = field(default_factory=lambda: np.zeros(3))  # first aim off by this, then corrected
    start_delay_s: float = 0.3  # reaction time before the first movement


def sample_style(rng: np.random.Generator) -> OperatorStyle:
    """A plausible operator: speed x0.8-1.25, 0-0.6 s hesitation, up to 2.5 cm first-aim error."""
    error = rng.normal(0.0, 0.012, size=3)
    error[2] = abs(error[2])  # a first aim errs high rather than into the object
    return OperatorStyle(
        speed=float(rng.uniform(0.8, 1.25)),
        hand=str(rng.choice(SIDES)),
        order=str(rng.choice(("together", "left_first", "right_first"))),
        approach_yaw=float(rng.uniform(-0.3, 0.3)),
        hesitation_s=float(rng.choice([0.0, rng.uniform(0.15, 0.6)])),
        aim_error=np.clip(error, -0.025, 0.025),
        start_delay_s=float(rng.uniform(0.15, 0.5)),
    )


class TaskPlan:
    """One keyframe track per hand joined by minimum-jerk moves; ``hand_at(side, t)`` is the intent at ``t``."""

    def __init__(self, tracks: dict):
        for side in SIDES:
            keys = tracks.get(side)
            if not keys or any(b.t <= a.t for a, b in zip(keys, keys[1:])):
                raise ValueError(f"the {side} hand needs keyframes at strictly increasing times")
        self.tracks = tracks

    @property
    def duration(self) -> float:
        return max(keys[-1].t for keys in self.tracks.values())

    def _segment(self, side: str, t: float) -> tuple[Keyframe, Keyframe, float]:
        keys = self.tracks[side]
        for before, after in zip(keys, keys[1:]):
            if t < after.t:
                return before, after, smoothstep((t - before.t) / (after.t - before.t))
        return keys[-1], keys[-1], 0.0

    def phase_at(self, side: str, t: float) -> str:
        """The phase of the move under way (``done`` after the hand's last keyframe)."""
        before, after, _ = self._segment(side, t)
        return "done" if before is after else after.phase

    def hand_at(self, side: str, t: float) -> HandKey:
        before, after, s = self._segment(side, max(t, 0.0))
        a, b = before.hand, after.hand
        if s == 0.0:
            return a
        rotation = a.rotation @ axis_angle_matrix(s * rotation_vector(a.rotation.T @ b.rotation))
        kind = b.grip_kind if b.grip >= a.grip else a.grip_kind
        return HandKey((1 - s) * a.position + s * b.position, rotation, (1 - s) * a.grip + s * b.grip, kind)

    def phase_times(self, side: str, phase: str) -> list[tuple[float, float]]:
        """(start, end) of every move of ``phase`` in the hand's track."""
        keys = self.tracks[side]
        return [(a.t, b.t) for a, b in zip(keys, keys[1:]) if b.phase == phase]


class _Tracks:
    """Builds the two hand tracks. ``move`` gives the named hands their next key after a duration
    (hands move on their own clocks); ``together`` first brings both hands' clocks level."""

    def __init__(self, rest: dict, style: OperatorStyle):
        self.style = style
        self.keys = {side: [Keyframe(0.0, "start", rest[side])] for side in SIDES}

    def now(self, side: str) -> float:
        return self.keys[side][-1].t

    def move(self, duration: float, phase: str, **hands: HandKey) -> None:
        for side, key in hands.items():
            self.keys[side].append(Keyframe(self.now(side) + duration / self.style.speed, phase, key))

    def hold(self, duration: float, phase: str, *sides: str) -> None:
        """Keep the hands still (a pause does not speed up with the operator)."""
        if duration > 0:
            for side in sides or SIDES:
                self.keys[side].append(Keyframe(self.now(side) + duration, phase, self.keys[side][-1].hand))

    def wait_until(self, t: float, phase: str, side: str) -> None:
        """Keep the hand still until ``t`` (nothing if its clock is already there)."""
        if self.now(side) < t:
            self.keys[side].append(Keyframe(t, phase, self.keys[side][-1].hand))

    def together(self) -> None:
        latest = max(self.now(side) for side in SIDES)
        for side in SIDES:
            if self.now(side) < latest:
                self.keys[side].append(Keyframe(latest, "wait", self.keys[side][-1].hand))

    def plan(self) -> TaskPlan:
        return TaskPlan(self.keys)


# --- hand orientations (palm frame: x out of the palm, z along the fingers) -------------------


def palm_rotation(palm_normal, fingers) -> np.ndarray:
    """Palm frame whose x axis is ``palm_normal`` and z axis ``fingers`` (made orthogonal to it)."""
    x = np.asarray(palm_normal, float) / np.linalg.norm(palm_normal)
    z = np.asarray(fingers, float) - x * (x @ fingers)
    z /= np.linalg.norm(z)
    return np.column_stack([x, np.cross(z, x), z])


def palm_down(heading: float, pitch: float = 0.0) -> np.ndarray:
    """Palm facing the table, fingers pointing along ``heading`` (rad about z), tipped down by ``pitch``."""
    forward = np.array([np.cos(heading), np.sin(heading), 0.0])
    fingers = np.cos(pitch) * forward + np.array([0.0, 0.0, -np.sin(pitch)])
    normal = -np.sin(pitch) * forward + np.array([0.0, 0.0, -np.cos(pitch)])
    return palm_rotation(normal, fingers)


def palm_sideways(facing_y: float, heading: float, pitch: float) -> np.ndarray:
    """Palm facing +y (``facing_y`` = 1) or -y (-1), fingers along ``heading`` tipped down by ``pitch``."""
    forward = np.array([np.cos(pitch) * np.cos(heading), np.cos(pitch) * np.sin(heading), -np.sin(pitch)])
    return palm_rotation(np.array([0.0, facing_y, 0.0]), forward)


def _yaw_matrix(angle: float) -> np.ndarray:
    return axis_angle_matrix(np.array([0.0, 0.0, angle]))


def axis_angle_matrix(vector: np.ndarray) -> np.ndarray:
    """Rodrigues: the rotation by |vector| rad about ``vector``."""
    angle = float(np.linalg.norm(vector))
    if angle < 1e-12:
        return np.eye(3)
    x, y, z = vector / angle
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def rotation_vector(rotation: np.ndarray) -> np.ndarray:
    """Inverse of ``axis_angle_matrix`` (angle in [0, pi]); the angle from atan2, so a rotation that is
    the identity up to rounding gives zero, not a 0/0."""
    skew = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0], rotation[1, 0] - rotation[0, 1]])
    sine, cosine = np.linalg.norm(skew) / 2.0, (np.trace(rotation) - 1.0) / 2.0
    angle = float(np.arctan2(sine, cosine))
    if sine > 1e-6:
        return angle * skew / (2.0 * sine)
    if cosine > 0.0:
        return np.zeros(3)
    # a half turn: the skew part vanishes, the axis comes from the symmetric part
    axis = np.sqrt(np.maximum((np.diag(rotation) + 1.0) / 2.0, 0.0))
    axis[1] = np.copysign(axis[1], rotation[0, 1] + rotation[1, 0])
    axis[2] = np.copysign(axis[2], rotation[0, 2] + rotation[2, 0])
    return angle * axis / np.linalg.norm(axis)


def object_point(scene_object: SceneObject, local) -> np.ndarray:
    """A point given in the object frame, in base_link."""
    return scene_object.position + _yaw_matrix(scene_object.yaw) @ np.asarray(local, dtype=float)


def hand_point(point, side: str) -> np.ndarray:
    """A palm-frame point given for the right hand, on ``side``'s hand (the left is the mirror image in y)."""
    return np.asarray(point, dtype=float) * (1.0, -1.0 if side == "left" else 1.0, 1.0)


def grasp_centre(rotation: np.ndarray, target: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Palm origin that puts the point ``offset`` (palm frame) of the closed hand on ``target``."""
    return np.asarray(target, float) - rotation @ offset


# Where a grasped object sits in the palm frame of the WUJI hand (right hand; mirrored in y for the
# left), from the retargeted hand's keypoints: the tripod's thumb, index and middle tips surround
# (0.08, 0.022, 0.108) as they stop on a knob (closure ~0.8).
TRIPOD_GRASP_POINT = np.array([0.08, 0.022, 0.108])
# Hand headings and pitches (rad) each task's grasps use: found reachable by the arm IK over the
# scenes' sampled object ranges (test_task_operator checks the commanded hands get there).
# A fruit is taken under the middle of the fingers, fingers tipped down a little, and the hand closed hard: the
# closing fingers wrap round it. Held 9 cm along the fingers and 5 cm out (tipped 0.5), where the fingertips curl
# to, they landed on top of the apple and squirted it out towards the wrist, off the plate or the table (the
# apple was then rolled off the plate with a cupped hand, never picked), and pressed the thin banana into the
# plate until the simulation blew up. Single-fruit runs of 6-12 seeds picked the apple 11/12 times at 12.5 cm
# along the fingers and the banana 7/8 at 13.5 cm (9 cm, tipped 0.5: 3/12 and 1/6).
APPLE_GRASP_POINT, BANANA_GRASP_POINT = np.array([0.04, 0.005, 0.125]), np.array([0.04, 0.005, 0.135])
FRUIT_PITCH, FRUIT_GRIP, FRUIT_PRESHAPE = 0.3, 0.9, 0.2
# The left hand takes the apple with its fingers pointing inwards: fingers forward, its thumb swept over the banana
# as it closed and dragged it 1-2 cm, enough for the right hand's grasp, planned at the start, to miss it.
APPLE_HEADING = -0.8
PUSH_CONTACT, PUSH_PITCH = 0.11, 0.9  # the fingers' point that pushes (m along them), fingers tipped down
PUSH_TOE_IN = 0.15  # rad: the left palm faces a little backwards; the pushed block drifts forward otherwise
LEFT_PUSH_REACH_Y = 0.026  # the y the left hand's pushing fingers reach, palm facing right (asked -0.005: 0.026)
FINGERTIPS = np.array([-0.015, 0.0, 0.185])  # the middle of the open robot hand's fingertip row (palm frame)
ACROSS_PITCH = 0.6  # fingers pointing right, tipped down: the left palm reaches y ~ 0.01 at 15 cm height
LIFT_PITCH, LIFT_CONTACT = 0.6, 0.09  # fingers nearly level: the palms reach x 0.22-0.44 m (1.1: 0.30-0.42)
LIFT_SQUEEZE = 0.035  # m each palm presses into the plush
LIFT_HEIGHT = 0.10  # m the plush is lifted: its bottom clears the tray wall (0.04 m) by 5 cm
ARRIVE_S = 0.3  # s the operator waits, once the hand is there, for the robot hand to arrive (it lags ~2-3 cm)
CARRY_ABOVE = 0.06  # m above the place point the carried object arrives, then is lowered
# The lid is held by its knob in a tripod, thumb against index and middle (a thumb-index pinch let it swing
# 20-40 deg about the line between the two fingertips as it came off the table), closed fully (the tips
# stop on the knob, 2.2-2.6 cm across) from a pre-shape already around it (5.8 cm apart), so the closing
# fingers do not sweep the knob away; lifted and carried slowly (in 0.6 s / 1.3 s the hanging lid swung
# 10-15 deg and the palm lagged the plan by up to 6 cm).
LID_PITCH, LID_GRIP, LID_PRESHAPE, LID_GRIP_KIND = 0.3, 1.0, 0.6, "tripod"
LID_LIFT_S, LID_CARRY_S = 1.0, 2.0
LID_HEADINGS = {"left": (0.0, -0.9), "right": (0.9, 0.0)}  # (pick, place) headings: lid left, box right


# --- the four tasks -------------------------------------------------------------------------


def plan_task(scene: SceneState, rest: dict, style: OperatorStyle) -> TaskPlan:
    """The plan for ``scene.task`` starting and ending at ``rest`` (side -> HandKey, the neutral hands)."""
    planners = {
        "dual_picking": _plan_dual_picking,
        "block_pushing": _plan_block_pushing,
        "bimanual_lifting": _plan_bimanual_lifting,
        "lid_placement": _plan_lid_placement,
    }
    if scene.task not in planners:
        raise ValueError(f"no task plan for scene {scene.task!r}; choose one of {sorted(planners)}")
    tracks = _Tracks(rest, style)
    tracks.hold(style.start_delay_s, "react")
    planners[scene.task](tracks, scene, rest, style)
    tracks.together()
    return tracks.plan()


def _pick_and_place(tracks: _Tracks, side: str, target: np.ndarray, rotation: np.ndarray, grasp_point,
                    place: np.ndarray, place_rotation: np.ndarray, style: OperatorStyle, grip: float,
                    kind: str = "power", lift: float = 0.10, clearance: float = 0.08, preshape: float = 0.25,
                    lift_s: float = 0.6, carry_s: float = 1.3) -> float:
    """Approach above with the hand pre-shaped, correct the first aim, descend, (hesitate), close, lift,
    carry, lower, release, retreat. Returns when the object is lifted."""
    up = np.array([0.0, 0.0, 1.0])
    grasp_point = hand_point(grasp_point, side)
    grasp = grasp_centre(rotation, target, grasp_point)
    tracks.move(1.0, "approach", **{side: HandKey(grasp + clearance * up + style.aim_error, rotation, preshape, kind)})
    tracks.move(0.35, "correct", **{side: HandKey(grasp + clearance * up, rotation, preshape, kind)})
    tracks.move(0.6, "descend", **{side: HandKey(grasp, rotation, preshape, kind)})
    tracks.hold(ARRIVE_S, "arrive", side)
    tracks.hold(style.hesitation_s, "hesitate", side)
    tracks.move(0.5, "grasp", **{side: HandKey(grasp, rotation, grip, kind)})
    tracks.hold(0.15, "grasp", side)
    tracks.move(lift_s, "lift", **{side: HandKey(grasp + lift * up, rotation, grip, kind)})
    lifted = tracks.now(side)
    drop = grasp_centre(place_rotation, place, grasp_point)
    tracks.move(carry_s, "carry", **{side: HandKey(drop + CARRY_ABOVE * up, place_rotation, grip, kind)})
    tracks.move(0.6, "place", **{side: HandKey(drop, place_rotation, grip, kind)})
    tracks.move(0.4, "release", **{side: HandKey(drop, place_rotation, 0.0, kind)})
    tracks.move(0.6, "retreat", **{side: HandKey(drop + clearance * up, place_rotation, 0.0, kind)})
    return lifted


def _plan_dual_picking(tracks: _Tracks, scene: SceneState, rest: dict, style: OperatorStyle) -> None:
    """The left hand picks the apple and sets it on the table left of the plate, then the right hand picks
    the banana and sets it down to the right (the paper's order). The apple goes first: the fingers across
    the banana reach over the apple's place. An operator who goes "left_first" starts the right hand once
    the left is back; the others as soon as the apple is lifted clear."""
    plate = scene.object("plate")
    apple, banana = scene.object("apple"), scene.object("banana")
    apple_rotation = palm_down(APPLE_HEADING + 0.2 * style.approach_yaw, pitch=FRUIT_PITCH)
    apple_place = np.array([plate.position[0] + 0.02, plate.position[1] + 0.21, apple.half_extents[2]])
    apple_lifted = _pick_and_place(tracks, "left", apple.position, apple_rotation, APPLE_GRASP_POINT, apple_place,
                                   apple_rotation, style, grip=FRUIT_GRIP, preshape=FRUIT_PRESHAPE)
    tracks.move(0.8, "return", left=rest["left"])
    tracks.wait_until(tracks.now("left") if style.order == "left_first" else apple_lifted, "wait", "right")
    # Fingers across the banana, pointing inwards (the right hand's comfortable side), within reach.
    across = np.clip((banana.yaw + np.pi / 2) % np.pi, 0.8, 1.3)
    banana_rotation = palm_down(across + 0.3 * style.approach_yaw, pitch=FRUIT_PITCH)
    # set down 17 cm right of the plate's centre, fingers turned 0.5 rad forwards on the way: 21 cm away, still
    # across, the palm had to be out of the right arm's reach
    banana_place = np.array([plate.position[0] + 0.02, plate.position[1] - 0.17, banana.half_extents[2]])
    place_rotation = palm_down(across - 0.5 + 0.3 * style.approach_yaw, pitch=FRUIT_PITCH)
    _pick_and_place(tracks, "right", banana.position, banana_rotation, BANANA_GRASP_POINT, banana_place,
                    place_rotation, style, grip=FRUIT_GRIP, preshape=FRUIT_PRESHAPE)
    tracks.move(0.8, "return", right=rest["right"])


def _plan_block_pushing(tracks: _Tracks, scene: SceneState, rest: dict, style: OperatorStyle) -> None:
    """The left hand pushes the block right in two strokes, as a person reaching across a table would: palm
    facing right, from the left zone to the middle (as far as the palm reaches); then, fingers pointing
    right and tipped down, with the row of fingertips (a 10 cm edge across the block's face, whatever the
    block drifted forwards) on into the right zone."""
    block = scene.object("block")
    half, up = block.half_extents, np.array([0.0, 0.0, 1.0])
    contact = np.array([0.0, 0.0, PUSH_CONTACT])  # on the fingers, palm frame
    left = _yaw_matrix(-PUSH_TOE_IN) @ palm_sideways(-1.0, heading=0.15 * style.approach_yaw, pitch=PUSH_PITCH)

    def at(rotation, point, y, height=block.position[2]):  # palm that puts ``point`` of the hand at x, ``y``, height
        return grasp_centre(rotation, np.array([block.position[0], y, height]), point)

    start = at(left, contact, block.position[1] + half[1] + 0.03)
    tracks.move(1.0, "approach", left=HandKey(start + 0.08 * up + style.aim_error, left))
    tracks.move(0.35, "correct", left=HandKey(start + 0.08 * up, left))
    tracks.move(0.6, "descend", left=HandKey(start, left))
    tracks.hold(style.hesitation_s, "hesitate", "left")
    pushed = at(left, contact, LEFT_PUSH_REACH_Y)
    tracks.move(1.2, "push", left=HandKey(pushed, left))
    away = pushed + np.array([0.0, 0.04, 0.0])
    tracks.move(0.4, "release", left=HandKey(away, left))
    tracks.move(0.5, "retreat", left=HandKey(away + 0.10 * up, left))
    # second stroke: the block's left face is now near LEFT_PUSH_REACH_Y
    across = palm_down(-np.pi / 2 + 0.15 * style.approach_yaw, pitch=ACROSS_PITCH)
    tips = hand_point(FINGERTIPS, "left")
    height = 1.2 * half[2]  # the fingertips a little above the block's middle
    behind = at(across, tips, LEFT_PUSH_REACH_Y + 0.04, height)
    tracks.move(0.9, "approach", left=HandKey(behind + 0.08 * up, across))
    tracks.move(0.5, "descend", left=HandKey(behind, across))
    tracks.hold(ARRIVE_S, "arrive", "left")
    goal = at(across, tips, ZONE_Y["right"] + half[1], height)  # the block's centre on the right zone's
    tracks.move(1.4, "push", left=HandKey(goal, across))
    tracks.move(0.4, "release", left=HandKey(goal + np.array([0.0, 0.03, 0.02]), across))
    tracks.move(0.5, "retreat", left=HandKey(goal + np.array([0.0, 0.03, 0.12]), across))
    tracks.move(0.9, "return", left=rest["left"])


def _plan_bimanual_lifting(tracks: _Tracks, scene: SceneState, rest: dict, style: OperatorStyle) -> None:
    """Both palms squeeze the plush from its sides, lift it over the tray wall and set it into the tray."""
    plush, tray = scene.object("plush"), scene.object("tray")
    half = plush.half_extents
    contact = np.array([0.0, 0.0, LIFT_CONTACT])
    width = abs(np.sin(plush.yaw)) * half[0] + abs(np.cos(plush.yaw)) * half[1]  # half width along y
    rotations = {side: palm_sideways(-sign, heading=0.1 * style.approach_yaw, pitch=LIFT_PITCH)
                 for side, sign in (("left", 1.0), ("right", -1.0))}

    def both(offset_y: float, centre: np.ndarray, grip: float) -> dict:
        return {side: HandKey(grasp_centre(rotations[side], centre + np.array([0.0, sign * offset_y, 0.0]), contact),
                              rotations[side], grip) for side, sign in (("left", 1.0), ("right", -1.0))}

    up = np.array([0.0, 0.0, 1.0])
    centre = plush.position + 0.3 * half[2] * up  # hold it above its middle
    open_width, held = width + 0.05, width - LIFT_SQUEEZE
    into = np.array([tray.position[0], tray.position[1], centre[2] + 0.03])
    tracks.move(1.2, "approach", **both(open_width, centre + 0.08 * up + style.aim_error, 0.0))
    tracks.move(0.7, "descend", **both(open_width, centre, 0.0))
    tracks.hold(style.hesitation_s, "hesitate")
    tracks.move(0.6, "grasp", **both(held, centre, 0.3))
    tracks.move(0.8, "lift", **both(held, centre + LIFT_HEIGHT * up, 0.3))
    tracks.move(1.2, "carry", **both(held, into + LIFT_HEIGHT * up, 0.3))
    tracks.move(0.7, "place", **both(held, into, 0.3))
    tracks.move(0.5, "release", **both(open_width, into, 0.0))
    tracks.move(0.6, "retreat", **both(open_width, into + 0.15 * up, 0.0))
    tracks.move(0.8, "return", **rest)


def _plan_lid_placement(tracks: _Tracks, scene: SceneState, rest: dict, style: OperatorStyle) -> None:
    """One hand takes the lid's knob (thumb against index and middle), carries the lid over the box, turns
    it to the box's yaw and sets it on.

    Each hand has headings it reaches the lid (left of the robot) and the box (right) with; the turn the
    lid needs (either way round: it is symmetric) is shared out between the pick and the place headings."""
    lid, box = scene.object("lid"), scene.object("box")
    if lid.grip_point is None:
        raise ValueError("the lid has no knob to hold it by (grip_point)")
    side = style.hand
    pick_heading, place_heading = LID_HEADINGS[side]
    misfit = (box.yaw - lid.yaw - (place_heading - pick_heading) + np.pi / 2) % np.pi - np.pi / 2
    pick_heading += 0.3 * style.approach_yaw - misfit / 2
    place_heading += 0.3 * style.approach_yaw + misfit / 2
    rotation, place_rotation = palm_down(pick_heading, pitch=LID_PITCH), palm_down(place_heading, pitch=LID_PITCH)
    knob = object_point(lid, lid.grip_point)
    on_box = box.position + np.array([0.0, 0.0, 2 * box.half_extents[2] + lid.half_extents[2] + lid.grip_point[2] + 0.005])
    _pick_and_place(tracks, side, knob, rotation, TRIPOD_GRASP_POINT, on_box, place_rotation, style,
                    grip=LID_GRIP, kind=LID_GRIP_KIND, lift=0.15, preshape=LID_PRESHAPE, lift_s=LID_LIFT_S,
                    carry_s=LID_CARRY_S)
    tracks.move(0.8, "return", **{side: rest[side]})
