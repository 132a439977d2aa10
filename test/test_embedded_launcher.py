"""The graph definition (src/rynn_world_node/config/teleop_graph.yaml) and the embedded launcher that runs it.

Resolution and the launch_ros translation are plain Python (no launch install
needed); the launcher itself is tested as a process: the real graph over DDS
and LCM, and a stand-in graph of plain processes for the signal escalation.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from launched_graph import ALL_UP, launcher_args, node_pids, process_group_alive, unique_lcm_url
from ros_test_tools import REPO_ROOT, autogroup_nice, read_log, thread_nice, wait_until
from rynn_world.launcher.graph import GraphError, load_graph, module_available, resolve
from rynn_world.launcher.launch_ros_nodes import node_arguments
from rynn_world.launcher.node_command import node_command

RECORDER = "rynn_robot_bridge.nodes.recorder_node"
REAL_CAMERA_REMAPS = (
    ("/camera/camera/color/image_raw", "/rynn/real/camera/color/image_raw"),
    ("/camera/camera/color/camera_info", "/rynn/real/camera/color/camera_info"),
)


@pytest.fixture(scope="module")
def graph():
    return load_graph()


def by_name(specs):
    return {spec.name: spec for spec in specs}


# --- the graph definition ------------------------------------------------------------------

def test_default_graph_is_the_teleop_suite(graph):
    nodes = by_name(resolve(graph))
    console = ["operator_console"] if "console" in graph.arguments else []  # optional browser view
    assert list(nodes) == ["tracker_node", "glove_node", "retarget_node", "sim_robot", "world_model_node", "rynn_bridge",
                           "robot_state_publisher", *console]
    assert {name for name, spec in nodes.items() if not spec.required} == {"world_model_node", "robot_state_publisher",
                                                                           *console}
    assert {name for name, spec in nodes.items() if spec.respawn} == {"world_model_node"}  # restarted, never fatal
    assert nodes["sim_robot"].remappings == REAL_CAMERA_REMAPS  # the bridge owns the canonical camera topics
    assert nodes["rynn_bridge"].parameters["start_mode"] == "real"
    assert nodes["tracker_node"].parameters["source"] == nodes["glove_node"].parameters["source"] == "synthetic"
    assert nodes["world_model_node"].parameters["model_config"] == "embedded_cpu"
    assert all(spec.ready_log for spec in nodes.values())


def test_arguments_reach_every_node_with_their_types(graph):
    nodes = by_name(resolve(graph, {
        "mode": "digital", "source": "live", "camera_width": "320", "camera_height": "240",
        "lcm_url": "udpm://239.255.76.67:7999?ttl=0", "checkpoint": "/models/wm", "urdf_path": "/robots/m6.urdf",
        "model_config": "tiny",
    }))
    assert nodes["tracker_node"].parameters["source"] == nodes["glove_node"].parameters["source"] == "udp"  # live -> UDP adapters
    assert nodes["rynn_bridge"].parameters["start_mode"] == "digital"
    for name in ("world_model_node", "rynn_bridge"):
        assert (nodes[name].parameters["camera_width"], nodes[name].parameters["camera_height"]) == (320, 240)
    assert (nodes["sim_robot"].parameters["sim.image_width"], nodes["sim_robot"].parameters["sim.image_height"]) == (320, 240)
    assert type(nodes["sim_robot"].parameters["sim.image_width"]) is int
    assert nodes["sim_robot"].parameters["lcm.url"] == nodes["rynn_bridge"].parameters["lcm.url"] == "udpm://239.255.76.67:7999?ttl=0"
    assert nodes["world_model_node"].parameters["checkpoint"] == "/models/wm"
    assert nodes["rynn_bridge"].parameters["urdf_path"] == "/robots/m6.urdf"


@pytest.mark.parametrize("arguments, message", [
    ({"mode": "simulated"}, "argument mode:='simulated' is not one of real, digital"),
    ({"camera_width": "wide"}, "argument camera_width:='wide' must be int"),
    ({"record": "maybe"}, "argument record:='maybe' must be bool"),
    ({"speed": "2"}, "unknown launch arguments ['speed']"),
])
def test_bad_arguments_are_named(graph, arguments, message):
    with pytest.raises(GraphError, match=re.escape(message)):
        resolve(graph, arguments)


def test_recorder_only_when_recording(graph):
    assert "rynn_recorder" not in by_name(resolve(graph, {"record": "false"}))
    if module_available(RECORDER):
        recorder = by_name(resolve(graph, {"record": "true", "record_dir": "/data/bags", "checkpoint": "/models/wm"}))["rynn_recorder"]
        assert recorder.respawn and not recorder.required  # a recorder crash never ends the session
        assert recorder.respawn_delay > 0 and recorder.parameters["output_dir"] == "/data/bags"
        assert recorder.parameters["world_model_checkpoint"] == "/models/wm"  # its episodes' metadata
    else:
        with pytest.raises(GraphError, match=f"needs the module {RECORDER}, which is not installed"):
            resolve(graph, {"record": "true"})


def test_bring_up_names_the_packaged_checkpoint_for_world_model_and_recorder(graph):
    """An empty ``checkpoint`` is resolved once by the bring-up: the world-model node loads and the
    recorder's episode metadata names the same packaged weights, package-relative."""
    from rynn_robot_bridge.recording.metadata import EpisodeSetup, checkpoint_sha256
    from rynn_world.checkpoints import packaged_checkpoint

    packaged = packaged_checkpoint("embedded_cpu")
    assert packaged is not None, "rynn_world ships a default checkpoint for embedded_cpu"
    nodes = by_name(resolve(graph, {"record": "true", "model_config": "embedded_cpu"}))
    assert nodes["world_model_node"].parameters["checkpoint"] == str(packaged)
    assert nodes["rynn_recorder"].parameters["world_model_checkpoint"] == str(packaged)
    setup = EpisodeSetup.create("t", "op", "digital", "", str(packaged), 1)
    assert setup.world_model_checkpoint == "rynn_world/checkpoints/embedded_cpu"  # not this machine's path
    assert setup.world_model_checkpoint_sha256 == checkpoint_sha256(packaged) != "none"
    # a model config that ships no weights (the unit-test one) leaves both empty
    tiny = by_name(resolve(graph, {"record": "true", "model_config": "tiny"}))
    assert tiny["world_model_node"].parameters["checkpoint"] == tiny["rynn_recorder"].parameters["world_model_checkpoint"] == ""


