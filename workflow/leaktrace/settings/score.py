"""The token passes and the detectors (``leaktrace tokens``,
``recall-tokens``, ``token-counts``, ``blackbox``, ``scores``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from leaktrace.config_slice import settings_of


@settings_of("tokens", block="score.tokens")
@dataclass(frozen=True)
class TokenBatch:
    """The batches of a model pass (the token pass's settings, and the
    ``--batch`` of every other pass that reads ``score.tokens``)."""

    batch_size: int
    token_budget: int | None


# --- score.methods: one class per detector family (detect/registry.py) -------


@dataclass(frozen=True)
class NoParams:
    """A family with no parameters (loss, zlib, lowercase)."""


@dataclass(frozen=True)
class MinKParams:
    """Min-K% and Min-K%++: the K of each instance, as a fraction."""

    ratios: tuple[float, ...]


@dataclass(frozen=True)
class DcPddParams:
    """DC-PDD: the corpus whose token frequencies calibrate, and the clip."""

    corpus: str
    clip: float


@dataclass(frozen=True)
class RefParams:
    """Ref: the reference model (null: reference_model.path); ``oracle`` adds ref_oracle."""

    model: str | None
    oracle: bool


@dataclass(frozen=True)
class NeighborParams:
    n_neighbors: int


@settings_of("recall-tokens", block="score.methods.recall")
@dataclass(frozen=True)
class RecallSettings:
    """ReCaLL's prefix: up to ``n_shots`` held-out non-members, at most
    ``max_prefix_tokens`` tokens (null: only the context limits it)."""

    n_shots: int
    max_prefix_tokens: int | None


@dataclass(frozen=True)
class GrayboxParams:
    """SrDetection gray-box: variants compared, the sensitivity instances, the other variant sets."""

    n_variants: int
    sensitivity: tuple[int, ...]
    generators: tuple[str, ...]


@settings_of("blackbox", block="score.methods.srdetection_blackbox")
@dataclass(frozen=True)
class BlackboxParams:
    """SrDetection black-box: variants compared, the sensitivity instances, the
    n-gram, the prompt's share of each text and the continuation's length
    (``leaktrace blackbox`` continues the texts the largest count compares)."""

    n_variants: int
    sensitivity: tuple[int, ...]
    ngram: int
    prefix_fraction: float
    max_new_tokens: int


@dataclass(frozen=True)
class DpdllmParams:
    """DPDLLM (its steps read their own keys: settings/dpdllm_veilprobe.py)."""

    prefix_fraction: float
    temperature: float
    max_new_tokens: int
    reference_epochs: int


@dataclass(frozen=True)
class VeilprobeParams:
    """VeilProbe (its steps read their own keys: settings/dpdllm_veilprobe.py)."""

    key_fraction: float
    candidates: int
    p_value: float
    labelled_fraction: float
    mapping_hidden: int
    mapping_layers: int
    mapping_epochs: int
    proto_epochs: int


@settings_of("scores", block="score.methods")
@dataclass(frozen=True)
class ScoreMethods:
    """Every configured detector family, by name; a family the config leaves
    out is not run (None here, and absent from the rule's slice: the one
    kind of key a settings class lets be absent, since absence is what the
    config says)."""

    dc_pdd: DcPddParams | None = None
    dpdllm: DpdllmParams | None = None
    loss: NoParams | None = None
    lowercase: NoParams | None = None
    min_k: MinKParams | None = None
    min_k_plus_plus: MinKParams | None = None
    neighbor: NeighborParams | None = None
    recall: RecallSettings | None = None
    ref: RefParams | None = None
    srdetection_blackbox: BlackboxParams | None = None
    srdetection_graybox: GrayboxParams | None = None
    veilprobe: VeilprobeParams | None = None
    zlib: NoParams | None = None

    def families(self) -> dict[str, dict[str, Any]]:
        """The configured families' parameters, as the detector registry takes
        them (``detect.registry.configured_methods``), in the slice's order."""
        return {
            field.name: _plain(dataclasses.asdict(params))
            for field in dataclasses.fields(self)
            if (params := getattr(self, field.name)) is not None
        }


def _plain(params: dict[str, Any]) -> dict[str, Any]:
    """Tuples back to the lists the config holds."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
