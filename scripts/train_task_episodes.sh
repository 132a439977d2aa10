#!/usr/bin/env bash
# The task-episode training run on top of the shipped embedded_cpu recipe (run scripts/train_default_model.sh
# first, up to its stage-2 teacher; about 1.2 h more on two CPU cores): task-operator episodes in
# varied scenes, the VAE's decoder fine-tuned on them (encoder and latent statistics kept), the
# stage-2 teacher fine-tuned from its synthetic-episode weights, the causal student distilled from it,
# then the held-out evaluation with the interaction score and the training curves. It does not
# package: docs/world_model.md, "Task-episode training run", says why this model does not ship yet.
# Every step resumes from its latest checkpoint if interrupted; outputs go to outputs/embedded_cpu.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
CONFIGS=src/rynn_world_node/config
"$PY" -m rynn_world.episodes.generate --operator task --scene-variation --episodes 16 --seed 0 \
  --out data/task_episodes_208x128 --width 208 --height 128 --jobs 2
"$PY" -m rynn_world.training.train_vae --config $CONFIGS/train_vae_tasks_cpu.yaml
"$PY" -m rynn_world.training.train --config $CONFIGS/train_stage2_tasks_cpu.yaml
"$PY" -m rynn_world.training.distill --config $CONFIGS/distill_tasks_cpu.yaml
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_tasks_cpu.yaml
"$PY" -m rynn_world.evaluation.curves --eval-config $CONFIGS/eval_tasks_cpu.yaml \
  --stage2-config $CONFIGS/train_stage2_tasks_cpu.yaml --distill-config $CONFIGS/distill_tasks_cpu.yaml
