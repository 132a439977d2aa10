#!/usr/bin/env bash
# Reproduce the shipped embedded_cpu world model from nothing (about 1.5 h on two CPU cores):
# paired sim episodes, VAE (frames, then clips), stage-2 CFM teacher, causal warm-up + DMD,
# held-out evaluation and training curves, packaging into rynn_world/checkpoints/embedded_cpu with its model card, and the
# distilled tiny decoder and tiny control encoder added to it (the encoder: about 30 more minutes on one core).
# Every step resumes from its latest checkpoint if interrupted; outputs go to outputs/embedded_cpu.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
RECIPE=(src/rynn_world_node/config/train_vae_images_cpu.yaml src/rynn_world_node/config/train_vae_cpu.yaml src/rynn_world_node/config/train_stage2_cpu.yaml
        src/rynn_world_node/config/distill_cpu.yaml src/rynn_world_node/config/eval_cpu.yaml)

DATA_COMMAND="python -m rynn_robot_bridge.episodes.generate --operator synthetic --no-scene-variation --episodes 13 --seed 6 --out data/sim_episodes_208x128 --width 208 --height 128 --duration 4"
"$PY" ${DATA_COMMAND#python }
"$PY" -m rynn_world.training.train_vae --config src/rynn_world_node/config/train_vae_images_cpu.yaml
"$PY" -m rynn_world.training.train_vae --config src/rynn_world_node/config/train_vae_cpu.yaml
"$PY" -m rynn_world.training.train --config src/rynn_world_node/config/train_stage2_cpu.yaml
"$PY" -m rynn_world.training.distill --config src/rynn_world_node/config/distill_cpu.yaml
"$PY" -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_cpu.yaml
# The card's training curves: every kept checkpoint scored on the same held-out clips.
"$PY" -m rynn_world.evaluation.curves --eval-config src/rynn_world_node/config/eval_cpu.yaml \
  --stage2-config src/rynn_world_node/config/train_stage2_cpu.yaml --distill-config src/rynn_world_node/config/distill_cpu.yaml
# The 40 DMD steps a CPU affords lowered both scores (see the card), so the warm-up student ships.
"$PY" -m rynn_world.training.package_default --config embedded_cpu --checkpoint outputs/embedded_cpu/distill/final_warmup \
  --evaluation outputs/embedded_cpu/eval/results.json --method student_no_dmd --recipe "${RECIPE[@]}" \
  --data-command "$DATA_COMMAND"
# The tiny streaming decoder the node decodes with on CPUs, distilled from the packaged VAE decoder;
# packaging refuses it unless it reaches 30 dB against the VAE's decode on the held-out clips.
"$PY" -m rynn_world.training.distill_tiny_decoder --config src/rynn_world_node/config/tiny_decoder_cpu.yaml
"$PY" -m rynn_world.training.package_default --config embedded_cpu --tiny-decoder outputs/embedded_cpu/tiny_decoder/final \
  --recipe src/rynn_world_node/config/tiny_decoder_cpu.yaml
# The tiny control encoder the node encodes skeleton renders with on CPUs, distilled from the packaged
# VAE encoder (scored end to end with the packaged tiny decoder above); packaging refuses it unless the
# live stream's held-out PSNR is within 0.3 dB of the VAE encoder's.
"$PY" -m rynn_world.training.distill_tiny_encoder --config src/rynn_world_node/config/tiny_encoder_cpu.yaml
"$PY" -m rynn_world.training.package_default --config embedded_cpu --tiny-encoder outputs/embedded_cpu/tiny_encoder/final \
  --recipe src/rynn_world_node/config/tiny_encoder_cpu.yaml
# What the node serves: the packaged model's frames composited on the reference against the frames as
# decoded, on the same held-out clips (the card's "Reference compositing" section).
"$PY" -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_served_cpu.yaml
"$PY" -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_served_cpu.yaml static_camera=false \
  output_dir=outputs/embedded_cpu/eval_served_raw
"$PY" -m rynn_world.training.package_default --config embedded_cpu --method student_no_dmd \
  --recipe src/rynn_world_node/config/eval_served_cpu.yaml \
  --compositing-evaluation outputs/embedded_cpu/eval_served/results.json outputs/embedded_cpu/eval_served_raw/results.json
