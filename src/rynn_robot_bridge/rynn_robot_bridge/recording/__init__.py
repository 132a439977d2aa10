"""Episode recording without ROS: rosbag2 MCAP bags per episode, metadata, counters, crash recovery."""
