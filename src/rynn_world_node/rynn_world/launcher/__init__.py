"""Run the teleoperation graph (config/teleop_graph.yaml) with or without a ROS 2 install.

``graph`` resolves launch arguments into node specs; ``launch_ros_nodes`` turns them
into launch_ros ``Node`` arguments for ``ros2 launch``; ``node_command`` and
``supervisor`` run them as plain processes for the embedded launcher (``rynn_launch``,
``cli``).
"""
