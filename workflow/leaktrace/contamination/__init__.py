"""Dataset-level contamination tests: a p-value for "this benchmark was in
the model's training data" rather than a score per sample. Dataset
inference (Maini et al. 2024) combines the per-sample detector scores; the
variant-preference test compares the target's preference for originals
over their variants with a reference model's; the sharded exchangeability
test (Oren et al. 2023) asks whether the model prefers the benchmark's
canonical order. Their false-positive rates under the null are measured
through ``leaktrace.calibration``."""
