"""The latched QoS profile: state a late joiner must still get (``/rynn/mode``,
``/robot_description``, ``/tf_static``), one definition so every publisher and
subscriber of such a topic match (a durability mismatch silently loses the message)."""

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
