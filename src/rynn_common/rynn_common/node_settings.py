"""A node's settings dataclass as declared ROS parameters: the one way every node is configured.

Precedence: a parameter set explicitly (``-p``, a launch file, the embedded launcher's
``--set``) beats the node's YAML file (the ``config_file`` parameter, else the package's
own file), which beats the dataclass defaults, the only place defaults are written. Every
leaf key of the file is a parameter of the same dotted name (``transition.max_velocity``),
so ``ros2 param list`` shows exactly what the file can set. Values that are not flat
ROS types (matrices, empty optionals) stay file-only.
"""

from __future__ import annotations

from pathlib import Path

from rcl_interfaces.msg import ParameterDescriptor

from rynn_common.config_io import ConfigError, coerce, from_dict, get_dotted, leaf_fields, load_config, load_yaml

SCALARS = (bool, int, float, str)


def declare_settings(node, cls, default_file: Path | None, *, file_parameter: str = "config_file", section: str = ""):
    """Declare ``file_parameter`` and one parameter per setting of ``cls``; return the settings in force.

    ``section``: the settings are that top-level section of the file (e.g. the bridge's ``lcm``
    from robot.yaml); their parameters are then named ``section.key``."""
    path = node.declare_parameter(file_parameter, "").value or default_file
    file_settings = _load(cls, path, section) if path else cls()
    prefix = f"{section}." if section else ""
    values: dict = {}
    for name, hint in leaf_fields(cls):
        default = get_dotted(file_settings, name)
        if not _is_parameter_value(default):
            _set_dotted(values, name, default)
            continue
        descriptor = ParameterDescriptor(dynamic_typing=True, description=f"default from {path or 'the code'}")
        value = node.declare_parameter(prefix + name, _ros_value(default), descriptor).value
        if value is None and isinstance(default, (list, tuple)):
            value = []  # `-p name:=[]` arrives as an unset parameter
        if hint is str and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # rcl reads `-p serial:=123` as an integer
        _set_dotted(values, name, coerce(value, hint, f"{node.get_name()} parameters", prefix + name))
    node.get_logger().info(f"{cls.__name__} from {path or 'the code defaults'} and parameters")
    return from_dict(cls, values, f"{node.get_name()} parameters")


def _load(cls, path, section: str):
    if not section:
        return load_config(cls, path)
    return from_dict(cls, load_yaml(path).get(section), str(path), section)


def _is_parameter_value(value) -> bool:
    """A flat ROS parameter type: a scalar or a list of scalars of one type."""
    if isinstance(value, SCALARS):
        return True
    if isinstance(value, (list, tuple)):
        kinds = {type(v) for v in value}
        return kinds <= {int, float} or (len(kinds) == 1 and kinds <= set(SCALARS))
    return False


def _ros_value(value):
    """ROS arrays are lists of one type: a tuple becomes a list, mixed ints and floats all floats."""
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value] if float in {type(v) for v in value} else list(value)
    return value


def _set_dotted(values: dict, dotted: str, value) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        values = values.setdefault(key, {})
    values[leaf] = value


__all__ = ["ConfigError", "declare_settings"]