def test_embedded_command_line(graph):
    sim = by_name(resolve(graph, {"camera_width": "320", "lcm_url": "udpm://239.255.76.67:7999?ttl=0"}))["sim_robot"]
    assert node_command(sim, "/venv/bin/python") == [
        "/venv/bin/python", "-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", "-r", "__node:=sim_robot",
        "-p", 'lcm.url:="udpm://239.255.76.67:7999?ttl=0"', "-p", 'sim.scene:="empty"', "-p", "sim.image_width:=320",
        "-p", "sim.image_height:=480",
        "-r", "/camera/camera/color/image_raw:=/rynn/real/camera/color/image_raw",
        "-r", "/camera/camera/color/camera_info:=/rynn/real/camera/color/camera_info",
    ]


def console_scripts() -> dict[tuple[str, str], str]:
    """(package, executable) -> module, from every package's setup.py entry points."""
    scripts = {}
    for setup in REPO_ROOT.glob("src/*/setup.py"):
        package = re.search(r'PACKAGE = "(\w+)"', setup.read_text()).group(1)
        for executable, module in re.findall(r'"(\w+) = ([\w.]+):main"', setup.read_text()):
            scripts[(package, executable)] = module
    return scripts


def test_launch_ros_nodes_run_the_same_programs_as_the_embedded_launcher(graph):
    scripts = console_scripts()
    for spec in resolve(graph, {"mode": "digital", "record": str(module_available(RECORDER)).lower()}):
        arguments = node_arguments(spec)
        assert scripts[(arguments["package"], arguments["executable"])] == spec.module
        assert arguments["name"] == spec.name and arguments["output"] == "screen"
        assert arguments["parameters"] == ([spec.parameters] if spec.parameters else [])
        assert arguments["remappings"] == list(spec.remappings)
        assert (arguments["respawn"], arguments["respawn_delay"]) == (spec.respawn, spec.respawn_delay)
        assert arguments.get("additional_env", {}) == spec.environment  # the same priority (RYNN_NICE)


