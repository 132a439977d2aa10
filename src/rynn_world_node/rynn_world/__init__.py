"""rynn_world."""
