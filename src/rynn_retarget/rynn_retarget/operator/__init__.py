"""Operator input sources behind one interface (``OperatorSource``)."""

from rynn_retarget.operator.frame import TRACKER_NAMES, HandSkeleton, OperatorFrame, OperatorSource

__all__ = ["TRACKER_NAMES", "HandSkeleton", "OperatorFrame", "OperatorSource"]
