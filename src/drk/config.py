"""Recipes: YAML files over the typed config dataclasses of each command.

    cfg = load_config(RLConfig, "recipes/rl.yaml", overrides={"steps": 3})

A recipe is a mapping whose keys are the dataclass's fields (nested dataclasses as nested mappings). CLI
flags are applied on top (only the ones the user gave). Unknown keys and wrong types are errors with the
key's path, so a typo in a recipe never silently does nothing. Every run writes the resolved config
(`dataclasses.asdict`) next to its outputs.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A recipe or override the user can fix (shown as one line)."""


def load_yaml(path: str | Path) -> dict:
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"recipe not found: {p}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: a recipe must be a mapping of option names to values")
    return data


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        for a in args:
            try:
                return _coerce(value, a, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: {value!r} is not a valid {tp}")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping")
        return build(tp, value, where)
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str):  # YAML 1.1 reads "1e-6" (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp is bool and isinstance(value, bool):
        return value
    if tp is str and isinstance(value, str):
        return value
    if origin in (list, tuple) and isinstance(value, (list, tuple)):
        (inner, *_) = typing.get_args(tp) or (Any,)
        return [_coerce(v, inner, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict and isinstance(value, dict):
        return dict(value)
    if tp is Any:
        return value
    raise ConfigError(f"{where}: {value!r} is not a valid {getattr(tp, '__name__', tp)}")


def build(cls: type[T], data: dict, where: str = "") -> T:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else key
        if key not in fields:
            raise ConfigError(f"unknown option {path!r} (valid: {', '.join(sorted(fields))})")
        kwargs[key] = _coerce(value, hints[key], path)
    return cls(**kwargs)


def merge(base: dict, overrides: dict) -> dict:
    """Recursive merge; a value of None in `overrides` means "not given" and keeps the base."""
    out = dict(base)
    for k, v in overrides.items():
        if v is None:
            continue
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def load_config(cls: type[T], recipe: str | Path | None = None, overrides: dict | None = None) -> T:
    data = load_yaml(recipe) if recipe else {}
    return build(cls, merge(data, overrides or {}))

