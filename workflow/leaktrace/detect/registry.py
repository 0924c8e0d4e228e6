"""Every detector, registered once: the parameters each family takes (their
defaults are read from ``config/schema.yaml``, ``score.methods.<family>``, the
one place they are written) and the instances a config block makes of it. Each instance
carries its name, its scoring function (higher = member, the orientation
recorded in ``orientation``), for threshold-free methods its own decision
rule, and flags saying which evidence it needs, so a stage can tell which
passes to run. Adding a detector is a module plus an entry here.

Gray-box methods score a ``SampleEvidence``; methods with
``needs_generations`` (SrDetection black-box) score a ``GenerationEvidence``
built from generated continuations instead. The learned black-box
baselines (``needs_learned``: DPDLLM, VeilProbe) are fitted and applied by
their own stage (``stages.dpdllm_veilprobe``); their instance here reads the
member probability and decision those stages wrote for each sample."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, partial
from typing import Any

from leaktrace.configuration import schema_node
from leaktrace.detect.dc_pdd import dc_pdd_score
from leaktrace.detect.evidence import SampleEvidence
from leaktrace.detect.loss import loss_score
from leaktrace.detect.lowercase import lowercase_score
from leaktrace.detect.min_k import min_k_score
from leaktrace.detect.min_k_plus_plus import min_k_plus_plus_score
from leaktrace.detect.neighbor import neighbor_score
from leaktrace.detect.recall_relative_ll import recall_score
from leaktrace.detect.ref import ref_oracle_score, ref_score
from leaktrace.detect.srdetection_blackbox import blackbox_flag, blackbox_gap
from leaktrace.detect.srdetection_graybox import srdetection_flag, srdetection_gap
from leaktrace.detect.zlib_ratio import zlib_score
from leaktrace.models.token_counts import TokenCounts


@dataclass(frozen=True)
class Method:
    name: str
    family: str
    score: Callable[[Any], float]  # SampleEvidence, or GenerationEvidence when needs_generations
    decide: Callable[[Any], bool] | None = None  # threshold-free methods only
    orientation: str = "higher = member"
    needs_lowercase: bool = False  # SampleEvidence.lowercase: the lowercased original scored
    needs_variants: bool = False  # SampleEvidence.variants: at least one validated variant scored
    needs_reference: bool = False  # SampleEvidence.reference: the original under the reference model
    needs_oracle_reference: bool = False  # SampleEvidence.oracle_reference: the original under the target's base
    needs_prefixed: bool = False  # SampleEvidence.prefixed: the original after the non-member prefix
    needs_generations: bool = False  # scores GenerationEvidence (continuations), not token statistics
    needs_learned: bool = (
        False  # scores its own stage's row {score, decision} (a classifier fitted on the calibration fold)
    )
    sensitivity: bool = False  # an extra instance for the variant-count sensitivity table
    variant_generator: str | None = None  # scores SampleEvidence.alternatives[this] as its variants
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def threshold_free(self) -> bool:
        return self.decide is not None


@dataclass(frozen=True)
class Family:
    """A detector family: how a filled-in parameter mapping becomes method
    instances (the parameters and their defaults: :func:`family_defaults`).
    ``stage_only`` parameters are read by the stage that prepares the
    evidence (which corpus, which model, how many prefix texts), not by the
    scoring function."""

    build: Callable[[Mapping[str, Any], TokenCounts | None], list[Method]]
    stage_only: frozenset[str] = frozenset()
    # its scores come from a classifier fitted on the split's labels (its methods have ``needs_learned``), so a
    # sample's score is free of its own label only outside the fitted fold
    label_fitted: bool = False


REQUIRED = object()  # a parameter the schema lists as required: it has no default


def _percent(ratio: float) -> str:
    return f"{round(ratio * 100):d}"


def _loss(params, counts) -> list[Method]:
    return [Method("loss", "loss", loss_score, orientation="LL = -loss; higher = member")]


def _zlib(params, counts) -> list[Method]:
    return [Method("zlib", "zlib", zlib_score, orientation="LL / zlib bytes; higher = member")]


def _lowercase(params, counts) -> list[Method]:
    return [
        Method(
            "lowercase",
            "lowercase",
            lowercase_score,
            orientation="LL(lower) / LL(x); higher = member",
            needs_lowercase=True,
        )
    ]


def _min_k(params, counts) -> list[Method]:
    return [
        Method(
            f"min_k_{_percent(r)}",
            "min_k",
            partial(min_k_score, ratio=r),
            orientation="mean of the lowest K% token log-probabilities; higher = member",
            params={"ratio": r},
        )
        for r in params["ratios"]
    ]


def _min_k_plus_plus(params, counts) -> list[Method]:
    return [
        Method(
            f"min_k_pp_{_percent(r)}",
            "min_k_plus_plus",
            partial(min_k_plus_plus_score, ratio=r),
            orientation="mean of the lowest K% standardised log-probabilities; higher = member",
            params={"ratio": r},
        )
        for r in params["ratios"]
    ]


def _dc_pdd(params, counts) -> list[Method]:
    if counts is None:
        raise ValueError("dc_pdd needs token counts of its reference corpus: pass token_counts= to configured_methods")
    if not params["clip"] > 0:
        raise ValueError(f"dc_pdd clip must be positive, got {params['clip']}")
    return [
        Method(
            "dc_pdd",
            "dc_pdd",
            partial(dc_pdd_score, frequencies=counts.frequencies(), clip=params["clip"]),
            orientation="mean clipped p * log(1/f) over first occurrences; higher = member",
            params={"clip": params["clip"], "tokenizer": counts.tokenizer},
        )
    ]


def _ref(params, counts) -> list[Method]:
    methods = [
        Method("ref", "ref", ref_score, orientation="LL_target - LL_reference; higher = member", needs_reference=True)
    ]
    if params["oracle"]:
        methods.append(
            Method(
                "ref_oracle",
                "ref",
                ref_oracle_score,
                needs_oracle_reference=True,
                orientation="LL_target - LL_base (the target's own base model: an oracle); higher = member",
            )
        )
    return methods


def _neighbor(params, counts) -> list[Method]:
    k = _positive(params, "n_neighbors")
    return [
        Method(
            "neighbor",
            "neighbor",
            partial(neighbor_score, n_neighbors=k),
            orientation="LL(x) - mean LL(neighbours); higher = member",
            needs_variants=True,
            params={"n_neighbors": k},
        )
    ]


def _recall(params, counts) -> list[Method]:
    _positive(params, "n_shots")
    return [
        Method(
            "recall",
            "recall",
            recall_score,
            orientation="LL(x | non-member prefix) / LL(x); higher = member",
            needs_prefixed=True,
            params={"n_shots": params["n_shots"]},
        )
    ]


def _variant_counts(params) -> list[tuple[int, bool]]:
    """(n, is a sensitivity instance): the main n first, then the listed ones."""
    main = _positive(params, "n_variants")
    extra = [int(n) for n in params["sensitivity"]]
    if any(n < 1 for n in extra) or len(set(extra)) != len(extra):
        raise ValueError(f"sensitivity must list distinct positive variant counts, got {params['sensitivity']}")
    return [(main, False)] + [(n, True) for n in extra]


def sensitivity_instance_name(family: str, n: int) -> str:
    return f"{family}_n{n}"


def is_sensitivity_instance(method: str, family: str) -> bool:
    """Whether ``method`` is one of ``family``'s variant-count sensitivity
    instances (tables show them; ROC figures leave them out)."""
    return re.fullmatch(re.escape(family) + r"_n\d+", method) is not None


def _srdetection_instances(
    family: str, params, gap, flag, orientation: str, *, extra_params: Mapping[str, Any] | None = None, **needs: bool
) -> list[Method]:
    """The main SrDetection instance and its variant-count sensitivity
    instances ``{family}_n{n}``, all scored from the same evidence."""
    return [
        Method(
            family if not sensitivity else sensitivity_instance_name(family, n),
            family,
            partial(gap, n_variants=n),
            decide=partial(flag, n_variants=n),
            orientation=orientation,
            sensitivity=sensitivity,
            params={"n_variants": n, **(extra_params or {})},
            **needs,
        )
        for n, sensitivity in _variant_counts(params)
    ]


def generator_instance_name(family: str, generator: str) -> str:
    """``srdetection_graybox_ast_tt`` for generator "ast+tt"."""
    return f"{family}_{re.sub(r'[^a-z0-9]+', '_', generator.lower())}"


def _on_generator(function: Callable[..., Any], evidence: SampleEvidence, *, generator: str, **kwargs: Any) -> Any:
    """`function` of `evidence` with `generator`'s variants in place of the main ones."""
    return function(replace(evidence, variants=evidence.alternatives.get(generator, ())), **kwargs)


