"""The pipeline as a researcher meets it: config validation, the DAG of the
default config, and an end-to-end run of the micro config, after which a
scoring-only config change re-runs only scoring and aggregation."""

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from helpers import BASE_MODEL, REPO, absolute_model_paths, run_micro, snakemake, write_config


def planned_jobs(dry_run_output: str) -> set[str]:
    """Rule names in the first "Job stats" table of ``snakemake -n`` output."""
    table = dry_run_output.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.MULTILINE)}


def test_unknown_key_stops_the_run_naming_it(tmp_path):
    config = write_config(tmp_path, {"score": {"methods": {"min_k": {"ratio": [0.2]}}}})
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "config score.methods.min_k: unknown key 'ratio'; allowed keys: ratios" in result.stdout + result.stderr


def test_wrong_type_stops_the_run_naming_it(tmp_path):
    config = write_config(tmp_path, {"train": {"epochs": "five"}})
    result = snakemake(tmp_path, "-n", "--configfile", str(config))
    assert result.returncode != 0
    assert "'five' is not of type 'array'" in result.stdout + result.stderr


def test_default_config_dry_run_plans_every_stage(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    absolute_model_paths(config)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "config.yaml"))
    assert result.returncode == 0, result.stderr
    planned = planned_jobs(result.stdout)
    assert planned >= {
        "ingest_benchmark",
        "ingest_corpus_shard",
        "filter_functions",
        "lexicon",
        "variants",
        "split_samples",
        "training_mix",
        "train_lora",
        "token_stats",
        "detector_scores",
        "counterfactual",
        "counterfactual_aggregate",
        "aggregate",
        "contamination",
        "exchangeability",
        "exchangeability_calibration",
    }
    assert "pretrain_base_model" not in planned  # the shipped model is never retrained by accident
    assert "sham_mix" not in planned  # the sham control is off in the default (its budget); micro runs it
    assert {"twin_split", "twin_mix", "train_control", "twin"} <= planned  # the complement twin, the default's null
    assert "train_watermark" not in planned  # so is the randomized publication


