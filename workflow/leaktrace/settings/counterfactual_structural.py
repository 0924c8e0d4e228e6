"""The structural similarity family (``leaktrace counterfactual-structural``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from leaktrace.config_slice import settings_of


@dataclass(frozen=True)
class TsedCosts:
    """TSED's tree edit costs (Song et al. 2024)."""

    delete: float
    insert: float
    rename: float


@settings_of("counterfactual-structural", block="similarity.structural")
@dataclass(frozen=True)
class StructuralSettings:
    """CodeBLEU's component weights, TSED's edit costs, whether TSED's leaves
    are labelled by their text, and which of tree-sitter's nodes its trees hold."""

    codebleu_weights: tuple[float, ...]
    tsed_costs: TsedCosts
    tsed_leaf_text: bool
    tsed_nodes: Literal["all", "named"]
