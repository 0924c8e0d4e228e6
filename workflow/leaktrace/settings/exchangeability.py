"""Oren et al.'s sharded order test (``leaktrace exchangeability``,
``exchangeability-calibration``, ``audit-exchangeability``)."""

from __future__ import annotations

from dataclasses import dataclass

from leaktrace.config_slice import settings_of


@settings_of("exchangeability", block="contamination.exchangeability")
@dataclass(frozen=True)
class ExchangeabilitySettings:
    """``contamination.exchangeability`` (config/schema.yaml): the examples tested, shards and permutations."""

    samples: str
    n_shards: int
    n_permutations: int


@settings_of("exchangeability-calibration", block="contamination.exchangeability")
@dataclass(frozen=True)
class ExchangeabilityCalibrationSettings(ExchangeabilitySettings):
    """The test's settings and its calibration's random orders taken as the canonical one."""

    calibration_seeds: int


@settings_of("audit-exchangeability", block="audit.exchangeability")
@dataclass(frozen=True)
class AuditExchangeabilitySettings:
    """``audit.exchangeability`` (config/schema.yaml): the shards and permutations of every audited pair."""

    n_shards: int
    n_permutations: int
