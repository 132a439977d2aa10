"""QoS profiles that publishers and subscribers in several packages must agree on, one
definition each: the latched profile for state a late joiner must still get (``/rynn/mode``,
``/robot_description``, ``/tf_static``; a durability mismatch silently loses the message), and
``/tf``'s (tf2_ros' broadcaster and listener profile)."""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
