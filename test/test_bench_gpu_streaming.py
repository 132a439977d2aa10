"""benchmarks/bench_gpu_streaming.py on the CPU: the tiny config streams through every code path the GPU
run takes (node loader, StreamingWorldModel steps with re-anchoring, the SDPA backend switch, the VAE
memory format, the tiny decoder, the evaluation's teacher) and prints figures that add up; the full-size
model without CUDA is a clear error, not a traceback."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "bench_gpu_streaming.py"
STAGES = ("render", "encode", "DiT", "decode", "reanchor", "other")


def run_bench(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")  # no GPU, whatever the machine has
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def table_rows(output: str) -> dict[str, list[float]]:
    """variant -> [render, encode, DiT, decode, reanchor, other, total, FPS] from the printed table."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["variant"])
    assert lines[header].split()[1:7] == list(STAGES)
    rows = {}
    for line in lines[header + 1:]:
        if not line.strip():
            break
        name, *values = line.split()
        rows[name] = values if values[0] == "failed:" else [float(v) for v in values[:8]]
    return rows


@pytest.mark.slow
def test_tiny_config_streams_on_the_cpu_and_its_figures_add_up(tmp_path):
    out = tmp_path / "figures.json"
    # 3 steps of 4 frames: the 9-frame chunk (reference + 2 blocks) re-anchors once inside the timed part
    result = run_bench("--config", "tiny", "--device", "cpu", "--frames", "12", "--warmup", "1", "--reanchor-every", "9",
                       "--sweep", "--variants", "baseline,math,channels_last,tiny_decoder,cudnn_benchmark,efficient",
                       "--teacher-frames", "9", "--teacher-steps", "2", "--json", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    assert "device cpu, dtype float32, config tiny 64x64" in text
    rows = table_rows(text)
    assert list(rows) == ["baseline", "math", "channels_last", "tiny_decoder", "cudnn_benchmark"]  # efficient: CUDA only
    for name, (*stages, total, fps) in rows.items():
        assert fps > 0 and total > 0, name
        assert abs(1000.0 / fps - total) <= 0.02 * total, name  # FPS is the per-frame total's inverse
        assert all(value >= 0 for value in stages), name
        assert abs(sum(stages) - total) <= 0.02 * total, name  # the stages cover the whole wall time
        render, encode, dit, decode, reanchor, other = stages
        assert dit > 0 and encode > 0 and decode > 0
        assert other < 0.25 * total, name  # pushing skeletons is not where the time goes
        assert reanchor > 0.001, name  # the re-anchor ran inside the timed part and was counted
    figures = json.loads(out.read_text())
    assert figures["variants"]["baseline"]["frames"] == 12
    assert figures["variants"]["baseline"]["fps"] == pytest.approx(rows["baseline"][7], rel=0.01)
    teacher = figures["teacher"]
    assert teacher["frames"] == 9 and teacher["steps"] == 2 and teacher["fps"] > 0
    assert teacher["total_s"] == pytest.approx(teacher["encode_s"] + teacher["dit_s"] + teacher["decode_s"], rel=0.01)
    ratio = re.search(r"causal / bidirectional: ([\d.]+)x \(baseline\)", text)
    assert ratio and float(ratio.group(1)) == pytest.approx(figures["ratio"], abs=0.051)
    assert figures["ratio"] == pytest.approx(rows["baseline"][7] / teacher["fps"], rel=0.01)
    assert "(paper, H100: 40.0 / 2.8 = 14.3x)" in text
    assert re.search(r"streaming FPS \(baseline\): [\d.]+", text)
    assert "peak memory: CPU run, max RSS" in text


@pytest.mark.slow
def test_a_sweep_stops_starting_variants_when_its_budget_is_spent():
    result = run_bench("--config", "tiny", "--device", "cpu", "--frames", "4", "--warmup", "1", "--sweep",
                       "--variants", "baseline,math", "--budget-s", "0", "--teacher-frames", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout)
    assert rows["baseline"][7] > 0  # the first variant always runs
    assert rows["math"][:2] == ["failed:", "skipped:"]
    assert "bidirectional teacher" not in result.stdout  # --teacher-frames 1: no teacher clip


@pytest.mark.slow  # three interpreter starts that import torch and diffusers
def test_full_size_without_cuda_is_a_clear_error():
    for args in (("--config", "wan2.2-ti2v-5b"), ("--config", "wan2.2-ti2v-5b", "--device", "cpu"),
                 ("--device", "cuda", "--config", "tiny")):
        result = run_bench(*args, "--frames", "4")
        assert result.returncode == 2, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert "error:" in result.stderr
        if "wan2.2-ti2v-5b" in args:
            assert "needs a CUDA GPU" in result.stderr and "--config tiny --device cpu" in result.stderr
        else:
            assert "sees no CUDA device" in result.stderr
