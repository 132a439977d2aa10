"""Screenshot of the operator console in a healthy digital session, for the README (docs/console.png).

Starts the graph in digital mode (the packaged world model drives the canonical camera; the
simulated robot's camera is the other source) with the skeleton overlay on and opens the console
in headless Chromium. It takes the picture only once the session has been healthy for
``--hold-s`` seconds in a row, as the page itself says: digital mode, the canonical camera at
``--min-fps`` (10) or more, no fault on the health board and no stale stream; and it checks the page
again right after the shot. A session that does not get healthy within ``--timeout-s`` writes no
picture: the script says what was wrong and exits 1. The PNG stays under 300 kB.

    .venv/bin/python scripts/console_screenshot.py [--out docs/console.png] [name:=value ...]
"""

from __future__ import annotations

import argparse
import re
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
CAPTION = re.compile(r"([\d.]+) FPS, frame age (\d+) ms")
NO_FAULTS = "No active faults."


def health_problems(canonical_caption: str, page_text: str, min_fps: float) -> list[str]:
    """What keeps the page from showing a healthy digital session (empty: healthy)."""
    problems = []
    if "Mode: DIGITAL" not in page_text:
        problems.append("not in digital mode")
    reading = CAPTION.search(canonical_caption)
    if reading is None:
        problems.append(f"no canonical camera rate yet ({canonical_caption or 'no caption'})")
    elif float(reading.group(1)) < min_fps:
        problems.append(f"canonical camera at {reading.group(1)} FPS (< {min_fps:g})")
    if NO_FAULTS not in page_text:
        listed = page_text.split("Faults", 1)[1].strip().splitlines() if "Faults" in page_text else []
        faults = [line.strip() for line in listed[:8] if ": " in line and "\t" not in line][:3]  # not the tables below
        problems.append("faults on the health board: " + "; ".join(faults))
    if "STALE:" in page_text:
        problems.append("a stream is stale: " + page_text.split("STALE:", 1)[1].splitlines()[0].strip())
    return problems


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
    parser.add_argument("--min-fps", type=float, default=10.0, help="the canonical camera's rate the picture needs")
    parser.add_argument("--hold-s", type=float, default=10.0, help="healthy this long in a row before the shot")
    parser.add_argument("--timeout-s", type=float, default=900.0, help="give up (no picture) after this long")
    parser.add_argument("--browser-competes", action="store_true",
                        help="run the headless browser at normal priority; by default it gets only idle CPU, "
                             "its software WebGL standing in for a desktop's GPU")
    args, graph_arguments = parser.parse_known_args()
    log_dir = Path(tempfile.mkdtemp(prefix="console_screenshot_"))
    session = start_graph(["mode:=digital", *graph_arguments, "--set", "operator_console.skeleton_overlay=true"], log_dir)
    print(f"console at {session.url} (logs in {log_dir})")
    driver = browser.start_browser(session.url, window_size=(1600, 1250), idle_priority=not args.browser_competes)
    rgb, problems = None, ["the page never loaded"]
    try:
        deadline, healthy_since = time.monotonic() + args.timeout_s, None
        while rgb is None and time.monotonic() < deadline:
            problems = health_problems(browser.canonical_caption(driver), browser.page_text(driver), args.min_fps)
            now = time.monotonic()
            healthy_since = (healthy_since or now) if not problems else None
            if healthy_since is not None and now - healthy_since >= args.hold_s:
                browser.dismiss_notifications(driver)  # e.g. headless Chromium's "software WebGL" notice
                png = np.frombuffer(driver.get_screenshot_as_png(), dtype=np.uint8)
                problems = health_problems(browser.canonical_caption(driver), browser.page_text(driver), args.min_fps)
                if not problems:  # still healthy after the shot: the picture shows a healthy page
                    rgb = cv2.cvtColor(cv2.imdecode(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
                healthy_since = None
            time.sleep(1.0)
        last_caption = browser.canonical_caption(driver)
    finally:
        driver.quit()
        session.stop()
    if rgb is None:
        print(f"no picture: the session was not healthy for {args.hold_s:g} s within {args.timeout_s:g} s; "
              f"last: {'; '.join(problems)} (canonical: {last_caption or 'no caption'})", file=sys.stderr)
        sys.exit(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(small_png(rgb, MAX_BYTES))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
