"""SrDetection's black-box baselines, DPDLLM and VeilProbe, one class per
step that reads the config (``leaktrace dpdllm-*``, ``veilprobe-*``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import config_key, settings_of
from leaktrace.settings.train import LoraRun


@settings_of("dpdllm-reference", block="score.methods.dpdllm")
@dataclass(frozen=True)
class DpdllmReference:
    """The reference adapter's LoRA epochs, the rest of its run as the
    testbed's runs are trained (``train``'s keys but the epochs)."""

    reference_epochs: int
    train: LoraRun = config_key("train")


@settings_of("dpdllm-generations", block="score.methods.dpdllm")
@dataclass(frozen=True)
class DpdllmSampling:
    """The target's sampled continuation of each original's first
    ``prefix_fraction``, at ``temperature``, at most ``max_new_tokens``."""

    prefix_fraction: float
    temperature: float
    max_new_tokens: int


@settings_of("veilprobe-perturb", block="score.methods.veilprobe")
@dataclass(frozen=True)
class VeilprobePerturbation:
    """The share of each prefix's tokens replaced as key tokens, and the
    replacement candidates per token."""

    key_fraction: float
    candidates: int


@dataclass(frozen=True)
class BlackboxPrefix:
    """SrDetection black-box's split of a text (the ``--blackbox`` of
    ``veilprobe-perturb``): the share of its tokens given as the prompt."""

    prefix_fraction: float


BlackboxPrefix.config_block = "score.methods.srdetection_blackbox"


@settings_of("veilprobe-features", block="score.methods.veilprobe")
@dataclass(frozen=True)
class VeilprobeMapping:
    """The mapping model's size and training epochs."""

    mapping_hidden: int
    mapping_layers: int
    mapping_epochs: int


@settings_of("veilprobe-fit", block="score.methods.veilprobe")
@dataclass(frozen=True)
class VeilprobeFit:
    """The t-test's level, the labelled share of the calibration fold and
    the prototypical network's epochs."""

    p_value: float
    labelled_fraction: float
    proto_epochs: int