def test_who_yields_the_cpu(graph):
    """The loop (operator side, bridge, world model) keeps full priority; the recorder, robot_state_publisher,
    console and simulated robot yield (rynn_common.process_priority), reaching each process as RYNN_NICE."""
    specs = by_name(resolve(graph, {"record": str(module_available(RECORDER)).lower(), "compose": "false"}))
    nice = {name: spec.nice for name, spec in specs.items()}
    assert {name for name, value in nice.items() if value} == {
        name for name in ("rynn_recorder", "robot_state_publisher", "operator_console", "sim_robot") if name in specs}
    assert nice["sim_robot"] < nice.get("rynn_recorder", 19) < nice["robot_state_publisher"]
    assert specs["sim_robot"].environment == {"RYNN_NICE": str(nice["sim_robot"])}
    assert specs["rynn_bridge"].environment == {} and specs["world_model_node"].environment == {}


@pytest.mark.parametrize("entry, message", [
    ("required: true, respawn: true", "is both required and respawned"),
    ("respawn: yes please", "respawn must be true/false"),
    ("respawn: true, respawn_delay: -1", "respawn_delay must be seconds >= 0"),
    ("respawn_delay: 2.0", "respawn_delay must be seconds >= 0 on a respawned node"),
    ("nice: -5", "nice must be an integer 0..19"),
    ("nice: 20", "nice must be an integer 0..19"),
    ("nice: low", "nice must be an integer 0..19"),
    ("nice: 5, container: c", "nice and container exclude each other"),
])
def test_bad_respawn_policies_are_named(tmp_path, entry, message):
    graph_file = tmp_path / "graph.yaml"
    graph_file.write_text(f"containers: {{c: {{}}}}\nnodes:\n  - {{name: n, package: p, executable: e, module: m, {entry}}}\n")
    with pytest.raises(GraphError, match=re.escape(message)):
        load_graph(graph_file)


def test_launch_file_imports_launch_only_when_generating(monkeypatch):
    """Loadable without launch installed; generate_launch_description needs it (ros2 launch provides it)."""
    path = REPO_ROOT / "src" / "rynn_world_node" / "launch" / "digital_teleop.launch.py"
    spec = importlib.util.spec_from_file_location("digital_teleop_launch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.generate_launch_description)
    if importlib.util.find_spec("launch_ros") is None:
        monkeypatch.setitem(sys.modules, "launch", None)
        with pytest.raises(ImportError):
            module.generate_launch_description()


# --- the launcher process ----------------------------------------------------------------

STAND_IN_NODE = '''
"""Ignores SIGINT (like a hung node) and leaves a grandchild in its process group."""
import signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(600)"])
print("stubborn node up", flush=True)
time.sleep(600)
'''


def start_stand_in_graph(start_process, tmp_path, module: str, source: str, node: str, *launcher_options: str):
    """The launcher on a one-node graph (``node``: its YAML flow mapping) whose node is the plain script
    ``source`` saved as ``module``; returns the launcher once the node is up."""
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    graph_file = tmp_path / "graph.yaml"
    graph_file.write_text(f"arguments: {{}}\nnodes:\n  - {node}\n")
    launcher = start_process(
        ["-m", "rynn_world.launcher", "--graph", str(graph_file), "--log-dir", str(tmp_path / "logs"), *launcher_options],
        "launcher", PYTHONPATH=f"{tmp_path}:{':'.join(map(str, Path(REPO_ROOT / 'src').glob('rynn_*')))}",
    )
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)), 30.0), read_log(launcher)
    return launcher


