"""Packaged world-model checkpoints, one directory per config name (transformer/ + vae/ + MODEL_CARD.md)."""
