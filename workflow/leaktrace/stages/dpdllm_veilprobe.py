"""SrDetection's black-box baselines, DPDLLM and VeilProbe (``detect.dpdllm``,
``detect.veilprobe``), in the steps that cost something, each its own rule:

- DPDLLM: the reference adapter (LoRA on every detection text, once per
  benchmark); the target's sampled continuations of each text's first half;
  their features under the reference model; the naive Bayes classifier.
- VeilProbe: the key-token perturbation of each text's prefix (the base
  model as proxy, once per benchmark); the mapping model trained on the
  target's continuations (SrDetection black-box's, reused) and its hidden
  states; the t-test filter and the prototypical network.

Every learned component is saved with the ids of the samples it was trained
on. The classifiers read the labels of the split's calibration fold only,
cross-fitted over ``folds`` folds of it (``detect.cross_fit``): a
calibration sample is scored by the fit that held its fold out, every other
sample by the fit on the whole fold, and no sample by a fit that saw its
label. Their scores (member probability), decisions (the classifier's) and
every fold's score of every sample go to ``score_methods`` like any
detector's."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from leaktrace.artifacts import read_records, write_table
from leaktrace.detect.cross_fit import UNLABELLED, CrossFit, cross_fit, stratified_share
from leaktrace.detect.dpdllm import FEATURES, ContinuationStats, DpdllmFitter, continuation_features, feature_matrix
from leaktrace.detect.mapping_model import MappingSettings, hidden_features, new_mapping_model, train_mapping
from leaktrace.detect.scores import SCORES_SCHEMA
from leaktrace.detect.srdetection_blackbox import _TokenBudget, split_prefix_suffix
from leaktrace.detect.veilprobe import key_token_scores, perturb_key_tokens, veilprobe_fitter
from leaktrace.models.configured import language_model, model_spec
from leaktrace.seeding import derive_seed
from leaktrace.settings.dpdllm_veilprobe import (
    BlackboxPrefix,
    DpdllmReference,
    DpdllmSampling,
    VeilprobeFit,
    VeilprobeMapping,
    VeilprobePerturbation,
)
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch
from leaktrace.train.lora import LoraSettings, train_lora
from leaktrace.variants.kinds import valid_texts

log = logging.getLogger(__name__)

GENERATIONS_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("prefix_ids", pa.list_(pa.int32())),
        ("generated", pa.string()),
        ("generated_ids", pa.list_(pa.int32())),
    ]
)
DPDLLM_FEATURES_SCHEMA = pa.schema([("sample_id", pa.string()), *[(name, pa.float64()) for name in FEATURES]])
PERTURBED_SCHEMA = pa.schema(
    [
        ("sample_id", pa.string()),
        ("prefix_ids", pa.list_(pa.int32())),
        ("perturbed_ids", pa.list_(pa.int32())),
        ("replaced", pa.list_(pa.int32())),
    ]
)
VEILPROBE_FEATURES_SCHEMA = pa.schema(
    [("sample_id", pa.string()), ("original", pa.list_(pa.float64())), ("perturbed", pa.list_(pa.float64()))]
)


def _originals(variants: Path) -> list[tuple[str, str]]:
    return sorted((v["sample_id"], v["text"]) for v in valid_texts(variants) if v["variant_id"] == 0)


def _prefix(lm, text: str, prefix_fraction: float) -> tuple[list[int], list[int]]:
    """The split SrDetection black-box makes: the text cut to the context, then its tokens."""
    return split_prefix_suffix(lm.encode(text)[: lm.max_length - 1], prefix_fraction)


def _write_ids(directory: Path, ids: list[str], **extra) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "trained_on.json").write_text(
        json.dumps({"sample_ids": ids, **extra}, indent=1, sort_keys=True) + "\n"
    )


def calibration_labels(samples: Path, scored: set[str]) -> dict[str, bool]:
    """sample_id -> is a member, for the calibration fold's kept samples that
    have features. Nothing else of the split is read."""
    rows = [
        r
        for r in read_records(samples, ["sample_id", "split", "fold", "kept"])
        if r["kept"] and r["fold"] == "calibration" and r["sample_id"] in scored
    ]
    return {r["sample_id"]: r["split"] == "member" for r in rows}


def labelled_share(labels: dict[str, bool], labelled_fraction: float, seed: int) -> dict[str, bool]:
    """A stratified, seeded share of ``labels`` (all of them at 1; at least 2 per class)."""
    ids = sorted(labels)
    chosen = stratified_share(np.array([labels[s] for s in ids]), labelled_fraction, np.random.default_rng(seed))
    return {ids[i]: labels[ids[i]] for i in chosen}


# --- DPDLLM -----------------------------------------------------------------


def train_dpdllm_reference(
    variants: Path, model: ModelSettings, settings: DpdllmReference, seed: int, output_dir: Path
) -> None:
    """The reference model's adapter: LoRA (the testbed's training code and
    settings) on every detection text for ``reference_epochs`` epochs."""
    epochs = settings.reference_epochs
    originals = _originals(variants)
    lora = LoraSettings.from_config(
        settings.train, max_length=model.max_length, seed=derive_seed(seed, "dpdllm-reference"), epochs=(epochs,)
    )
    train_lora(model_spec(model, None), [text for _, text in originals], lora, lambda epoch: output_dir / "adapter")
    _write_ids(output_dir, [sid for sid, _ in originals], epochs=epochs)
    log.info("DPDLLM reference adapter: %d texts, %d epochs", len(originals), epochs)


def dpdllm_generations(
    variants: Path,
    model: ModelSettings,
    settings: DpdllmSampling,
    batch: TokenBatch,
    seed: int,
    output: Path,
    adapter: Path | None = None,
) -> None:
    """DPDLLM's sampled continuation of the first ``prefix_fraction`` of every
    original under the target, as long as its true suffix (at most
    ``max_new_tokens``)."""
    lm = language_model(model, adapter, batch)
    originals = _originals(variants)
    prefixes, budgets = [], []
    for _, text in originals:
        prefix, suffix = _prefix(lm, text, settings.prefix_fraction)
        prefixes.append(prefix)
        budgets.append(min(len(lm.encode(lm.decode(suffix))), settings.max_new_tokens))
    generated = lm.sample(
        prefixes,
        max_new_tokens=max(budgets, default=1),
        temperature=settings.temperature,
        seed=derive_seed(seed, "dpdllm-sampling"),
        stops=[_TokenBudget(lm.encode, b) for b in budgets],
    )
    rows = []
    for (sid, _), prefix, budget, text in zip(originals, prefixes, budgets, generated, strict=True):
        ids = lm.encode(text)[:budget]
        rows.append({"sample_id": sid, "prefix_ids": prefix, "generated": lm.decode(ids), "generated_ids": ids})
    write_table(rows, GENERATIONS_SCHEMA, output)
    log.info("DPDLLM: %d sampled continuations under %s", len(rows), lm.name)


@torch.no_grad()
def _continuation_pass(model, bos_id: int, prefix: list[int], continuation: list[int]) -> tuple[np.ndarray, np.ndarray]:
    ids = torch.tensor([[bos_id, *prefix, *continuation]])
    logprobs = torch.log_softmax(model(input_ids=ids).logits[0, len(prefix) : -1].float(), dim=-1)
    token = logprobs.gather(-1, torch.tensor(continuation).unsqueeze(-1)).squeeze(-1)
    return token.numpy(), logprobs.max(dim=-1).values.exp().numpy()


def dpdllm_features(
    generations: Path, model: ModelSettings, reference_adapter: Path, batch: TokenBatch, output: Path
) -> None:
    """DPDLLM's features of every non-empty continuation under the reference
    model (``model`` with ``reference_adapter``), after the prefix it continued;
    empty continuations have none."""
    lm = language_model(model, reference_adapter, batch)
    rows, empty = [], []
    for g in read_records(generations):
        if not g["generated_ids"]:
            empty.append(g["sample_id"])
            continue
        limit = lm.max_length - 1 - len(g["prefix_ids"])
        logprobs, max_probs = _continuation_pass(lm.model, lm.bos_id, g["prefix_ids"], g["generated_ids"][:limit])
        lower, _ = _continuation_pass(
            lm.model, lm.bos_id, g["prefix_ids"], lm.encode(g["generated"].lower())[:limit] or [lm.bos_id]
        )
        stats = ContinuationStats(logprobs, max_probs, lower, g["generated"])
        rows.append({"sample_id": g["sample_id"], **continuation_features(stats)})
    write_table(rows, DPDLLM_FEATURES_SCHEMA, output)
    log.info(
        "DPDLLM features of %d continuations under %s; %d empty continuations unscored: %s",
        len(rows),
        lm.name,
        len(empty),
        ", ".join(empty),
    )


def _score_rows(method: str, ids: list[str], fitted: CrossFit) -> list[dict]:
    return [
        {
            "sample_id": sid,
            "method": method,
            "family": method,
            "score": float(fitted.scores[i]),
            "decision": bool(fitted.decisions[i]),
            "fold": int(fitted.fold[i]),
            "fold_scores": fitted.fold_scores[:, i].tolist(),
        }
        for i, sid in enumerate(ids)
    ]


def _fits(ids: list[str], fitted: CrossFit) -> list[dict]:
    """trained_on.json's record of every fit: the ids it was trained on."""
    k = len(fitted.fold_scores)
    return [
        {
            "fit": f"fold {f}" if f < k else "full",
            "fold": f if f < k else UNLABELLED,
            "sample_ids": [ids[i] for i in train],
        }
        for f, train in enumerate(fitted.trained_on)
    ]


