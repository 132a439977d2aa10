"""Recorded episode bags -> training data: LeRobot v3 datasets and world-model clips (ROS-free, via rosbags)."""
