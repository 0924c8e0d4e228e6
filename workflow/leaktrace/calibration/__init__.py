"""Calibrated verdicts: every decision a user reads (a flag, a rate, a
p-value) with the null it was calibrated against and that null's measured
false-positive rate. ``conformal``: per-sample p-values against a control
set of known non-members; ``rates``: rejection rates with exact binomial
intervals; ``table``: the calibration table every family writes its rows
through; ``unexposed``: which scored models can serve as nulls;
``conformal_checks`` and ``membership``: the checks of the conformal
decisions and of dataset inference that fill it."""