def cross_fitted(ids: list[str], labels: dict[str, bool], fit_many, folds: int, seed: int) -> CrossFit:
    index = {sid: i for i, sid in enumerate(ids)}
    return cross_fit(
        np.array([index[s] for s in labels], dtype=np.int64),
        np.array(list(labels.values()), dtype=bool),
        len(ids),
        fit_many,
        folds,
        seed,
    )


def fit_dpdllm(features: Path, samples: Path, folds: int, seed: int, output: Path, model_dir: Path) -> None:
    """DPDLLM's naive Bayes classifier, cross-fitted over ``folds`` folds of
    the split's calibration fold: every sample's score to ``output``, the fits
    to ``model_dir``."""
    rows = read_records(features)
    ids = [r["sample_id"] for r in rows]
    labels = calibration_labels(samples, set(ids))
    fitter = DpdllmFitter(feature_matrix(rows))
    fitted = cross_fitted(ids, labels, fitter, folds, derive_seed(seed, "dpdllm-folds"))
    full = fitter.classifiers[-1]  # the fit on the whole calibration fold, which scores the other samples
    model_dir.mkdir(parents=True, exist_ok=True)
    _write_ids(
        model_dir,
        list(labels),
        features=list(FEATURES),
        fits=_fits(ids, fitted),
        classes=full.classes_.tolist(),
        class_prior=full.class_prior_.tolist(),
        theta=full.theta_.tolist(),
        var=full.var_.tolist(),
    )
    write_table(_score_rows("dpdllm", ids, fitted), SCORES_SCHEMA, output)
    log.info(
        "DPDLLM: naive Bayes cross-fitted over %d folds of %d calibration samples, scored %d",
        len(fitted.fold_scores),
        len(labels),
        len(ids),
    )


