"""QoS profiles that publishers and subscribers in several packages must agree on, one definition each.

``LATCHED_QOS``: state a late joiner must still get (``/rynn/mode``, ``/robot_description``,
``/tf_static``); a durability mismatch silently loses the message.

``RECORDED_STREAM_QOS``: publishers of the recorded high-rate streams (``/rynn/action``,
``/joint_states``, ``/tf``, the operator skeleton, the glove node's ``/rynn/operator/hands``). A
reliable subscriber whose transport dropped messages while the machine starved it (the recorder) is
repaired from the writer's history; with 10 (50 ms at 200 Hz) they were lost instead (a 5-minute soak
on the loaded machine: /joint_states 393, /rynn/action 154; at 1000 in a 10-minute soak, none). The
glove writer kept ``LIVE_QOS``'s 10 until a 30-minute soak lost 957 hands samples so.

``RECORDED_CAMERA_QOS``: the canonical camera's publisher (image and camera info). The same repair
for a starved recorder, bounded in memory: 1 s at 30 FPS (~27 MB of 640x480 rgb8). Live viewers keep
a depth-1 reader, so they still see only the newest frame. At depth 2 a 4-minute soak lost 64 images.

``STATUS_QOS``: /rynn/status publishers (recorded; 10 was lost under starvation as above).

``TF_QOS``: ``/tf``'s publishers (tracker, robot_state_publisher) and the retarget node's
listener; ``/tf`` is a recorded stream.

``LIVE_QOS``: every other endpoint: live readers of the graph's streams (the retarget node's glove
input, the world model's skeleton input, robot_state_publisher's /joint_states, the demo's camera
and status readers) and writers that are not recorded (``/diagnostics``, the debug topics).
Reliable, because these readers use every sample (the retargeter solves each glove sample, the
world model's frame clock resamples every skeleton); 10 deep (rclpy's usual depth), because a live
consumer that fell behind wants the newest samples, not a backlog (the recorder keeps its own 2000).

``LATEST_ONLY_QOS``: readers that use only the newest sample, where a lost one is replaced by the
next: the world model's real-camera input (it anchors on the newest real frame it holds), the
console's joint-state and skeleton views (each drawn from the newest at the view's own rate). Best
effort, depth 1: nothing is resent or queued for a reader that would drop it anyway.

``ACTION_INPUT_QOS``: the bridge's ``/rynn/action`` input. Best effort, so any publisher matches. The
newest command wins, but every sample must be seen: the bridge takes all that are queued at once,
rejects (counts) the bad ones and counts the valid older ones as superseded. At depth 1 a sample its
executor had not taken yet was replaced by the next one unseen (no lost event): of 17 NaN actions
injected in a 30-minute soak beside the 200 Hz stream the bridge counted 12. 200 deep, a second of
the 200 Hz stream: an executor held up longer than that has long let the actions go stale (the
watchdog holds the robot after 100 ms).

``CAMERA_VIEW_QOS``: readers of camera images that show only the newest frame but report the stream's
rate: the console's camera views. Reliable: a best-effort subscription lost ~40% of 640x480 frames
(``benchmarks/bench_bridge.py``), and a best-effort camera publisher does not match (the bridge
reports it as a fault). Depth 16, a second of the digital stream: the model publishes a block's 4
frames a quarter of a model period apart, and the console, niced, is woken late on a busy machine.
At depth 1 it kept about one frame a block (caption 4-7 FPS while an independent subscriber counted
15.6, 2026-12-04), at depth 4 7.8-9.2 vs 14.4; at 16 it took every frame (1095 in 72 s at 15.0).
It still decodes only the newest.

``RELAY_IMAGE_QOS``: the bridge's camera sources (image and camera info), which it relays to the
canonical topics. Reliable as above; 4 deep, one world-model block: the world model publishes a
block's 4 frames a quarter of a model period (16 ms) apart, and a depth-1 relay whose executor woke
later than that on the loaded machine forwarded only the newest of them (default graph: the world
model published 9.9 FPS, the canonical topic carried 5.5). A relay that fell further behind still
skips to the newest 4 (at most ~250 ms of digital frames, ~130 ms of the real camera's).

``CAMERA_DRIVER_QOS``: the camera writers that stand in for realsense2_camera
(``realsense_camera_node``, the simulated robot's camera): reliable like realsense2_camera's
default, so reliable and best-effort readers both match; 5 deep (the depth the node was written
with).

``DIGITAL_CAMERA_QOS``: the world model's digital camera image writer. Reliable as the real camera;
2 deep: with ``CAMERA_DRIVER_QOS``'s 5, ``test_world_model_node.py``'s frame checks failed twice under
load 47 and passed at 2 (cause not found). Its camera info writer takes ``RECORDED_CAMERA_QOS``: at 2
deep an info that a busy reader had not acknowledged was overwritten, so an image arrived without its
info (that test's CameraInfo check, failed in a full run); the info is small, 30 deep costs nothing.

``REPORTS_QOS``: the console's readers of ``/tf``, ``/rynn/status`` and ``/diagnostics``. Several
writers share each topic and each message carries its own writer's (or frame's) state, so a newer
message does not replace an older one: reliable, and 20 deep so that one writer's burst does not
push another's out before the console reads it.

``RECORDER_STREAM_QOS``, ``RECORDER_IMAGE_QOS``: the recorder's readers (latched topics take
``LATCHED_QOS``). Reliable, and deep enough for the backlog a recorder the machine starves must catch
up on: when a KEEP_LAST queue is full DDS replaces the oldest message unseen (no lost event); a
5-minute soak on the loaded machine lost 853 actions so. Images 60 (~2 s of 30 FPS 640x480 frames),
everything else 2000 (10 s of 200 Hz actions and joint states).
"""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RECORDED_STREAM_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)  # 5 s at 200 Hz
RECORDED_CAMERA_QOS = QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE)
STATUS_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)  # 10 s at 10 Hz
TF_QOS = RECORDED_STREAM_QOS
LIVE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATEST_ONLY_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
ACTION_INPUT_QOS = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)  # 1 s at 200 Hz
CAMERA_VIEW_QOS = QoSProfile(depth=16, reliability=ReliabilityPolicy.RELIABLE)
RELAY_IMAGE_QOS = QoSProfile(depth=4, reliability=ReliabilityPolicy.RELIABLE)
CAMERA_DRIVER_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
DIGITAL_CAMERA_QOS = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
REPORTS_QOS = QoSProfile(depth=20, reliability=ReliabilityPolicy.RELIABLE)
RECORDER_STREAM_QOS = QoSProfile(depth=2000, reliability=ReliabilityPolicy.RELIABLE)
RECORDER_IMAGE_QOS = QoSProfile(depth=60, reliability=ReliabilityPolicy.RELIABLE)