def test_micro_run_writes_every_artifact(micro_run):
    from leaktrace.models.token_table import losses_by_text

    workdir, effective = micro_run
    calibration_settings = yaml.safe_load(effective.read_text())["calibration"]
    out = workdir / "results" / "micro"
    samples = pq.read_table(out / "filter" / "humaneval.samples.parquet").to_pylist()
    assert len(samples) == 16
    kept = [s for s in samples if s["kept"]]
    assert {s["split"] for s in kept} == {"member", "non-member"}
    assert all(s["reason"] for s in samples if not s["kept"])
    variants = pq.read_table(out / "variants" / "humaneval.parquet").to_pylist()
    ids = {kind: {v["variant_id"] for v in variants if v["kind"] == kind} for kind in ("original", "rename", "ast")}
    assert (
        ids["original"] == {0}
        and ids["rename"] <= {1, 2, 3}
        and {v["kind"] for v in variants} == {"original", "rename", "ast"}
    )
    assert ids["ast"] and ids["ast"] <= {4, 5, 6}  # the first renamings again, without tau_t
    # tau_t composed into the detector's renamings: the headline set is tau_t o tau_v o tau_f where tau_t applies
    assert {v["generator"] for v in variants if v["kind"] == "rename"} == {"ast", "ast+tt"}
    assert {v["isolation"] for v in variants} == {"full"}
    scores = pq.read_table(out / "score" / "humaneval" / "target-r1-s0-e1" / "scores.parquet").to_pylist()
    assert {s["method"] for s in scores} == {
        "loss",
        "zlib",
        "lowercase",
        "min_k_20",
        "min_k_pp_20",
        "dc_pdd",
        "ref",
        "ref_oracle",
        "neighbor",
        "recall",
        "srdetection_graybox",
        "srdetection_graybox_n1",
        "srdetection_graybox_ast",
        "srdetection_blackbox",
        "srdetection_blackbox_n1",
    }
    reference = {
        s["method"] for s in pq.read_table(out / "score" / "humaneval" / "reference" / "scores.parquet").to_pylist()
    }
    assert "ref" in reference and "ref_oracle" not in reference  # the oracle compares a target with its own base
    # the pre-exposure filter (mark): every kept sample judged on its detector variants under the base model,
    # flagged exactly where its original's loss is below all of theirs, the cleared ones split 1:1
    rename = {(v["sample_id"], v["variant_id"]) for v in variants if v["kind"] == "rename" and v["valid"]}
    loss = losses_by_text(out / "score/humaneval/reference/tokens.parquet")
    for s in kept:
        own = [loss[key] for key in rename if key[0] == s["sample_id"]]
        assert s["pre_exposed"] is (loss[(s["sample_id"], 0)] < min(own)) and s["n_valid_variants"] == len(own)
    cleared = [s["split"] for s in kept if s["pre_exposed"] is False]
    assert abs(cleared.count("member") - cleared.count("non-member")) <= 1
    prefix = [s for s in samples if s["fold"] == "recall-prefix"]
    assert len(prefix) == 1 and prefix[0]["split"] == "non-member" and not prefix[0]["kept"]
    for ratio in (1, 2):  # members in the mix, no non-member (nor the ReCaLL prefix)
        mix = {
            r["source_id"]
            for r in pq.read_table(out / "train" / "humaneval" / f"ratio-{ratio}" / "mix.parquet").to_pylist()
            if r["kind"] == "member"
        }
        assert mix == {s["sample_id"] for s in samples if s["split"] == "member"}
        assert not mix & {s["sample_id"] for s in samples if s["split"] == "non-member"}
    # the sham control's mix: the first ratio's, with its members swapped for as many networkx functions, no benchmark id
    mix = pq.read_table(out / "train/humaneval/ratio-1/mix.parquet").to_pylist()
    sham = pq.read_table(out / "train/humaneval/sham/ratio-1/mix.parquet").to_pylist()
    assert [r["kind"] for r in sham] == ["code" if r["kind"] == "member" else r["kind"] for r in mix]
    assert not {r["source_id"] for r in sham} & {s["sample_id"] for s in samples}
    assert all(r["source_id"].startswith("networkx/") for r in sham if r["kind"] == "code")
    # the complement twin: trained on the non-members (ReCaLL's prefix in neither mix), as many text tokens per code token
    twin_mix = pq.read_table(out / "train/humaneval/twin/ratio-1/mix.parquet").to_pylist()
    assert {r["source_id"] for r in twin_mix if r["kind"] == "member"} == {
        s["sample_id"] for s in kept if s["split"] == "non-member"
    }
    assert (out / "train/humaneval/twin/ratio-1/seed-0/adapter/epoch-1/adapter_config.json").exists()
    twin = pq.read_table(out / "aggregate/humaneval/twin.parquet").to_pylist()
    assert {(r["model"], r["twin"]) for r in twin} == {("target-r1-s0-e1", "twin-r1-s0-e1")}
    assert {r["method"] for r in twin} == {s["method"] for s in scores}
    assert all(0 < r["p_value"] <= 1 and r["exact"] == (r["n"] <= 20) and r["samples"] == "all folds" for r in twin)
    (loss,) = [r for r in twin if r["method"] == "loss"]
    assert loss["n"] == len(kept) and loss["n_target_members"] == sum(s["split"] == "member" for s in kept)
    assert "## The complement twin" in (out / "aggregate/humaneval/detection.md").read_text()
    assert (out / "train/humaneval/sham/ratio-1/seed-0/adapter/epoch-1/adapter_config.json").exists()
    calibration = pq.read_table(out / "contamination/humaneval/calibration.parquet").to_pylist()
    assert {(c["kind"], c["model"], c["test"]) for c in calibration if c["model"] == "sham-r1-s0-e1"} == {
        ("null", "sham-r1-s0-e1", "variant_preference")
    }
    # the calibration table: both conformal checks of every detector under every scored model, dataset inference on
    # re-randomised memberships under the unexposed ones (the base model, the sham), at every configured alpha
    table = pq.read_table(out / "aggregate/humaneval/calibration.parquet").to_pylist()
    models = {"reference", "sham-r1-s0-e1", "twin-r1-s0-e1"} | {f"target-r{r}-s{s}-e1" for r in (1, 2) for s in (0, 1)}
    conformal = {(r["null"], r["model"]) for r in table if r["null"] in ("calibration fold", "re-partitioned")}
    assert conformal == {(null, m) for null in ("calibration fold", "re-partitioned") for m in models}
    assert {r["model"] for r in table if r["null"] == "re-randomised membership"} == {
        "reference",
        "sham-r1-s0-e1",
        "twin-r1-s0-e1",
    }
    checked = [r for r in table if r["null"] != "random publication"]  # the watermark's own levels: its test below
    draws = {
        "re-partitioned": calibration_settings["repartitions"],
        "re-randomised membership": calibration_settings["memberships"],
    }
    assert {r["alpha"] for r in checked} == {0.05, 0.1, 0.2} and all(
        r["n"] == draws[r["null"]] for r in checked if r["null"] != "calibration fold"
    )
    assert "### Null: re-partitioned" in (out / "aggregate/humaneval/calibration.md").read_text()
    # LessLeak's RQ3: n completions a problem of the reference and the headline target, each with its sandbox
    # status, and pass@k of the training-mix scan's leaked (the members) and non-leaked part in the report
    members = {s["sample_id"] for s in samples if s["split"] == "member"}
    for model in ("reference", "target-r1-s0-e1"):
        runs = pq.read_table(out / f"leakage/rq3/humaneval/{model}.parquet").to_pylist()
        assert sorted((r["sample_id"], r["draw"]) for r in runs) == sorted(
            (s["sample_id"], d) for s in samples for d in (0, 1)
        )
        assert {r["status"] for r in runs} <= {"ok", "wrong", "error", "timeout", "killed"}
    rq3 = pq.read_table(out / "leakage/training-mix/rq3/humaneval.parquet").to_pylist()
    assert {(r["model"], r["k"]) for r in rq3} == {(m, k) for m in ("reference", "target-r1-s0-e1") for k in (1, 2)}
    assert {r["n_leaked"] for r in rq3} == {len(members)} and {r["n_non_leaked"] for r in rq3} == {16 - len(members)}
    assert "LessLeak RQ3" in (out / "aggregate" / "humaneval" / "scans.md").read_text()
    audit = pq.read_table(out / "audit" / "leakage_rates.parquet").to_pylist()
    assert {(r["model"], r["detector"]) for r in audit} == {
        (m, d) for m in ("base", "lora", "tiny") for d in ("gray-box", "black-box")
    }
    assert all(r["null"] == "chance 1/(n_i + 1)" and r["calibration"].startswith("uncalibrated") for r in audit)
    detection = pq.read_table(out / "aggregate" / "humaneval" / "detection.parquet").to_pylist()
    targets = {f"target-r{r}-s{s}-e1" for r in (1, 2) for s in (0, 1)}
    assert {d["model"] for d in detection} == {"reference"} | targets
    assert {(d["ratio"], d["seed"], d["epoch"]) for d in detection} == {(None, None, 0)} | {
        (float(r), s, 1) for r in (1, 2) for s in (0, 1)
    }
    assert {d["subset"] for d in detection} == {"filtered", "all"}
    for ratio in (1, 2):  # one LoRA run per mixing ratio and training seed, from one snakemake call
        for seed in (0, 1):
            assert (
                out / "train/humaneval" / f"ratio-{ratio}" / f"seed-{seed}" / "adapter/epoch-1/adapter_config.json"
            ).exists()
    report = (out / "aggregate" / "humaneval" / "report.md").read_text()
    assert (
        "## Null check" in report
        and "by mixing ratio (epoch 1, all subset)" in (out / "aggregate/humaneval/detection.md").read_text()
    )
    (null,) = [
        r
        for r in pq.read_table(out / "aggregate/humaneval/null_check.parquet").to_pylist()
        if r["method"] == "srdetection_graybox"
    ]
    assert 0 <= null["rate"] <= 1 and 0 < null["expected_rate"] <= 0.5
    assert (out / "aggregate" / "humaneval" / "roc.png").stat().st_size > 1000
    assert "## Detection" in (out / "aggregate" / "humaneval" / "detection.md").read_text()


