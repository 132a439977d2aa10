"""Training of the world model: VAE, stage 1/2 flow matching, causal warm-up and DMD distillation.

Entry points: `python -m rynn_world.training.train_vae`, `.train` (stages 1 and 2) and `.distill`
(warm-up + DMD), each with `--config src/rynn_world_node/config/train_*.yaml`, run through `accelerate launch` for GPUs.
"""
