#!/usr/bin/env bash
# Reproduce the shipped embedded_cpu world model from nothing (about 3.5 h on two CPU cores):
# paired sim episodes, VAE (frames, then clips), stage-2 CFM teacher, causal warm-up + DMD,
# held-out evaluation and training curves, packaging into rynn_world/checkpoints/embedded_cpu with its model card, and the
# distilled tiny decoder and tiny control encoder added to it (the encoder: about 30 more minutes on one core),
# then the transformer fine-tuned on task episodes and the VAE's decoder (with its tiny decoder) on the same mix.
# Every step resumes from its latest checkpoint if interrupted; outputs go to outputs/embedded_cpu.
# The model-size / speed frontier beside the shipped transformer: scripts/train_frontier.sh (after this script).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
# The repository's sources, not the installed copies: package_default writes into the source tree's checkpoints/.
export PYTHONPATH=src/rynn_common:src/rynn_retarget:src/rynn_robot_bridge:src/rynn_world_node${PYTHONPATH:+:$PYTHONPATH}
RECIPE=(src/rynn_world_node/config/train_vae_images_cpu.yaml src/rynn_world_node/config/train_vae_cpu.yaml src/rynn_world_node/config/train_stage2_cpu.yaml
        src/rynn_world_node/config/distill_cpu.yaml src/rynn_world_node/config/eval_cpu.yaml)

