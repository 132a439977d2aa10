#!/usr/bin/env bash
# The model-size / speed frontier of the embedded_cpu world model (about 25 min a variant on two CPU cores:
# 12-17 min of fine-tune, 4 of evaluation, 2 of curves, 3 of graph runs; tasks200 first encodes its 2191 clips,
# 30 min; a 1x1 patch fine-tunes in 40 min and draws its curve in 6). For each transformer variant: the packaged
# model grown to its depth (identity blocks: it starts exactly where the shipped model is) and, for a finer patch,
# refined onto that grid (rynn_world.training.refine_patches); fine-tuned on the shipped fine-tune's mix
# (frontier_cpu.yaml); scored served on held-out task and synthetic clips; its task curve drawn over its
# checkpoints. Then each variant runs twice in the default recording graph, alternating with the packaged model, and
# the frontier table and plot go into the model card, beside the points it already has.
# Needs the data of scripts/train_default_model.sh (data/sim_episodes_208x128, data/task_episodes_*_208x128).
# Every step resumes; usage: scripts/train_frontier.sh [DEPTH[pPATCH][:DATA] ...]   (default: 3 6 3:tasks200)
# PATCH is the DiT's latent cells per token along height and width (the packaged model's is 2): 3p1 is three
# blocks with one token per latent cell. DATA names a mix other than the shipped fine-tune's, config
# frontier_DATA_cpu.yaml: tasks200 is every task episode (50 a task: train_default_model.sh's task-episode command
# with --episodes 50) instead of the first 8 a task.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-.venv/bin/python}
export PYTHONPATH=src/rynn_common:src/rynn_retarget:src/rynn_robot_bridge:src/rynn_world_node${PYTHONPATH:+:$PYTHONPATH}
CONFIGS=src/rynn_world_node/config
PACKAGED=src/rynn_world_node/rynn_world/checkpoints/embedded_cpu
FRONTIER=outputs/embedded_cpu/frontier
declare -A DATA_NAME=([tasks200]="200 task episodes")
[ $# -gt 0 ] || set -- 3 6 3:tasks200
VARIANTS=()
DIRS=()
for SPEC in "$@"; do
  MODEL=${SPEC%%:*}
  DATA=${SPEC#"$MODEL"}; DATA=${DATA#:}
  DEPTH=${MODEL%%p*}
  PATCH=${MODEL#"$DEPTH"}; PATCH=${PATCH#p}
  START=$FRONTIER/blocks_$DEPTH/start
  [ -d $START ] || "$PY" -m rynn_world.training.grow_depth --checkpoint $PACKAGED --layers "$DEPTH" --out $START
  V=$FRONTIER/blocks_$DEPTH; NAME="$DEPTH blocks"
  if [ -n "$PATCH" ]; then
    V=${V}_patch$PATCH; NAME="$NAME, patch ${PATCH}x$PATCH"
    [ -d $V/start ] || "$PY" -m rynn_world.training.refine_patches --checkpoint $START --patch 1 "$PATCH" "$PATCH" --out $V/start
    START=$V/start
  fi
  CONFIG=frontier_cpu.yaml
  if [ -n "$DATA" ]; then
    V=${V}_$DATA; CONFIG=frontier_${DATA}_cpu.yaml; NAME="$NAME, ${DATA_NAME[$DATA]:-$DATA}"
  fi
  "$PY" -m rynn_world.training.distill --config $CONFIGS/$CONFIG teacher_checkpoint=$START run.output_dir=$V/train
  cp -r $START/tiny_decoder $START/tiny_control_encoder $V/train/final_warmup/
  ln -sfn train/final_warmup $V/checkpoint
  [ -f $V/tasks/results.json ] || "$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_tasks_cpu.yaml \
    student_no_dmd_checkpoint=$V/checkpoint output_dir=$V/tasks
  [ -f $V/sim/results.json ] || "$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/eval_served_cpu.yaml \
    student_no_dmd_checkpoint=$V/checkpoint output_dir=$V/sim
  # The variant's held-out task PSNR / SSIM at every kept checkpoint: is its curve still rising?
  [ -f $V/curves/curves.json ] || "$PY" -m rynn_world.evaluation.curves --eval-config $CONFIGS/eval_served_tasks_cpu.yaml \
    --distill-config $CONFIGS/$CONFIG --eval-set output_dir=$V/curves --distill-set teacher_checkpoint=$START run.output_dir=$V/train
  VARIANTS+=(--variant "$NAME" $V)
  DIRS+=($V)
done
# The graph runs alternate between the variants and the packaged model, so a machine that slows down slows them alike.
PACKAGED_POINT=$FRONTIER/packaged
mkdir -p $PACKAGED_POINT
ln -sfn "$PWD/$PACKAGED" $PACKAGED_POINT/checkpoint
for PART in tasks:eval_served_tasks_cpu.yaml sim:eval_served_cpu.yaml; do
  [ -f $PACKAGED_POINT/${PART%%:*}/results.json ] || "$PY" -m rynn_world.evaluation.evaluate --config $CONFIGS/${PART#*:} \
    output_dir=$PACKAGED_POINT/${PART%%:*}
done
for RUN in 1 2; do
  for V in $PACKAGED_POINT "${DIRS[@]}"; do
    [ -f $V/graph_$RUN.json ] || "$PY" benchmarks/bench_digital_latency.py --digital-only --seconds 20 --json $V/graph_$RUN.json \
      checkpoint:=$PWD/$V/checkpoint
  done
done
"$PY" -m rynn_world.evaluation.frontier --variant packaged $PACKAGED_POINT "${VARIANTS[@]}" --out $FRONTIER --card $PACKAGED
