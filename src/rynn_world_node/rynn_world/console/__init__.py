"""The operator console: a browser view of the session (cameras, 3D robot, mode, recording, health).

``streams``, ``frames`` and ``board`` are ROS-free and unit-tested without DDS; ``page`` is the
viser page; ``rynn_world.nodes.operator_console`` is the thin rclpy shell that feeds them.
"""