def test_micro_randomized_publication_trains_on_the_release_and_tests_it(micro_run):
    """The release in HumanEval's layout, the watermark target's mix the first
    ratio's with the members' published forms in place of their originals
    (every other chunk as it was), a test per model, and the random
    publications' rows in the calibration table and the report."""
    workdir, _ = micro_run
    out = workdir / "results" / "micro"
    release = out / "watermark/humaneval/release"
    published = {r["task_id"]: r for r in map(json.loads, (release / "published.jsonl").read_text().splitlines())}
    assert len(published) == 16 and set(json.loads((release / "commitment.json").read_text())) >= {
        "seed_sha256",
        "forms_sha256",
        "published_sha256",
    }
    code = {f"humaneval/{tid}": r["prompt"] + r["canonical_solution"] for tid, r in published.items()}
    mix = pq.read_table(out / "train/humaneval/ratio-1/mix.parquet").to_pylist()
    watermark = pq.read_table(out / "train/humaneval/watermark/ratio-1/mix.parquet").to_pylist()
    # the same members; the general text is drawn by the same rule (tokens per member-code token), so its amount,
    # and with it the shuffled order, follows the published forms' lengths, not the originals'
    assert sorted(r["source_id"] for r in watermark if r["kind"] == "member") == sorted(
        r["source_id"] for r in mix if r["kind"] == "member"
    )
    assert all(r["text"] == code[r["source_id"]] for r in watermark if r["kind"] == "member")
    assert {r["kind"] for r in watermark} == {r["kind"] for r in mix}
    originals = {
        r["sample_id"]: r["code"] for r in pq.read_table(out / "data/benchmarks/humaneval.parquet").to_pylist()
    }
    assert all(r["text"] != originals[r["source_id"]] for r in watermark if r["kind"] == "member")
    assert (out / "train/humaneval/watermark/ratio-1/seed-0/adapter/epoch-1/adapter_config.json").exists()
    for model in ("reference", "sham-r1-s0-e1", "target-r1-s0-e1", "wm-r1-s0-e1"):
        (result,) = pq.read_table(out / f"watermark/humaneval/test/{model}/result.parquet").to_pylist()
        assert result["testable"] >= 12 and 0 < result["p_value"] <= 1 and result["method"] == "exact convolution"
    table = pq.read_table(out / "aggregate/humaneval/calibration.parquet").to_pylist()
    rows = [r for r in table if r["null"] == "random publication"]
    assert {(r["model"], r["alpha"]) for r in rows} == {
        (m, a) for m in ("reference", "sham-r1-s0-e1", "twin-r1-s0-e1", "target-r1-s0-e1") for a in (0.01, 0.05, 0.1)
    }
    assert all(r["n"] == 200 and r["holds"] for r in rows)
    report = (out / "aggregate/humaneval/watermark.md").read_text()
    assert "## Randomized publication" in report and "wm-r1-s0-e1" in report
    assert (out / "watermark/humaneval/p_values.png").stat().st_size > 1000


