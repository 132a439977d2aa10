"""The demo's real-time verdict (the digital FPS it reports is the lower of what its subscriber saw and
what the recorder wrote to the bag, and an episode that left digital mode never counts as digital), and
a second run replacing the first one's products."""

from rynn_common.ros_names import IMAGE_TOPIC
from rynn_world.demo import DIGITAL_FPS_FLOOR, digital_verdict, summary_markdown


def episode(mode: str, seen_frames: int, written: int, modes_seen=None, seconds: float = 10.0) -> dict:
    return {"bag": f"/bags/{mode}", "mode": mode, "seconds": seconds, "camera_frames": seen_frames,
            "camera_fps": seen_frames / seconds, "latency_p50_ms": {}, "video": "v.mp4",
            "recorder": {"modes_seen": modes_seen or [mode], "topics": {IMAGE_TOPIC: {"written": written}}}}


def test_the_lower_of_seen_and_recorded_fps_decides():
    verdict = digital_verdict([episode("digital", 160, 110), episode("real", 300, 300)])
    assert verdict["subscriber_fps"] == 16.0 and verdict["recorded_fps"] == 11.0
    assert verdict["camera_fps"] == 11.0 and not verdict["met"]
    assert not digital_verdict([episode("digital", 160, 150)])["met"]  # 15.0 written: below the model's clock
    assert digital_verdict([episode("digital", 160, 159)])["met"] and DIGITAL_FPS_FLOOR == 15.8


def test_a_mode_change_during_the_digital_episode_fails_and_the_summary_says_why():
    episodes = [episode("digital", 160, 160, modes_seen=["digital", "real"])]
    verdict = digital_verdict(episodes)
    assert verdict["camera_fps"] == 16.0 and not verdict["met"]
    summary = {"episodes": episodes, "digital_real_time": verdict, "lerobot": {"path": "d", "episodes": 1, "frames": 1},
               "machine": {"cpus": 2, "load_average": 3.0}}
    text = summary_markdown(summary)
    assert "BELOW the 15.8 FPS real-time floor (the model's 16 FPS clock)" in text
    assert "the mode changed during the episode" in text and "16.0 / 16.0" in text


def test_no_digital_episode_is_not_real_time():
    assert not digital_verdict([episode("real", 300, 300)])["met"]


def test_a_second_demo_replaces_the_first_ones_products_and_nothing_else(tmp_path):
    from rynn_world.demo import clear_previous_demo

    for directory in ("bags/episode_0000", "lerobot/data", "videos", "logs", "mine"):
        (tmp_path / directory).mkdir(parents=True)
    for name in ("summary.json", "summary.md", "launcher.log", "notes.txt", "lerobot/data/chunk.parquet"):
        (tmp_path / name).write_text("x")
    clear_previous_demo(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "notes.txt"]
    clear_previous_demo(tmp_path)  # nothing left to replace: no error
