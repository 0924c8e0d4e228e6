"""Naturalness-matched variants (variants.natural): the rule picks what it
says on hand-made losses, the selection is deterministic, the block off
changes neither the variants job's params nor its table, and the selection
model can never be an audited model."""

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from helpers import REPO, snakemake, write_config

from leaktrace.artifacts import read_records
from leaktrace.seeding import rng_for
from leaktrace.stage_entry import stage_settings
from leaktrace.variants.natural import (
    check_selection_model,
    choose_natural,
    generation_settings,
    pool_settings,
    select_nearest,
    variants_settings,
)

NATURAL = {"enabled": True, "pool": 3, "rule": "nearest", "model": None}
SETTINGS = {"n": 2, "test_cases": {"compose": False, "untransformed": 0}, "natural": NATURAL}
OTHER_SETS = ("ast+tt", "llm", "llm+tt")


def test_nearest_keeps_the_variants_whose_loss_is_nearest_the_originals():
    losses = {1: 1.5, 2: 0.875, 3: 2.0, 4: 1.25, 5: 0.625, 6: 3.0}
    # distances from 1.0: 0.5, 0.125, 1.0, 0.25, 0.375, 2.0
    assert select_nearest(1.0, losses, 3, random.Random(0)) == [2, 4, 5]
    assert select_nearest(1.0, losses, 1, random.Random(0)) == [2]
    assert select_nearest(1.0, losses, 10, random.Random(0)) == [1, 2, 3, 4, 5, 6]
    assert select_nearest(1.0, {}, 3, random.Random(0)) == []


def test_equal_distances_are_ordered_by_the_seed_alone():
    losses = {1: 1.25, 2: 0.75, 3: 5.0}  # 1 and 2 both 0.25 from the original
    picks = {
        seed: select_nearest(1.0, losses, 1, rng_for(seed, "natural-variants", "rename", "s")) for seed in range(40)
    }
    assert {tuple(p) for p in picks.values()} == {(1,), (2,)}  # the seed decides, not the id order
    assert all(
        select_nearest(1.0, losses, 1, rng_for(seed, "natural-variants", "rename", "s")) == picks[seed]
        for seed in range(40)
    )


def _pool_rows():
    """One sample's pool (pool 3, n 2): detector ids 1-3, then set "ast" 4-6 (none here), tau_t 7-8."""
    rows = [{"sample_id": "s", "variant_id": 0, "kind": "original", "text": "orig", "valid": True}]
    rows += [{"sample_id": "s", "variant_id": i, "kind": "rename", "text": f"r{i}", "valid": i != 2} for i in (1, 2, 3)]
    rows += [{"sample_id": "s", "variant_id": i, "kind": "ast+tt", "text": f"t{i}", "valid": True} for i in (7, 8)]
    return rows


def test_the_table_keeps_the_picked_variants_renumbered_as_without_matching():
    # original 2.0; rename 1: 2.5, 2 (invalid): 2.0, 3: 2.1
    losses = {("s", 0): 2.0, ("s", 1): 2.5, ("s", 3): 2.125}
    chosen = choose_natural(_pool_rows(), losses, 2, "nearest", 0, OTHER_SETS)
    assert [(r["variant_id"], r["kind"], r["text"]) for r in chosen] == [
        (0, "original", "orig"),
        (1, "rename", "r1"),
        (2, "rename", "r3"),
        (3, "ast+tt", "t7"),
        (4, "ast+tt", "t8"),
    ]


def test_pool_settings_raise_n_to_the_pool_only_when_on():
    assert pool_settings(SETTINGS) == {**SETTINGS, "n": 3}
    off = {**SETTINGS, "natural": {**NATURAL, "enabled": False}}
    assert pool_settings(off) == off
    with pytest.raises(ValueError, match="pool"):
        pool_settings({**SETTINGS, "n": 4})


