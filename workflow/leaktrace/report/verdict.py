"""The verdict page (``results/<run>/verdict.md``): the answer to "was this
model exposed to this benchmark, and how do we know?" read off the tables a
run already wrote, so a researcher does not assemble it by hand from four
reports. One section per model x benchmark: the answer in one sentence,
naming the test that carries it; each test that ran with its p-value or
count, its null, whether its validity condition holds in this run and what
it could have detected; the scans' copies by clone type; and what the run
cannot tell. On the testbed a headline of at most 30 lines comes first.

The wording follows the statistics, by one rule (``answer``): a test counts
as evidence only where it rejects at alpha / m (Bonferroni over the m tests
with a p-value in the section) and its validity condition is known to hold;
a rejection whose condition fails or was not measured is "inconclusive"; no
rejection reads "no evidence (could have detected ...)" with the most
sensitive valid test's detectable effect, or "inconclusive" where no test's
validity and power are both known. No sentence says a model was not trained
on a benchmark: ``FORBIDDEN`` lists the phrases ``check_wording`` refuses."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scipy.stats import norm

from leaktrace.artifacts import read_records
from leaktrace.report.tables import markdown_table

# Conclusions no statistic supports: a test without a rejection only bounds what it could have detected.
FORBIDDEN = ("not trained", "did not see", "didn't see", "neither model saw", "wasn't trained")
POWER = 0.8  # the power at which "could have detected" is stated
HEADLINE_DETECTORS = 12  # the headline's detector rows (the most sensitive), to keep it within 30 lines
NOT_MEASURED = "not measured"
DECIDED_BY = (
    "`decided_by model` (in the scans' pairs files): the pair was decided by the learned verifier "
    "(`verify.model`; `score` is its probability of a duplicate, against its threshold), not by a rule "
    "(`layout`, `renamed`, `structure`, `statement`), by running both sides (`execution`) or by the LLM "
    "judge (`judge`)."
)


def check_wording(text: str, where: str = "text") -> None:
    """Raise ValueError naming the first phrase of ``FORBIDDEN`` in ``text``."""
    lowered = text.lower()
    for phrase in FORBIDDEN:
        if phrase in lowered:
            raise ValueError(
                f"{where}: says {phrase!r}; a test without a rejection reads 'no evidence (could have "
                "detected ...)' or 'inconclusive'"
            )


def detectable_auc(n_positive: int, n_negative: int, alpha: float, power: float = POWER) -> float | None:
    """The smallest AUC a one-sided Mann-Whitney test at ``alpha`` detects
    with ``power``, by the normal approximation with the null variance:
    0.5 + (z_{1-alpha} + z_power) * sqrt((n1 + n0 + 1) / (12 n1 n0)), capped
    at 1; None without both classes."""
    if n_positive < 1 or n_negative < 1:
        return None
    spread = math.sqrt((n_positive + n_negative + 1) / (12 * n_positive * n_negative))
    return min(1.0, 0.5 + (norm.ppf(1 - alpha) + norm.ppf(power)) * spread)


def auc_power(detectable: float | None, samples: str, how: str) -> tuple[str, str | None]:
    """(the power column's text, the "could have detected" phrase or None
    where no AUC below 1 is detectable with 80% power at these sizes)."""
    if detectable is None:
        return "–", None
    if detectable >= 1.0:
        return f"nothing: {samples} are too few for 80% power at any AUC below 1 ({how})", None
    return f"AUC ≥ {detectable:.2f} ({samples}, {how}, 80% power)", f"AUC ≥ {detectable:.2f}"


def fmt_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


@dataclass
class Test:
    """One row of a section's table. ``valid``: True (the condition holds in
    this run), False (it fails), None (not measured). ``p_value`` None: a
    count or a descriptive row, which no answer rests on."""

    name: str
    result: str
    null: str
    validity: str
    power: str
    p_value: float | None = None
    valid: bool | None = None
    detects: str | None = None  # "could have detected" phrase, where the power is known

    def row(self) -> dict:
        state = {True: "holds", False: "**fails**", None: NOT_MEASURED}[self.valid]
        return {
            "test": self.name,
            "result": self.result,
            "null": self.null,
            "validity in this run": f"{state}: {self.validity}",
            "could have detected": self.power,
        }


def answer(tests: Sequence[Test], alpha: float) -> str:
    """The section's one-sentence answer, by the module's rule."""
    tested = [t for t in tests if t.p_value is not None]
    if not tested:
        return "Inconclusive: no test with a p-value ran for this model and benchmark."
    level = alpha / len(tested)
    rejecting = sorted((t for t in tested if t.p_value <= level), key=lambda t: t.p_value)
    valid_rejecting = [t for t in rejecting if t.valid is True]
    if valid_rejecting:
        t = valid_rejecting[0]
        return (
            f"**Evidence of exposure** ({t.name}, p = {fmt_p(t.p_value)} ≤ α/m = {level:.2g}, "
            f"m = {len(tested)} tests; its validity condition holds: {t.validity})."
        )
    if rejecting:
        t = rejecting[0]
        why = "fails" if t.valid is False else "was not measured"
        return (
            f"**Inconclusive**: {t.name} rejects (p = {fmt_p(t.p_value)} ≤ α/m = {level:.2g}) but its validity "
            f"condition {why} ({t.validity}), so the rejection is not evidence of exposure."
        )
    powered = [t for t in tested if t.valid is True and t.detects]
    if powered:
        best = powered[0]
        return (
            f"**No evidence of exposure** (no test rejects at α/m = {level:.2g}; {best.name} could have detected "
            f"{best.detects})."
        )
    return (
        f"**Inconclusive**: no test rejects at α/m = {level:.2g}, but no test in this run has both a validity "
        "condition known to hold and a stated power, so the absence of a rejection bounds nothing."
    )


@dataclass
class Section:
    model: str
    benchmark: str
    tests: list[Test]
    cannot: list[str]
    scans: list[dict] = field(default_factory=list)

    def render(self, alpha: float) -> str:
        parts = [
            f"\n## {self.model} × {self.benchmark}\n\n",
            f"**Question**: was `{self.model}` exposed to `{self.benchmark}`, and how do we know?\n\n",
            f"**Answer**: {answer(self.tests, alpha)}\n\n",
            markdown_table(
                [t.row() for t in self.tests], ["test", "result", "null", "validity in this run", "could have detected"]
            ),
        ]
        if self.scans:
            parts += [
                "\nScan copies by clone type (each linked to its pairs; a copy in a corpus is exposure of the "
                "model only where the corpus is its training data):\n\n",
                markdown_table(self.scans, ["scan", "corpus", "samples", "Type-1", "Type-2", "Type-3", "pairs"]),
            ]
        parts.append("\n**What this run cannot tell you**:\n\n" + "".join(f"- {c}\n" for c in self.cannot))
        return "".join(parts)


# --- the run's tables -------------------------------------------------------------------------------------------


@dataclass
class RunTables:
    """The tables the verdict reads, by benchmark where they have one."""

    results: Path
    detection: dict[str, list[dict]] = field(default_factory=dict)
    seeds: dict[str, list[dict]] = field(default_factory=dict)
    calibration: dict[str, list[dict]] = field(default_factory=dict)
    twin: dict[str, list[dict]] = field(default_factory=dict)
    p_values: dict[str, list[dict]] = field(default_factory=dict)
    contamination_calibration: dict[str, list[dict]] = field(default_factory=dict)
    watermark: dict[str, list[dict]] = field(default_factory=dict)
    scans: list[tuple[str, dict]] = field(default_factory=list)  # (scan directory, summary row)
    audit_rates: list[dict] = field(default_factory=list)
    audit_inference: list[dict] = field(default_factory=list)
    audit_verdicts: list[dict] = field(default_factory=list)
    blind: list[dict] = field(default_factory=list)  # the audit's (audit/blind_baseline.parquet)
    testbed_blind: dict[str, dict] = field(default_factory=dict)  # calibration/<benchmark>/blind_baseline.parquet


# (folder under results/, file name) -> RunTables attribute; the folder's next part is the benchmark
BY_BENCHMARK = {
    ("aggregate", "detection.parquet"): "detection",
    ("aggregate", "across_seeds.parquet"): "seeds",
    ("aggregate", "calibration.parquet"): "calibration",
    ("aggregate", "twin.parquet"): "twin",
    ("contamination", "p_values.parquet"): "p_values",
    ("contamination", "calibration.parquet"): "contamination_calibration",
    ("watermark", "summary.parquet"): "watermark",
}
AUDIT = {
    "leakage_rates.parquet": "audit_rates",
    "dataset_inference.parquet": "audit_inference",
    "verdicts.parquet": "audit_verdicts",
}


def load_tables(paths: Sequence[Path], results: Path) -> RunTables:
    """Sort a run's files into the tables the verdict reads; other files are
    ignored (the rule passes the run's final outputs). A path outside
    ``results`` is an error."""
    tables = RunTables(results)
    for path in sorted(map(Path, paths)):
        try:
            parts = path.relative_to(results).parts
        except ValueError:
            raise ValueError(f"verdict: {path} is not under the run's results directory {results}") from None
        if path.suffix != ".parquet":
            continue
        if path.name == "blind_baseline.parquet" and parts[0] == "calibration" and len(parts) == 3:
            tables.testbed_blind[parts[1]] = read_records(path)[0]
        elif path.name == "blind_baseline.parquet":
            tables.blind += read_records(path)
        elif parts[0] == "audit" and len(parts) == 2 and path.name in AUDIT:
            getattr(tables, AUDIT[path.name]).extend(read_records(path))
        elif parts[0] == "leakage" and len(parts) == 3 and path.name == "summary.parquet":
            tables.scans += [(parts[1], row) for row in read_records(path)]
        elif len(parts) == 3 and (parts[0], parts[2]) in BY_BENCHMARK:
            getattr(tables, BY_BENCHMARK[(parts[0], parts[2])])[parts[1]] = read_records(path)
    return tables


# --- the rows of each test --------------------------------------------------------------------------------------


def scan_rows(tables: RunTables, benchmark: str) -> list[dict]:
    rows = []
    for scan, s in tables.scans:
        if s.get("benchmark") != benchmark:
            continue
        rows.append(
            {
                "scan": f"[{scan}](leakage/{scan}/report.md)",
                "corpus": s.get("corpus"),
                "samples": s.get("size"),
                "Type-1": s.get("type1"),
                "Type-2": s.get("type2"),
                "Type-3": s.get("type3"),
                "pairs": f"[pairs.parquet](leakage/{scan}/pairs.parquet)",
            }
        )
    return rows


def scan_test(scans: list[dict]) -> Test | None:
    if not scans:
        return None
    copies = sum((r["Type-1"] or 0) + (r["Type-2"] or 0) + (r["Type-3"] or 0) for r in scans)
    return Test(
        "scan copies (near-duplicate search)",
        f"{copies} verified copies in {len(scans)} {'corpus' if len(scans) == 1 else 'corpora'} (count)",
        "a count, no null: a copy in a corpus is exposure only if the model trained on that corpus",
        "MinHash + LSH candidates, each verified and typed",
        "Type-1/2/3 clones the LSH bands reach; not Type-4 (same behaviour, other text)",
        valid=True,
    )


def blind_of(tables: RunTables, benchmark: str) -> dict | None:
    return next((r for r in tables.blind if r.get("benchmark") == benchmark), None)


def blind_phrase(blind: dict | None) -> str:
    if blind is None:
        return "no blind baseline in this run, so the controls' exchangeability with the suspects is unknown"
    state = (
        "a text-only classifier cannot tell them apart"
        if blind.get("controls_exchangeable")
        else "a text-only classifier tells them apart"
    )
    return (
        f"{state} (blind AUC {blind['auc']:.2f} [{blind['ci_low']:.2f}, {blind['ci_high']:.2f}], "
        f"p = {fmt_p(blind['p_value'])})"
    )


def detector_test(rows: list[dict], alpha: float, testbed: bool) -> Test | None:
    """Per-sample detectors: a descriptive row (no p-value; dataset inference
    is their dataset-level test), the detectors whose AUC interval lies above
    0.5, with the AUC the evaluation fold could detect."""
    evaluated = [r for r in rows if r.get("n_eval") and not r.get("oracle") and r.get("auc") is not None]
    if not evaluated:
        return None
    subset = "filtered" if any(r["subset"] == "filtered" for r in evaluated) else "all"
    evaluated = [r for r in evaluated if r["subset"] == subset]
    above = sorted((r for r in evaluated if r["auc_low"] is not None and r["auc_low"] > 0.5), key=lambda r: -r["auc"])
    best = max(evaluated, key=lambda r: r["auc"])
    n_eval, n_neg = best["n_eval"], best["n_eval_non_members"] or 0
    power, _ = auc_power(
        detectable_auc(n_eval - n_neg, n_neg, alpha),
        f"{n_eval - n_neg} vs {n_neg} samples",
        "per detector, Mann-Whitney normal approximation, one-sided",
    )
    return Test(
        f"per-sample detectors ({len(evaluated)}, {subset} subset; descriptive)",
        f"AUC 95% CI above 0.5 for {len(above)} of {len(evaluated)}; best {best['method']} "
        f"{best['auc']:.2f} [{best['auc_low']:.2f}, {best['auc_high']:.2f}]; flags at calibration.alpha = "
        f"{best['alpha']:g}" + _unreachable_flags(best),
        "members and non-members score alike (AUC 0.5)",
        "members and non-members a random split of one benchmark" if testbed else "controls exchangeable",
        power,
        valid=True if testbed else None,
    )


def _unreachable_flags(row: dict) -> str:
    """Where the control set is too small for any conformal p-value to reach
    alpha (at least 1 / (controls + 1)), the flags are all negative: say so."""
    m = row.get("n_control")
    if m is None or row.get("alpha") is None or 1 / (m + 1) <= row["alpha"]:
        return ""
    return f" (none can be raised: {m} controls give p ≥ 1/{m + 1})"


def inference_validity(calibration: list[dict], model: str) -> tuple[bool | None, str]:
    rows = [
        r
        for r in calibration
        if r["method"] == "dataset_inference"
        and r["null"] == "re-randomised membership"
        and r["model"] == model
        and r["holds"] is not None
    ]
    if not rows:
        return True, "members and non-members a random split of one benchmark (testbed)"
    failed = [r for r in rows if r["holds"] is False]
    if failed:
        return False, f"its re-randomised null rejects too often at α = {failed[0]['alpha']:g} (calibration.parquet)"
    return True, f"random split; its re-randomised null holds at {len(rows)} levels (calibration.parquet)"


def contamination_tests(
    p_rows: list[dict], calibration: list[dict], cal_rows: list[dict], model: str, alpha: float
) -> list[Test]:
    """Dataset inference and variant preference of one testbed model, from
    contamination/<benchmark>/p_values.parquet, their validity from the
    calibration tables and their power from the power scenarios or the closed form."""
    tests = []
    for r in (r for r in p_rows if r["model"] == model):
        if r["test"] == "dataset_inference":
            valid, why = inference_validity(calibration, model)
            n_s, n_v = r["n_suspect"] or 0, r["n_validation"] or 0
            power, detects = auc_power(
                detectable_auc(n_s // 2, n_v // 2, alpha / 2),
                f"held-out halves of {n_s // 2} vs {n_v // 2}",
                "Mann-Whitney normal approximation at contamination.alpha / 2",
            )
            if r.get("smallest_n"):
                power += f"; the p-value curve crosses contamination.alpha at n = {r['smallest_n']}"
            tests.append(
                Test(
                    "dataset inference",
                    f"p = {fmt_p(r['p_value'])} ({n_s} suspects vs {n_v} validation)",
                    "suspects and validation samples exchangeable under the model",
                    why,
                    power,
                    r["p_value"],
                    valid,
                    detects,
                )
            )
        elif r["test"] == "variant_preference":
            # every null scenario of the test against the same reference (a sham's against the base model too):
            # a test that rejects too often there is not calibrated for any model compared with that reference
            nulls = [
                c
                for c in cal_rows
                if c["kind"] == "null"
                and c["test"] == "variant_preference"
                and (c["model"] == model or c["reference"] == r["reference"])
            ]
            failing = [c for c in nulls if c.get("verdict") == "above binomial margin"]
            valid = None if not nulls else not failing
            why = (
                f"its null rejects too often ({failing[0]['scenario']}: {failing[0]['n_rejected']} of "
                f"{failing[0]['n_seeds']})"
                if failing
                else f"{len(nulls)} null scenarios within binomial margin"
                if nulls
                else "no null scenario for this model"
            )
            power_rows = [
                c
                for c in cal_rows
                if c["kind"] == "power" and c["test"] == "variant_preference" and c["model"] == model
            ]
            power = (
                "; ".join(f"rejects {c['n_rejected']} of {c['n_seeds']} ({c['scenario']})" for c in power_rows)
                or NOT_MEASURED
            )
            tests.append(
                Test(
                    f"variant preference vs {r['reference']}",
                    f"p = {fmt_p(r['p_value'])} ({r['n_suspect']} samples)",
                    f"the model prefers originals over variants no more than {r['reference']} does",
                    why,
                    power,
                    r["p_value"],
                    valid,
                )
            )
    return tests


def twin_test(rows: list[dict], model: str) -> Test | None:
    mine = [r for r in rows if r["model"] == model and r["p_value"] is not None]
    if not mine:
        return None
    best = min(mine, key=lambda r: r["p_value"])
    adjusted = min(1.0, best["p_value"] * len(mine))
    rejected = sum(bool(r["rejected"]) for r in mine)
    n = best["n"]
    return Test(
        f"complement twin ({best['twin']})",
        f"min p = {fmt_p(best['p_value'])} ({best['method']}), Bonferroni over {len(mine)} detectors "
        f"p = {fmt_p(adjusted)}; {rejected} of {len(mine)} reject at α = {best['alpha']:g}",
        "target and twin (trained on the complement) score each sample alike: paired sign-flip test",
        "the twin saw the non-members where the target saw the members (the testbed's design)",
        f"resolution 2^-{n} = {2.0**-n:.1e} (exact over {n} samples); power {NOT_MEASURED}",
        adjusted,
        True,
    )


def watermark_test(rows: list[dict], calibration: list[dict], model: str) -> Test | None:
    r = next((r for r in rows if r["model"] == model), None)
    if r is None:
        return None
    nulls = [c for c in calibration if c["null"] == "random publication" and c["holds"] is not None]
    valid = None if not nulls else all(c["holds"] for c in nulls)
    why = "forms published with a secret; random publications under the unexposed models " + (
        "hold" if valid else "reject too often" if valid is False else f"{NOT_MEASURED}"
    )
    return Test(
        "randomized publication (watermark rank sum)",
        f"p = {fmt_p(r['p_value'])} (rank sum {r['rank_sum']} vs {r['expected']:g} expected, {r['testable']} problems)",
        "the published form's rank among its siblings is uniform (the model never met the release)",
        why,
        NOT_MEASURED,
        r["p_value"],
        valid,
    )


# --- the audit's rows -------------------------------------------------------------------------------------------


def audit_verdict_tests(rows: list[dict]) -> list[Test]:
    """The audit's rows from audit/verdicts.parquet (the gated verdict
    table): one row per test, the conformal flags collapsed into one."""
    tests = []
    flags = [r for r in rows if r["test"] == "conformal_flags"]
    for r in rows:
        if r["test"] in ("conformal_flags", "blind_baseline"):
            continue
        gated = r.get("assumes_exchangeable")
        valid = r.get("controls_exchangeable") if gated else True
        effect = r.get("detectable_effect")
        detects = None if effect is None else f"{r.get('effect') or 'effect'} ≥ {effect:.2f}"
        tests.append(
            Test(
                f"{r['test']} ({r['detector']})" if r["test"] != "dataset_inference" else "dataset inference",
                f"p = {fmt_p(r['p_value'])} ({r['n_suspect']} suspects vs {r['n_controls_used']} controls, "
                f"{r['n_controls_dropped']} dropped): {r['verdict']}",
                "suspects score like the controls"
                if gated
                else "the target's excess over the reference is the same for suspects and controls",
                "controls exchangeable with the suspects (blind baseline)"
                if gated
                else "the reference is unexposed to suspects and controls (declared by the user)",
                detects or NOT_MEASURED,
                r["p_value"] if r.get("counted_as_evidence") is not None else None,
                None if valid is None else bool(valid),
                detects,
            )
        )
    if flags:
        flagged = sum(r.get("n_flagged_pac") or 0 for r in flags)
        tests.append(
            Test(
                f"conformal flags ({len(flags)} detectors; descriptive)",
                f"{flagged} suspects flagged (PAC)",
                "each suspect scores like the controls",
                "controls exchangeable with the suspects (blind baseline)",
                flags[0].get("note") or NOT_MEASURED,
                valid=flags[0].get("controls_exchangeable"),
            )
        )
    return tests


def audit_table_tests(rates: list[dict], inference: list[dict], blind: dict | None, alpha: float) -> list[Test]:
    """The audit's rows from leakage_rates / dataset_inference where no
    verdict table was written: validity from the blind baseline, or "not
    measured" without one."""
    valid = None if blind is None else bool(blind.get("controls_exchangeable"))
    condition = blind_phrase(blind)
    tests = []
    for r in inference:
        n_s, n_c = (r["n_suspect"] or 0) // 2, (r["n_control"] or 0) // 2
        power, detects = auc_power(
            detectable_auc(n_s, n_c, alpha / 2),
            f"held-out halves of {n_s} vs {n_c}",
            "Mann-Whitney normal approximation at contamination.alpha / 2",
        )
        tests.append(
            Test(
                "dataset inference",
                f"p = {fmt_p(r['p_value'])} ({r['n_suspect']} suspects vs "
                f"{r['n_control']} controls); its null ({r['null']}): {r['null_rejected']} of "
                f"{r['null_seeds']} rejected, {r['null_verdict']}",
                "suspects and controls exchangeable under the model",
                condition,
                power,
                r["p_value"],
                valid,
                detects,
            )
        )
    for r in rates:
        control = r.get("null") == "control set"
        tests.append(
            Test(
                f"leakage rate ({r['detector']})",
                f"p = {fmt_p(r['p_value'])}: {r['n_flagged']} of {r['n_samples']} flagged "
                f"(rate {r['leakage_rate']:.2f} [{r['rate_low']:.2f}, {r['rate_high']:.2f}], Clopper-Pearson)",
                f"the rate equals the null's ({r['null']})",
                condition if control else "variants exchangeable with the original (the testbed's null check)",
                NOT_MEASURED,
                r["p_value"],
                valid if control else None,
            )
        )
    return tests


