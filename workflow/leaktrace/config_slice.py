"""A stage's config slice (the ``--settings`` JSON its rule passes) as a
frozen dataclass, read once at the stage's entry and passed down.

The schema (``config/schema.yaml``) is where every default lives and
Snakemake fills them in before a rule serialises its slice, so a settings
class has no defaults of its own: every field is a key the slice must hold,
but an optional key (a field whose default is None: a detector family the
config does not run), which the slice leaves out where the config does.
:func:`read_slice` checks each key's presence and type once, and a missing
or mistyped key is a :class:`SliceError` naming the dotted config key
(``contamination.dataset_inference.n_splits``), not a KeyError deep inside
a stage. Where a rule gathers keys from several config blocks into one
slice, a field says which config key it carries (:func:`config_key`), so
the error names that key. Keys the class does not name are ignored (the
schema rejects unknown keys before any rule runs)."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


class SliceError(ValueError):
    """A config slice that lacks a key its stage reads, or holds a value of the wrong type."""


def json_object(text: str, what: str) -> dict:
    """A flag's JSON object, or a ValueError naming ``what``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not valid JSON: {err}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{what} is a JSON object, got {text!r}")
    return value


def config_key(dotted: str, default: Any = dataclasses.MISSING) -> Any:
    """A field that carries the config key ``dotted`` (``contamination.alpha``) in a slice
    gathered from several blocks; its errors name that key. With a ``default`` it is an
    optional key, as any field with a default is (a detector family the config does not
    run, ``score.methods.veilprobe``)."""
    return dataclasses.field(default=default, metadata={"config": dotted})


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _kind(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_kind(a) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return "a list"
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        return "a mapping"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(tp, str(tp))


def _convert(tp: Any, value: Any, where: str) -> Any:
    """``value`` checked against ``tp``; lists become tuples, nested slices dataclasses."""
    if tp is Any:
        return value
    if tp is type(None):
        if value is None:
            return None
        raise SliceError(f"config {where}: expected null, got {value!r}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise SliceError(f"config {where}: expected a mapping, got {value!r}")
        return read_slice(tp, value, where)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if value is not None and len(rest) == 1:  # ``X | None`` given a value: X's own error names the key inside
            return _convert(rest[0], value, where)
        for option in sorted(args, key=lambda a: a is not type(None)):  # null first: it never converts
            try:
                return _convert(option, value, where)
            except SliceError:
                continue
        raise SliceError(f"config {where}: expected {_kind(tp)}, got {value!r}")
    if origin is typing.Literal:
        if value in args and type(value) in {type(a) for a in args}:
            return value
        raise SliceError(f"config {where}: expected {_kind(tp)}, got {value!r}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SliceError(f"config {where}: expected a list, got {value!r}")
        item = args[0] if args else Any
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (dict, Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise SliceError(f"config {where}: expected a mapping, got {value!r}")
        if not args:
            return dict(value)
        return {k: _convert(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:  # an integer is a number; kept as given, so outputs print it as they did
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif tp is str:
        ok = isinstance(value, str)
    else:
        raise TypeError(f"{where}: config_slice cannot check the type {tp!r}")
    if not ok:
        raise SliceError(f"config {where}: expected {_kind(tp)}, got {value!r}")
    return value


def read_slice(cls: type[T], data: Mapping, where: str) -> T:
    """``data`` (a stage's config slice, or a mapping inside one) as the
    frozen dataclass ``cls``; ``where`` is the slice's dotted config key,
    used in every error. Each field is required but one with a default (an
    optional key: a model's ``max_length``, a detector family not run); its type is checked
    (``tuple[X, ...]`` takes a list, a nested dataclass a mapping)."""
    if not isinstance(data, Mapping):
        raise SliceError(f"config {where}: expected a mapping, got {data!r}")
    hints = _hints(cls)
    values = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        key = field.metadata.get("config") or (f"{where}.{field.name}" if where else field.name)
        if field.name not in data:
            if field.default is not dataclasses.MISSING:  # an optional key: the default stands
                continue
            raise SliceError(f"config {key}: missing (its default is in config/schema.yaml; the rule passes it)")
        values[field.name] = _convert(hints[field.name], data[field.name], key)
    return cls(**values)


# --- the other way: from the config to a rule's slice -----------------------

SETTINGS: dict[str, type] = {}
"""Stage command -> its settings class (filled by :mod:`leaktrace.settings`)."""


def settings_of(*commands: str, block: str = ""):
    """Register a frozen dataclass as the settings of ``commands``; its fields
    are the keys under the config block ``block`` (``contamination.twin``),
    or the key a field's :func:`config_key` names."""

    def register(cls: type[T]) -> type[T]:
        cls.config_block = block
        for name in commands:
            if name in SETTINGS:
                raise ValueError(f"stage {name}: settings declared twice ({SETTINGS[name].__name__}, {cls.__name__})")
            SETTINGS[name] = cls
        return cls

    return register


def _lookup(config: Mapping, dotted: str) -> Any:
    value = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise SliceError(f"config {dotted}: missing (a stage reads it; its default belongs in config/schema.yaml)")
        value = value[part]
    return value


def _project(tp: Any, value: Any, key: str, config: Mapping) -> Any:
    """``value`` (the config at ``key``) cut down to what ``tp`` declares: a
    dataclass keeps its fields only, a mapping of dataclasses each entry's."""
    if value is None:
        return None
    if dataclasses.is_dataclass(tp):
        return slice_from_config(tp, config, key, value)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        classes = [a for a in args if dataclasses.is_dataclass(a)]
        return _project(classes[0], value, key, config) if len(classes) == 1 else value
    if (origin in (dict, Mapping)) and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return {name: _project(args[1], item, f"{key}.{name}", config) for name, item in value.items()}
    return value


def slice_from_config(cls: type, config: Mapping, block: str | None = None, at: Mapping | None = None) -> dict:
    """The slice ``cls`` reads, as a rule passes it: each field from its
    config key (``block.field``, or the key its :func:`config_key` names,
    read from the top of ``config``). A field with a default is an optional
    key: left out of the slice where the config leaves it out."""
    block = getattr(cls, "config_block", "") if block is None else block
    hints = _hints(cls)
    out = {}
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        if "config" in field.metadata:
            key = field.metadata["config"]
            try:
                value = _lookup(config, key)
            except SliceError:
                if field.default is dataclasses.MISSING:
                    raise
                continue  # an optional key the config leaves out
        elif at is not None:
            key = f"{block}.{field.name}"
            if field.name not in at:
                if field.default is not dataclasses.MISSING:  # an optional key the config leaves out
                    continue
                raise SliceError(f"config {key}: missing (a stage reads it; its default belongs in config/schema.yaml)")
            value = at[field.name]
        else:
            key = f"{block}.{field.name}" if block else field.name
            try:
                value = _lookup(config, key)
            except SliceError:
                if field.default is dataclasses.MISSING:
                    raise
                continue  # an optional key the config leaves out (a detector family not run)
        out[field.name] = _project(hints[field.name], value, key, config)
    return out
