"""ROS 2 node shells of rynn_retarget: parameters, topics and timers over the ROS-free core."""