def test_micro_leakage_scan_finds_every_member_and_no_non_member(micro_run, tmp_path):
    workdir, _ = micro_run
    out = workdir / "results" / "micro" / "leakage"
    (member,) = pq.read_table(out / "training-mix" / "membership.parquet").to_pylist()
    assert member["members"] > 0 and member["recall"] == 1.0 and member["precision"] == 1.0
    assert member["found_non_members"] == 0 and member["found_not_in_split"] == 0
    pairs = pq.read_table(out / "training-mix" / "pairs.parquet").to_pylist()
    assert {p["clone_type"] for p in pairs if p["duplicate"]} == {"type-1"}
    clean = pq.read_table(out / "training-mix" / "clean.parquet")
    assert clean.num_rows == 16 - member["found_members"]
    assert clean.schema == pq.read_table(workdir / "results/micro/data/benchmarks/humaneval.parquet").schema
    (summary,) = pq.read_table(out / "stdlib" / "summary.parquet").to_pylist()
    assert summary["documents"] > 100 and summary["units"] > summary["documents"]
    report = (workdir / "results" / "micro" / "aggregate" / "humaneval" / "scans.md").read_text()
    assert "recall" in (out / "training-mix" / "report.md").read_text() and "training-mix" in report
    # cleaning the testbed with a scan of the training mix is refused (a cycle)
    bad = write_config(tmp_path, {"leakage": {"clean": {"humaneval": "training-mix"}}})
    refused = snakemake(workdir, "-n", "--configfile", str(bad))
    assert refused.returncode != 0 and "cycle" in refused.stdout + refused.stderr
    good = write_config(tmp_path, {"leakage": {"clean": {"humaneval": "stdlib"}}})
    planned = snakemake(workdir, "-n", "results/micro/filter/humaneval.functions.parquet", "--configfile", str(good))
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "clean_benchmark" in planned.stdout and "ingest_benchmark_raw" in planned.stdout


