"""SrDetection's black-box baselines (DPDLLM, VeilProbe) end to end on the
tiny model, and the guarantees their learned parts rest on: the classifiers
never see an evaluation-fold label, and no sample is scored by a classifier
that saw its own (cross-fitting, checked by ids)."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from leaktrace.artifacts import read_records
from leaktrace.config_slice import read_slice
from leaktrace.configuration import schema_defaults
from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.detect.dpdllm import ContinuationStats, continuation_features
from leaktrace.detect.prototypical import ProtoSettings, ProtoTask, fit_many, fit_prototypical
from leaktrace.detect.registry import configured_methods, family_params
from leaktrace.detect.veilprobe import perturb_key_tokens, significant_dimensions
from leaktrace.settings.dpdllm_veilprobe import (
    BlackboxPrefix,
    DpdllmReference,
    DpdllmSampling,
    VeilprobeFit,
    VeilprobeMapping,
    VeilprobePerturbation,
)
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import BlackboxParams, ScoreMethods, TokenBatch
from leaktrace.stages import dpdllm_veilprobe
from leaktrace.stages.score import blackbox_generations, score_methods

N = 16
BATCH = TokenBatch(batch_size=8, token_budget=None)


@pytest.fixture(scope="module")
def inputs(tiny_model_dir, tmp_path_factory):
    """Variants (originals only), a split with 8 calibration and 8
    evaluation samples, and SrDetection black-box's continuations."""
    out = tmp_path_factory.mktemp("baselines")
    codes = [s.code for s in load_humaneval(shipped_humaneval_path(), "h")[:N]]
    variants = [
        {"sample_id": f"s{i:02d}", "variant_id": 0, "kind": "original", "text": c, "valid": True}
        for i, c in enumerate(codes)
    ]
    pq.write_table(pa.Table.from_pylist(variants), out / "variants.parquet")
    samples = [
        {
            "sample_id": f"s{i:02d}",
            "split": "member" if i % 2 else "non-member",
            "fold": "calibration" if i < N // 2 else "evaluation",
            "kept": True,
        }
        for i in range(N)
    ]
    pq.write_table(pa.Table.from_pylist(samples), out / "samples.parquet")
    model = ModelSettings(path=str(tiny_model_dir), dtype="float32", device="cpu", max_length=128)
    blackbox = {**schema_defaults("score", "methods", "srdetection_blackbox"), "max_new_tokens": 8}
    settings = read_slice(BlackboxParams, blackbox, "score.methods.srdetection_blackbox")
    blackbox_generations(out / "variants.parquet", model, settings, BATCH, out / "blackbox.parquet")
    return out, model


def _permuted_evaluation(out, name):
    """The split with the evaluation fold's labels shuffled (calibration untouched)."""
    rows = read_records(out / "samples.parquet")
    evaluation = [r for r in rows if r["fold"] == "evaluation"]
    shuffled = np.random.default_rng(3).permutation([r["split"] for r in evaluation]).tolist()
    for r, split in zip(evaluation, shuffled, strict=True):
        r["split"] = "member" if split == "non-member" else "non-member"  # flip too: every label changes
    pq.write_table(pa.Table.from_pylist(rows), out / name)
    assert [r["split"] for r in rows] != [r["split"] for r in read_records(out / "samples.parquet")]
    return out / name


FOLDS = 5  # the calibration fold's 4 members and 4 non-members allow 4


