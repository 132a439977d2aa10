"""rynn_common: what every Rynn package shares (robot description, action layout, message
conversions, node runner, pipeline statistics, configuration files). Depends only on
rynn_teleop_msgs and ROS message packages, so the other packages can all depend on it."""
