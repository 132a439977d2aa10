"""Screenshot of the operator console in digital mode, for the README (docs/console.png).

Starts the graph in digital mode (the packaged world model drives the canonical camera; the
simulated robot's camera is the other source) with the skeleton overlay on, opens the console
in headless Chromium, waits until both cameras and the 3D robot are live, and saves the page as
a PNG small enough for the repository (< 300 kB).

    .venv/bin/python scripts/console_screenshot.py [--out docs/console.png] [name:=value ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src" / p) for p in ("rynn_common", "rynn_retarget", "rynn_world_node", "rynn_robot_bridge")]

from rynn_world.console import headless_browser as browser
from rynn_world.console.graph_session import start_graph

MAX_BYTES = 300_000


def small_png(rgb: np.ndarray, max_bytes: int) -> bytes:
    """PNG of the screenshot, palette-reduced and if needed narrower, under ``max_bytes``."""
    image = rgb
    while True:
        quantized = (image // 8) * 8  # 32 levels per channel: flat UI colours stay exact enough, PNG shrinks
        ok, png = cv2.imencode(".png", cv2.cvtColor(quantized, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 9])
        if not ok:
            raise RuntimeError("PNG encoding failed")
        if png.size <= max_bytes or image.shape[1] <= 640:
            return png.tobytes()
        image = cv2.resize(image, (image.shape[1] * 4 // 5, image.shape[0] * 4 // 5), interpolation=cv2.INTER_AREA)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "console.png")
    parser.add_argument("--settle-s", type=float, default=15.0, help="live time after both cameras show before the shot")
    args, graph_arguments = parser.parse_known_args()
    log_dir = Path(tempfile.mkdtemp(prefix="console_screenshot_"))
    session = start_graph(["mode:=digital", *graph_arguments, "--set", "operator_console.skeleton_overlay=true"], log_dir)
    print(f"console at {session.url} (logs in {log_dir})")
    driver = browser.start_browser(session.url, window_size=(1600, 1100))
    try:
        text = browser.page_text
        ready = browser.wait_for(lambda: "Mode: DIGITAL" in text(driver) and text(driver).count("FPS, frame age") >= 2, 600.0)
        if not ready:
            raise RuntimeError(f"the console never showed digital mode with both cameras:\n{text(driver)}")
        time.sleep(args.settle_s)  # let the health tables and the 3D view fill in: this is a picture, not a check
        browser.dismiss_notifications(driver)  # e.g. headless Chromium's "software WebGL" notice
        time.sleep(1.0)
        png = np.frombuffer(driver.get_screenshot_as_png(), dtype=np.uint8)
        rgb = cv2.cvtColor(cv2.imdecode(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    finally:
        driver.quit()
        session.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(small_png(rgb, MAX_BYTES))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