def assert_cross_fitted(model_dir, rows):
    """Every sample's score came from a fit whose training ids exclude it."""
    fits = {
        fit["fold"]: set(fit["sample_ids"]) for fit in json.loads((model_dir / "trained_on.json").read_text())["fits"]
    }
    assert sorted(fits) == [-1, 0, 1, 2, 3] and fits[-1] == {f"s{i:02d}" for i in range(N // 2)}
    for row in rows:
        assert row["sample_id"] not in fits[row["fold"]]
        assert len(row["fold_scores"]) == 4
        if row["fold"] >= 0:  # a calibration sample reports the fold's score that held it out
            assert row["score"] == row["fold_scores"][row["fold"]]
    assert {r["fold"] for r in rows if r["sample_id"] >= f"s{N // 2:02d}"} == {-1}  # the evaluation fold: the full fit


def test_dpdllm_end_to_end_and_blind_to_evaluation_labels(inputs, tiny_model_dir):
    out, model = inputs
    train = {
        **schema_defaults("train"),
        "lora": {"rank": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
        "learning_rate": 0.003,
        "batch_size": 8,
        "gradient_accumulation": 1,
        "warmup_steps": 1,
    }
    settings = read_slice(DpdllmReference, {"reference_epochs": 1, "train": train}, "score.methods.dpdllm")
    dpdllm_veilprobe.train_dpdllm_reference(out / "variants.parquet", model, settings, 1, out / "reference")
    assert json.loads((out / "reference/trained_on.json").read_text())["sample_ids"] == [f"s{i:02d}" for i in range(N)]
    sampling = DpdllmSampling(prefix_fraction=0.5, temperature=0.7, max_new_tokens=8)
    dpdllm_veilprobe.dpdllm_generations(out / "variants.parquet", model, sampling, BATCH, 1, out / "gen.parquet")
    dpdllm_veilprobe.dpdllm_generations(out / "variants.parquet", model, sampling, BATCH, 1, out / "gen2.parquet")
    assert (out / "gen.parquet").read_bytes() == (out / "gen2.parquet").read_bytes()  # seeded sampling
    generations = read_records(out / "gen.parquet")
    assert all(0 < len(g["generated_ids"]) <= 8 for g in generations)
    dpdllm_veilprobe.dpdllm_features(out / "gen.parquet", model, out / "reference/adapter", BATCH, out / "feat.parquet")
    features = read_records(out / "feat.parquet")
    assert len(features) == N and all(
        0 < f["mean_prob"] <= f["mean_max_prob"] <= 1 and f["perplexity"] >= 1 for f in features
    )

    dpdllm_veilprobe.fit_dpdllm(
        out / "feat.parquet", out / "samples.parquet", FOLDS, 1, out / "dpdllm.parquet", out / "dpdllm-model"
    )
    permuted = _permuted_evaluation(out, "samples-permuted.parquet")
    dpdllm_veilprobe.fit_dpdllm(
        out / "feat.parquet", permuted, FOLDS, 1, out / "dpdllm-p.parquet", out / "dpdllm-model-p"
    )
    assert (out / "dpdllm.parquet").read_bytes() == (out / "dpdllm-p.parquet").read_bytes()
    fitted = json.loads((out / "dpdllm-model/trained_on.json").read_text())
    assert fitted == json.loads((out / "dpdllm-model-p/trained_on.json").read_text())
    assert fitted["sample_ids"] == [f"s{i:02d}" for i in range(N // 2)]  # the calibration fold only

    # the scores stage passes the classifier's rows through as a threshold-free method
    rows = read_records(out / "dpdllm.parquet")
    assert_cross_fitted(out / "dpdllm-model", rows)
    assert {r["sample_id"] for r in rows} == {f"s{i:02d}" for i in range(N)}
    (method,) = configured_methods({"dpdllm": {}})
    assert method.threshold_free and method.needs_learned and method.score(rows[0]) == rows[0]["score"]


def test_veilprobe_end_to_end_and_blind_to_evaluation_labels(inputs):
    out, model = inputs
    dpdllm_veilprobe.veilprobe_perturb(
        out / "variants.parquet",
        model,
        VeilprobePerturbation(key_fraction=0.2, candidates=5),
        BlackboxPrefix(prefix_fraction=0.5),
        BATCH,
        1,
        out / "perturbed.parquet",
    )
    perturbed = read_records(out / "perturbed.parquet")
    assert any(r["replaced"] for r in perturbed)
    for r in perturbed:  # only the replaced positions change
        changed = [i for i, (a, b) in enumerate(zip(r["prefix_ids"], r["perturbed_ids"], strict=True)) if a != b]
        assert changed == r["replaced"]
    mapping = VeilprobeMapping(mapping_hidden=16, mapping_layers=1, mapping_epochs=1)
    dpdllm_veilprobe.veilprobe_features(
        out / "blackbox.parquet", out / "perturbed.parquet", model, mapping, 1, out / "vfeat.parquet", out / "mapping"
    )
    settings = VeilprobeFit(p_value=0.5, labelled_fraction=1.0, proto_epochs=5)
    assert json.loads((out / "mapping/trained_on.json").read_text())["sample_ids"] == [f"s{i:02d}" for i in range(N)]
    dpdllm_veilprobe.fit_veilprobe(
        out / "vfeat.parquet", out / "samples.parquet", settings, FOLDS, 1, out / "veil.parquet", out / "veil-model"
    )
    permuted = _permuted_evaluation(out, "samples-permuted-v.parquet")
    dpdllm_veilprobe.fit_veilprobe(
        out / "vfeat.parquet", permuted, settings, FOLDS, 1, out / "veil-p.parquet", out / "veil-model-p"
    )
    assert (out / "veil.parquet").read_bytes() == (out / "veil-p.parquet").read_bytes()
    assert (out / "veil-model/trained_on.json").read_text() == (out / "veil-model-p/trained_on.json").read_text()
    assert (out / "veil-model/protonet.pt").read_bytes() == (out / "veil-model-p/protonet.pt").read_bytes()
    assert_cross_fitted(out / "veil-model", read_records(out / "veil.parquet"))

    # the rows reach scores.parquet like any detector's
    tokens = out / "tokens.parquet"
    from leaktrace.stages.score import score_tokens

    score_tokens(out / "variants.parquet", model, BATCH, tokens, originals_only=True)
    families = {"loss": {}, "veilprobe": family_params("veilprobe", {})}
    score_methods(
        tokens,
        out / "variants.parquet",
        read_slice(ScoreMethods, families, "score.methods"),
        out / "scores.parquet",
        learned=(out / "veil.parquet",),
    )
    scores = read_records(out / "scores.parquet")
    assert {r["method"] for r in scores} == {"loss", "veilprobe"} and sum(
        r["method"] == "veilprobe" for r in scores
    ) == N
    assert all(
        len(r["fold_scores"]) == 4 for r in scores if r["method"] == "veilprobe"
    )  # the cross-fit reaches scores.parquet


def test_dpdllm_features_follow_their_definitions():
    logprobs = np.log(np.array([0.5, 0.25], dtype=np.float32))
    f = continuation_features(ContinuationStats(logprobs, np.array([0.5, 0.5]), np.log(np.array([0.25, 0.25])), "ab"))
    assert f["mean_prob"] == pytest.approx(0.375) and f["mean_max_prob"] == pytest.approx(0.5)
    assert f["perplexity"] == pytest.approx(np.sqrt(8)) and f["lowercase_ratio"] == pytest.approx(
        np.log(4) / np.log(np.sqrt(8))
    )


def test_key_tokens_are_the_most_attributed_words():
    pieces = {1: "def", 2: " f", 3: "(", 4: " x", 5: " y", 6: " z"}
    decode = lambda ids: "".join(pieces[i] for i in ids)  # noqa: E731
    prefix = [1, 2, 3, 4]
    candidates = np.array([[5, 6], [2, 5], [6, 5], [4, 6]])  # position 1 (" f"): " f" is itself, " y" the first other
    perturbed, replaced = perturb_key_tokens(
        prefix, np.array([0.1, 5.0, 9.0, 0.2]), candidates, decode, 0.25, 1, np.random.default_rng(0)
    )
    assert replaced == [1] and perturbed == [1, 5, 3, 4]  # "(" has the top attribution but is no word


def test_t_test_keeps_separating_dimensions_and_protonet_learns_them():
    rng = np.random.default_rng(0)
    labels = np.repeat([True, False], 20)
    x = rng.normal(size=(40, 4))
    x[labels, 0] += 3
    mask = significant_dimensions(x, labels, 0.01)
    assert mask[0] and mask.sum() <= 2
    fitted = fit_prototypical(x, labels, ProtoSettings(epochs=5, seed=0))
    scores, decisions = fitted.scores[0], fitted.decisions[0]
    assert (decisions == labels).mean() > 0.9 and scores[labels].mean() > scores[~labels].mean()


def test_networks_trained_together_train_as_they_would_alone():
    """The batched fit: each network's gradient is its own, so a network
    trained beside others ends where it ends trained alone."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(30, 6))
    settings = ProtoSettings(hidden=8, bottleneck=4, epochs=3, episodes=2)
    tasks = [
        ProtoTask(np.arange(20), np.repeat([True, False], 10), seed=3, mask=np.r_[np.ones(3, bool), np.zeros(3, bool)]),
        ProtoTask(np.arange(10, 30), np.tile([True, False], 10), seed=4),
    ]
    together = fit_many(x, tasks, settings)
    alone = [fit_many(x, [task], settings) for task in tasks]
    assert together.scores.shape == (2, 30)
    for i in range(2):
        assert np.allclose(together.scores[i], alone[i].scores[0], atol=1e-6)
        assert (together.decisions[i] == alone[i].decisions[0]).all()
    # a masked column does not reach the output: changing it changes no score
    shifted = x.copy()
    shifted[:, 4] += 100.0
    assert np.allclose(fit_many(shifted, tasks[:1], settings).scores, alone[0].scores)


def test_scores_command_takes_every_learned_file():
    from leaktrace.stage_entry import parser
    from leaktrace.stages.score import score_methods

    argv = ["--tokens", "t", "--variants", "v", "--settings", "{}", "--output", "o"]
    args = parser("scores", score_methods).parse_args(
        [*argv, "--learned", "dpdllm.parquet", "--learned", "veilprobe.parquet"]
    )
    assert [str(p) for p in args.learned] == ["dpdllm.parquet", "veilprobe.parquet"]
