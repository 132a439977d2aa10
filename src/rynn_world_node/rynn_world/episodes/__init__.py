"""Paired (robot video, operator skeleton, 54-D action) episodes: the scripted operator drives the simulated
robot through the real retargeting. Here, not in rynn_robot_bridge, because it needs both sides; the bag
writer and the directory layout it writes with stay in ``rynn_robot_bridge.episodes``."""
