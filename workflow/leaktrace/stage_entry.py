"""A stage's interface, declared once and read three ways.

A stage is a function of :mod:`leaktrace.stages` whose typed signature is its
command line (paths, tuples of paths, named paths, numbers) and, where it
reads the config, one parameter typed by its settings class
(:mod:`leaktrace.settings`: a frozen dataclass whose fields name their
config keys). From that declaration:

- :func:`stage_settings` gives a rule its ``--settings`` JSON: each field's
  config key read from the schema-filled config and nothing else, so a rule
  reruns exactly when a key its stage reads changes;
- :func:`parser` builds the command's flags (``--output-dir`` for the
  parameter ``output_dir``), and :func:`call` parses them, checks each slice
  once at entry (:func:`~leaktrace.config_slice.read_slice`) and calls the
  stage.

Flags by parameter type: ``Path`` (``--x PATH``), ``tuple[T, ...]`` (one or
more, the flag repeatable; none where it has a default), ``Mapping[str, Path]`` (``NAME=PATH``
items, order kept), ``Mapping[tuple[str, str], Path]`` (``A:B=PATH``), a
settings dataclass (JSON), ``bool`` (a switch), ``Literal`` (its choices),
``int``/``float``/``str``; ``X | None = None`` makes a flag optional.

A settings class whose block is one entry of a named collection
(``benchmarks.{name}``) names the parameter that says which: its errors name
the entry's key (``benchmarks.mbpp.limit``), and its rule's JSON is
``stage_settings(command, config, name=...)``.

For a command a person types: a positional-only parameter (before ``/``)
is a positional argument (``leaktrace publish INPUT OUT_DIR``);
``Annotated[T, "text"]`` gives a flag its help line; a dataclass with a
``from_flag(text)`` classmethod is read by it instead of as JSON (a model
given as a path, or as JSON)."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from leaktrace.config_slice import SETTINGS, SliceError, read_slice, slice_from_config


def stage_settings(command: str, config: Mapping, **entry: str) -> str:
    """The rule's ``--settings`` for ``command``: its settings class's slice of ``config``, as JSON;
    ``entry`` fills the placeholders of a block that is one entry of a collection (``name=`` for
    ``benchmarks.{name}``)."""
    import leaktrace.settings  # noqa: F401  (fills SETTINGS)

    if command not in SETTINGS:
        raise KeyError(f"stage {command}: no settings class declared in leaktrace.settings")
    cls = SETTINGS[command]
    try:
        block = cls.config_block.format_map(entry)
    except KeyError as err:
        raise KeyError(f"stage {command}: its block {cls.config_block} is per entry; pass {err.args[0]}=") from None
    return json.dumps(slice_from_config(cls, config, block), sort_keys=True)


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from None


def _named(key_parts: int):
    """``NAME=VALUE`` (``key_parts`` 1) or ``A:B=VALUE`` (2) -> (key, value)."""
    shape = "NAME=PATH" if key_parts == 1 else "A:B=PATH"

    def parse(item: str) -> tuple[Any, str]:
        key, sep, value = item.partition("=")
        parts = key.split(":", 1) if key_parts == 2 else [key]
        if not sep or len(parts) != key_parts or not all(parts):
            raise argparse.ArgumentTypeError(f"expected {shape}, got {item!r}")
        return (tuple(parts) if key_parts == 2 else key), value

    return parse


def _without_none(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) == 1:
            return rest[0], True
    return tp, False


def _scalar(tp: Any) -> Callable[[str], Any]:
    if tp in (Path, int, float, str):
        return tp
    raise TypeError(f"stage_entry: no flag for items of type {tp!r}")


@dataclasses.dataclass(frozen=True)
class _Argument:
    """One parameter's flag: what argparse takes and how its value reaches the stage
    (``in_context``: ``convert`` also takes the other parameters' values, a per-entry slice's names)."""

    kwargs: dict
    convert: Callable[..., Any]
    in_context: bool = False


def _help(tp: Any) -> tuple[Any, dict]:
    """``Annotated[T, "help"]`` -> (T, {"help": "help"}); any other type as it is."""
    if typing.get_origin(tp) is typing.Annotated:
        tp, *extras = typing.get_args(tp)
        text = next((e for e in extras if isinstance(e, str)), None)
        return tp, ({"help": text} if text else {})
    return tp, {}


def _argument(name: str, tp: Any, default: Any) -> _Argument:
    tp, help_text = _help(tp)
    argument = _typed_argument(name, tp, default)
    return dataclasses.replace(argument, kwargs=argument.kwargs | help_text)


def _typed_argument(name: str, tp: Any, default: Any) -> _Argument:
    tp, nullable = _without_none(tp)
    optional = default is not inspect.Parameter.empty
    base = {"required": not optional} | ({"default": default} if optional else {})
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if dataclasses.is_dataclass(tp) and hasattr(tp, "from_flag"):
        return _Argument(base | {"type": _flag_reader(tp), "metavar": getattr(tp, "metavar", "JSON")}, lambda v: v)
    if dataclasses.is_dataclass(tp):
        where = getattr(tp, "config_block", None)
        where = name if where is None else where

        def read(value: Any, others: Mapping[str, Any]) -> Any:
            if value is None or dataclasses.is_dataclass(value):
                return value
            return read_slice(tp, value, where.format_map(others) if "{" in where else where)

        return _Argument(base | {"type": _json, "metavar": "JSON"}, read, in_context=True)
    if tp is bool:
        if optional and default is not False:
            raise TypeError(f"stage_entry: switch {name} must default to False")
        return _Argument({"action": "store_true"}, bool)
    if origin is typing.Literal:
        return _Argument(base | {"type": type(args[0]), "choices": list(args)}, lambda v: v)
    if origin is tuple:  # one or more items, the flag repeatable (``--learned A --learned B``): every item kept
        many = "*" if optional else "+"
        if typing.get_origin(args[0]) is typing.Literal:
            choices = typing.get_args(args[0])
            items = {"type": type(choices[0]), "choices": list(choices)}
        else:
            items = {"type": _scalar(args[0])}
        kwargs = base | items | {"nargs": many, "action": "extend"}
        if optional:
            kwargs["default"] = None  # extend appends to a list of its own, never to the declared default
        return _Argument(kwargs, lambda v: default if v is None else tuple(v))
    if origin in (dict, Mapping) or tp is Mapping:
        key_parts = 2 if typing.get_origin(args[0]) is tuple else 1
        value_type = _scalar(args[1])
        many = "*" if optional else "+"

        def mapping(items):
            if items is None or isinstance(items, Mapping):
                return items
            out = {}
            for key, value in items:
                if key in out:
                    raise SliceError(f"{flag(name)}: {key!r} given twice")
                out[key] = value_type(value)
            return out

        metavar = "NAME=PATH" if key_parts == 1 else "A:B=PATH"
        return _Argument(base | {"type": _named(key_parts), "nargs": many, "metavar": metavar}, mapping)
    if tp in (Path, int, float, str):
        return _Argument(base | {"type": tp, "metavar": tp.__name__.upper()}, lambda v: v)
    raise TypeError(f"stage_entry: no flag for parameter {name}: {tp!r}{' | None' if nullable else ''}")


def _flag_reader(cls: type) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        try:
            return cls.from_flag(text)
        except (ValueError, TypeError, SliceError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    read.__name__ = cls.__name__
    return read


def _positional(name: str, argument: _Argument) -> dict:
    """A positional argument's kwargs: no ``required`` (an optional one takes ``nargs="?"``)."""
    kwargs = dict(argument.kwargs)
    required = kwargs.pop("required", True)
    if not required and "nargs" not in kwargs:
        kwargs["nargs"] = "?"
    return kwargs | {"metavar": name.upper()}


