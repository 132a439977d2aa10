"""QoS profiles that publishers and subscribers in several packages must agree on, one definition each.

``LATCHED_QOS``: state a late joiner must still get (``/rynn/mode``, ``/robot_description``,
``/tf_static``); a durability mismatch silently loses the message.

``RECORDED_STREAM_QOS``: publishers of the recorded high-rate streams (``/rynn/action``,
``/joint_states``, ``/tf``, the operator skeleton). A reliable subscriber whose transport
dropped messages while the machine starved it (the recorder) is repaired from the writer's
history; with 10 (50 ms at 200 Hz) they were lost instead (a 5-minute soak on the loaded
machine: /joint_states 393, /rynn/action 154; at 1000 in a 10-minute soak, none).

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
consumer that fell behind wants the newest samples, not a backlog (the recorder keeps its own 500).
For now also the glove node's recorded ``/rynn/operator/hands`` writer, which by the rule above
should take ``RECORDED_STREAM_QOS`` (not switched: it could not be tested under load).
"""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RECORDED_STREAM_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)  # 5 s at 200 Hz
RECORDED_CAMERA_QOS = QoSProfile(depth=30, reliability=ReliabilityPolicy.RELIABLE)
STATUS_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)  # 10 s at 10 Hz
TF_QOS = RECORDED_STREAM_QOS
LIVE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
