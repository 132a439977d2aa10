"""ROS 2 node shells of rynn_world over the ROS-free world-model core."""
