"""Training past one process: the tiny config's stage-2 step under `accelerate launch` with two processes
(gloo on the CPU, the shipped DDP launch file), both ranks holding the same weights and a resumed run
continuing the uninterrupted one bit for bit; the FSDP launch file of the 5B model validated (sharding
plan, precision, state dict) by the same function the training entry calls at start-up."""

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from test_training_pipeline import make_vitra_clips

from rynn_world.model.configs import get_config
from rynn_world.model.vae import build_vae
from rynn_world.training.distributed import DistributedConfigError, fsdp_plan_from_file, tensors_digest, validate_fsdp_config
from rynn_world.training.export import save_world_model

REPO = Path(__file__).resolve().parents[3]
CONFIG_DIR = REPO / "src" / "rynn_world_node" / "config"
FULL = get_config("wan2.2-ti2v-5b")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_training(config: Path, log: Path, *extra: str) -> None:
    """`accelerate launch --config_file accelerate_ddp.yaml --num_processes 2 -m rynn_world.training.train`
    with no GPU visible: accelerate runs the two processes on the CPU with the gloo backend. (`--cpu` would
    start one process only: accelerate's CPU launcher needs mpirun for more.)"""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(REPO / "src" / p) for p in ("rynn_common", "rynn_world_node")]
                                          + [os.environ.get("PYTHONPATH", "")]))
    command = [str(Path(sys.executable).parent / "accelerate"), "launch", "--config_file",
               str(CONFIG_DIR / "accelerate_ddp.yaml"), "--num_processes", "2", "--main_process_ip", "127.0.0.1",
               "--main_process_port", str(free_port()), "-m", "rynn_world.training.train", "--config", str(config),
               *extra]
    with log.open("w") as out:
        result = subprocess.run(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300)
    assert result.returncode == 0, log.read_text()[-5000:]


def write_config(path: Path, data_root: Path, output_dir: Path, latents: Path, steps: int, vae: Path) -> Path:
    path.write_text(f"""model: tiny
stage: 2
vae_checkpoint: {vae}
finetune: full
ema_decay: 0.9
data:
  kind: vitra
  root: {data_root}
  clip_frames: 9
  stride: 8
  latent_cache: {latents}
optim:
  lr: 3.0e-3
  warmup_steps: 2
run:
  output_dir: {output_dir}
  steps: {steps}
  batch_size: 1
  save_every: 2
  progress: false
  num_threads: 1
""")
    return path


@pytest.mark.slow
def test_two_process_training_keeps_ranks_equal_and_resumes_the_curve(tmp_path):
    data = make_vitra_clips(tmp_path / "clips", clips=2)
    torch.manual_seed(0)  # a VAE on disk, as every real run has: a random one would differ from run to run
    vae = save_world_model(tmp_path / "vae", vae=build_vae(get_config("tiny").vae))
    latents = tmp_path / "latents"
    straight = tmp_path / "straight"
    launch_training(write_config(tmp_path / "straight.yaml", data, straight, latents, steps=4, vae=vae), tmp_path / "straight.log",
                    "--no-resume")

    checkpoints = {step: straight / "checkpoints" / f"step_{step:08d}" for step in (2, 4)}
    for step, checkpoint in checkpoints.items():
        trainer = json.loads((checkpoint / "trainer.json").read_text())
        assert trainer["step"] == step
        digests = trainer["rank_weight_digests"]  # every rank's own weights, gathered at the save
        assert len(digests) == 2 and digests[0] == digests[1], digests
        assert digests[0] == tensors_digest(load_file(str(checkpoint / "modules.safetensors"))), \
            "the ranks' digest is not the digest of the weights saved"
    assert tensors_digest(load_file(str(checkpoints[2] / "modules.safetensors"))) != \
        tensors_digest(load_file(str(checkpoints[4] / "modules.safetensors")))  # the steps trained

    # a run interrupted after step 2: its checkpoint alone, resumed by a fresh launch up to step 4
    resumed = tmp_path / "resumed"
    shutil.copytree(checkpoints[2], resumed / "checkpoints" / checkpoints[2].name)
    launch_training(write_config(tmp_path / "resumed.yaml", data, resumed, latents, steps=4, vae=vae), tmp_path / "resumed.log")
    assert "resumed from" in (tmp_path / "resumed.log").read_text() and "at step 2" in (tmp_path / "resumed.log").read_text()
    a, b = checkpoints[4], resumed / "checkpoints" / "step_00000004"
    for name in ("modules", "optimizers", "ema"):
        x, y = load_file(str(a / f"{name}.safetensors")), load_file(str(b / f"{name}.safetensors"))
        assert x.keys() == y.keys()
        assert all(torch.equal(x[k], y[k]) for k in x), f"{name} differs between the resumed and the straight run"
    trainer_a, trainer_b = (json.loads((c / "trainer.json").read_text()) for c in (a, b))
    assert trainer_b["rank_weight_digests"] == trainer_a["rank_weight_digests"]
    assert trainer_b["schedulers"] == trainer_a["schedulers"]  # the learning-rate schedule continued, not restarted
    curve_a = json.loads((straight / "losses.json").read_text())["stage2/flow_matching"]
    curve_b = json.loads((resumed / "losses.json").read_text())["stage2/flow_matching"]
    assert [step for step, _ in curve_b] == [1, 2, 3, 4]
    assert curve_b == curve_a  # steps 1-2 from the checkpoint's history, 3-4 trained again: the same values
    assert (resumed / "final" / "transformer" / "config.json").is_file()


