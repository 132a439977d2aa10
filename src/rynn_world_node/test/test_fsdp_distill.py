"""Distillation under FSDP on the CPU: two gloo processes with the shipped FSDP launch file shard the
teacher, the student and the critic (rynn_world.training.sharding); a run resumed from a checkpoint
continues the uninterrupted one bit for bit, and the sharded run trains what the data-parallel run
with the DDP launch file trains. `train`, which shards through accelerate (GPUs only), refuses the
same launch on CPUs with the reason."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from test_training_pipeline import make_vitra_clips

from rynn_world.model.configs import get_config
from rynn_world.model.vae import build_vae
from rynn_world.training.distributed import launch_environment, tensors_digest
from rynn_world.training.export import load_or_build_transformer, save_world_model

REPO = Path(__file__).resolve().parents[3]
CONFIG_DIR = REPO / "src" / "rynn_world_node" / "config"
TINY = get_config("tiny")


def launch(launch_file: Path, module: str, config: Path, log: Path, *extra: str) -> subprocess.CompletedProcess:
    """What `accelerate launch --config_file <launch_file> --num_processes 2 -m <module>` runs with no GPU
    visible: accelerate's own translation of the file into the processes' environment
    (distributed.launch_environment), two processes on the gloo backend. torchrun starts them with its
    standalone rendezvous, whose store binds a free port itself, so no port is picked beforehand that
    another job on the machine could take first."""
    env = dict(os.environ, **launch_environment(launch_file), CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(REPO / "src" / p) for p in ("rynn_common", "rynn_world_node")]
                                          + [os.environ.get("PYTHONPATH", "")]))
    command = [str(Path(sys.executable).parent / "torchrun"), "--standalone", "--nproc-per-node", "2",
               "-m", module, "--config", str(config), *extra]
    with log.open("w") as out:
        return subprocess.run(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=300)


def distill(launch_file: str, config: Path, log: Path, *extra: str) -> str:
    result = launch(CONFIG_DIR / launch_file, "rynn_world.training.distill", config, log, *extra)
    text = log.read_text()
    assert result.returncode == 0, text[-5000:]
    return text


def write_config(path: Path, root: Path, output_dir: Path, dmd_steps: int) -> Path:
    """Two warm-up steps, then DMD with one critic update per generator update; a checkpoint every 3 steps.
    The learning rates are high so that a few steps move the weights well past rounding."""
    path.write_text(f"""model: tiny
teacher_checkpoint: {root / "teacher"}
warmup_steps: 2
warmup_lr: 3.0e-3
dmd_steps: {dmd_steps}
generator_lr: 1.0e-3
critic_lr: 1.0e-3
critic_updates_per_generator: 1
data:
  kind: vitra
  root: {root / "clips"}
  clip_frames: 9
  stride: 8
  latent_cache: {root / "latents"}
optim:
  warmup_steps: 1
run:
  output_dir: {output_dir}
  batch_size: 1
  save_every: 3
  progress: false
  num_threads: 1
  mixed_precision: bf16