def test_stages_are_byte_for_byte_deterministic(micro_run, tmp_path):
    from snakemake.utils import validate

    from leaktrace.config_slice import read_slice
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import ScoreMethods
    from leaktrace.settings.variants import VariantsSettings
    from leaktrace.stages.score import score_methods
    from leaktrace.stages.variants import make_variants_table

    workdir, config = micro_run
    settings = yaml.safe_load(config.read_text())
    validate(settings, str(REPO / "config" / "schema.yaml"), set_default=True)
    out = workdir / "results" / "micro"
    make_variants_table(
        out / "data/benchmarks/humaneval.parquet",
        out / "filter/humaneval.functions.parquet",
        out / "variants/lexicon.parquet",
        read_slice(VariantsSettings, settings["variants"], "variants"),
        settings["seed"],
        2,
        tmp_path / "v.parquet",
    )
    assert (tmp_path / "v.parquet").read_bytes() == (out / "variants/humaneval.parquet").read_bytes()
    scores = out / "score/humaneval/target-r1-s0-e1"
    model = ModelSettings(**{k: settings["base_model"][k] for k in ("path", "dtype", "device", "max_length")})
    score_methods(
        scores / "tokens.parquet",
        out / "variants/humaneval.parquet",
        read_slice(ScoreMethods, settings["score"]["methods"], "score.methods"),
        tmp_path / "s.parquet",
        reference=out / "score/humaneval/ref-model/tokens.parquet",
        oracle_reference=out / "score/humaneval/reference/tokens.parquet",
        prefixed=scores / "prefixed.parquet",
        token_counts=out / "score/token_counts/stdlib.parquet",
        blackbox=scores / "blackbox.parquet",
        model=model,
    )
    assert (tmp_path / "s.parquet").read_bytes() == (scores / "scores.parquet").read_bytes()


def result_bytes(results: Path) -> dict[str, bytes]:
    """Every Parquet table and every adapter file of a run, by relative path."""
    files = [p for p in results.rglob("*") if p.is_file() and (p.suffix == ".parquet" or "adapter" in p.parts)]
    return {str(p.relative_to(results)): p.read_bytes() for p in files}