def test_escalates_to_sigterm_and_leaves_no_orphans(tmp_path, start_process):
    launcher = start_stand_in_graph(
        start_process, tmp_path, "stubborn_node", STAND_IN_NODE,
        '{name: stubborn, package: none, executable: none, module: stubborn_node, required: true, ready_log: "stubborn node up"}',
        "--sigint-timeout", "1",
    )
    pgid = node_pids(read_log(launcher))["stubborn"]
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=20) == 0, read_log(launcher)
    output = read_log(launcher)
    assert "stubborn still running 1 s after SIGINT: sending SIGTERM" in output
    assert "stubborn stopped (killed by SIGTERM)" in output
    assert not process_group_alive(pgid)  # the grandchild went with it
    assert (tmp_path / "logs" / "stubborn.log").read_text() == "stubborn node up\n"


RESPAWNED_NODE = '''
"""Counts its starts in a file next to it, then waits to be killed."""
import pathlib, time
starts = pathlib.Path(__file__).with_suffix(".starts")
starts.write_text(starts.read_text() + "x" if starts.exists() else "x")
print(f"respawned node up ({len(starts.read_text())})", flush=True)
time.sleep(600)
'''


def test_a_respawned_node_is_started_again_after_its_delay_and_the_graph_keeps_running(tmp_path, start_process):
    launcher = start_stand_in_graph(
        start_process, tmp_path, "respawned_node", RESPAWNED_NODE,
        '{name: phoenix, package: none, executable: none, module: respawned_node, respawn: true, respawn_delay: 0.5, '
        'ready_log: "respawned node up"}',
    )
    first = node_pids(read_log(launcher))["phoenix"]
    assert "started phoenix (pid %d, respawned on exit)" % first in read_log(launcher)
    for restart in (1, 2):  # however it dies, it comes back; the launcher keeps running
        os.kill(node_pids(read_log(launcher))["phoenix"], signal.SIGKILL)
        assert wait_until(lambda restart=restart: read_log(launcher).count("phoenix ready") == restart + 1, 30.0), read_log(launcher)
        assert launcher.poll() is None
    output = read_log(launcher)
    assert output.count("node phoenix exited (killed by SIGKILL); respawning in 0.5 s") == 2
    assert re.search(r"started phoenix \(pid \d+, restart 2\)", output), output
    assert node_pids(output)["phoenix"] != first and not process_group_alive(first)
    assert (tmp_path / "respawned_node.starts").read_text() == "xxx"
    log = (tmp_path / "logs" / "phoenix.log").read_text()  # one log across restarts
    assert log.splitlines() == [f"respawned node up ({n})" for n in (1, 2, 3)]
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=20) == 0, read_log(launcher)
    assert not process_group_alive(node_pids(read_log(launcher))["phoenix"])


def start_graph(start_process, tmp_path, *arguments: str):
    """The default graph, small and without the optional operator console (not what these tests are about),
    one process per node (compose:=false; test/test_composition.py runs the composed graph)."""
    no_console = ("console:=false",) if "console" in load_graph().arguments else ()
    separate = ("compose:=false",) if "compose" in load_graph().arguments else ()
    launcher = start_process(
        launcher_args(tmp_path / "logs", "model_config:=tiny", "camera_width:=160", "camera_height:=120",
                      f"lcm_url:={unique_lcm_url()}", *no_console, *separate, *arguments, sets=("sim_robot.sim.render_rate_hz=5.0",)),
        "launcher",
    )
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 180.0), read_log(launcher)
    assert launcher.poll() is None, read_log(launcher)
    return launcher, node_pids(read_log(launcher))


