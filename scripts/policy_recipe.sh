#!/usr/bin/env bash
# Table 3 on the simulated robot (docs/data_engine.md, "Policy learning"): task-operator episodes (real),
# the data engine's digital episodes made from the same episodes' operator streams, LeRobot's ACT trained
# on real, digital and both, each evaluated closed-loop on seeded scenes. Every step resumes or skips
# what is already there (episodes, digital episodes, datasets, trained policies).
#
#   bash scripts/policy_recipe.sh            # the CPU size (about 2.5 h on 2 cores)
#   FULL=1 bash scripts/policy_recipe.sh     # the same steps at full size (a GPU, the Wan2.2-5B weights)
#
# Environment: PY (default .venv/bin/python), OUT (default data/policy), TASK (block_pushing),
# EPISODES, JOBS, STEPS, MAX_MINUTES, TRIALS, and for FULL=1: CHECKPOINT (the world model's weights), DEVICE.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=${PY:-.venv/bin/python}
export PYTHONPATH=$ROOT/src/rynn_common:$ROOT/src/rynn_retarget:$ROOT/src/rynn_robot_bridge:$ROOT/src/rynn_world_node
OUT=${OUT:-data/policy}
TASK=${TASK:-block_pushing}
if [[ ${FULL:-0} == 1 ]]; then
  EPISODES=${EPISODES:-300}; STEPS=${STEPS:-100000}; MAX_MINUTES=${MAX_MINUTES:-0}; TRIALS=${TRIALS:-35}
  CAMERA=(--width 832 --height 480)
  ENGINE=(--config wan2.2-ti2v-5b --checkpoint "${CHECKPOINT:?FULL=1 needs CHECKPOINT=<the world model weights>}"
          --device "${DEVICE:-cuda}" --batch 8)
  POLICY=(--full-size --batch-size 8 --lr 1e-5 --lr-backbone 1e-5 --threads 0)
else
  EPISODES=${EPISODES:-130}; STEPS=${STEPS:-8000}; MAX_MINUTES=${MAX_MINUTES:-40}; TRIALS=${TRIALS:-30}
  CAMERA=(--width 208 --height 128)  # the embedded world model's size
  ENGINE=(--config embedded_cpu --threads 1 --batch 4)
  POLICY=(--threads 1)
fi
REAL=$OUT/real_$TASK
DIGITAL=$OUT/digital_$TASK

step() { printf '\n==> %s\n' "$*"; }

step "real: $EPISODES task-operator episodes of $TASK"
"$PY" -m rynn_world.episodes.generate --tasks "$TASK" --episodes "$EPISODES" --seed 0 "${CAMERA[@]}" \
  --jobs "${JOBS:-2}" --out "$REAL"

step "real: the successful episodes (the demonstrations) and their LeRobot v3 dataset"
"$PY" -m rynn_world.policy successful --episodes "$REAL" --out "$REAL/successful"
[[ -f $REAL/successful/lerobot/meta/info.json ]] || "$PY" -m rynn_robot_bridge.export.lerobot \
  --bags "$REAL/successful/$TASK"/episode_*/bag --out "$REAL/successful/lerobot"

step "digital: the data engine on every episode's operator stream (reference: each episode's first frame)"
"$PY" -m rynn_world.engine --episodes "$REAL" --out "$DIGITAL" "${ENGINE[@]}" --no-progress

step "digital: the twins of the successful episodes (the engine keeps each source's success label)"
"$PY" -m rynn_world.policy successful --episodes "$DIGITAL" --out "$DIGITAL/successful"
[[ -f $DIGITAL/successful/lerobot/meta/info.json ]] || "$PY" -m rynn_robot_bridge.export.lerobot \
  --bags "$DIGITAL/successful/$TASK"/episode_*/bag --out "$DIGITAL/successful/lerobot"

train() {  # label, datasets...
  local label=$1; shift
  if [[ -f $OUT/act_$label/training.json ]]; then echo "act_$label: trained"; return; fi
  step "train ACT on $label"
  "$PY" -m rynn_world.policy train --data "$@" --out "$OUT/act_$label" --steps "$STEPS" \
    --max-minutes "$MAX_MINUTES" "${POLICY[@]}"
}
train real "$REAL/successful/lerobot"
train digital "$DIGITAL/successful/lerobot"
train real+digital "$REAL/successful/lerobot" "$DIGITAL/successful/lerobot"

step "closed-loop evaluation: $TRIALS seeded trials each"
"$PY" benchmarks/bench_policy_transfer.py --task "$TASK" --trials "$TRIALS" \
  --policy "real=$OUT/act_real" "digital=$OUT/act_digital" "real+digital=$OUT/act_real+digital"