@pytest.mark.slow
def test_micro_rerun_writes_the_same_bytes(micro_run, tmp_path):
    """A second run of the micro config, in another fresh copy, writes
    every Parquet table and adapter file byte for byte as the first: seeds,
    no timings in result tables, adapter configs in a fixed order, and
    interpreter hash seeds that differ between the runs (each run's fork
    server has its own). Slow: a second micro run is ten minutes on a 2-core
    machine with little page cache, beyond CI's share."""

    workdir, _ = micro_run
    run_micro(tmp_path)
    first, second = (result_bytes(d / "results" / "micro") for d in (workdir, tmp_path))
    assert sorted(first) == sorted(second)
    assert (
        sum(name.endswith("adapter_config.json") for name in first) == 7 and len(first) > 50
    )  # 4 targets, sham, twin, wm
    assert sorted(name for name in first if first[name] != second[name]) == []


def test_dc_pdd_refuses_token_counts_of_another_tokenizer(micro_run, tmp_path):
    from leaktrace.models.token_counts import TokenCounts, read_token_counts, write_token_counts
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import DcPddParams, ScoreMethods
    from leaktrace.stages.score import score_methods

    workdir, config = micro_run
    out = workdir / "results" / "micro"
    counts = read_token_counts(out / "score/token_counts/stdlib.parquet")
    write_token_counts(TokenCounts("0123456789abcdef", counts.counts), tmp_path / "other.parquet")
    scores = out / "score/humaneval/target-r1-s0-e1"
    with pytest.raises(ValueError, match="token counts were made with tokenizer 0123456789abcdef"):
        score_methods(
            scores / "tokens.parquet",
            out / "variants/humaneval.parquet",
            ScoreMethods(dc_pdd=DcPddParams(corpus="stdlib", clip=0.01)),
            tmp_path / "s.parquet",
            token_counts=tmp_path / "other.parquet",
            model=ModelSettings(path=str(BASE_MODEL), dtype="float32", device="cpu"),
        )


def test_pretrain_rule_rebuilds_a_tiny_base_model(tmp_path):
    from leaktrace.models.backend import ModelSpec
    from leaktrace.models.hf import HFLanguageModel

    model_dir = tmp_path / "tiny-base"
    tiny = {
        "vocab_size": 300,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_layers": 1,
        "num_heads": 2,
        "context_length": 64,
        "tokens": 4096,
        "batch_size": 4,
        "learning_rate": 0.01,
    }
    config = write_config(tmp_path, {"base_model": {"pretrain": {"settings": tiny}}})
    data = yaml.safe_load(config.read_text())
    data["base_model"]["path"] = str(model_dir)
    config.write_text(yaml.safe_dump(data))
    result = snakemake(tmp_path, "pretrain_base_model", "--configfile", str(config))
    assert result.returncode == 0, result.stderr[-3000:]
    assert pq.read_table(model_dir / "pretrain_log.parquet").num_rows > 0
    (stats,) = HFLanguageModel(ModelSpec(str(model_dir)), progress=False).score(["def f(x):\n    return x\n"])
    assert stats.n_tokens > 0
    again = snakemake(tmp_path, "-n", "pretrain_base_model", "--configfile", str(config))
    assert "Nothing to be done" in again.stdout + again.stderr