# --- VeilProbe --------------------------------------------------------------


def veilprobe_perturb(
    variants: Path,
    model: ModelSettings,
    settings: VeilprobePerturbation,
    blackbox: BlackboxPrefix,
    batch: TokenBatch,
    seed: int,
    output: Path,
) -> None:
    """VeilProbe's perturbation: each original's prefix (SrDetection
    black-box's split) with its key tokens replaced, the base model as proxy."""
    torch.set_num_threads(1)  # small matrices: one thread is faster than two contending ones
    lm = language_model(model, None, batch)
    rng = np.random.default_rng(derive_seed(seed, "veilprobe-perturb"))
    originals = _originals(variants)
    splits = [_prefix(lm, text, blackbox.prefix_fraction) for _, text in originals]
    rows = []
    for start in range(0, len(splits), lm.batch_size):
        chunk = splits[start : start + lm.batch_size]
        scored = key_token_scores(lm.model, lm.bos_id, lm.pad_id, chunk, 4 * settings.candidates)
        for (sid, _), (prefix, _), (attribution, candidates) in zip(originals[start:], chunk, scored, strict=False):
            perturbed, replaced = perturb_key_tokens(
                prefix, attribution, candidates, lm.decode, settings.key_fraction, settings.candidates, rng
            )
            rows.append({"sample_id": sid, "prefix_ids": prefix, "perturbed_ids": perturbed, "replaced": replaced})
    write_table(rows, PERTURBED_SCHEMA, output)
    log.info(
        "VeilProbe: %d prefixes perturbed, %.1f key tokens each on average",
        len(rows),
        np.mean([len(r["replaced"]) for r in rows]) if rows else 0.0,
    )


