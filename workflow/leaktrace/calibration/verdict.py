"""The wording of an audit verdict, in two tiers, and the gates.

Every test is of one of two kinds, and its wording says which:

- **design**: its null is guaranteed by a randomisation the project made or
  can verify (the testbed's random split, the complement twin, randomized
  publication, Oren et al.'s test on an order the user declares was drawn
  at random). Its rejection reads "evidence of exposure (p = …)".
- **observational**: a comparison with a control set the user chose (dataset
  inference, conformal flags, the leakage rate against controls, the
  reference-model contrast). No run can establish that the controls were
  drawn like the suspects (Zhang, Das, Kamath & Tramèr 2025; Duan et al.
  2024), so its rejection reads "suspects score higher than controls (p =
  …): exposure only if the controls were drawn like the suspects", never
  "evidence of exposure".

Without a rejection either kind reads "no evidence; this test would have
detected <effect> ≥ … with 80% power", or "inconclusive: too few samples to
detect <effect> < …" where the 80%-power effect is above
``inconclusive_above`` (or no effect on the scale reaches 80% power).

Two gates replace an observational verdict by the reason it is not read:
the blind baseline rejecting (:mod:`leaktrace.calibration.blind_baseline`:
"control set differs from the suspects (blind AUC …): not calibrated"), and
a declared negative-control model whose own observational test rejects
("the control set differs from the suspects in a way models see (negative
control …: p = …)"). A check that failed to reject did not refute its
condition; it never shows that it holds. No verdict claims a model was
never exposed."""

from __future__ import annotations

from leaktrace.calibration.power import POWER

DESIGN = "design"
OBSERVATIONAL = "observational"
OBSERVATIONAL_CAVEAT = "exposure only if the controls were drawn like the suspects, which no run can establish"


def shift_text(auc: float, low: float, high: float, p: float) -> str:
    return f"control set differs from the suspects (blind AUC {auc:.2f} [{low:.2f}, {high:.2f}], p = {p:.2g}): not calibrated"


def negative_control_text(model: str, test: str, p: float) -> str:
    """The gate's text where a declared-unexposed model's observational test rejects."""
    return (
        f"the control set differs from the suspects in a way models see (negative control {model}: {test} "
        f"p = {p:.2g}): not calibrated"
    )


def _power_text(effect: str, detectable: float | None, inconclusive_above: float, subject: str = "") -> str:
    if detectable is None or detectable > inconclusive_above:
        return f"inconclusive: too few samples to detect {effect} < {1.0 if detectable is None else detectable:.2f}"
    return f"no evidence{subject}; this test would have detected {effect} ≥ {detectable:.2f} with {POWER:.0%} power"


def rejection_text(p: float, tier: str) -> str:
    """A rejection in its tier's words."""
    if tier == DESIGN:
        return f"evidence of exposure (p = {p:.2g})"
    return f"suspects score higher than controls (p = {p:.2g}): {OBSERVATIONAL_CAVEAT}"


def verdict(
    p: float | None,
    alpha: float,
    effect: str,
    detectable: float | None,
    inconclusive_above: float,
    shift: str | None = None,
    tier: str = OBSERVATIONAL,
) -> str:
    """A test's verdict; ``shift``: a gate's text when the test is
    observational and a gate closed (then it is the verdict)."""
    if shift is not None:
        return shift
    if p is not None and p <= alpha:
        return rejection_text(p, tier)
    return _power_text(effect, detectable, inconclusive_above)


def shift_verdict(
    auc: float, low: float, high: float, p: float, alpha: float, detectable: float | None, inconclusive_above: float
) -> str:
    """The blind baseline's own verdict: about the control set, not exposure.
    Without a rejection the difference is not refuted, nothing more."""
    if p <= alpha:
        return shift_text(auc, low, high, p)
    return _power_text("AUC", detectable, inconclusive_above, " that the control set differs (not refuted)")