# --- the page ---------------------------------------------------------------------------------------------------

CANNOT_ALWAYS = [
    "whether the model was exposed to rephrased, translated or re-implemented copies only: the detectors compare "
    "the benchmark's own text, and the scans find Type-1/2/3 near-duplicates, not Type-4 clones;",
    "exposure smaller than the effects in the column *could have detected*: a test without a rejection bounds the "
    "effect, it does not exclude exposure;",
]


def testbed_sections(tables: RunTables, benchmark: str, alpha: float, contamination_alpha: float) -> list[Section]:
    detection = tables.detection.get(benchmark, [])
    calibration = tables.calibration.get(benchmark, [])
    models = list(
        dict.fromkeys(
            [r["model"] for r in detection]
            + [r["model"] for r in tables.p_values.get(benchmark, [])]
            + [r["model"] for r in tables.watermark.get(benchmark, [])]
        )
    )
    scans = scan_rows(tables, benchmark)
    sections = []
    for model in models:
        tests = [
            t
            for t in (
                detector_test([r for r in detection if r["model"] == model], alpha, testbed=True),
                *contamination_tests(
                    tables.p_values.get(benchmark, []),
                    calibration,
                    tables.contamination_calibration.get(benchmark, []),
                    model,
                    contamination_alpha,
                ),
                twin_test(tables.twin.get(benchmark, []), model),
                watermark_test(tables.watermark.get(benchmark, []), calibration, model),
                scan_test(scans),
            )
            if t is not None
        ]
        cannot = [
            *CANNOT_ALWAYS,
            "how the tests behave on a real model's control set: the testbed's members and non-members are a "
            "random split of one benchmark, so the calibration checks hold by construction and verify the "
            "code, not a user's controls (the audit's blind baseline checks those).",
        ]
        sections.append(Section(model, benchmark, tests, cannot, scans))
    return sections


