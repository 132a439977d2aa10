"""Paired (robot video, operator skeleton, 54-D action) episodes from the simulated robot."""