def test_scoring_only_change_reruns_only_scoring_and_aggregation(micro_run):
    workdir, _ = micro_run
    changed = yaml.safe_load((workdir / "config" / "micro.yaml").read_text())  # an overlay, as the run had
    changed["score"]["methods"]["min_k"]["ratios"] = [0.1]
    other = workdir / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    result = snakemake(workdir, "-n", "--configfile", str(other))
    assert result.returncode == 0, result.stderr
    # every reader of the score tables: the report, the audit, the p-values, the calibration checks, the twin's
    # sign-flip test, the robustness study and RQ4; and the verdict page, which reads their tables
    assert planned_jobs(result.stdout) == {
        "detector_scores",
        "aggregate",
        "audit",
        "contamination",
        "calibration_conformal",
        "calibration_membership",
        "mutation_study",
        "leakage_rq4",
        "twin",
        "watermark_report",
        "verdict",
        "all",
    }
    assert "Params have changed since last execution" in result.stdout


def test_a_functional_threshold_change_reruns_only_the_functional_aggregate(micro_run):
    workdir, _ = micro_run
    changed = yaml.safe_load((workdir / "config" / "micro.yaml").read_text())
    changed["similarity"]["aggregate"]["tau_text"] = 0.5
    other = workdir / "changed-tau.yaml"
    other.write_text(yaml.safe_dump(changed))
    result = snakemake(workdir, "-n", "--configfile", str(other))
    assert result.returncode == 0, result.stderr
    assert planned_jobs(result.stdout) == {
        "counterfactual_aggregate",
        "aggregate",
        "verdict",
        "all",
    }  # never the generations


@pytest.mark.slow
def test_default_run_exposes_members_and_reports_its_controls(tmp_path):
    """The full embedded default (about 15 minutes on 2 cores). It checks the
    testbed's controls, not a detector's ranking (that is the result, never
    a test's expectation): training lowers the members' perplexity with the
    epochs, more than the non-members'; the scan of the training mix finds
    every member and no non-member; the null check and both subsets are
    reported for every seed."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    absolute_model_paths(config)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "--configfile", str(tmp_path / "config.yaml"))
    assert result.returncode == 0, result.stderr[-4000:]
    out = tmp_path / "results" / "default" / "aggregate" / "humaneval"
    ratio, seeds, epochs = config["train"]["text_per_code"][0], config["train"]["seeds"], config["train"]["epochs"]
    ppl = {(r["model"], r["split"]): r["mean_ppl"] for r in pq.read_table(out / "perplexity.parquet").to_pylist()}
    models = ["reference"] + [f"target-r{ratio}-s{seeds[0]}-e{e}" for e in epochs]
    member = [ppl[(m, "member")] for m in models]
    assert member == sorted(member, reverse=True)
    assert member[-1] / member[0] < ppl[(models[-1], "non-member")] / ppl[(models[0], "non-member")]
    (scan,) = pq.read_table(
        tmp_path / "results" / "default" / "leakage" / "training-mix" / "membership.parquet"
    ).to_pylist()
    assert scan["recall"] == 1.0 and scan["precision"] == 1.0
    detection = pq.read_table(out / "detection.parquet").to_pylist()
    assert {(r["seed"], r["subset"]) for r in detection if r["epoch"] == max(epochs)} == {
        (s, u) for s in seeds for u in ("filtered", "all")
    }
    assert pq.read_table(out / "null_check.parquet").num_rows >= 1


def test_counterfactual_prompt_is_tokenised_as_one_string_and_truncated():
    from leaktrace.models.backend import ModelSpec
    from leaktrace.models.hf import HFLanguageModel
    from leaktrace.similarity.generations import prompt_ids

    lm = HFLanguageModel(ModelSpec(str(BASE_MODEL)), progress=False)
    context, signature = "from typing import List\n\n\n", "def f(xs: List[int]) -> int:\n"
    full = prompt_ids(lm, context, signature, context_tokens=250)
    assert full == lm.encode(context + signature[:-1])
    assert lm.decode(full).endswith("-> int:")
    short = prompt_ids(lm, context, signature, context_tokens=2)
    assert short == full[-len(short) :] and len(short) == len(lm.encode(signature[:-1])) + 2
    assert prompt_ids(lm, context, signature, context_tokens=0) == full[-len(lm.encode(signature[:-1])) :]
