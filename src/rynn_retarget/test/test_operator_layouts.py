"""One operator stream through both layouts of the operator side gives the solver the same numbers and the
same 54-D actions and 200 Hz commands.

Composed (the graph's operator container), the tracker and glove nodes hand each sample to the retarget
node in-process as the fields their messages would carry, building no message, converted only when the
retarget worker takes the sample (here every one: the test waits for it); in separate processes
the retarget node reads the messages from DDS. Here one tracker and one glove node publish a recorded
synthetic stream (hands with lost joints, zero confidences and invalid hands included) to two retarget
nodes at once, one linked in-process, one reading DDS only, over real rclpy and DDS; every sample
each one takes is compared bit for bit, then run through the retarget pipeline and the smoother.
"""

import threading

import numpy as np
import pytest

from ros_test_tools import wait_until

pytestmark = pytest.mark.ros

SAMPLES = 240  # 2 s of the operator at 120 Hz
EVERY_SAMPLE_ON_DDS = ["--ros-args", "-p", "rate_hz:=0.001", "-p", "dds_rate_hz:=0.0"]  # the test publishes


def recorded_stream():
    """The synthetic operator's grasp at 120 Hz, with the glove faults a real stream has."""
    from rynn_retarget.operator.frame import HandSkeleton
    from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig

    operator = SyntheticOperator(SyntheticOperatorConfig(motion="grasp", period_s=2.0))
    frames = [operator.frame_at(1.0 + i / 120.0) for i in range(SAMPLES)]
    for i, frame in enumerate(frames):
        left, right = frame.left_hand, frame.right_hand
        frame.left_hand = HandSkeleton(left.points.copy(), left.confidence.copy(), left.valid)
        frame.right_hand = HandSkeleton(right.points.copy(), right.confidence.copy(), right.valid)
        if i % 7 == 3:
            frame.left_hand.points[5] = np.nan  # a lost joint: confidence 0 on the wire, NaN for the reader
        if i % 11 == 5:
            frame.right_hand.confidence[8:12] = 0.0
        if i % 13 == 6:
            frame.right_hand.valid = False
    return frames


def capture(node) -> tuple[dict, dict]:
    """Every tracker sample (stamp -> poses) and hand sample (stamp -> arrays) the node takes in."""
    trackers, hands = {}, {}
    tracker_frame, accept_hands = node.tracker_frame, node.accept_hands

    def taken(transforms):
        result = tracker_frame(transforms)
        if result is not None:
            frame = result[0]
            trackers[frame.stamp] = {name: pose.copy() for name, pose in frame.trackers.items()}
        return result

    def accepted(arrays, stamp, received=None):
        hands[stamp] = {key: np.array(arrays[key]) for key in ("joints", "confidence", "valid")}
        accept_hands(arrays, stamp, received)

    node.tracker_frame, node.accept_hands = taken, accepted
    return trackers, hands


def replay(pipeline, trackers: dict, hands: dict) -> tuple[list, list]:
    """The i-th tracker sample with the i-th hand sample, through the pipeline and the 200 Hz smoother."""
    from rynn_retarget.operator.frame import HandSkeleton, OperatorFrame

    smoother = pipeline.make_smoother()
    actions, commands = [], []
    for tracker_stamp, hand_stamp in zip(sorted(trackers), sorted(hands), strict=True):
        hand = hands[hand_stamp]
        frame = OperatorFrame(stamp=tracker_stamp, trackers=trackers[tracker_stamp])
        frame.left_hand, frame.right_hand = (HandSkeleton(hand["joints"][i], hand["confidence"][i], bool(hand["valid"][i]))
                                             for i in range(2))
        output = pipeline.step(frame, tracker_stamp)
        if output is not None:
            actions.append(output.action)
            smoother.set_target(output.action)
        commands.append(smoother.step(1)[0].copy())
    return actions, commands


