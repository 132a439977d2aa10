"""ROS-free core of the real/digital bridge: modes, camera routing, command limiting, safe transitions.

The node in ``rynn_robot_bridge.nodes.bridge_node`` only wires these to topics,
services and the LCM link, so every rule here is unit-tested without DDS.
"""
