"""Typed config dataclasses from plain YAML dicts, strictly.

Unknown keys raise so a misspelt parameter in retarget.yaml is an error at
start-up, not a silently ignored setting.
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path

import yaml


def from_dict(cls, values: dict | None):
    """Build dataclass ``cls`` from ``values``; nested dataclass fields recurse."""
    values = dict(values or {})
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown config key(s) {unknown}; known: {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for name, value in values.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = from_dict(hint, value)
        elif (hint is tuple or typing.get_origin(hint) is tuple) and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


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
    with open(path, encoding="utf-8") as stream:
        data = yaml.safe_load(stream)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data


def save_yaml(path: str | Path, data: dict) -> None:
    with open(path, "w", encoding="utf-8") as stream:
        yaml.safe_dump(data, stream, sort_keys=False)