def _srdetection_graybox(params, counts) -> list[Method]:
    family, orientation = "srdetection_graybox", "min variant loss - original loss (flag: > 0); higher = member"
    n = _positive(params, "n_variants")
    per_generator = [
        Method(
            generator_instance_name(family, generator),
            family,
            partial(_on_generator, srdetection_gap, generator=generator, n_variants=n),
            decide=partial(_on_generator, srdetection_flag, generator=generator, n_variants=n),
            orientation=f"{orientation}; variants by {generator}",
            params={"n_variants": n, "generator": generator},
            needs_variants=True,
            variant_generator=generator,
        )
        for generator in params["generators"]
    ]
    return (
        _srdetection_instances(family, params, srdetection_gap, srdetection_flag, orientation, needs_variants=True)
        + per_generator
    )


def _srdetection_blackbox(params, counts) -> list[Method]:
    if not 0 < params["prefix_fraction"] < 1:
        raise ValueError(f"prefix_fraction must be in (0, 1), got {params['prefix_fraction']}")
    generation = {
        "prefix_fraction": params["prefix_fraction"],
        "ngram": _positive(params, "ngram"),
        "max_new_tokens": _positive(params, "max_new_tokens"),
    }
    return _srdetection_instances(
        "srdetection_blackbox",
        params,
        blackbox_gap,
        blackbox_flag,
        "original NGO - max variant NGO (flag: > 0); higher = member",
        extra_params=generation,
        needs_generations=True,
    )


