"""Digital teleoperation: ``ros2 launch rynn_world digital_teleop.launch.py [name:=value ...]``.

A thin wrapper: the nodes, parameters, remappings and arguments come from
config/teleop_graph.yaml through rynn_world.launcher.graph, the same definition
the embedded launcher (``rynn_launch``) runs without a ROS 2 install. A required
node that exits shuts the whole launch down; a node with ``respawn`` in the graph
(the recorder, the world model) is restarted by launch instead.
"""

import sys

from rynn_world.launcher.composition import ContainerSpec, container_command, group
from rynn_world.launcher.graph import load_graph, resolve
from rynn_world.launcher.launch_ros_nodes import node_arguments, required_exit_reason


def generate_launch_description():
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    graph = load_graph()

    def graph_nodes(context):
        values = {name: LaunchConfiguration(name).perform(context) for name in graph.arguments}
        return [launch_action(spec) for spec in group(resolve(graph, values))]

    def launch_action(spec):
        """A node, or a container process running several (the graph's ``containers``)."""
        on_exit = Shutdown(reason=required_exit_reason(spec)) if spec.required else None
        if isinstance(spec, ContainerSpec):
            return ExecuteProcess(cmd=container_command(spec, sys.executable), name=spec.name, output="screen", on_exit=on_exit)
        return Node(**node_arguments(spec), on_exit=on_exit)

    declared = [
        DeclareLaunchArgument(
            argument.name,
            default_value=argument.default_text,
            description=argument.description,
            **({"choices": [str(choice) for choice in argument.choices]} if argument.choices else {}),
        )
        for argument in graph.arguments.values()
    ]
    return LaunchDescription([*declared, OpaqueFunction(function=graph_nodes)])
