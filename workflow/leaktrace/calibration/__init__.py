"""Calibrated verdicts: every decision a user reads (a flag, a rate, a
p-value) with the null it was calibrated against and that null's measured
false-positive rate. ``conformal``: per-sample p-values against a control
set of known non-members; ``rates``: rejection rates with exact binomial
intervals; ``table``: the calibration table every family writes its rows
through; ``validity_rules``: the tests that decide whether a row holds; ``unexposed``: which scored models can serve as nulls;
``conformal_checks`` and ``membership``: the checks of the conformal
decisions and of dataset inference that fill it; ``sign_flip``: the paired
permutation test of the complement twin (a target and its twin trained on
the two halves of the split, so each sample was seen by exactly one of them).
The audit against a user's control set: ``blind_baseline`` (can the
suspects be told from the controls by their text alone?), ``power`` (the
smallest effect each test detects with 80% power), ``conditional`` (the
training-conditional, PAC, conformal flags), ``reference_contrast``
(target minus an unexposed reference, suspects against controls),
``verdict`` (the wording and the shift gate) and ``audit_verdicts`` (the
table that puts them together); ``testbed_blind``: the blind baseline on the
testbed's own member / non-member split, set beside every detector."""
