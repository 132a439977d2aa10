"""Kinematics (Pinocchio chains), arm IK and hand retargeting."""
