"""The scoring stages' one declaration: the scored model's entry, the token
batches and the detector families, as the rules pass them and as the
commands read them (leaktrace/settings/score.py, settings/models.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaktrace.cli import main
from leaktrace.config_slice import SliceError, read_slice, slice_from_config
from leaktrace.settings.models import AdaptedModel, ModelSettings
from leaktrace.settings.score import NoParams, RecallSettings, ScoreMethods
from leaktrace.stage_entry import call

MODEL = {"path": "resources/models/leaktrace-tiny", "dtype": "float32", "device": "cpu"}


def test_an_audited_models_entry_has_no_max_length_and_reads_as_null():
    assert read_slice(ModelSettings, MODEL, "model") == ModelSettings(**MODEL, max_length=None)
    assert read_slice(ModelSettings, {**MODEL, "max_length": 256}, "model").max_length == 256


def test_a_model_flag_reads_a_bare_path_or_json_and_names_a_bad_key():
    assert ModelSettings.from_flag("org/model") == ModelSettings("org/model", "float32", "cpu", None, None)
    given = {**MODEL, "max_length": 256, "revision": "v1"}
    assert ModelSettings.from_flag(json.dumps(given)) == ModelSettings(**given)
    assert ModelSettings.from_flag(json.dumps(MODEL)) == ModelSettings(**MODEL)  # max_length, revision: null
    with pytest.raises(SliceError, match=r"config model\.dtype: expected one of 'float32', 'bfloat16', 'float16'"):
        ModelSettings.from_flag(json.dumps({**MODEL, "dtype": "fp8"}))
    with pytest.raises(SliceError, match=r"config model\.dtype: missing"):  # JSON names its dtype and device
        ModelSettings.from_flag(json.dumps({"path": "m", "device": "cpu"}))
    with pytest.raises(ValueError, match="not valid JSON"):
        ModelSettings.from_flag('{"path": "m",')
    adapted = AdaptedModel.from_flag(json.dumps({**MODEL, "adapter": "a"}))
    assert isinstance(adapted, ModelSettings) and adapted.adapter == "a"
    assert AdaptedModel.from_flag(json.dumps(MODEL)).adapter is None


def test_the_scores_slice_holds_the_configured_families_only_and_reads_them_typed():
    config = {"score": {"methods": {"loss": {}, "recall": {"n_shots": 2, "max_prefix_tokens": None}}}}
    assert slice_from_config(ScoreMethods, config) == config["score"]["methods"]
    methods = read_slice(ScoreMethods, config["score"]["methods"], "score.methods")
    assert methods == ScoreMethods(loss=NoParams(), recall=RecallSettings(n_shots=2, max_prefix_tokens=None))
    assert methods.families() == {"loss": {}, "recall": {"n_shots": 2, "max_prefix_tokens": None}}


@pytest.mark.parametrize(
    ("model", "batch", "message"),
    [
        ({"path": "p", "dtype": "float32"}, {"batch_size": 8, "token_budget": None}, "config model.device: missing"),
        ({**MODEL, "dtype": "fp8"}, {"batch_size": 8, "token_budget": None}, "config model.dtype: expected one of"),
        (MODEL, {"batch_size": "8", "token_budget": None}, "config score.tokens.batch_size: expected an integer"),
    ],
)
def test_the_tokens_command_names_a_bad_model_or_batch_key(model, batch, message, tmp_path, capsys):
    argv = ["tokens", "--variants", "v.parquet", "--model", json.dumps(model), "--settings", json.dumps(batch)]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--output", str(tmp_path / "tokens.parquet")])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_the_scores_command_names_a_mistyped_family_parameter(tmp_path, capsys):
    argv = ["scores", "--tokens", "t.parquet", "--variants", "v.parquet", "--output", str(tmp_path / "s.parquet")]
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "--settings", json.dumps({"neighbor": {"n_neighbors": "ten"}})])
    assert stopped.value.code == 2
    assert "config score.methods.neighbor.n_neighbors: expected an integer" in capsys.readouterr().err


def _takes_learned(output: Path, learned: tuple[Path, ...] = ()) -> None:
    """A stage with a repeatable tuple flag."""
    CALLS.append(learned)


CALLS: list = []


def test_a_repeated_tuple_flag_keeps_every_item_and_an_absent_one_its_default():
    CALLS.clear()
    call("toy", _takes_learned, ["--output", "o", "--learned", "a.parquet", "--learned", "b.parquet", "c.parquet"])
    call("toy", _takes_learned, ["--output", "o"])
    assert CALLS == [(Path("a.parquet"), Path("b.parquet"), Path("c.parquet")), ()]