def audit_sections(tables: RunTables, alpha: float) -> list[Section]:
    keys = list(
        dict.fromkeys(
            [(r["model"], r["benchmark"]) for r in tables.audit_verdicts + tables.audit_rates + tables.audit_inference]
        )
    )
    sections = []
    for model, benchmark in keys:
        blind = blind_of(tables, benchmark)
        verdicts = [r for r in tables.audit_verdicts if (r["model"], r["benchmark"]) == (model, benchmark)]
        if verdicts:
            tests = audit_verdict_tests(verdicts)
        else:
            tests = audit_table_tests(
                [r for r in tables.audit_rates if (r["model"], r["benchmark"]) == (model, benchmark)],
                [r for r in tables.audit_inference if (r["model"], r["benchmark"]) == (model, benchmark)],
                blind,
                alpha,
            )
        scans = scan_rows(tables, benchmark)
        if (scan := scan_test(scans)) is not None:
            tests.append(scan)
        cannot = [*CANNOT_ALWAYS]
        if blind is None and not verdicts:
            cannot.append(
                "whether the control set is exchangeable with the suspects: no blind baseline ran, so every "
                "test against the controls reads its validity as not measured; a control set that differs "
                "from the suspects (e.g. released later) can produce small p-values with no exposure at all."
            )
        elif blind is not None and not blind.get("controls_exchangeable"):
            cannot.append(
                "anything from the tests against the control set: it differs from the suspects "
                f"({blind_phrase(blind)}), so only tests that do not assume exchangeable controls remain."
            )
        sections.append(Section(model, benchmark, tests, cannot, scans))
    return sections