def test_composed_samples_and_dds_messages_give_the_same_actions(ros_node):
    from rclpy.executors import SingleThreadedExecutor

    from rynn_common.config_paths import find_config
    from rynn_common.local_delivery import connect_local
    from rynn_retarget.config import load_retarget_config
    from rynn_retarget.nodes.glove_node import GloveNode
    from rynn_retarget.nodes.retarget_node import RetargetNode
    from rynn_retarget.nodes.tracker_node import TrackerNode
    from rynn_retarget.pipeline import RetargetPipeline

    context = ros_node.context
    options = {"context": context, "use_global_arguments": False}
    tracker = TrackerNode(cli_args=EVERY_SAMPLE_ON_DDS, **options)
    glove = GloveNode(cli_args=EVERY_SAMPLE_ON_DDS, **options)
    composed = RetargetNode(**options)
    separate = RetargetNode(cli_args=["--ros-args", "-r", "__node:=retarget_over_dds"], **options)
    nodes = [tracker, glove, composed, separate]
    assert connect_local([tracker, glove, composed]) == ["/rynn/operator/hands", "/tf"]  # the separate one: DDS only
    executor = SingleThreadedExecutor(context=context)
    spinning = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(timeout_sec=0.02) for _ in iter(spinning.is_set, False)])
    try:
        composed_in, separate_in = capture(composed), capture(separate)
        for node in (composed, separate):
            executor.add_node(node)
        spinning.set()
        spinner.start()
        assert wait_until(lambda: tracker.publisher.publisher.get_subscription_count() >= 2
                          and glove.publisher.publisher.get_subscription_count() >= 2, 30.0)
        start = composed.get_clock().now().nanoseconds * 1e-9  # the feeds' one start-up sample is older: left out
        # taken.copy(): one step under the GIL, while the spinner thread adds to the dict
        streamed = lambda taken: {stamp: value for stamp, value in taken.copy().items() if stamp >= start}  # noqa: E731
        counts = lambda: [len(streamed(taken)) for taken in (*composed_in, *separate_in)]  # noqa: E731
        for i, frame in enumerate(recorded_stream()):
            glove.publish_frame(frame)  # first: the composed node converts its hands when it takes the trackers
            tracker.publish_frame(frame)
            # in step with both (the composed node converts only the samples its worker takes, the DDS reader's
            # hands input keeps 10): a starved test process loses no sample
            assert wait_until(lambda i=i: counts() == [i + 1] * 4, 60.0), (i, counts())
        composed_in, separate_in = [tuple(streamed(taken) for taken in node_in) for node_in in (composed_in, separate_in)]
        assert composed.tf_input.linked and not separate.tf_input.linked
        assert wait_until(lambda: composed.tf_input.copies_dropped >= SAMPLES, 60.0)  # its DDS copies: recognised

        (composed_trackers, composed_hands), (separate_trackers, separate_hands) = composed_in, separate_in
        assert sorted(composed_trackers) == sorted(separate_trackers) and sorted(composed_hands) == sorted(separate_hands)
        for stamp, poses in composed_trackers.items():
            assert poses.keys() == separate_trackers[stamp].keys()
            for name, pose in poses.items():
                np.testing.assert_array_equal(pose, separate_trackers[stamp][name])
        for stamp, arrays in composed_hands.items():
            for key, values in arrays.items():
                np.testing.assert_array_equal(values, separate_hands[stamp][key])  # NaN where the joint was lost
        assert sum(np.isnan(a["joints"]).any() for a in composed_hands.values()) >= SAMPLES // 7
        assert sum(not a["valid"][1] for a in composed_hands.values()) >= SAMPLES // 13

        config = load_retarget_config(find_config("rynn_retarget", "retarget.yaml"))
        composed_actions, composed_commands = replay(RetargetPipeline(config), composed_trackers, composed_hands)
        separate_actions, separate_commands = replay(RetargetPipeline(config), separate_trackers, separate_hands)
        assert len(composed_actions) > SAMPLES // 2
        np.testing.assert_array_equal(np.array(composed_actions), np.array(separate_actions))
        np.testing.assert_array_equal(np.array(composed_commands), np.array(separate_commands))
        assert np.ptp(np.array(composed_actions), axis=0).max() > 0.1  # the stream moved the robot
    finally:
        spinning.clear()
        if spinner.is_alive():
            spinner.join()
        executor.shutdown()
        for node in reversed(nodes):
            node.destroy_node()


def test_a_composed_sample_its_source_got_wrong_is_counted_and_the_worker_goes_on(ros_node):
    """A tracker pose or hand of the wrong shape reaches the retarget worker still unconverted: the worker
    counts it (``tf_malformed``, ``hands_malformed``), logs it, and retargets the next good sample."""
    from rynn_common.local_delivery import connect_local
    from rynn_retarget.nodes.glove_node import GloveNode
    from rynn_retarget.nodes.retarget_node import RetargetNode
    from rynn_retarget.nodes.tracker_node import TrackerNode
    from rynn_retarget.operator.frame import HandSkeleton, OperatorFrame
    from rynn_retarget.operator.synthetic import SyntheticOperator, SyntheticOperatorConfig

    options = {"context": ros_node.context, "use_global_arguments": False}
    # the first sample goes on DDS too (where a wrong one fails in the feed's thread: counted there), the rest not
    idle_feed = ["--ros-args", "-p", "rate_hz:=0.001", "-p", "dds_rate_hz:=0.001"]
    tracker, glove = TrackerNode(cli_args=idle_feed, **options), GloveNode(cli_args=idle_feed, **options)
    retarget = RetargetNode(**options)
    nodes = [tracker, glove, retarget]
    try:
        assert connect_local(nodes) == ["/rynn/operator/hands", "/tf"]
        rejected = lambda: retarget.stats.snapshot().rejected  # noqa: E731
        good = SyntheticOperator(SyntheticOperatorConfig(motion="grasp")).frame_at(1.0)
        bad_hands = OperatorFrame(stamp=1.0, trackers={}, left_hand=HandSkeleton(np.zeros((20, 3)), np.ones(20), True),
                                  right_hand=good.right_hand)
        glove.publish_frame(good)
        tracker.publish_frame(good)
        assert wait_until(lambda: retarget.last_frame is not None, 10.0)
        glove.publish_frame(bad_hands)
        tracker.publish_frame(OperatorFrame(stamp=1.0, trackers={**good.trackers, "chest": np.eye(3)}))
        assert wait_until(lambda: rejected().get("tf_malformed", 0) == 1, 10.0), rejected()
        accepted = retarget.last_accepted
        tracker.publish_frame(good)  # converted with the bad hands still deferred: those are counted, this is solved
        assert wait_until(lambda: rejected().get("hands_malformed", 0) == 1 and retarget.last_accepted > accepted,
                          10.0), rejected()
        glove.publish_frame(good)
        accepted = retarget.last_accepted
        tracker.publish_frame(good)
        assert wait_until(lambda: retarget.last_accepted > accepted, 10.0)
        assert retarget.last_frame.left_hand is not None and retarget.last_frame.left_hand.points.shape == (21, 3)
        assert all(thread.is_alive() for thread in retarget._threads)
    finally:
        for node in reversed(nodes):
            node.destroy_node()
