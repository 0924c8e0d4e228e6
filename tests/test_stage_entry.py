"""A stage's one declaration (its typed signature and its settings class)
read three ways: the flags of its command, the slice checked at entry, and
the rule's settings JSON from the config (leaktrace/stage_entry.py)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
import yaml

from leaktrace.cli import STAGES, main
from leaktrace.config_slice import SETTINGS, SliceError, config_key, slice_from_config
from leaktrace.stage_entry import call, parser, stage_settings

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Inner:
    n_splits: int


@dataclass(frozen=True)
class Toy:
    threshold: float
    inner: Inner
    alpha: float = config_key("contamination.alpha")


Toy.config_block = "toy"

CALLS = []


def toy_stage(
    samples: Path,
    named: Mapping[str, Path],
    paired: Mapping[tuple[str, str], Path],
    settings: Toy,
    seed: int,
    output: Path,
    mode: Literal["fast", "slow"] = "fast",
    extra: tuple[Path, ...] = (),
    blind: Path | None = None,
    execute: bool = False,
) -> None:
    """A stage of every parameter kind.

    More text the help does not show."""
    CALLS.append(dict(locals()))


def test_every_parameter_kind_becomes_a_flag_and_reaches_the_stage_typed():
    CALLS.clear()
    argv = ["--samples", "s.parquet", "--named", "a=x.parquet", "b=y.parquet", "--paired", "m:b=z.parquet"]
    argv += ["--settings", json.dumps({"threshold": 1, "inner": {"n_splits": 3}, "alpha": 0.05})]
    argv += ["--seed", "7", "--output", "o.parquet", "--execute"]
    call("toy", toy_stage, argv)
    (got,) = CALLS
    assert got["samples"] == Path("s.parquet") and got["output"] == Path("o.parquet") and got["seed"] == 7
    assert got["named"] == {"a": Path("x.parquet"), "b": Path("y.parquet")} and list(got["named"]) == ["a", "b"]
    assert got["paired"] == {("m", "b"): Path("z.parquet")}
    assert got["settings"] == Toy(threshold=1, inner=Inner(3), alpha=0.05)
    assert (got["mode"], got["extra"], got["blind"], got["execute"]) == ("fast", (), None, True)
    help_text = parser("toy", toy_stage).format_help()
    assert "A stage of every parameter kind." in help_text and "More text" not in help_text
    assert "--named NAME=PATH [NAME=PATH ...]" in help_text and "{fast,slow}" in help_text


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--named", "a"], "expected NAME=PATH, got 'a'"),
        (["--paired", "m=z"], "expected A:B=PATH, got 'm=z'"),
        (["--named", "a=x", "a=y"], "--named: 'a' given twice"),
        (["--settings", "{"], "not valid JSON"),
        (["--settings", '{"threshold": 1, "inner": {"n_splits": 3}}'], "config contamination.alpha: missing"),
        (["--settings", '{"threshold": 1, "inner": {"n_splits": "3"}, "alpha": 0.1}'], "config toy.inner.n_splits"),
        (["--mode", "medium"], "invalid choice: 'medium'"),
    ],
)
def test_a_bad_argument_stops_the_command_with_its_flag_or_config_key_named(change, message, capsys):
    argv = {"--samples": ["s"], "--named": ["a=x"], "--paired": ["m:b=z"], "--seed": ["1"], "--output": ["o"]}
    argv["--settings"] = [json.dumps({"threshold": 1, "inner": {"n_splits": 3}, "alpha": 0.05})]
    argv[change[0]] = change[1:]
    with pytest.raises(SystemExit) as stopped:
        call("toy", toy_stage, [item for flag, values in argv.items() for item in (flag, *values)])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_a_rules_slice_holds_the_keys_its_class_names_and_nothing_else():
    config = {
        "toy": {"threshold": 0.5, "unread": 1, "inner": {"n_splits": 7, "curve": [1]}},
        "contamination": {"alpha": 0.01, "twin": {}},
    }
    assert slice_from_config(Toy, config) == {"threshold": 0.5, "inner": {"n_splits": 7}, "alpha": 0.01}
    with pytest.raises(SliceError, match=r"config contamination\.alpha: missing"):
        slice_from_config(Toy, {"toy": config["toy"]})


def default_config() -> dict:
    """config/config.yaml with the schema's defaults filled in, as the Snakefile sees it."""
    from snakemake.utils import validate

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(config, str(ROOT / "config" / "schema.yaml"))
    return config