def headline(tables: RunTables, benchmark: str) -> list[str]:
    """At most 30 lines: which detectors find the planted members at which
    epoch and ratio (AUC 95% CI above 0.5, seeds that do), beside the base
    model's AUC and the blind baseline's; and whether the calibration table holds."""
    detection = [r for r in tables.detection.get(benchmark, []) if r.get("auc") is not None and not r["oracle"]]
    subset = "filtered" if any(r["subset"] == "filtered" and r["seed"] is not None for r in detection) else "all"
    detection = [r for r in detection if r["subset"] == subset]
    base = {r["method"]: r["auc"] for r in detection if r["seed"] is None and r["model"] == "reference"}
    targets = [r for r in detection if r["seed"] is not None and r["model"].startswith("target-")]
    lines = [f"\n## Testbed headline: {benchmark}\n\n"]
    if not targets:
        return lines + ["No target model was evaluated on this benchmark.\n"]
    cells = sorted({(r["ratio"], r["epoch"]) for r in targets})
    found: dict[str, dict] = {}
    for r in targets:
        cell = found.setdefault(r["method"], {}).setdefault((r["ratio"], r["epoch"]), [0, 0, []])
        cell[0] += r["auc_low"] is not None and r["auc_low"] > 0.5
        cell[1] += 1
        cell[2].append(r["auc"])
    ranked = sorted(found, key=lambda m: (-max(sum(c[2]) / len(c[2]) for c in found[m].values()), m))
    shown = ranked[:HEADLINE_DETECTORS]
    finders = sorted(m for m in found if any(c[0] for c in found[m].values()))
    blind = tables.testbed_blind.get(benchmark)
    lines.append(
        f"Planted members found (AUC 95% CI above 0.5, {subset} subset) by {len(finders)} of {len(found)} "
        f"detectors in at least one training seed. Cells: mean AUC over seeds (seeds whose CI lies above "
        f"0.5 / seeds); the {len(shown)} most sensitive detectors shown. Blind baseline (text only, no model): "
        + (
            "not measured in this run.\n\n"
            if blind is None
            else f"AUC {blind['auc']:.2f} [{blind['ci_low']:.2f}, {blind['ci_high']:.2f}] on the evaluation fold "
            f"(p = {fmt_p(blind['p_value'])}; a detector shows exposure only where its AUC is above what text alone reaches).\n\n"
        )
    )
    columns = ["detector", "base model AUC", *[f"1:{ratio:g}, epoch {epoch}" for ratio, epoch in cells]]
    rows = []
    for m in shown:
        row = {"detector": m, "base model AUC": "–" if base.get(m) is None else f"{base[m]:.2f}"}
        for (ratio, epoch), label in zip(cells, columns[2:], strict=True):
            c = found[m].get((ratio, epoch))
            row[label] = "–" if c is None else f"{sum(c[2]) / len(c[2]):.2f} ({c[0]}/{c[1]})"
        rows.append(row)
    lines.append(markdown_table(rows, columns))
    calibration = tables.calibration.get(benchmark, [])
    judged = [r for r in calibration if r["holds"] is not None]
    failed = [r for r in judged if r["holds"] is False]
    if not calibration:
        lines.append("\nCalibration table: no rows in this run.\n")
    elif not failed:
        lines.append(
            f"\nCalibration table **holds**: all {len(judged)} judged rows of {len(calibration)} "
            "(calibration.parquet).\n"
        )
    else:
        named = "; ".join(sorted({f"{r['method']} ({r['null']})" for r in failed})[:4])
        lines.append(
            f"\nCalibration table: **{len(failed)} of {len(judged)} judged rows do not hold** ({named}); see "
            f"[calibration](aggregate/{benchmark}/calibration.md).\n"
        )
    return lines


