"""The audit's verdict table (:mod:`leaktrace.calibration.audit_verdicts`)
as Markdown: every test against the control set with its power and the
blind baseline, the per-sample flags (marginal and training-conditional),
the control ids dropped and the reference-model contrast."""

from __future__ import annotations

from leaktrace.report.tables import markdown_table


def _fmt(value, spec: str = ".3g") -> str:
    return "–" if value is None else format(value, spec)


def render(rows: list[dict], alpha: float, delta: float) -> str:
    """The Markdown report of the verdict table."""
    main = [
        {
            **r,
            "controls used (dropped)": f"{r['n_controls_used']} ({r.get('n_controls_dropped') or 0})",
            "p": _fmt(r.get("p_value")),
            "80%-power effect": "–"
            if r.get("detectable_effect") is None
            else f"{r['effect']} ≥ {r['detectable_effect']:.2f}",
            "kind": r.get("evidence") or "–",
            "counted": "yes" if r.get("counted_as_evidence") else "no",
        }
        for r in rows
    ]
    conformal = [
        {
            **r,
            "k": r.get("conformal_rank"),
            "P(FPR > α)": _fmt(r.get("fpr_exceed_probability")),
            "flagged": _fmt(r.get("statistic"), ".0f"),
            "PAC k": r.get("pac_rank"),
            "PAC flagged": r.get("n_flagged_pac"),
        }
        for r in rows
        if r["test"] == "conformal_flags"
    ]
    notes = sorted(
        {
            f"- {r['model']} / {r['benchmark']} / {r['test']} {r['detector']}: {r['controls_dropped']}"
            for r in rows
            if r.get("controls_dropped")
        }
    )
    contrast = sorted(
        {f"- {r['model']} / {r['benchmark']}: {r['note']}" for r in rows if r["test"] == "reference_contrast"}
    )
    return (
        "# Audit verdicts: every test against the control set, with its power and the blind baseline\n\n"
        "Every test here compares the suspects with the control set you chose, so every one is **observational** "
        '(column kind): a rejection reads "suspects score higher than controls", exposure only if the controls '
        "were drawn like the suspects, which no run can establish; only a randomisation the project made or can "
        "verify (the testbed's split, the complement twin, randomized publication) proves exposure. Two checks can "
        "show that the control set differs, never that it does not. The blind baseline (row `blind_baseline`) is "
        "a text-only classifier, no model (character 3-5-gram TF-IDF and six length and code features, logistic "
        "regression, cross-validated AUC with DeLong's 95% interval, a permutation p-value, and its power from that "
        f"permutation null); where it rejects at α = {alpha}, every test whose null assumes exchangeable controls "
        '(dataset inference, the conformal flags, the leakage-rate test) reads "control set differs from the '
        'suspects (…): not calibrated" and is not counted, and so does the reference-model contrast, whose '
        "assumption (a shift moves both models alike) the shifted-control experiment found false. A declared "
        "negative control (`audit.negative_controls`, and the contrast's reference), a model unexposed to both "
        "sets, is audited like the others: where its own tests reject, every observational row of the benchmark "
        "reads that the control set differs in a way models see, and is not counted. Column counted: the "
        "rejection counts in the verdict page's answer (it rejects and no gate closed). Each verdict states the "
        "smallest effect the test detects with 80% power for its samples (AUC: Mann-Whitney normal "
        "approximation; flag rate: the exact null of the flag count, or Fisher's test's exact power). Without a "
        "rejection a test only bounds the effect it could have detected; it is no proof that the model was never "
        "exposed.\n\n"
        + markdown_table(
            main,
            [
                "model",
                "benchmark",
                "test",
                "detector",
                "n_suspect",
                "controls used (dropped)",
                "p",
                "80%-power effect",
                "verdict",
                "kind",
                "counted",
            ],
        )
        + "\n## Per-sample flags: marginal and training-conditional\n\n"
        "A suspect is flagged at α when fewer than k = ⌊α (m + 1)⌋ of the m controls score at least as high "
        "(conformal p-value ≤ α). That holds the false-positive rate at α on average over the control draw; "
        "P(FPR > α) is the chance, over that draw, that this control set's rate exceeds α (Beta(k, m + 1 − k)). "
        f"The PAC rule flags above the PAC k-th largest control instead, so that FPR ≤ α with probability ≥ {1 - delta:g} "
        "(Vovk 2012; Bates et al. 2023); PAC k = 0 flags nothing.\n\n"
        + markdown_table(
            conformal,
            [
                "model",
                "benchmark",
                "detector",
                "n_suspect",
                "n_controls_used",
                "k",
                "flagged",
                "P(FPR > α)",
                "PAC k",
                "PAC flagged",
            ],
        )
        + "\n## Control ids dropped\n\n"
        + ("\n".join(notes) if notes else "None: every test used every control id.")
        + "\n"
        + ("\n## Reference-model contrast\n\n" + "\n".join(contrast) + "\n" if contrast else "")
    )