def test_fsdp_launch_file_of_the_5b_model_validates():
    summary = validate_fsdp_config(CONFIG_DIR / "accelerate_fsdp.yaml", FULL, "train", training_precision="bf16")
    assert summary.startswith("FSDP2: 30 x RynnWorldBlock wrapped")
    share = float(summary.split("(")[1].split(" %")[0])
    assert 95.0 < share < 100.0  # the blocks hold the weights; embeddings and the head stay in the root unit
    assert "bf16, FULL_STATE_DICT" in summary
    plan = fsdp_plan_from_file(CONFIG_DIR / "accelerate_fsdp.yaml")
    assert (plan.version, plan.wrap_policy, plan.layer_classes) == (2, "transformer", ("RynnWorldBlock",))
    assert plan.reshard_after_forward is True and plan.offload_params is False
    # the training configs that pair with it agree on the precision
    from rynn_common.config_io import load_config
    from rynn_world.training.config import DistillConfig, TrainConfig

    for name in ("train_ti2v.yaml", "train_stage1.yaml", "train_stage2.yaml"):
        cfg = load_config(TrainConfig, CONFIG_DIR / name)
        assert cfg.model == FULL.name
        validate_fsdp_config(CONFIG_DIR / "accelerate_fsdp.yaml", get_config(cfg.model), "train", cfg.run.mixed_precision)
    distill_cfg = load_config(DistillConfig, CONFIG_DIR / "train_distill.yaml")
    assert distill_cfg.model == FULL.name
    validate_fsdp_config(CONFIG_DIR / "accelerate_fsdp.yaml", FULL, "distill", distill_cfg.run.mixed_precision)
    assert fsdp_plan_from_file(CONFIG_DIR / "accelerate_ddp.yaml") is None


@pytest.mark.parametrize("change, entry, precision, message", [
    (("RynnWorldBlock", "WanAttentionBlock"), "train", "bf16", r"names \['WanAttentionBlock'\], which the wan2.2"),
    (("mixed_precision: bf16", "mixed_precision: fp16"), "train", "fp16", "must be bf16, got 'fp16'"),
    (None, "train", "no", "run.mixed_precision is 'no' but the launch file says 'bf16'"),
    (("FULL_STATE_DICT", "SHARDED_STATE_DICT"), "train", "bf16", "fsdp_state_dict_type must be FULL_STATE_DICT"),
    (("TRANSFORMER_BASED_WRAP", "NO_WRAP"), "train", "bf16", "must be TRANSFORMER_BASED_WRAP"),
    (("RynnWorldBlock", "FeedForward"), "train", "bf16", r"hold only \d+\.\d % of the wan2.2-ti2v-5b weights"),
    (None, "train_vae", "bf16", "training.train_vae cannot run under FSDP"),
    (("distributed_type: FSDP", "distributed_type: MULTI_GPU"), "train", "bf16", "is not an FSDP launch"),
])
def test_a_bad_fsdp_launch_is_a_clear_error(tmp_path, change, entry, precision, message):
    text = (CONFIG_DIR / "accelerate_fsdp.yaml").read_text()
    if change is not None:
        assert change[0] in text
        text = text.replace(*change)
    bad = tmp_path / "accelerate_bad.yaml"
    bad.write_text(text)
    with pytest.raises(DistributedConfigError, match=message):
        validate_fsdp_config(bad, FULL, entry, training_precision=precision)


def test_weight_digest_sees_one_bit():
    tensors = {"a.weight": torch.randn(4, 3), "b.bias": torch.zeros(2, dtype=torch.bfloat16), "scale": torch.tensor(0.1)}
    digest = tensors_digest(tensors)
    assert digest == tensors_digest({k: v.clone() for k, v in reversed(tensors.items())})  # order-independent
    flipped = dict(tensors, **{"b.bias": torch.tensor([0.0, -0.0], dtype=torch.bfloat16)})  # the sign bit only
    assert tensors_digest(flipped) != digest
    renamed = {("c.bias" if k == "b.bias" else k): v for k, v in tensors.items()}
    assert tensors_digest(renamed) != digest