def _learned_score(row: Mapping[str, Any]) -> float:
    return row["score"]


def _learned_decision(row: Mapping[str, Any]) -> bool:
    return row["decision"]


def _fraction(params: Mapping[str, Any], key: str, *, closed: bool = False) -> float:
    value = params[key]
    if not (0 < value <= 1 if closed else 0 < value < 1):
        raise ValueError(f"{key} must be in (0, 1{']' if closed else ')'}, got {value!r}")
    return value


def _dpdllm(params, counts) -> list[Method]:
    _fraction(params, "prefix_fraction")
    for key in ("max_new_tokens", "reference_epochs"):
        _positive(params, key)
    if not params["temperature"] > 0:
        raise ValueError(f"temperature must be positive, got {params['temperature']}")
    return [
        Method(
            "dpdllm",
            "dpdllm",
            _learned_score,
            decide=_learned_decision,
            needs_learned=True,
            orientation="naive Bayes member probability of the sampled continuation's features; higher = member",
            params=dict(params),
        )
    ]


def _veilprobe(params, counts) -> list[Method]:
    _fraction(params, "key_fraction", closed=True)
    _fraction(params, "p_value")
    _fraction(params, "labelled_fraction", closed=True)
    for key in ("candidates", "mapping_hidden", "mapping_layers", "mapping_epochs", "proto_epochs"):
        _positive(params, key)
    return [
        Method(
            "veilprobe",
            "veilprobe",
            _learned_score,
            decide=_learned_decision,
            needs_learned=True,
            orientation="prototypical-network member probability; higher = member",
            params=dict(params),
        )
    ]


