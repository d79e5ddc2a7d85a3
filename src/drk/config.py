"""Recipes: YAML files over the typed config dataclasses of each command.

    cfg = load_config(RLConfig, "recipes/rl.yaml", overrides={"steps": 3})

A recipe is a mapping whose keys are the dataclass's fields (nested dataclasses as nested mappings; the
fields of a `flat` section also by their flag's name, `turns` for episode.turns). `--set` keys are the same,
and CLI flags are applied on top (only the ones the user gave): flag > --set > recipe > default. Unknown keys
and wrong types are errors with the key's path and the closest valid key, so a typo in a recipe never
silently does nothing. Every run writes the resolved config (`dataclasses.asdict`) next to its outputs.

The same dataclasses are the commands' options (`options`, `option`, `field_help`; drk.cli.config_options
makes the Typer parameters): see "the options' schema" below.
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
    if tp is str and isinstance(value, (int, float)) and not isinstance(value, bool):  # YAML reads `level: 1` as 1
        return str(value)
    if tp is Path and isinstance(value, (str, Path)):
        return Path(value)
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
        default = fields[key].default_factory
        if isinstance(value, dict) and default is not dataclasses.MISSING and dataclasses.is_dataclass(hints[key]):
            # a section's keys change its default, which may not be its class's (InferConfig's episode: 5 turns)
            given, value = value, dataclasses.asdict(default())
            for k, v in given.items():
                _put(value, (k,), v)
        kwargs[key] = _coerce(value, hints[key], path)
    missing = [n for n, f in fields.items() if n not in kwargs and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ConfigError(f"missing option {missing[0]!r}: give --{missing[0].replace('_', '-')} (or set it in the "
                          "recipe)")
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
    """`overrides` over the recipe over the defaults; both take recipe keys (flat sections' too)."""
    data = resolve_recipe_paths(load_yaml(recipe), Path(recipe).parent) if recipe else {}
    return build(cls, merge(expand(cls, data), expand(cls, overrides or {})))


# ------------------------------------------------------------------------------------ the options' schema
# A config dataclass is the one declaration of a command's options: each field's name is its recipe key and
# (dashed) its flag, its type and default are the option's, and its trailing `# comment` is the one-line
# description `--help` shows (read from the source, so classes that must not import this module, such as
# drk.gym's EvalOptions, describe their fields the same way). A field made by `option(...)` also carries what
# only the command line needs: a short flag, a help panel, a flag name that differs, an environment variable.


def option(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING, flag: str | None = None,
           short: str | None = None, panel: str | None = None, envvar: str | None = None, min: int | None = None,
           hidden: bool = False, key: str | None = None, flat: bool = False, flags: dict | None = None,
           keys: dict | None = None, hide: tuple[str, ...] = ()) -> Any:
    """A config field with what only the command line needs: `lr: float = option(1e-6, panel="train")  # why`.
    `panel` names the --help group (drk.cli.PANELS; a section's fields inherit it), `flag` a flag name other
    than the dashed field name, `key` the flat recipe key that flag had (default: the flag's name), `short` a
    one-letter flag, `hidden` a field kept to recipes. On a nested section: `flat` gives its fields flags and
    recipe keys without the section's prefix (`--turns` for episode.turns); `flags`, `keys`, `hide` set `flag`,
    `key` and `hidden` for fields of a class that cannot say so itself (drk.gym's EvalOptions)."""
    meta = {k: v for k, v in dict(flag=flag, short=short, panel=panel, envvar=envvar, min=min, hidden=hidden, key=key,
                                  flat=flat, flags=flags, keys=keys, hide=hide).items() if v not in (None, False, ())}
    return dataclasses.field(default=default, default_factory=factory, metadata={"drk_cli": meta})


@dataclasses.dataclass(frozen=True)
class Option:
    """One field of a config, nested sections flattened: `path` ("algo", "use_mrs") is its place in the config,
    `name` the same without the flat sections ("episode", "sampling", "temperature" -> "temperature")."""
    path: tuple[str, ...]
    name: str
    type: Any                   # the field's type, Optional stripped
    default: Any                # dataclasses.MISSING: a required option
    help: str
    cli: dict                   # option(...)'s metadata, the panel inherited from the section

    @property
    def key(self) -> str:
        return ".".join(self.path)

    @property
    def flag(self) -> str:
        return self.cli.get("flag") or "--" + self.name.replace("_", "-")

    @property
    def alias(self) -> str:
        """The flat recipe key (and `--set` key) of a field in a flat section: its flag's name."""
        return self.cli.get("key") or self.flag[2:].replace("-", "_")


def field_help(cls: type) -> dict[str, str]:
    """{field name: its description}: the comment on the field's line(s), continued by comment-only lines right
    below whose text is indented (`#     more`); else the comment lines just above the field."""
    import inspect
    import io
    import textwrap
    import tokenize

    try:
        src = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, str] = {}
    block: list[str] = []            # comment-only lines just above the current line
    block_end = prev_field = None    # (row of the last block line), (field, its last row) for continuations
    line: list = []
    for t in tokenize.generate_tokens(io.StringIO(src).readline):
        if t.type == tokenize.COMMENT and not line:
            text = t.string[1:]
            if prev_field and t.start[0] == prev_field[1] + 1 and text.startswith("  ") and out[prev_field[0]]:
                out[prev_field[0]] += " " + text.strip()
                prev_field = (prev_field[0], t.start[0])
                continue
            block = block + [text.strip()] if block_end == t.start[0] - 1 else [text.strip()]
            block_end, prev_field = t.start[0], None
        elif t.type in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        elif t.type != tokenize.NEWLINE:
            line.append(t)
        else:
            first, prev_field = line[0], None
            if (first.type == tokenize.NAME and first.string in names and first.start[1] == 4 and len(line) > 1
                    and line[1].string == ":"):
                trailing = [c.string[1:].strip() for c in line if c.type == tokenize.COMMENT]
                above = block if block_end == first.start[0] - 1 else []
                out[first.string] = " ".join(trailing or above)
                prev_field = (first.string, t.start[0])
            line, block = [], []
    return out


