"""Pick an offscreen OpenGL backend for MuJoCo before it is imported.

MuJoCo reads ``MUJOCO_GL`` once, at import, so the choice is made here, by
trying each backend in a throw-away interpreter: a machine without a display
renders without the user setting anything, and one where no backend works
gets a clear error instead of a crash deep inside the renderer.
"""

from __future__ import annotations

import os
import subprocess
import sys

BACKENDS = ("egl", "osmesa")
# Without a GPU both backends are Mesa's llvmpipe and cost the same CPU a frame; what matters is how many
# rasteriser threads it starts (one a core by default). One leaves the 500 Hz control loop a core: on
# 2 cores at load average 13-14 (bench_sim_robot.py --backends, two runs, 2026-12-04) one thread
# rendered a 640x480 EGL frame in 104-107 ms wall against 108-160 with two, the state stream's longest
# silence was 41-51 ms against 78-111 (the bridge faults at 100), CPU a frame alike (44-49 against 46-53 ms).
# EGL stays first: OSMesa was no faster, and EGL is the backend that uses a GPU where there is one.
LLVMPIPE_THREADS = "1"
_PROBE = "import mujoco; context = mujoco.GLContext(16, 16); context.make_current(); context.free()"


class RendererUnavailable(RuntimeError):
    """No offscreen OpenGL backend can render on this machine."""


_failure: str | None = None


def configure_headless_gl(backends: tuple[str, ...] = BACKENDS) -> str | None:
    """Set ``MUJOCO_GL`` (and PyOpenGL's platform) to the first backend that works; return it.

    A backend already chosen in the environment is kept, and so is ``LP_NUM_THREADS``
    (else ``LLVMPIPE_THREADS``, read by Mesa when the first context starts). Must run
    before ``import mujoco``. When none works, rendering is disabled (physics still
    runs) and ``require_renderer()`` raises with the reasons.
    """
    global _failure
    os.environ.setdefault("LP_NUM_THREADS", LLVMPIPE_THREADS)
    chosen = os.environ.get("MUJOCO_GL")
    if chosen:
        os.environ.setdefault("PYOPENGL_PLATFORM", chosen)
        return chosen
    if "mujoco" in sys.modules:
        raise RuntimeError("configure_headless_gl() must run before mujoco is imported")
    errors = []
    for backend in backends:
        env = {**os.environ, "MUJOCO_GL": backend, "PYOPENGL_PLATFORM": backend}
        probe = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            os.environ["MUJOCO_GL"] = backend
            os.environ["PYOPENGL_PLATFORM"] = backend
            return backend
        last_line = (probe.stderr.strip().splitlines() or ["(no output)"])[-1]
        errors.append(f"{backend}: {last_line}")
    _failure = (
        "no offscreen OpenGL backend works for MuJoCo ("
        + "; ".join(errors)
        + "). Install libegl1 (EGL) or libosmesa6 (OSMesa), or set MUJOCO_GL explicitly."
    )
    os.environ["MUJOCO_GL"] = "disable"
    return None


def require_renderer() -> None:
    """Raise ``RendererUnavailable`` if no backend could be set up."""
    if _failure is not None or os.environ.get("MUJOCO_GL") == "disable":
        raise RendererUnavailable(_failure or "rendering is disabled (MUJOCO_GL=disable)")
