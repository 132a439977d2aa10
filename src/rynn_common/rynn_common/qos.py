"""QoS profiles that publishers and subscribers in several packages must agree on, one definition each.

``LATCHED_QOS``: state a late joiner must still get (``/rynn/mode``, ``/robot_description``,
``/tf_static``); a durability mismatch silently loses the message.

``RECORDED_STREAM_QOS``: publishers of the recorded high-rate streams (``/rynn/action``,
``/joint_states``, ``/tf``, the operator skeleton). A reliable subscriber whose transport
dropped messages while the machine starved it (the recorder) is repaired from the writer's
history; with 10 (50 ms at 200 Hz) they were lost instead (a 5-minute soak on the loaded
machine: /joint_states 393, /rynn/action 154; at 1000 in a 10-minute soak, none).

``TF_QOS``: ``/tf``'s publishers (tracker, robot_state_publisher) and the retarget node's
listener; ``/tf`` is a recorded stream.
"""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RECORDED_STREAM_QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)  # 5 s at 200 Hz
TF_QOS = RECORDED_STREAM_QOS