def options(cls: type, prefix: tuple[str, ...] = (), inherited: dict | None = None, within: Any = None,
            name: tuple[str, ...] = ()) -> list[Option]:
    """Every field of `cls` in declaration order, nested dataclass sections flattened (`algo.use_mrs`); a
    section's defaults are those of its own default (`within`), e.g. InferConfig's episode has 5 turns."""
    hints = typing.get_type_hints(cls)
    helps = field_help(cls)
    inherited = inherited or {}
    out = []
    for f in dataclasses.fields(cls):
        meta = {**{k: v for k, v in inherited.items() if k in ("panel", "hidden")}, **f.metadata.get("drk_cli", {})}
        meta.update({k: v[f.name] for k, v in (("flag", inherited.get("flags")), ("key", inherited.get("keys")))
                     if v and f.name in v})
        if f.name in inherited.get("hide", ()):
            meta["hidden"] = True
        tp = _without_none(hints[f.name])
        default = (getattr(within, f.name) if within is not None else f.default
                   if f.default is not dataclasses.MISSING else f.default_factory()
                   if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if dataclasses.is_dataclass(tp):
            out += options(tp, prefix + (f.name,), meta, default if default is not dataclasses.MISSING else None,
                           name if meta.get("flat") else name + (f.name,))
        else:
            out.append(Option(prefix + (f.name,), ".".join(name + (f.name,)), tp, default, helps.get(f.name, ""), meta))
    return out


def expand(cls: type, data: dict, where: str = "") -> dict:
    """Recipe keys of flat sections to their place: {"turns": 3} -> {"episode": {"turns": 3}}; one key may set
    several fields (`seed`: the sampler's and the evaluator's). A key that is neither a field nor such a key is
    an error naming the closest valid one."""
    aliases: dict[str, list[tuple[str, ...]]] = {}
    for o in options(cls):
        if o.alias != o.key and "." not in o.alias:  # a section under a flat one (episode.reward) keeps its path
            aliases.setdefault(o.alias, []).append(o.path)
    fields = {f.name for f in dataclasses.fields(cls)}
    out: dict = {}
    for key, value in data.items():
        if key in aliases and (key not in fields or not isinstance(value, dict)):
            for path in aliases[key]:
                _put(out, path, value)
        elif key in fields:
            tp = _section_type(cls, key)
            _put(out, (key,), expand(tp, value, f"{where}{key}.") if tp is not None and isinstance(value, dict)
                 else value)
        else:
            import difflib

            valid = sorted(fields | set(aliases))
            close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(f"unknown option {where + str(key)!r} ({hint}valid: {', '.join(valid)})")
    return out


def _without_none(tp: Any) -> Any:
    """`X | None` -> X; any other type as it is."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def _section_type(cls: type, name: str) -> type | None:
    """The dataclass a field of `cls` holds (a nested section, whose own flat sections `expand` reads
    too: algo.w_c is algo.reward.w_c), else None."""
    tp = _without_none(typing.get_type_hints(cls).get(name))
    return tp if tp is not None and dataclasses.is_dataclass(tp) else None


def _put(d: dict, path: tuple[str, ...], value: Any) -> None:
    """Set d[path] (a None value too, unlike `merge`); mappings are combined key by key."""
    *parents, last = path
    for p in parents:
        d = d.setdefault(p, {})
    if isinstance(value, dict) and isinstance(d.get(last), dict):
        for k, v in value.items():
            _put(d[last], (k,), v)
    else:
        d[last] = value


def nest(flat: dict[str, Any]) -> dict:
    """{"algo.use_mrs": False} -> {"algo": {"use_mrs": False}}."""
    out: dict = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        d = out
        for p in parents:
            d = d.setdefault(p, {})
        d[last] = value
    return out
