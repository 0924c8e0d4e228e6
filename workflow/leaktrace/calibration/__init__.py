"""Calibrated verdicts: p-values whose null is stated and whose
false-positive rate is measured. ``sign_flip``: the paired permutation test
of the complement twin (a target and its twin trained on the two halves of
the split, so each sample was seen by exactly one of them)."""
