"""The wording of an audit verdict, and the shift gate.

Every exposure verdict is exactly one of

- "evidence of exposure (p = …)": p <= alpha, and the test's null holds
  (its controls were not shown to differ from the suspects);
- "no evidence; this test would have detected <effect> ≥ … with 80% power";
- "inconclusive: too few samples to detect <effect> < …": the 80%-power
  effect is above ``inconclusive_above`` on its scale, or no effect on the
  scale reaches 80% power (then "< 1.00", the scale's top);

or, for a test that assumes the controls exchangeable with the suspects,
when the blind baseline rejects at alpha (:mod:`leaktrace.calibration.blind_baseline`):

- "control set differs from the suspects (blind AUC a [lo, hi], p = …): not
  calibrated": its p-value is not evidence either way.

A test without evidence bounds the effect it could have detected, nothing
more: no verdict claims the model was never exposed."""

from __future__ import annotations

from leaktrace.calibration.power import POWER


def shift_text(auc: float, low: float, high: float, p: float) -> str:
    return f"control set differs from the suspects (blind AUC {auc:.2f} [{low:.2f}, {high:.2f}], p = {p:.2g}): not calibrated"


def _power_text(effect: str, detectable: float | None, inconclusive_above: float, subject: str = "") -> str:
    if detectable is None or detectable > inconclusive_above:
        return f"inconclusive: too few samples to detect {effect} < {1.0 if detectable is None else detectable:.2f}"
    return f"no evidence{subject}; this test would have detected {effect} ≥ {detectable:.2f} with {POWER:.0%} power"


def verdict(
    p: float | None,
    alpha: float,
    effect: str,
    detectable: float | None,
    inconclusive_above: float,
    shift: str | None = None,
) -> str:
    """An exposure verdict; ``shift``: the gate's text when the test assumes
    exchangeable controls and the blind baseline rejected."""
    if shift is not None:
        return shift
    if p is not None and p <= alpha:
        return f"evidence of exposure (p = {p:.2g})"
    return _power_text(effect, detectable, inconclusive_above)


def shift_verdict(
    auc: float, low: float, high: float, p: float, alpha: float, detectable: float | None, inconclusive_above: float
) -> str:
    """The blind baseline's own verdict: about the control set, not exposure."""
    if p <= alpha:
        return shift_text(auc, low, high, p)
    return _power_text("AUC", detectable, inconclusive_above, " that the control set differs")