""")
    return path


def checkpoint(run: Path, step: int) -> Path:
    return run / "checkpoints" / f"step_{step:08d}"


def module_weights(checkpoint_dir: Path, module: str) -> dict[str, torch.Tensor]:
    prefix = f"{module}."
    return {k[len(prefix):]: v for k, v in load_file(str(checkpoint_dir / "modules.safetensors")).items()
            if k.startswith(prefix)}


@pytest.fixture
def teacher_and_clips(tmp_path):
    make_vitra_clips(tmp_path / "clips", clips=2)
    torch.manual_seed(0)
    teacher = load_or_build_transformer(TINY, None)
    save_world_model(tmp_path / "teacher", teacher, build_vae(TINY.vae))
    return tmp_path


@pytest.mark.slow
def test_fsdp_distillation_resumes_bit_exact_and_trains_as_data_parallel(teacher_and_clips):
    root = teacher_and_clips
    straight = root / "straight"
    log = distill("accelerate_fsdp.yaml", write_config(root / "straight.yaml", root, straight, dmd_steps=3),
                  root / "straight.log", "--no-resume")
    assert "FSDP2: 2 x RynnWorldBlock wrapped" in log
    for step in (3, 5):
        trainer = json.loads((checkpoint(straight, step) / "trainer.json").read_text())
        assert trainer["step"] == step
        # sharded ranks each hold the control statistics and control_scale whole: they must agree
        digests = trainer["rank_replicated_digests"]
        assert len(digests) == 2 and digests[0] == digests[1], digests
    # the final model is the step-5 student, gathered from both ranks
    final = load_file(str(straight / "final" / "transformer" / "diffusion_pytorch_model.safetensors"))
    assert tensors_digest(final) == tensors_digest(module_weights(checkpoint(straight, 5), "student"))
    assert (straight / "final_warmup" / "transformer" / "config.json").is_file()

    # a run interrupted after step 3 (mid-DMD): its checkpoint alone, resumed by a fresh launch up to step 5
    resumed = root / "resumed"
    shutil.copytree(checkpoint(straight, 3), checkpoint(resumed, 3))
    log = distill("accelerate_fsdp.yaml", write_config(root / "resumed.yaml", root, resumed, dmd_steps=3),
                  root / "resumed.log")
    assert "at step 3" in log
    a, b = checkpoint(straight, 5), checkpoint(resumed, 5)
    for name in ("modules", "optimizers", "ema"):
        x, y = load_file(str(a / f"{name}.safetensors")), load_file(str(b / f"{name}.safetensors"))
        assert x.keys() == y.keys()
        assert tensors_digest(x) == tensors_digest(y), f"{name} differs between the resumed and the straight run"
    trainer_a, trainer_b = (json.loads((c / "trainer.json").read_text()) for c in (a, b))
    assert trainer_b["schedulers"] == trainer_a["schedulers"]
    assert trainer_b["rank_replicated_digests"] == trainer_a["rank_replicated_digests"]
    curves_a = json.loads((straight / "losses.json").read_text())
    assert json.loads((resumed / "losses.json").read_text()) == curves_a  # steps 4-5 trained again: the same values

    # the same three steps with the DDP launch file: the same losses and weights up to reduction order
    ddp = root / "ddp"
    distill("accelerate_ddp.yaml", write_config(root / "ddp.yaml", root, ddp, dmd_steps=1), root / "ddp.log", "--no-resume")
    curves_ddp = json.loads((ddp / "losses.json").read_text())
    assert curves_ddp.keys() == curves_a.keys()
    for key, curve in curves_ddp.items():
        np.testing.assert_allclose([v for _, v in curve], [v for _, v in curves_a[key][: len(curve)]], rtol=1e-5)
    teacher = load_file(str(root / "teacher" / "transformer" / "diffusion_pytorch_model.safetensors"))
    for module in ("student", "critic"):
        sharded, replicated = module_weights(checkpoint(straight, 3), module), module_weights(checkpoint(ddp, 3), module)
        apart = torch.cat([(sharded[k] - replicated[k]).flatten() for k in teacher]).norm()
        moved = torch.cat([(sharded[k] - teacher[k]).flatten() for k in teacher]).norm()
        assert apart < 0.02 * moved, f"{module}: FSDP and DDP {apart:.2e} apart after moving {moved:.2e}"


@pytest.mark.slow
def test_training_under_fsdp_on_cpus_stops_with_the_reason(tmp_path):
    """train shards through accelerate, which runs an FSDP launch on CPUs as plain data parallel: refused at start-up."""
    config = tmp_path / "train.yaml"
    config.write_text(f"model: tiny\nstage: 2\nrun:\n  output_dir: {tmp_path / 'run'}\n  mixed_precision: bf16\n")
    result = launch(CONFIG_DIR / "accelerate_fsdp.yaml", "rynn_world.training.train", config, tmp_path / "train.log")
    log = (tmp_path / "train.log").read_text()
    assert result.returncode != 0
    assert "runs an FSDP launch on GPUs only (here it would run MULTI_CPU data parallel)" in log, log[-3000:]
    assert not (tmp_path / "run").exists()  # nothing loaded or written