DATA_COMMAND="python -m rynn_world.episodes.generate --operator synthetic --no-scene-variation --episodes 13 --seed 6 --out data/sim_episodes_208x128 --width 208 --height 128 --duration 4"
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
# The task-episode fine-tune: task-operator episodes in varied scenes (seed 0 to train on, seed 777 held out),
# the packaged student scored as served before, its transformer fine-tuned on a mix of the synthetic and the
# task episodes (causal warm-up only; the VAE and the tiny decoder/encoder stay), scored again, its curve,
# and the swap into the package with the card's "Task-episode fine-tune" section (about 45 min more).
CONFIGS=src/rynn_world_node/config
TASK_COMMAND="python -m rynn_world.episodes.generate --operator task --scene-variation --episodes 8 --seed 0 --out data/task_episodes_208x128 --width 208 --height 128 --jobs 2"
HELD_OUT_COMMAND="python -m rynn_world.episodes.generate --operator task --scene-variation --episodes 2 --seed 777 --out data/task_episodes_eval_208x128 --width 208 --height 128 --jobs 2"
"$PY" ${TASK_COMMAND#python }
"$PY" ${HELD_OUT_COMMAND#python }
FINETUNED=outputs/embedded_cpu/finetune_tasks/final_warmup
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_tasks_cpu.yaml output_dir=outputs/embedded_cpu/eval_served_tasks_base
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_cpu.yaml output_dir=outputs/embedded_cpu/eval_served_base
"$PY" -m rynn_world.training.distill --config $CONFIGS/finetune_tasks_cpu.yaml
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_tasks_cpu.yaml student_no_dmd_checkpoint=$FINETUNED
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_cpu.yaml student_no_dmd_checkpoint=$FINETUNED \
  output_dir=outputs/embedded_cpu/eval_served_finetuned
"$PY" -m rynn_world.evaluation.curves --eval-config $CONFIGS/eval_served_tasks_cpu.yaml --distill-config $CONFIGS/finetune_tasks_cpu.yaml
"$PY" -m rynn_world.training.package_default --config embedded_cpu --method student_no_dmd --finetune $FINETUNED \
  --finetune-evaluation outputs/embedded_cpu/eval_served_tasks_base/results.json outputs/embedded_cpu/eval_served_tasks/results.json \
  --finetune-evaluation outputs/embedded_cpu/eval_served_base/results.json outputs/embedded_cpu/eval_served_finetuned/results.json \
  --recipe $CONFIGS/finetune_tasks_cpu.yaml $CONFIGS/eval_served_tasks_cpu.yaml $CONFIGS/eval_served_cpu.yaml \
  --data-command "$TASK_COMMAND" --data-command "$HELD_OUT_COMMAND"
# The VAE's decoder fine-tuned on the same mix under the packaged encoder (the transformer and the tiny control
# encoder stay valid), the tiny decoder distilled again from it (starting from the packaged one), the served
# ceiling and the packaged transformer served through the old and the new decoder, then both swapped in with
# the card's section (about 50 min more).
DECODER=outputs/embedded_cpu/decoder_mix
PACKAGED=src/rynn_world_node/rynn_world/checkpoints/embedded_cpu
"$PY" -m rynn_world.training.train_vae --config $CONFIGS/train_vae_mix_cpu.yaml
rm -rf $DECODER && mkdir -p $DECODER && cp -r $PACKAGED/transformer $DECODER/ && cp -r outputs/embedded_cpu/vae_mix/final/vae $DECODER/
"$PY" -m rynn_world.training.distill_tiny_decoder --config $CONFIGS/tiny_decoder_mix_cpu.yaml
for VAE in base:$PACKAGED mix:$DECODER; do
  "$PY" benchmarks/bench_vae_reconstruction.py --checkpoint ${VAE#*:} --data data/task_episodes_eval_208x128 --episodes 0 1 \
    --stride 32 --served --json outputs/embedded_cpu/ceiling/tasks_${VAE%%:*}.json
  "$PY" benchmarks/bench_vae_reconstruction.py --checkpoint ${VAE#*:} --data data/sim_episodes_208x128 --episodes 4 12 \
    --stride 16 --served --json outputs/embedded_cpu/ceiling/sim_${VAE%%:*}.json
done
# before: the fine-tune's "after" evaluations above (the packaged transformer and VAE)
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_tasks_cpu.yaml student_no_dmd_checkpoint=$DECODER \
  output_dir=outputs/embedded_cpu/eval_served_tasks_decoder
"$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_cpu.yaml student_no_dmd_checkpoint=$DECODER \
  output_dir=outputs/embedded_cpu/eval_served_decoder
"$PY" -m rynn_world.training.package_default --config embedded_cpu --method student_no_dmd --decoder $DECODER \
  --tiny-decoder outputs/embedded_cpu/tiny_decoder_mix/final \
  --decoder-evaluation outputs/embedded_cpu/eval_served_tasks/results.json outputs/embedded_cpu/eval_served_tasks_decoder/results.json \
  --decoder-evaluation outputs/embedded_cpu/eval_served_finetuned/results.json outputs/embedded_cpu/eval_served_decoder/results.json \
  --ceiling outputs/embedded_cpu/ceiling/tasks_base.json outputs/embedded_cpu/ceiling/tasks_mix.json \
  --ceiling outputs/embedded_cpu/ceiling/sim_base.json outputs/embedded_cpu/ceiling/sim_mix.json \
  --recipe $CONFIGS/train_vae_mix_cpu.yaml $CONFIGS/tiny_decoder_mix_cpu.yaml $CONFIGS/eval_served_tasks_cpu.yaml $CONFIGS/eval_served_cpu.yaml
# What the node serves: the packaged model's frames composited on the reference against the frames as
# decoded, on the same held-out clips (the card's "Reference compositing" section).
"$PY" -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_served_cpu.yaml
"$PY" -m rynn_world.evaluation.evaluate --config src/rynn_world_node/config/eval_served_cpu.yaml static_camera=false \
  output_dir=outputs/embedded_cpu/eval_served_raw
"$PY" -m rynn_world.training.package_default --config embedded_cpu --method student_no_dmd \
  --recipe src/rynn_world_node/config/eval_served_cpu.yaml \
  --compositing-evaluation outputs/embedded_cpu/eval_served/results.json outputs/embedded_cpu/eval_served_raw/results.json