def _arguments(function: Callable) -> dict[str, _Argument]:
    hints = typing.get_type_hints(function, include_extras=True)
    return {
        name: _argument(name, hints[name], parameter.default)
        for name, parameter in inspect.signature(function).parameters.items()
    }


def parser(command: str, function: Callable) -> argparse.ArgumentParser:
    """The flags of ``function``'s parameters, under ``leaktrace <command>``."""
    doc = (inspect.getdoc(function) or "").split("\n\n")[0]
    top = argparse.ArgumentParser(prog=f"leaktrace {command}", description=doc)
    parameters = inspect.signature(function).parameters
    for name, argument in _arguments(function).items():
        if parameters[name].kind is inspect.Parameter.POSITIONAL_ONLY:
            top.add_argument(name, **_positional(name, argument))
        else:
            top.add_argument(flag(name), dest=name, **argument.kwargs)
    return top


def call(command: str, function: Callable, argv: list[str]) -> None:
    """Parse ``argv`` as ``function``'s flags, check every slice, and call it."""
    command_line = parser(command, function)
    parsed = vars(command_line.parse_args(argv))
    try:
        values = {
            name: argument.convert(parsed[name], parsed) if argument.in_context else argument.convert(parsed[name])
            for name, argument in _arguments(function).items()
        }
    except SliceError as err:
        command_line.error(str(err))
    kinds = inspect.signature(function).parameters
    first = [values.pop(name) for name in list(values) if kinds[name].kind is inspect.Parameter.POSITIONAL_ONLY]
    function(*first, **values)
