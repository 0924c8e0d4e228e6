"""Combining the p-values of repeated random splits of the same data.

The splits share their samples, so their p-values are dependent in an
unknown way, and the rules that assume independence (Fisher, Stouffer,
scipy's ``combine_pvalues``) are anti-conservative here. Twice the median is
valid under any dependence: for K p-values, (K / r) times the r-th smallest
is a p-value whatever their joint law (Rüschendorf 1982; Vovk & Wang,
"Combining p-values via averaging", Biometrika 2020), and with r = ⌈K/2⌉
that factor is at most 2; DiCiccio, DiCiccio & Romano ("Exact tests via
multiple data splitting", Stat. Probab. Lett. 2020) propose exactly this
rule for tests repeated over data splits. The median of an even number of
p-values is at least the lower middle one, so it stays valid."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

COMBINATION = "2 x median over splits (valid under dependence)"


def twice_median(p_values: Sequence[float]) -> float:
    if len(p_values) == 0:
        raise ValueError("no p-values to combine")
    return float(min(1.0, 2.0 * np.median(np.asarray(p_values, dtype=float))))