def veilprobe_features(
    blackbox: Path,
    perturbed: Path,
    model: ModelSettings,
    settings: VeilprobeMapping,
    seed: int,
    output: Path,
    mapping_dir: Path,
) -> None:
    """VeilProbe's mapping model trained on <prefix, the target's continuation>
    of every original, and its hidden states of each prefix and its perturbed form."""
    from leaktrace.models.loading import load_tokenizer

    torch.set_num_threads(1)
    prefixes = {r["sample_id"]: r for r in read_records(perturbed)}
    continuations = {
        r["sample_id"]: r
        for r in read_records(blackbox, ["sample_id", "variant_id", "prefix_tokens", "generated_ids"])
        if r["variant_id"] == 0 and r["sample_id"] in prefixes
    }
    ids = sorted(continuations)
    for sid in ids:
        if continuations[sid]["prefix_tokens"] != len(prefixes[sid]["prefix_ids"]):
            raise ValueError(
                f"{sid}: black-box prefix of {continuations[sid]['prefix_tokens']} tokens, perturbed prefix of "
                f"{len(prefixes[sid]['prefix_ids'])}: the two passes split the text differently"
            )
    tokenizer = load_tokenizer(model_spec(model, None))
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    mapping = MappingSettings(
        hidden=settings.mapping_hidden,
        layers=settings.mapping_layers,
        epochs=settings.mapping_epochs,
        seed=derive_seed(seed, "veilprobe-mapping") % 2**32,
    )
    longest = max((len(prefixes[s]["prefix_ids"]) + len(continuations[s]["generated_ids"]) for s in ids), default=1) + 1
    net = new_mapping_model(len(tokenizer), longest, mapping, bos, tokenizer.pad_token_id)
    losses = train_mapping(net, [(prefixes[s]["prefix_ids"], continuations[s]["generated_ids"]) for s in ids], mapping)
    original = hidden_features(net, [prefixes[s]["prefix_ids"] for s in ids])
    perturbed_h = hidden_features(net, [prefixes[s]["perturbed_ids"] for s in ids])
    net.save_pretrained(mapping_dir)
    _write_ids(mapping_dir, ids, losses=losses)
    write_table(
        [
            {"sample_id": s, "original": o.tolist(), "perturbed": p.tolist()}
            for s, o, p in zip(ids, original, perturbed_h, strict=True)
        ],
        VEILPROBE_FEATURES_SCHEMA,
        output,
    )
    log.info("VeilProbe mapping model: %d pairs, loss by epoch %s", len(ids), ", ".join(f"{x:.3f}" for x in losses))


def fit_veilprobe(
    features: Path, samples: Path, settings: VeilprobeFit, folds: int, seed: int, output: Path, model_dir: Path
) -> None:
    """VeilProbe's t-test filter and prototypical network, cross-fitted over
    ``folds`` folds of a labelled share of the split's calibration fold: every
    sample's score to ``output``, the fits to ``model_dir``."""
    torch.set_num_threads(1)
    rows = read_records(features)
    ids = [r["sample_id"] for r in rows]
    labels = labelled_share(
        calibration_labels(samples, set(ids)), settings.labelled_fraction, derive_seed(seed, "veilprobe-labelled")
    )
    fitter = veilprobe_fitter(rows, {"p_value": settings.p_value, "proto_epochs": settings.proto_epochs}, seed)
    fitted = cross_fitted(ids, labels, fitter, folds, derive_seed(seed, "veilprobe-folds"))
    model_dir.mkdir(parents=True, exist_ok=True)
    torch.save(fitter.states[-1], model_dir / "protonet.pt")  # the full fit's, which scores the unlabelled samples
    fits = [
        fit | {"significant_dimensions": np.flatnonzero(mask).tolist()}
        for fit, mask in zip(_fits(ids, fitted), fitter.masks, strict=True)
    ]
    _write_ids(model_dir, list(labels), fits=fits)
    write_table(_score_rows("veilprobe", ids, fitted), SCORES_SCHEMA, output)
    log.info(
        "VeilProbe: %d of %d difference dimensions pass the t-test on the calibration fold; prototypical networks "
        "cross-fitted over %d folds of %d calibration samples",
        int(fitter.masks[-1].sum()),
        fitter.masks[-1].size,
        len(fitted.fold_scores),
        len(labels),
    )