@pytest.mark.ros
@pytest.mark.slow
def test_ctrl_c_stops_the_whole_graph_cleanly(tmp_path, start_process):
    # SIGINT must stop every node; 30 s (not 10) before SIGTERM: a loaded machine is slow, not wrong.
    launcher, pids = start_graph(start_process, tmp_path, "--sigint-timeout=30")
    assert {"tracker_node", "glove_node", "retarget_node", "sim_robot", "world_model_node", "rynn_bridge"} <= set(pids)
    graph = load_graph()
    flags = {name: "false" for name in ("console", "compose") if name in graph.arguments}
    specs = resolve(graph, flags)
    assert set(pids) == {spec.name for spec in specs}  # one process per node of the graph
    for spec in specs:  # each process at its graph priority, all its threads, its own session's autogroup too
        nice = thread_nice(pids[spec.name])
        assert min(nice) == spec.nice, (spec.name, nice)  # a library may lower its own thread further (the sim's: 19)
        assert autogroup_nice(pids[spec.name]) in (None, spec.nice), spec.name

    # The world model dying is reported and it is restarted (respawn in the graph); the graph keeps running.
    os.kill(pids["world_model_node"], signal.SIGKILL)
    assert wait_until(lambda: read_log(launcher).count("world_model_node ready") == 2 or launcher.poll() is not None,
                      180.0), read_log(launcher)
    output = read_log(launcher)
    assert "node world_model_node exited (killed by SIGKILL); respawning in 2 s" in output
    assert launcher.poll() is None and not process_group_alive(pids["world_model_node"])
    restarted = node_pids(output)["world_model_node"]
    assert restarted != pids["world_model_node"]

    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=60) == 0, read_log(launcher)
    output = read_log(launcher)
    for name, pid in {**pids, "world_model_node": restarted}.items():
        assert f"[rynn_launch] {name} stopped (exit code 0)" in output, output  # each shut down on SIGINT
        assert not process_group_alive(pid)
    assert "Traceback" not in output and output.rstrip().endswith("[rynn_launch] graph stopped")
    logs = {path.name for path in (tmp_path / "logs").iterdir()}
    assert logs == {f"{name}.log" for name in pids} | {"rynn_launch.log"}
    assert "bridge up in real mode" in (tmp_path / "logs" / "rynn_bridge.log").read_text()
    assert re.search(r"^\[rynn_bridge\] .*bridge up in real mode", output, re.M)  # the console prefixes each line


@pytest.mark.ros
@pytest.mark.slow
def test_a_required_node_dying_stops_the_graph_with_the_reason(tmp_path, start_process):
    launcher, pids = start_graph(start_process, tmp_path)
    os.kill(pids["retarget_node"], signal.SIGKILL)
    assert launcher.wait(timeout=60) == 1, read_log(launcher)
    output = read_log(launcher)
    assert "required node retarget_node exited (killed by SIGKILL); stopping the graph" in output
    assert output.rstrip().endswith("graph stopped because required node retarget_node exited (killed by SIGKILL)")
    assert not any(process_group_alive(pid) for pid in pids.values())


