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
    """A recipe, option or override the user can fix (`drk` shows it as one line, exit status 2)."""


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
            import difflib

            close = difflib.get_close_matches(str(key), list(fields), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"unknown option {path!r} ({hint}valid: {', '.join(sorted(fields))})")
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


# Recipe keys that name inputs. A relative input path in a recipe is resolved against the recipe's folder,
# so a recipe next to its data works from any working directory: always when written ./x or ../x, otherwise
# when it exists there (else it is kept as written: relative to where the command runs, or a hub id like
# org/name; `model` is resolved only in the explicit ./ form, since "tiny" or "org/name" name models).
# Outputs (`out`, caches) are always relative to where the command runs.
INPUT_KEYS = ("model", "data", "queries", "tasks_path", "solutions", "solution", "kernelbench", "task_file")


def resolve_recipe_paths(data: dict, recipe_dir: str | Path) -> dict:
    out = dict(data)
    for key in INPUT_KEYS:
        v = out.get(key)
        if isinstance(v, str) and v and not Path(v).expanduser().is_absolute():
            cand = Path(recipe_dir) / v
            explicit = v.startswith(("./", "../"))
            if explicit or (key != "model" and cand.exists()):
                out[key] = str(cand)
    return out


def parse_sets(items: list[str] | tuple[str, ...], nested: bool = True) -> dict:
    """`["turns=3", "algo.kl_coef=0.1"]` -> {"turns": 3, "algo": {"kl_coef": 0.1}}; values are read as YAML
    (numbers, booleans, lists). Dashes in keys become underscores, as in option names."""
    import yaml

    out: dict = {}
    for item in items or ():
        key, sep, raw = str(item).partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set turns=3")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        parts = key.split(".") if nested else [key]
        d = out
        for part in parts[:-1]:
            d = d.setdefault(part, {})
            if not isinstance(d, dict):
                raise ConfigError(f"--set {item!r}: {part} is not a section")
        d[parts[-1]] = value
    return out


def load_config(cls: type[T], recipe: str | Path | None = None, overrides: dict | None = None) -> T:
    data = resolve_recipe_paths(load_yaml(recipe), Path(recipe).parent) if recipe else {}
    return build(cls, merge(data, overrides or {}))

