"""The suite's one YAML -> dataclass loader, strict.

Every configuration file (node settings, calibration, training recipes) loads
through :func:`load_config`, and every node parameter is checked with the same
:func:`coerce`: a misspelt key or a value of the wrong type is an error at
start-up that names the file (or parameter) and the key, never a silently
ignored setting.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A configuration value or key that does not fit its dataclass; the message names where."""


def load_config(cls, path: str | Path, overrides: dict | None = None):
    """Dataclass ``cls`` from YAML file ``path``; ``overrides`` (``{"run.steps": 10}``) win over the file.

    Keys the file leaves out keep the dataclass defaults (the only place defaults live)."""
    values = load_yaml(path)
    for dotted, value in (overrides or {}).items():
        node = values
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise ConfigError(f"{path}: override {dotted!r}: {key!r} is not a section")
        node[leaf] = value
    return from_dict(cls, values, str(path))


def from_dict(cls, values: dict | None, source: str = "", key: str = ""):
    """Build dataclass ``cls`` from a plain mapping; nested dataclass fields recurse.

    ``source`` (a file, "parameters") and ``key`` (the dotted path of ``values``) name the place in errors."""
    if values is None:
        values = {}
    where = _where(source, key or cls.__name__)
    prefix = f"{key}." if key else ""
    if not isinstance(values, dict):
        raise ConfigError(f"{where}: expected a mapping, got {values!r}")
    fields = {field.name: field for field in dataclasses.fields(cls) if field.init}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"{source or cls.__name__}: unknown key(s) {[prefix + k for k in unknown]}; "
                          f"known at {key or 'the top level'}: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    return cls(**{name: coerce(value, hints[name], source, prefix + name) for name, value in values.items()})


def coerce(value, hint, source: str, key: str):
    """``value`` of ``key`` checked against type ``hint`` (ints widen to float, lists become tuples where declared)."""
    where = _where(source, key)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return value if isinstance(value, hint) else from_dict(hint, value, source, key)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in (a for a in args if a is not type(None)):
            try:
                return coerce(value, option, source, key)
            except ConfigError as error:
                errors.append(str(error))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {hint}")
    if hint is typing.Any:
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint in (list, tuple) or origin in (list, tuple):
        if isinstance(value, (list, tuple)):
            container = tuple if tuple in (hint, origin) else list
            if not args:
                return container(value)
            if container is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                if len(value) != len(args):
                    raise ConfigError(f"{where}: expected {len(args)} values, got {value!r}")
                return tuple(coerce(v, a, source, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
            return container(coerce(v, args[0], source, f"{key}[{i}]") for i, v in enumerate(value))
    elif hint is dict or origin is dict:
        if isinstance(value, dict):
            return dict(value)
    else:
        raise ConfigError(f"{where}: type {hint} is not supported in configuration")
    raise ConfigError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {value!r}")


def leaf_fields(cls, prefix: str = ""):
    """(dotted name, type hint) of every non-dataclass field of ``cls``, nested ones as ``section.key``."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            yield from leaf_fields(hint, f"{prefix}{field.name}.")
        else:
            yield f"{prefix}{field.name}", hint


def get_dotted(instance, dotted: str):
    for name in dotted.split("."):
        instance = getattr(instance, name)
    return instance


def to_dict(instance) -> dict:
    """Plain-Python dict (lists, floats) that ``yaml.safe_dump`` can write."""
    def plain(value):
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if hasattr(value, "tolist"):
            return value.tolist()
        return value

    return plain(instance)


def load_yaml(path: str | Path) -> dict:
    """The top-level mapping of a YAML file (empty file: ``{}``)."""
    with open(path, encoding="utf-8") as stream:
        data = yaml.safe_load(stream)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def save_yaml(path: str | Path, data: dict) -> None:
    with open(path, "w", encoding="utf-8") as stream:
        yaml.safe_dump(data, stream, sort_keys=False)


def _where(source: str, key: str) -> str:
    return f"{source}: {key}" if source else key
