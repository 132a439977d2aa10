"""Held-out evaluation of world-model checkpoints: metrics, baselines, action grounding, videos.

Entry point: `python -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_*.yaml`.
"""
