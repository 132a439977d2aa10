"""ClockStepDetector on an injected wall clock that steps while the monotonic clock runs on."""

from rynn_common.clock_steps import ClockStepDetector


def test_steps_either_way_are_seen_once_and_drift_is_not():
    detector = ClockStepDetector(tolerance_s=0.25)
    wall, mono = 1_700_000_000.0, 50.0
    assert detector.step(wall, mono) == 0.0
    for _ in range(1000):  # 10 s at 100 Hz with 500 ppm slewing: no step
        wall, mono = wall + 0.01 * 1.0005, mono + 0.01
        assert detector.step(wall, mono) == 0.0
    wall -= 3600.0  # stepped back an hour
    wall, mono = wall + 0.01, mono + 0.01
    assert abs(detector.step(wall, mono) + 3600.0) < 1e-6
    assert detector.step(wall + 0.01, mono + 0.01) == 0.0  # counted once
    wall += 30.0
    assert abs(detector.step(wall + 0.02, mono + 0.02) - 30.0) < 1e-6
    assert detector.steps == 2 and abs(detector.last_step_s - 30.0) < 1e-6


def test_steady_timers_tick_on_the_monotonic_clock():
    import time

    import rclpy
    from rclpy.clock import ClockType
    from rclpy.executors import SingleThreadedExecutor

    from rynn_common.clock_steps import create_steady_timer

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("steady_timer_probe", context=context)
        ticks = []
        timer = create_steady_timer(node, 0.02, lambda: ticks.append(time.monotonic()))
        assert timer.clock.clock_type == ClockType.STEADY_TIME
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        deadline = time.monotonic() + 30.0
        while len(ticks) < 5 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert len(ticks) >= 5
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


def test_no_node_times_its_timers_on_the_wall_clock():
    """Every node's periodic work (status, flushing, the console's refresh) keeps running when the
    system clock steps back: node shells make timers with create_steady_timer, never create_timer."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[2]
    offenders = [f"{path.relative_to(src)}:{number}" for path in sorted(src.glob("*/*/nodes/*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), 1) if ".create_timer(" in line]
    assert sorted(src.glob("*/*/nodes/*.py")), "no node shells found"
    assert not offenders, offenders