def stage_function(command: str):
    module, _, name = STAGES[command].partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("command", sorted(STAGES))
def test_every_stage_has_flags_for_its_signature_and_takes_no_raw_mapping(command):
    function = stage_function(command)
    parser(command, function)  # raises TypeError on a parameter the entry cannot turn into a flag
    for name, tp in typing.get_type_hints(function).items():
        if name == "return":
            continue
        assert tp not in (dict, Mapping, typing.Any), f"{command}: parameter {name} is a raw {tp}"
        if name == "settings":
            assert SETTINGS.get(command) is tp, f"{command}: settings typed {tp}, declared {SETTINGS.get(command)}"


def test_every_declared_settings_class_reads_keys_the_default_config_has():
    import leaktrace.settings  # noqa: F401

    config = default_config()
    assert set(SETTINGS) <= set(STAGES), sorted(set(SETTINGS) - set(STAGES))
    for command, cls in SETTINGS.items():
        fields = {f.name for f in dataclasses.fields(cls) if f.init}
        collection, per_entry, _ = cls.config_block.partition(".{name}")
        if per_entry:  # one slice per entry of a named collection (benchmarks.{name}): the whole entry
            required = {f.name for f in dataclasses.fields(cls) if f.init and f.default is dataclasses.MISSING}
            for name, entry in config[collection].items():
                values = json.loads(stage_settings(command, config, name=name))
                assert required <= set(values) <= fields and values == entry, (command, name)
            continue
        values = json.loads(stage_settings(command, config))
        assert set(values) == fields, command


def test_every_stage_with_a_settings_parameter_has_a_declared_class():
    for command in STAGES:
        if "settings" in inspect.signature(stage_function(command)).parameters:
            assert command in SETTINGS, command


def test_a_stage_command_prints_its_flags_for_help(capsys):
    with pytest.raises(SystemExit):
        main(["twin", "--help"])
    assert "--twins NAME=PATH [NAME=PATH ...]" in capsys.readouterr().out


@dataclass(frozen=True)
class Spec:
    path: str

    @classmethod
    def from_flag(cls, text: str) -> Spec:
        if not text:
            raise ValueError("an empty path")
        return cls(text)


def typed_command(
    source: typing.Annotated[Path, "the file to read"],
    /,
    spec: typing.Annotated[Spec, "a path, read by Spec.from_flag"],
    kinds: tuple[Literal["a", "b"], ...] = ("a",),
) -> None:
    """A command a person types: a positional argument and help lines."""
    CALLS.append(dict(locals()))


def test_a_positional_only_parameter_is_positional_and_annotated_help_is_shown(capsys):
    CALLS.clear()
    call("typed", typed_command, ["in.jsonl", "--spec", "model", "--kinds", "b", "a"])
    assert CALLS == [{"source": Path("in.jsonl"), "spec": Spec("model"), "kinds": ("b", "a")}]
    help_text = parser("typed", typed_command).format_help()
    assert "SOURCE" in help_text and "the file to read" in help_text and "a path, read by" in help_text
    with pytest.raises(SystemExit):
        call("typed", typed_command, ["in.jsonl", "--spec", ""])
    assert "an empty path" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        call("typed", typed_command, ["in.jsonl", "--spec", "m", "--kinds", "c"])
    assert "invalid choice: 'c'" in capsys.readouterr().err