def test_off_the_variants_job_keeps_its_params():
    """The rule's params are generation_settings of the config slice: the block
    off and names_per_variant null, they are the slice without either, byte for
    byte as before they existed; set (the default sets one name), each is passed on."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["variants"]
    assert config["natural"]["enabled"] is False and config["names_per_variant"] == 1
    before = {k: v for k, v in config.items() if k not in ("natural", "names_per_variant")}
    every_name = {**config, "names_per_variant": None}
    assert json.dumps(generation_settings(every_name), sort_keys=True) == json.dumps(before, sort_keys=True)
    assert generation_settings({**config, "natural": NATURAL})["natural"] == NATURAL
    assert generation_settings(config)["names_per_variant"] == 1


def test_the_rules_slice_is_the_block_the_variants_job_has_always_had():
    """The rule's --settings, its settings class's slice of the config, is
    generation_settings of the block byte for byte (the lexicon's keys and the
    matching's rule and model carried): a run made before keeps its variants."""
    from snakemake.utils import validate

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    validate(config, str(REPO / "config" / "schema.yaml"), set_default=True)
    for variants in (
        config["variants"],
        {**config["variants"], "names_per_variant": None},
        {**config["variants"], "natural": {**NATURAL, "pool": 12}},
    ):
        rule = stage_settings("variants", {**config, "variants": generation_settings(variants)})
        assert rule == json.dumps(generation_settings(variants), sort_keys=True)


def _write_sample(tmp_path):
    code = '''def count_items(items, limit):
    """Count the entries below a bound.
    >>> count_items([1, 5, 2], 3)
    2
    """
    total = 0
    for item in items:
        if item < limit:
            total += 1
    return total
'''
    test = "def check(candidate):\n    assert candidate([1, 5, 2], 3) == 2\n"
    pq.write_table(
        pa.Table.from_pylist([{"sample_id": "s", "code": code, "test": test, "entry_point": "count_items"}]),
        tmp_path / "benchmark.parquet",
    )
    pq.write_table(pa.Table.from_pylist([{"sample_id": "s", "kept": True}]), tmp_path / "functions.parquet")
    words = ["count", "tally", "items", "elems", "limit", "bound", "total", "sum", "item", "elem", "entry"]
    pq.write_table(
        pa.Table.from_pylist([{"kind": "variable", "name": w, "count": 4} for w in words]), tmp_path / "lexicon.parquet"
    )


def test_off_the_variants_table_is_byte_identical(tmp_path):
    """natural off and names_per_variant null write what the stage wrote without them;
    names_per_variant 1 makes every variant rename one name, validated as the others."""
    from leaktrace.stages.variants import make_variants_table

    _write_sample(tmp_path)
    settings = {"n": 2, "io_cases": None, "test_cases": {"compose": False, "untransformed": 0}}
    for name, given in (
        ("without", variants_settings(**settings, natural=None, names_per_variant=None)),
        ("off", variants_settings(**settings, natural={**NATURAL, "enabled": False}, names_per_variant=None)),
        ("all-names", variants_settings(**settings, natural=None, names_per_variant=None)),
        ("one-name", variants_settings(**settings, natural=None, names_per_variant=1)),
    ):
        make_variants_table(
            tmp_path / "benchmark.parquet",
            tmp_path / "functions.parquet",
            tmp_path / "lexicon.parquet",
            given,
            7,
            1,
            tmp_path / f"{name}.parquet",
        )
    assert (tmp_path / "without.parquet").read_bytes() == (tmp_path / "off.parquet").read_bytes()
    assert (tmp_path / "without.parquet").read_bytes() == (tmp_path / "all-names.parquet").read_bytes()
    every = [r for r in read_records(tmp_path / "without.parquet") if r["kind"] == "rename"]
    one = [r for r in read_records(tmp_path / "one-name.parquet") if r["kind"] == "rename"]
    assert len(one) == 2 and all(r["valid"] and len(json.loads(r["renames"])) == 1 for r in one)
    assert all(len(json.loads(r["renames"])) > 1 for r in every)


def test_selection_is_deterministic_and_keeps_n_of_the_pool(tmp_path, tiny_model_dir):
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch
    from leaktrace.settings.variants import NaturalRule, NaturalSettings
    from leaktrace.stages.variants import VARIANTS_SCHEMA, select_natural_variants

    rows = [
        {
            **r,
            "entry_point": "f",
            "renames": "{}",
            "generator": r["kind"] if r["kind"] != "rename" else "ast",
            "invalid_reason": None if r["valid"] else "wrong",
            "isolation": "full",
            "text": f"def f(x):\n    return x + {r['variant_id']}  # {r['text']}\n",
        }
        for r in _pool_rows()
    ]
    pool = tmp_path / "pool.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=VARIANTS_SCHEMA), pool)
    model = ModelSettings(path=str(tiny_model_dir), dtype="float32", device="cpu", max_length=None)
    settings = NaturalSettings(n=2, natural=NaturalRule(rule="nearest"), tokens=TokenBatch(4, None))
    for run in ("a", "b"):
        select_natural_variants(pool, model, settings, 3, tmp_path / f"{run}.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    chosen = read_records(tmp_path / "a.parquet")
    assert [(r["variant_id"], r["kind"]) for r in chosen] == [
        (0, "original"),
        (1, "rename"),
        (2, "rename"),
        (5, "ast+tt"),
        (6, "ast+tt"),
    ]  # after set "ast"
    assert {r["text"] for r in chosen if r["kind"] == "rename"} == {rows[1]["text"], rows[3]["text"]}  # the valid two


def test_the_selection_model_is_never_an_audited_model():
    base = "resources/models/leaktrace-tiny"
    with pytest.raises(ValueError, match="model under audit"):
        check_selection_model("./resources/models/../models/leaktrace-tiny", [base])
    with pytest.raises(ValueError, match="model under audit"):
        check_selection_model("org/model", [base, "org/model"])
    with pytest.raises(ValueError, match="needs a selection model"):
        check_selection_model(None, [base])
    assert (
        check_selection_model("resources/models/leaktrace-tiny-ref", [base, None])
        == "resources/models/leaktrace-tiny-ref"
    )


def test_the_pipeline_refuses_the_base_model_as_selection_model(tmp_path):
    config = write_config(tmp_path, {"variants": {"natural": {"enabled": True}}})
    planned = snakemake(tmp_path, "-n", "results/micro/variants/humaneval.parquet", "--configfile", str(config))
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert "natural_variants" in planned.stdout
    bad = yaml.safe_load(config.read_text())
    bad["variants"]["natural"]["model"] = bad["base_model"]["path"]
    config.write_text(yaml.safe_dump(bad))
    refused = snakemake(tmp_path, "-n", "results/micro/variants/humaneval.parquet", "--configfile", str(config))
    assert refused.returncode != 0
    assert "is a model under audit" in refused.stdout + refused.stderr
