"""The graph definition (config/teleop_graph.yaml) and the embedded launcher that runs it.

Resolution and the launch_ros translation are plain Python (no launch install
needed); the launcher itself is tested as a process: the real graph over DDS
and LCM, and a stand-in graph of plain processes for the signal escalation.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from launched_graph import ALL_UP, launcher_args, node_pids, process_group_alive, unique_lcm_url
from ros_test_tools import REPO_ROOT, read_log, wait_until
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
    assert list(nodes) == ["tracker_node", "glove_node", "retarget_node", "sim_robot", "world_model_node", "rynn_bridge"]
    assert {name for name, spec in nodes.items() if not spec.required} == {"world_model_node"}
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
    assert (nodes["sim_robot"].parameters["image_width"], nodes["sim_robot"].parameters["image_height"]) == (320, 240)
    assert type(nodes["sim_robot"].parameters["image_width"]) is int
    assert nodes["sim_robot"].parameters["lcm_url"] == nodes["rynn_bridge"].parameters["lcm_url"] == "udpm://239.255.76.67:7999?ttl=0"
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
        assert recorder.required and recorder.parameters["output_dir"] == "/data/bags"
        assert recorder.parameters["world_model_checkpoint"] == "/models/wm"  # its episodes' metadata
    else:
        with pytest.raises(GraphError, match=f"needs the module {RECORDER}, which is not installed"):
            resolve(graph, {"record": "true"})


def test_embedded_command_line(graph):
    sim = by_name(resolve(graph, {"camera_width": "320", "lcm_url": "udpm://239.255.76.67:7999?ttl=0"}))["sim_robot"]
    assert node_command(sim, "/venv/bin/python") == [
        "/venv/bin/python", "-m", "rynn_robot_bridge.nodes.sim_robot_node", "--ros-args", "-r", "__node:=sim_robot",
        "-p", 'lcm_url:="udpm://239.255.76.67:7999?ttl=0"', "-p", 'scene:="empty"', "-p", "image_width:=320",
        "-p", "image_height:=480",
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


def test_launch_file_imports_launch_only_when_generating(monkeypatch):
    """Loadable without launch installed; generate_launch_description needs it (ros2 launch provides it)."""
    path = REPO_ROOT / "launch" / "digital_teleop.launch.py"
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


def test_escalates_to_sigterm_and_leaves_no_orphans(tmp_path, start_process):
    (tmp_path / "stubborn_node.py").write_text(textwrap.dedent(STAND_IN_NODE))
    graph_file = tmp_path / "graph.yaml"
    graph_file.write_text(textwrap.dedent("""
        arguments: {}
        nodes:
          - {name: stubborn, package: none, executable: none, module: stubborn_node, required: true, ready_log: "stubborn node up"}
    """))
    launcher = start_process(
        ["-m", "rynn_world.launcher", "--graph", str(graph_file), "--log-dir", str(tmp_path / "logs"), "--sigint-timeout", "1"],
        "launcher", PYTHONPATH=f"{tmp_path}:{':'.join(map(str, Path(REPO_ROOT / 'src').glob('rynn_*')))}",
    )
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)), 30.0), read_log(launcher)
    pgid = node_pids(read_log(launcher))["stubborn"]
    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=20) == 0, read_log(launcher)
    output = read_log(launcher)
    assert "stubborn still running 1 s after SIGINT: sending SIGTERM" in output
    assert "stubborn stopped (killed by SIGTERM)" in output
    assert not process_group_alive(pgid)  # the grandchild went with it
    assert (tmp_path / "logs" / "stubborn.log").read_text() == "stubborn node up\n"


def start_graph(start_process, tmp_path):
    launcher = start_process(
        launcher_args(tmp_path / "logs", "model_config:=tiny", "camera_width:=160", "camera_height:=120",
                      f"lcm_url:={unique_lcm_url()}", sets=("sim_robot.render_rate_hz=5.0",)),
        "launcher",
    )
    assert wait_until(lambda: ALL_UP.search(read_log(launcher)) or launcher.poll() is not None, 180.0), read_log(launcher)
    assert launcher.poll() is None, read_log(launcher)
    return launcher, node_pids(read_log(launcher))


@pytest.mark.ros
@pytest.mark.slow
def test_ctrl_c_stops_the_whole_graph_cleanly(tmp_path, start_process):
    launcher, pids = start_graph(start_process, tmp_path)
    assert set(pids) == {"tracker_node", "glove_node", "retarget_node", "sim_robot", "world_model_node", "rynn_bridge"}

    # An optional node dying is reported; the graph keeps running.
    os.kill(pids["world_model_node"], signal.SIGKILL)
    assert wait_until(lambda: "node world_model_node exited (killed by SIGKILL); not required, the graph keeps running"
                      in read_log(launcher), 10.0), read_log(launcher)
    assert launcher.poll() is None

    launcher.send_signal(signal.SIGINT)
    assert launcher.wait(timeout=60) == 0, read_log(launcher)
    output = read_log(launcher)
    for name in pids.keys() - {"world_model_node"}:
        assert f"[rynn_launch] {name} stopped (exit code 0)" in output, output  # each shut down on SIGINT
        assert not process_group_alive(pids[name])
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