@pytest.mark.ros
@pytest.mark.slow
def test_a_killed_recorder_is_respawned_and_recovers_its_episode_while_the_graph_runs(tmp_path, start_process, ros_node):
    """Issue 17 row 11: SIGKILL of the recorder mid-episode used to stop the whole graph."""
    from rosbags.rosbag2 import Reader
    from std_srvs.srv import Trigger

    from rynn_robot_bridge.recording.metadata import SIDECAR_NAME

    bags = tmp_path / "bags"
    launcher, pids = start_graph(start_process, tmp_path, "record:=true", f"record_dir:={bags}")
    from rynn_common.ros_names import RECORDER_SERVICES
    from rynn_common.service_calls import node_service_caller

    # As the console calls them: after a respawn a request to the new server can be lost, so it is resent on
    # a fresh client (rynn_common.service_calls); one long-lived client stayed unanswered for 60 s under load.
    callers = {verb: node_service_caller(ros_node, Trigger, RECORDER_SERVICES[verb]) for verb in ("start", "stop")}

    def call(verb: str) -> Trigger.Response:
        answer = callers[verb].call(Trigger.Request(), ros_node.spin_once, 60.0)
        assert answer is not None, f"/rynn/recorder/{verb} not answered in 60 s (resent {callers[verb].resent})\n{read_log(launcher)}"
        return answer

    started = call("start")
    assert started.success, started.message
    episode = Path(started.message)

    def flushed_joint_states(path: Path) -> bool:  # the sidecar is rewritten at every flush (1 s)
        sidecar = path / SIDECAR_NAME
        topics = json.loads(sidecar.read_text()).get("topics", {}) if sidecar.is_file() else {}
        return topics.get("/joint_states", {}).get("written", 0) >= 50

    assert wait_until(lambda: flushed_joint_states(episode), 60.0, spin=ros_node.spin_once), read_log(launcher)[-3000:]
    os.kill(pids["rynn_recorder"], signal.SIGKILL)

    # The graph keeps running; the recorder comes back and recovers the killed episode first.
    assert wait_until(lambda: read_log(launcher).count("rynn_recorder ready") == 2 or launcher.poll() is not None,
                      120.0), read_log(launcher)
    output = read_log(launcher)
    assert "node rynn_recorder exited (killed by SIGKILL); respawning in 1 s" in output
    assert re.search(r"started rynn_recorder \(pid \d+, restart 1\)", output), output
    assert launcher.poll() is None
    for name, pid in pids.items():
        assert name == "rynn_recorder" or process_group_alive(pid), f"{name} died\n{output}"
    assert f"recovered {episode.name} left by a crashed recorder" in output, output
    with Reader(episode) as reader:  # the killed episode reads back
        counts = {connection.topic: connection.msgcount for connection in reader.connections}
        assert sum(1 for _ in reader.messages()) == sum(counts.values())
    assert counts.get("/joint_states", 0) >= 50, counts
    assert json.loads((episode / SIDECAR_NAME).read_text())["state"] == "recovered"

    # The respawned recorder records a new episode as before.
    again = call("start")
    assert again.success and Path(again.message) != episode, again.message
    assert wait_until(lambda: flushed_joint_states(Path(again.message)), 60.0, spin=ros_node.spin_once)
    stopped = call("stop")
    assert stopped.success, stopped.message
    assert json.loads(stopped.message)["topics"]["/joint_states"]["written"] > 0
    with Reader(Path(again.message)) as reader:
        assert sum(c.msgcount for c in reader.connections if c.topic == "/joint_states") > 0

    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=60) == 0, read_log(launcher)


LINKED_NODE = '''
"""Links itself to the launcher as every Rynn node does, then waits for SIGINT and says so."""
import pathlib, signal, time
from rynn_common.process_link import stop_with_launcher
interrupted = []
signal.signal(signal.SIGINT, lambda *_: interrupted.append(True))
assert not stop_with_launcher()
print("linked node up", flush=True)
while not interrupted:
    time.sleep(0.05)
pathlib.Path(__file__).with_suffix(".stopped").write_text("SIGINT")
'''


def test_a_killed_launcher_takes_its_nodes_along(tmp_path, start_process):
    """SIGKILL gives the launcher no chance to stop its nodes (each in its own session); the kernel's
    parent-death signal does: the node gets SIGINT, its clean stop, and no orphan stays on the domain."""
    launcher = start_stand_in_graph(
        start_process, tmp_path, "linked_node", LINKED_NODE,
        '{name: linked, package: none, executable: none, module: linked_node, required: true, ready_log: "linked node up"}',
    )
    pid = node_pids(read_log(launcher))["linked"]
    launcher.kill()
    launcher.wait(timeout=20)
    assert wait_until(lambda: not process_group_alive(pid), 30.0)
    assert (tmp_path / "linked_node.stopped").read_text() == "SIGINT"


def test_a_node_outside_the_launcher_is_not_linked(monkeypatch):
    from rynn_common.process_link import LAUNCHER_PID_ENV, stop_with_launcher

    monkeypatch.delenv(LAUNCHER_PID_ENV, raising=False)
    assert stop_with_launcher() is False
    monkeypatch.setenv(LAUNCHER_PID_ENV, "not a pid")
    assert stop_with_launcher() is False