def render_verdict(tables: RunTables, run: str, alpha: float, contamination_alpha: float) -> str:
    """The whole page; ``alpha`` is calibration.alpha (per-sample decisions),
    ``contamination_alpha`` contamination.alpha (dataset-level tests and the
    answers' rule)."""
    benchmarks = sorted(tables.detection)
    parts = [
        f"# Verdict: {run}\n\n",
        "One section per model × benchmark: the question, the answer in one sentence naming the test that "
        "carries it, and every test that ran with its null, whether its validity condition holds in this run and "
        "what it could have detected. Rule of the answers: a test is **evidence of exposure** only where its "
        f"p-value is at most contamination.alpha / m (contamination.alpha = {contamination_alpha:g}, Bonferroni "
        "over the m tests with a p-value in the section) and its validity condition holds; a rejection whose "
        "condition fails or was not measured is **inconclusive**; no rejection reads **no evidence** with what "
        "the most sensitive valid test could have detected. Per-sample flags use calibration.alpha = "
        f"{alpha:g}. Intervals: Clopper-Pearson for counts, bootstrap for AUC (detection), as each table "
        f"computes them. {DECIDED_BY}\n",
    ]
    for benchmark in benchmarks:
        parts += headline(tables, benchmark)
    if benchmarks:
        parts.append(
            "\nThe testbed's full tables: " + ", ".join(f"[{b}](aggregate/{b}/report.md)" for b in benchmarks) + ".\n"
        )
    sections = [s for b in benchmarks for s in testbed_sections(tables, b, alpha, contamination_alpha)]
    sections += audit_sections(tables, contamination_alpha)
    if not sections:
        parts.append("\nThis run wrote no table a verdict rests on (no testbed benchmark, no audit).\n")
    parts += [s.render(contamination_alpha) for s in sections]
    text = "".join(parts)
    check_wording(text, "verdict.md")
    return text
