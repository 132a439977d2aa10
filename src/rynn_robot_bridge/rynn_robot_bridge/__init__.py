"""rynn_robot_bridge."""