def _positive(params: Mapping[str, Any], key: str) -> int:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be a positive integer, got {value!r}")
    return value


FAMILIES: dict[str, Family] = {
    "loss": Family(_loss),
    "zlib": Family(_zlib),
    "lowercase": Family(_lowercase),
    "min_k": Family(_min_k),
    "min_k_plus_plus": Family(_min_k_plus_plus),
    "dc_pdd": Family(_dc_pdd, stage_only=frozenset({"corpus"})),
    "ref": Family(_ref, stage_only=frozenset({"model"})),
    "neighbor": Family(_neighbor),
    "recall": Family(_recall, stage_only=frozenset({"n_shots", "max_prefix_tokens"})),
    "srdetection_graybox": Family(_srdetection_graybox),
    "srdetection_blackbox": Family(_srdetection_blackbox, stage_only=frozenset({"prefix_fraction", "max_new_tokens"})),
    # Black-box baselines of SrDetection's Table 2 (detect.dpdllm, detect.veilprobe).
    "dpdllm": Family(
        _dpdllm,
        stage_only=frozenset({"prefix_fraction", "temperature", "max_new_tokens", "reference_epochs"}),
        label_fitted=True,
    ),
    "veilprobe": Family(
        _veilprobe,
        stage_only=frozenset(
            {
                "key_fraction",
                "candidates",
                "p_value",
                "labelled_fraction",
                "mapping_hidden",
                "mapping_layers",
                "mapping_epochs",
                "proto_epochs",
            }
        ),
        label_fitted=True,
    ),
}


@cache
def _schema_defaults(family: str) -> dict[str, Any]:
    node = schema_node("score", "methods", family)
    required = set(node.get("required", ()))
    defaults: dict[str, Any] = {}
    for param, spec in node.get("properties", {}).items():
        if "default" in spec:
            defaults[param] = spec["default"]
        elif param in required:
            defaults[param] = REQUIRED
        else:
            raise ValueError(
                f"config/schema.yaml score.methods.{family}.{param} has neither a default nor a place in "
                "required: every detector parameter needs one"
            )
    return defaults


def family_defaults(family: str) -> dict[str, Any]:
    """The family's parameters with their defaults, as ``config/schema.yaml``
    writes them (``score.methods.<family>.properties.<param>.default``; a
    parameter the schema lists as ``required`` is :data:`REQUIRED`). A fresh
    copy each call: a caller may change it."""
    if family not in FAMILIES:
        raise ValueError(f"unknown detection methods [{family!r}]; known: {sorted(FAMILIES)}")
    return copy.deepcopy(_schema_defaults(family), {id(REQUIRED): REQUIRED})  # the marker stays itself


def family_params(family: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The family's parameters: the configured ones over the defaults; an
    unknown or missing required parameter is a clear error."""
    defaults = family_defaults(family)
    params = dict(params or {})
    unknown = set(params) - set(defaults)
    if unknown:
        raise ValueError(f"{family}: unknown parameters {sorted(unknown)}; known: {sorted(defaults)}")
    filled = {**defaults, **params}
    missing = sorted(k for k, v in filled.items() if v is REQUIRED)
    if missing:
        raise ValueError(f"{family}: missing required parameters {missing}")
    return filled


def configured_methods(
    config: Mapping[str, Mapping | None], *, token_counts: TokenCounts | None = None
) -> list[Method]:
    """Instantiate the methods named in the config's ``score.methods`` block.
    ``token_counts`` (the reference corpus counted with the scored model's
    tokenizer) is required when ``dc_pdd`` is configured."""
    unknown = set(config) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown detection methods {sorted(unknown)}; known: {sorted(FAMILIES)}")
    methods = [
        m
        for family, params in config.items()
        for m in FAMILIES[family].build(family_params(family, params), token_counts)
    ]
    names = [m.name for m in methods]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"method names {duplicates} are configured twice")
    return methods
