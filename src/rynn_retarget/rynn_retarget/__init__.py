"""rynn_retarget."""
