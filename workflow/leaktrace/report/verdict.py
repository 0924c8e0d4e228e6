"""The verdict page (``results/<run>/verdict.md``): the answer to "was this
model exposed to this benchmark, and how do we know?" read off the tables a
run already wrote, so a researcher does not assemble it by hand from four
reports. One section per model x benchmark: the answer in one sentence,
naming the test that carries it; each test that ran with its p-value or
count, its null, the kind of evidence it is, whether its validity condition
was refuted in this run and what it could have detected; the scans' copies
by clone type; and what the run cannot tell. On the testbed a headline of
at most 30 lines comes first.

The answer has two tiers (:mod:`leaktrace.calibration.verdict`), by one rule
(``answer``), at alpha / m (Bonferroni over the m tests with a p-value in the
section):

- **Evidence of exposure** only from a *design* test whose null a
  randomisation guarantees (the testbed's random split, the complement twin,
  randomized publication, Oren et al.'s test on an order declared random)
  and that rejects with its condition not failed;
- otherwise an *observational* rejection (a comparison with the user's
  controls, a reference model, variants) reads what it found, "Suspects
  score higher than controls", with what it assumes and what the blind
  baseline and the negative controls found: never "evidence of exposure";
- a rejection whose condition fails, or that its table does not count, is
  "inconclusive";
- no rejection reads "No evidence of exposure" only where the most sensitive
  valid test detects an AUC of at most ``max_detectable_auc`` with 80%
  power, and "Inconclusive: too few samples" otherwise.

Rows with a table of their own (the audit's verdicts) are read as that
table decides: a row it does not count is never cited as valid. A check
that failed to reject reads "not refuted", never "holds". No sentence says
a model was not trained on a benchmark: ``FORBIDDEN`` lists the phrases
``check_wording`` refuses."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from leaktrace.artifacts import read_records
from leaktrace.calibration.power import detectable_auc
from leaktrace.calibration.verdict import DESIGN, OBSERVATIONAL, OBSERVATIONAL_CAVEAT
from leaktrace.report.tables import markdown_table
from leaktrace.settings.verdict import PageSettings

# Conclusions no statistic supports: a test without a rejection only bounds what it could have detected.
FORBIDDEN = ("not trained", "did not see", "didn't see", "neither model saw", "wasn't trained")
HEADLINE_DETECTORS = 12  # the headline's detector rows (the most sensitive), to keep it within 30 lines
NOT_MEASURED = "not measured"
# validity states: the condition holds by construction; a check of it did not reject; it failed; nothing checked it
BY_DESIGN, NOT_REFUTED, FAILS = "by design", "not refuted", "**fails**"
VALID = (BY_DESIGN, NOT_REFUTED)
DECIDED_BY = (
    "`decided_by model` (in the scans' pairs files): the pair was decided by the learned verifier "
    "(`verify.model`; `score` is its probability of a duplicate, against its threshold), not by a rule "
    "(`layout`, `renamed`, `structure`, `statement`), by running both sides (`execution`) or by the LLM "
    "judge (`judge`)."
)
TIER_WORDS = {DESIGN: "design", OBSERVATIONAL: "observational", None: "count / descriptive"}


def check_wording(text: str, where: str = "text") -> None:
    """Raise ValueError naming the first phrase of ``FORBIDDEN`` in ``text``."""
    lowered = text.lower()
    for phrase in FORBIDDEN:
        if phrase in lowered:
            raise ValueError(
                f"{where}: says {phrase!r}; a test without a rejection reads 'no evidence (could have "
                "detected ...)' or 'inconclusive'"
            )


def auc_power(
    n_positive: int, n_negative: int, alpha: float, samples: str, how: str
) -> tuple[str, str | None, float | None]:
    """(the power column's text, the "could have detected" phrase, the AUC
    detected with 80% power: :func:`~leaktrace.calibration.power.detectable_auc`);
    the last two None where no AUC below 1 is detectable at these sizes."""
    if n_positive < 1 or n_negative < 1:
        return "–", None, None
    detectable = detectable_auc(n_positive, n_negative, alpha)
    if detectable is None:
        return f"nothing: {samples} are too few for 80% power at any AUC below 1 ({how})", None, None
    return f"AUC ≥ {detectable:.2f} ({samples}, {how}, 80% power)", f"AUC ≥ {detectable:.2f}", detectable


def fmt_p(p: float | None) -> str:
    """A p-value as printed: never 0 (an upper tail that underflowed prints as a bound)."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "–"
    if p <= 0:
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


@dataclass
class Test:
    """One row of a section's table. ``state``: its validity condition in
    this run (``BY_DESIGN``, ``NOT_REFUTED``, ``FAILS`` or ``NOT_MEASURED``);
    ``tier``: ``DESIGN``, ``OBSERVATIONAL`` or None (a count or a descriptive
    row, which no answer rests on; then ``p_value`` is None too);
    ``counted``: False where the row's own table does not count its
    rejection (a gate closed), so no answer cites it as valid; None otherwise;
    ``detectable``: the AUC it detects with 80% power, where on that scale;
    ``finding``: what its rejection says, for an observational test."""

    name: str
    result: str
    null: str
    validity: str
    power: str
    p_value: float | None = None
    state: str = NOT_MEASURED
    detects: str | None = None  # "could have detected" phrase, where the power is known
    tier: str | None = None
    counted: bool | None = None
    detectable: float | None = None
    finding: str = "Suspects score higher than controls"
    caveat: str = OBSERVATIONAL_CAVEAT

    @property
    def valid(self) -> bool:
        return self.state in VALID and self.counted is not False

    def row(self) -> dict:
        return {
            "test": self.name,
            "kind of evidence": TIER_WORDS[self.tier],
            "result": self.result,
            "null": self.null,
            "validity in this run": f"{self.state}: {self.validity}",
            "could have detected": self.power,
        }


COLUMNS = ["test", "kind of evidence", "result", "null", "validity in this run", "could have detected"]


@dataclass(frozen=True)
class Context:
    """What an observational answer says beside its rejection: the blind
    baseline's and the negative controls' findings, and the copies in
    declared training data."""

    blind: str | None = None
    negative_controls: str | None = None
    training_copies: str | None = None


def _observational(t: Test, level: float, context: Context) -> str:
    parts = [
        f"**{t.finding}** ({t.name}, p = {fmt_p(t.p_value)} ≤ α/m = {level:.2g}; observational). This is {t.caveat}"
    ]
    if context.blind:
        parts.append(f"the blind baseline {context.blind}")
    if context.negative_controls:
        parts.append(context.negative_controls)
    return "; ".join(parts) + "."


def answer(tests: Sequence[Test], alpha: float, max_auc: float = 0.75, context: Context = Context()) -> str:
    """The section's answer, by the module's rule."""
    text = _answer(tests, alpha, max_auc, context)
    if context.training_copies:
        text += f" {context.training_copies}"
    return text


def answer_kind(text: str) -> str:
    """Which of the page's four answers ``text`` is (the shifted-control experiment tallies them)."""
    for kind in ("Evidence of exposure", "No evidence of exposure", "Inconclusive"):
        if text.startswith(f"**{kind}**"):
            return kind
    return "observational finding"


def _answer(tests: Sequence[Test], alpha: float, max_auc: float, context: Context) -> str:
    tested = [t for t in tests if t.p_value is not None and t.tier is not None]
    if not tested:
        return "**Inconclusive**: no test with a p-value ran for this model and benchmark."
    level = alpha / len(tested)
    rejecting = sorted((t for t in tested if t.p_value <= level), key=lambda t: t.p_value)
    design = [t for t in rejecting if t.valid and t.tier == DESIGN]
    if design:
        t = design[0]
        return (
            f"**Evidence of exposure** ({t.name}, p = {fmt_p(t.p_value)} ≤ α/m = {level:.2g}, "
            f"m = {len(tested)} tests; proof by design: {t.validity})."
        )
    observational = [t for t in rejecting if t.valid and t.tier == OBSERVATIONAL]
    if observational:
        return _observational(observational[0], level, context)
    if rejecting:
        t = rejecting[0]
        why = "fails" if t.state == FAILS or t.counted is False else "was not measured"
        return (
            f"**Inconclusive**: {t.name} rejects (p = {fmt_p(t.p_value)} ≤ α/m = {level:.2g}) but its validity "
            f"condition {why} ({t.validity}), so the rejection is not read as exposure."
        )
    powered = sorted((t for t in tested if t.valid and t.detectable is not None), key=lambda t: t.detectable)
    if powered and powered[0].detectable <= max_auc:
        best = powered[0]
        kind = "" if best.tier == DESIGN else f" (observational: {best.caveat})"
        return (
            f"**No evidence of exposure** (no test rejects at α/m = {level:.2g}; {best.name} could have detected "
            f"{best.detects}{kind})."
        )
    if powered:
        best = powered[0]
        return (
            f"**Inconclusive**: too few samples to detect less than AUC {best.detectable:.2f} (no test rejects at "
            f"α/m = {level:.2g}; the most sensitive valid test, {best.name}, detects AUC ≥ {best.detectable:.2f} "
            f"with 80% power, above audit.max_detectable_auc = {max_auc:g})."
        )
    failing = [t for t in tested if not t.valid]
    if failing and len(failing) == len(tested):
        return (
            f"**Inconclusive**: no test rejects at α/m = {level:.2g}, and no test's validity condition survived this "
            f"run ({failing[0].name}: {failing[0].validity}), so the absence of a rejection bounds nothing."
        )
    return (
        f"**Inconclusive**: no test rejects at α/m = {level:.2g}, but no test in this run has both a validity "
        "condition not refuted and a stated power, so the absence of a rejection bounds nothing."
    )


@dataclass
class Section:
    model: str
    benchmark: str
    tests: list[Test]
    cannot: list[str]
    scans: list[dict] = field(default_factory=list)
    context: Context = Context()

    def render(self, alpha: float, max_auc: float) -> str:
        parts = [
            f"\n## {self.model} × {self.benchmark}\n\n",
            f"**Question**: was `{self.model}` exposed to `{self.benchmark}`, and how do we know?\n\n",
            f"**Answer**: {answer(self.tests, alpha, max_auc, self.context)}\n\n",
            markdown_table([t.row() for t in self.tests], COLUMNS),
        ]
        if self.scans:
            parts += [
                "\nScan copies by clone type (each linked to its pairs; a copy in a corpus is exposure of the "
                "model only where the corpus is its training data):\n\n",
                markdown_table(self.scans, SCAN_COLUMNS),
            ]
        parts.append("\n**What this run cannot tell you**:\n\n" + "".join(f"- {c}\n" for c in self.cannot))
        return "".join(parts)


# --- the run's tables -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TableFiles:
    """The files the verdict reads, as its rule names them (rules/verdict.smk,
    from the layout of rules/paths.smk): per benchmark, per scan (its
    summary.parquet, with report.md and pairs.parquet beside it) and the
    audit's. A table the run did not make is absent."""

    detection: Mapping[str, Path] = field(default_factory=dict)
    seeds: Mapping[str, Path] = field(default_factory=dict)
    calibration: Mapping[str, Path] = field(default_factory=dict)
    null_check: Mapping[str, Path] = field(default_factory=dict)
    twin: Mapping[str, Path] = field(default_factory=dict)
    p_values: Mapping[str, Path] = field(default_factory=dict)
    contamination_calibration: Mapping[str, Path] = field(default_factory=dict)
    watermark: Mapping[str, Path] = field(default_factory=dict)
    testbed_blind: Mapping[str, Path] = field(default_factory=dict)
    scans: Mapping[str, Path] = field(default_factory=dict)
    audit_rates: Path | None = None
    audit_inference: Path | None = None
    audit_verdicts: Path | None = None
    audit_exchangeability: Path | None = None
    audit_watermark: Path | None = None
    blind: Path | None = None


@dataclass
class RunTables:
    """The tables the verdict reads, by benchmark where they have one."""

    detection: dict[str, list[dict]] = field(default_factory=dict)
    seeds: dict[str, list[dict]] = field(default_factory=dict)
    calibration: dict[str, list[dict]] = field(default_factory=dict)
    null_check: dict[str, list[dict]] = field(default_factory=dict)
    twin: dict[str, list[dict]] = field(default_factory=dict)
    p_values: dict[str, list[dict]] = field(default_factory=dict)
    contamination_calibration: dict[str, list[dict]] = field(default_factory=dict)
    watermark: dict[str, list[dict]] = field(default_factory=dict)
    scans: list[tuple[str, dict]] = field(default_factory=list)  # (scan, summary row)
    scan_folders: dict[str, str] = field(default_factory=dict)  # scan -> its folder, relative to the page
    audit_rates: list[dict] = field(default_factory=list)
    audit_inference: list[dict] = field(default_factory=list)
    audit_verdicts: list[dict] = field(default_factory=list)
    audit_exchangeability: list[dict] = field(default_factory=list)
    audit_watermark: list[dict] = field(default_factory=list)
    blind: list[dict] = field(default_factory=list)  # the audit's
    testbed_blind: dict[str, dict] = field(default_factory=dict)  # per testbed benchmark


BY_BENCHMARK = ("detection", "seeds", "calibration", "null_check", "twin", "p_values", "contamination_calibration")
AUDIT = ("audit_rates", "audit_inference", "audit_verdicts", "audit_exchangeability", "audit_watermark", "blind")


def load_tables(files: TableFiles, page: Path) -> RunTables:
    """Read the tables ``files`` names; ``page``: the verdict page's path,
    which the scans' links are relative to."""
    tables = RunTables()
    for name in (*BY_BENCHMARK, "watermark"):
        getattr(tables, name).update({b: read_records(path) for b, path in sorted(getattr(files, name).items())})
    tables.testbed_blind = {b: read_records(path)[0] for b, path in sorted(files.testbed_blind.items())}
    for name in AUDIT:
        path = getattr(files, name)
        if path is not None:
            getattr(tables, name).extend(read_records(path))
    for scan, summary in sorted(files.scans.items()):
        tables.scans += [(scan, row) for row in read_records(summary)]
        tables.scan_folders[scan] = Path(os.path.relpath(summary.parent, page.parent)).as_posix()
    return tables


# --- the rows of each test --------------------------------------------------------------------------------------

SCAN_COLUMNS = ["scan", "corpus", "samples", "Type-1", "Type-2", "Type-3", "input leaks", "pairs"]


def scan_rows(tables: RunTables, benchmark: str) -> list[dict]:
    rows = []
    for scan, s in tables.scans:
        if s.get("benchmark") != benchmark:
            continue
        rows.append(
            {
                "scan": f"[{scan}]({tables.scan_folders[scan]}/report.md)",
                "name": scan,
                "corpus": s.get("corpus"),
                "samples": s.get("size"),
                "Type-1": s.get("type1"),
                "Type-2": s.get("type2"),
                "Type-3": s.get("type3"),
                "input leaks": s.get("input_leaks"),
                "pairs": f"[pairs.parquet]({tables.scan_folders[scan]}/pairs.parquet)",
            }
        )
    return rows


COPY_KINDS = ("Type-1", "Type-2", "Type-3", "input leaks")


def copies(row: dict) -> int:
    """A scan row's verified copies of every kind (input leaks included)."""
    return sum(row.get(kind) or 0 for kind in COPY_KINDS)


def scan_test(scans: list[dict]) -> Test | None:
    if not scans:
        return None
    found = sum(copies(r) for r in scans)
    return Test(
        "scan copies (near-duplicate search)",
        f"{found} verified copies in {len(scans)} {'corpus' if len(scans) == 1 else 'corpora'} (count; every kind, "
        "input leaks included)",
        "a count, no null: a copy in a corpus is exposure only if the model trained on that corpus",
        "MinHash + LSH candidates, each verified and typed",
        "Type-1/2/3 clones and input leaks the LSH bands reach; not Type-4 (same behaviour, other text)",
        state=BY_DESIGN,
    )


def training_copies(scans: list[dict], training_data: Sequence[str]) -> str | None:
    """The answer's sentence on copies in corpora the config declares training data, or None."""
    declared = [r for r in scans if r["name"] in training_data and copies(r)]
    if not declared:
        return None
    each = "; ".join(
        f"{copies(r)} in `{r['name']}` (" + ", ".join(f"{kind} {r.get(kind) or 0}" for kind in COPY_KINDS) + ")"
        for r in declared
    )
    return (
        f"**Copies in declared training data**: the scans verified {each}; audit.training_data declares these "
        "corpora the model's training data, so those samples were in it whatever the tests above say."
    )


def blind_of(tables: RunTables, benchmark: str) -> dict | None:
    return next((r for r in tables.blind if r.get("benchmark") == benchmark), None)


def blind_phrase(blind: dict | None) -> str:
    """What the blind baseline found about the control set, in the words its test allows."""
    if blind is None or blind.get("p_value") is None:
        return "not run, so whether the controls differ from the suspects is unknown"
    figures = (
        f"blind AUC {blind['auc']:.2f} [{blind['ci_low']:.2f}, {blind['ci_high']:.2f}], p = {fmt_p(blind['p_value'])}"
    )
    if blind.get("blind_rejected"):
        return f"tells the controls from the suspects by their text alone ({figures})"
    power = blind.get("detectable_auc")
    bound = f"80% power at AUC ≥ {power:.2f}" if power is not None else "no AUC below 1 at 80% power"
    return f"found no text difference it could detect ({figures}; {bound}): not refuted, not shown alike"


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
    power, _, _ = auc_power(
        n_eval - n_neg,
        n_neg,
        alpha,
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
        state=BY_DESIGN if testbed else NOT_MEASURED,
    )


def _unreachable_flags(row: dict) -> str:
    """Where the control set is too small for any conformal p-value to reach
    alpha (at least 1 / (controls + 1)), the flags are all negative: say so."""
    m = row.get("n_control")
    if m is None or row.get("alpha") is None or 1 / (m + 1) <= row["alpha"]:
        return ""
    return f" (none can be raised: {m} controls give p ≥ 1/{m + 1})"


def inference_validity(calibration: list[dict], model: str) -> tuple[str, str]:
    """The testbed's dataset inference: valid by the project's random split;
    its re-randomised null, where the calibration table has it, can refute that."""
    rows = [
        r
        for r in calibration
        if r["method"] == "dataset_inference"
        and r["null"] == "re-randomised membership"
        and r["model"] == model
        and r["holds"] is not None
    ]
    design = "members and non-members a random split of one benchmark, made by the project"
    if not rows:
        return BY_DESIGN, design
    failed = [r for r in rows if r["holds"] is False]
    if failed:
        return FAILS, f"its re-randomised null rejects too often at α = {failed[0]['alpha']:g} (calibration.parquet)"
    return BY_DESIGN, f"{design}; its re-randomised null not refuted at {len(rows)} levels (calibration.parquet)"


def contamination_tests(
    p_rows: list[dict], calibration: list[dict], cal_rows: list[dict], model: str, alpha: float
) -> list[Test]:
    """Dataset inference (design: the testbed's random split) and variant
    preference (observational: against a reference model) of one testbed
    model, from contamination/<benchmark>/p_values.parquet, their validity
    from the calibration tables and their power from the power scenarios or
    the closed form."""
    tests = []
    for r in (r for r in p_rows if r["model"] == model):
        if r["test"] == "dataset_inference":
            state, why = inference_validity(calibration, model)
            n_s, n_v = r["n_suspect"] or 0, r["n_validation"] or 0
            power, detects, detectable = auc_power(
                n_s // 2,
                n_v // 2,
                alpha / 2,
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
                    state,
                    detects,
                    tier=DESIGN,
                    detectable=detectable,
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
            state = NOT_MEASURED if not nulls else FAILS if failing else NOT_REFUTED
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
                    state,
                    tier=OBSERVATIONAL,
                    finding=f"The model prefers originals over their variants more than {r['reference']} does",
                    caveat="exposure only if training without exposure would not move that preference, which "
                    "no run can establish",
                )
            )
    return tests


def twin_test(rows: list[dict], model: str) -> Test | None:
    """The complement twin's sign-flip test, in the target's section and in
    its twin's (the test is one: each sample was seen by one of the two)."""
    mine = [r for r in rows if model in (r["model"], r["twin"]) and r["p_value"] is not None]
    if not mine:
        return None
    best = min(mine, key=lambda r: r["p_value"])
    adjusted = min(1.0, best["p_value"] * len(mine))
    rejected = sum(bool(r["rejected"]) for r in mine)
    n = best["n"]
    if best.get("exact"):
        resolution = f"resolution 2^-{n} = {2.0**-n:.1e} (every sign vector of {n} samples)"
    else:
        draws = best["n_sign_vectors"]
        resolution = (
            f"smallest p 1/{draws + 1} = {1 / (draws + 1):.1e} ({draws:,} random sign vectors over {n} samples)"
        )
    other = best["twin"] if best["model"] == model else best["model"]
    return Test(
        f"complement twin ({other})",
        f"min p = {fmt_p(best['p_value'])} ({best['method']}), Bonferroni over {len(mine)} detectors "
        f"p = {fmt_p(adjusted)}; {rejected} of {len(mine)} reject at α = {best['alpha']:g}",
        "target and twin (trained on the complement) score each sample alike: paired sign-flip test",
        "the twin saw the non-members where the target saw the members (the testbed's design)",
        f"{resolution}; power {NOT_MEASURED}",
        adjusted,
        BY_DESIGN,
        tier=DESIGN,
    )


def watermark_test(rows: list[dict], calibration: list[dict], model: str) -> Test | None:
    r = next((r for r in rows if r["model"] == model), None)
    if r is None:
        return None
    nulls = [c for c in calibration if c["null"] == "random publication" and c["holds"] is not None]
    failed = [c for c in nulls if not c["holds"]]
    state = FAILS if failed else BY_DESIGN
    why = "the published form of each problem drawn with a secret (randomized publication, made by the project)" + (
        "; its null under the unexposed models rejects too often"
        if failed
        else f"; its null under the unexposed models not refuted ({len(nulls)} rows)"
        if nulls
        else ""
    )
    return Test(
        "randomized publication (watermark rank sum)",
        f"p = {fmt_p(r['p_value'])} (rank sum {r['rank_sum']} vs {r['expected']:g} expected, {r['testable']} problems)",
        "the published form's rank among its siblings is uniform (the model never met the release)",
        why,
        NOT_MEASURED,
        r["p_value"],
        state,
        tier=DESIGN,
    )


def audit_watermark_test(row: dict) -> Test:
    """The watermark rank test of a benchmark released through ``publish``,
    run in an audit by its maintainer: the forms were drawn with a secret
    before any model could train on the release, so its null is by design."""
    return Test(
        "randomized publication (watermark rank sum)",
        f"p = {fmt_p(row['p_value'])} (rank sum {row['rank_sum']} vs {row['expected']:g} expected, "
        f"{row['testable']} problems; {row.get('method') or 'exact'})",
        "the published form's rank among its siblings is uniform (the model never met the release)",
        "the published form of each problem drawn with a secret before release (the maintainer's release, "
        "checked against its commitment)",
        NOT_MEASURED,
        row["p_value"],
        BY_DESIGN,
        tier=DESIGN,
    )


def exchangeability_test(row: dict, random_order: bool) -> Test:
    """Oren et al.'s sharded test on the benchmark's published order: proof by
    design only where the user declares that order random; otherwise its
    condition is not measured, so a rejection reads inconclusive."""
    result = (
        f"p = {fmt_p(row.get('p_value'))} ({row.get('n_examples')} examples in {row.get('n_shards')} shards, "
        f"{row.get('n_permutations')} permutations each; {row.get('p_method') or 'one-sided'})"
        if row.get("p_value") is not None
        else f"no p-value: {row.get('p_method') or 'no shard fits the context'}"
    )
    return Test(
        "exchangeability (Oren et al., published order)",
        result,
        "the published order is no likelier under the model than a random order of the same examples",
        "the published order was drawn at random (audit.random_order declares it)"
        if random_order
        else "the published order was drawn at random, which the config does not declare (audit.random_order)",
        NOT_MEASURED,
        row.get("p_value"),
        BY_DESIGN if random_order else NOT_MEASURED,
        tier=DESIGN if random_order else OBSERVATIONAL,
    )


# --- the audit's rows -------------------------------------------------------------------------------------------


def _audit_state(r: dict) -> tuple[str, str]:
    """The state of an audit verdict row's condition and its words, from the gates its table recorded."""
    if r.get("negative_control_gate"):
        return FAILS, r["negative_control_gate"]
    if r["test"] == "negative_control_bootstrap":
        return NOT_REFUTED, "the negative controls respond to the control set as the audited model would"
    gated = r.get("assumes_exchangeable") or r["test"] == "reference_contrast"
    if gated and r.get("blind_rejected"):
        return FAILS, r["verdict"]
    condition = (
        "controls drawn like the suspects"
        if r.get("assumes_exchangeable")
        else "the reference unexposed to suspects and controls (declared by the user) and any shift moving both "
        "models alike (one reference cannot check that)"
    )
    if r.get("blind_rejected") is None:
        return NOT_MEASURED, f"{condition}; no blind baseline ran"
    return NOT_REFUTED, f"{condition}; the blind baseline did not reject"


def _uncounted_rejection(r: dict) -> bool:
    """The row rejects at its own alpha but its table does not count it (a gate closed)."""
    return r.get("p_value") is not None and r["p_value"] <= r["alpha"] and not r.get("counted_as_evidence")


def audit_verdict_tests(rows: list[dict]) -> list[Test]:
    """The audit's rows from audit/verdicts.parquet (the gated verdict
    table), each counted as the table counts it; the conformal flags
    collapsed into one descriptive row, their PAC flags per detector."""
    tests = []
    flags = [r for r in rows if r["test"] == "conformal_flags"]
    for r in rows:
        if r["test"] in ("conformal_flags", "blind_baseline"):
            continue
        state, why = _audit_state(r)
        effect = r.get("detectable_effect")
        detects = None if effect is None else f"{r.get('effect') or 'effect'} ≥ {effect:.2f}"
        name = {
            "dataset_inference": "dataset inference",
            "negative_control_bootstrap": f"negative-control bootstrap ({r['detector']})",
        }.get(r["test"], f"{r['test']} ({r['detector']})")
        tests.append(
            Test(
                name,
                f"p = {fmt_p(r['p_value'])} ({r['n_suspect']} suspects vs {r['n_controls_used']} controls, "
                f"{r['n_controls_dropped']} dropped): {r['verdict']}",
                "suspects score like the controls"
                if r.get("assumes_exchangeable")
                else "the audited model's excess over its comparison is the same for suspects and controls",
                why,
                detects or NOT_MEASURED,
                r["p_value"],
                state,
                detects,
                tier=OBSERVATIONAL,
                counted=False if _uncounted_rejection(r) else None,
                detectable=effect if r.get("effect") == "AUC" else None,
            )
        )
    if flags:
        per_detector = sorted(((r.get("n_flagged_pac") or 0, r["detector"]) for r in flags), reverse=True)
        n_suspect = max(r["n_suspect"] or 0 for r in flags)
        shown = ", ".join(f"{d} {k}" for k, d in per_detector[:4])
        more = f", {len(per_detector) - 4} more" if len(per_detector) > 4 else ""
        state, why = _audit_state(flags[0])
        tests.append(
            Test(
                f"conformal flags ({len(flags)} detectors; descriptive)",
                f"PAC flags per detector (of {n_suspect} suspects): {shown}{more}",
                "each suspect scores like the controls",
                why,
                flags[0].get("note") or NOT_MEASURED,
                state=state,
            )
        )
    return tests


def audit_table_tests(
    rates: list[dict], inference: list[dict], blind: dict | None, alpha: float, null_check: list[dict]
) -> list[Test]:
    """The audit's rows from leakage_rates / dataset_inference where no
    verdict table was written: validity from the blind baseline (not
    measured without one); a chance-null leakage rate's from the testbed's
    null check of the unexposed base model (``null_check``)."""
    state = NOT_MEASURED if blind is None else FAILS if blind.get("blind_rejected") else NOT_REFUTED
    condition = f"controls drawn like the suspects; the blind baseline {blind_phrase(blind)}"
    tests = []
    for r in inference:
        n_s, n_c = (r["n_suspect"] or 0) // 2, (r["n_control"] or 0) // 2
        power, detects, detectable = auc_power(
            n_s,
            n_c,
            alpha / 2,
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
                state,
                detects,
                tier=OBSERVATIONAL,
                detectable=detectable,
            )
        )
    for r in rates:
        control = r.get("null") == "control set"
        chance_state, chance_why = chance_null_state(r["detector"], null_check)
        tests.append(
            Test(
                f"leakage rate ({r['detector']})",
                f"p = {fmt_p(r['p_value'])}: {r['n_flagged']} of {r['n_samples']} flagged "
                f"(rate {r['leakage_rate']:.2f} [{r['rate_low']:.2f}, {r['rate_high']:.2f}], Clopper-Pearson)",
                f"the rate equals the null's ({r['null']})",
                condition if control else chance_why,
                NOT_MEASURED,
                r["p_value"],
                state if control else chance_state,
                tier=OBSERVATIONAL,
                finding="Suspects are flagged more often than controls"
                if control
                else "The model prefers originals over their variants more often than chance",
                caveat=OBSERVATIONAL_CAVEAT
                if control
                else "exposure only if an unexposed model ranks the original among its variants at random",
            )
        )
    return tests


LEAKAGE_DETECTORS = {"gray-box": "srdetection_graybox", "black-box": "srdetection_blackbox"}


def chance_null_state(detector: str, null_check: list[dict]) -> tuple[str, str]:
    """A chance-null leakage rate's condition (variants exchangeable with the
    original under an unexposed model), as the testbed's null check of the
    base model (``reference``) found it."""
    condition = "variants exchangeable with the original under an unexposed model"
    method = LEAKAGE_DETECTORS.get(detector, detector)
    row = next((r for r in null_check if r["model"] == "reference" and r["method"] == method), None)
    if row is None:
        return NOT_MEASURED, f"{condition}; no null check of the base model in this run"
    figures = f"the base model flags {row['rate']:.3f} [{row['rate_low']:.3f}, {row['rate_high']:.3f}] against chance {row['expected_rate']:.3f}"
    if row["verdict"].startswith("outside"):
        return FAILS, f"{condition}: the testbed's null check rejects it ({figures})"
    return NOT_REFUTED, f"{condition}; the testbed's null check did not reject ({figures})"


# --- the page ---------------------------------------------------------------------------------------------------

CANNOT_ALWAYS = [
    "whether the model was exposed to rephrased, translated or re-implemented copies only: the detectors compare "
    "the benchmark's own text, and the scans find Type-1/2/3 near-duplicates, not Type-4 clones;",
    "exposure smaller than the effects in the column *could have detected*: a test without a rejection bounds the "
    "effect, it does not exclude exposure;",
]


def testbed_sections(tables: RunTables, benchmark: str, settings: PageSettings) -> list[Section]:
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
                detector_test([r for r in detection if r["model"] == model], settings.calibration_alpha, testbed=True),
                *contamination_tests(
                    tables.p_values.get(benchmark, []),
                    calibration,
                    tables.contamination_calibration.get(benchmark, []),
                    model,
                    settings.contamination_alpha,
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
            "random split of one benchmark, so the calibration checks verify the code, not a user's controls "
            "(the audit's blind baseline and negative controls check those, and can only refute).",
        ]
        sections.append(Section(model, benchmark, tests, cannot, scans))
    return sections


def negative_control_phrase(rows: list[dict]) -> str:
    """What the declared negative controls found on one benchmark's verdict rows."""
    names = sorted({r["model"] for r in rows if r.get("negative_control")})
    if not names:
        return "no negative-control model was declared (audit.negative_controls)"
    gate = next((r["negative_control_gate"] for r in rows if r.get("negative_control_gate")), None)
    if gate:
        return gate
    return f"the negative controls ({', '.join(names)}) found no difference between suspects and controls: not refuted"


def audit_sections(tables: RunTables, settings: PageSettings) -> list[Section]:
    keys = list(
        dict.fromkeys(
            [
                (r["model"], r["benchmark"])
                for r in tables.audit_verdicts
                + tables.audit_rates
                + tables.audit_inference
                + tables.audit_exchangeability
            ]
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
                settings.contamination_alpha,
                tables.null_check.get(benchmark, []),
            )
        tests += [
            exchangeability_test(r, benchmark in settings.random_order)
            for r in tables.audit_exchangeability
            if (r["model"], r["benchmark"]) == (model, benchmark)
        ]
        tests += [
            audit_watermark_test(r)
            for r in tables.audit_watermark
            if (r["model"], r["benchmark"]) == (model, benchmark) and r.get("p_value") is not None
        ]
        scans = scan_rows(tables, benchmark)
        if (scan := scan_test(scans)) is not None:
            tests.append(scan)
        benchmark_rows = [r for r in tables.audit_verdicts if r["benchmark"] == benchmark]
        context = Context(
            blind=blind_phrase(blind),
            negative_controls=negative_control_phrase(benchmark_rows) if benchmark_rows else None,
            training_copies=training_copies(scans, settings.training_data),
        )
        cannot = [*CANNOT_ALWAYS]
        mine = [
            r for r in tables.audit_rates + tables.audit_inference if (r["model"], r["benchmark"]) == (model, benchmark)
        ]
        if not verdicts and not any(r.get("null") != "chance 1/(n_i + 1)" for r in mine):
            cannot.append(
                "anything a control set would tell: no control ids were given (contamination.held_out_ids), so the "
                "leakage rate stands against chance, which holds only where an unexposed model ranks each original "
                "among its variants at random."
            )
        elif blind is None or blind.get("p_value") is None:
            cannot.append(
                "whether the control set differs from the suspects: no blind baseline ran, so every test against "
                "the controls reads its validity as not measured; a control set that differs from the suspects "
                "(e.g. released later) can produce small p-values with no exposure at all."
            )
        elif blind.get("blind_rejected"):
            cannot.append(
                "anything from the tests against the control set: the blind baseline "
                f"{blind_phrase(blind)}, so only tests that do not compare with the controls remain."
            )
        if verdicts or any(r.get("null") != "chance 1/(n_i + 1)" for r in mine):
            cannot.append(
                "whether the controls were drawn like the suspects: the blind baseline and the negative controls can "
                "show that they differ, never that they do not, so a rejection against them is observational."
            )
        sections.append(Section(model, benchmark, tests, cannot, scans, context))
    return sections


def headline(tables: RunTables, benchmark: str) -> list[str]:
    """At most 30 lines: which detectors find the planted members at which
    epoch and ratio (AUC 95% CI above 0.5, seeds that do), beside the base
    model's AUC and the blind baseline's, both on the evaluation fold's whole
    split (the samples the blind baseline classifies); and whether the
    calibration table's checks were refuted."""
    detection = [
        r
        for r in tables.detection.get(benchmark, [])
        if r.get("auc") is not None and not r["oracle"] and r["subset"] == "all"
    ]
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
        f"Planted members found (AUC 95% CI above 0.5, the evaluation fold's whole split) by {len(finders)} of "
        f"{len(found)} detectors in at least one training seed. Cells: mean AUC over seeds (seeds whose CI lies "
        f"above 0.5 / seeds); the {len(shown)} most sensitive detectors shown. Blind baseline (text only, no model, "
        "the same samples): "
        + (
            "not measured in this run.\n\n"
            if blind is None
            else f"AUC {blind['auc']:.2f} [{blind['ci_low']:.2f}, {blind['ci_high']:.2f}] "
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
            f"\nCalibration table: **no check refuted** (all {len(judged)} judged rows of {len(calibration)} within "
            "their margins; calibration.parquet).\n"
        )
    else:
        named = "; ".join(sorted({f"{r['method']} ({r['null']})" for r in failed})[:4])
        lines.append(
            f"\nCalibration table: **{len(failed)} of {len(judged)} judged rows refuted** ({named}); see "
            f"[calibration](aggregate/{benchmark}/calibration.md).\n"
        )
    return lines


def page_sections(tables: RunTables, settings: PageSettings) -> list[Section]:
    """The page's sections in its order: the testbed's, then the audit's (also what verdict.json writes)."""
    sections = [s for b in sorted(tables.detection) for s in testbed_sections(tables, b, settings)]
    return sections + audit_sections(tables, settings)


def render_verdict(tables: RunTables, settings: PageSettings) -> str:
    """The whole page."""
    run = settings.run
    alpha, contamination_alpha = settings.calibration_alpha, settings.contamination_alpha
    benchmarks = sorted(tables.detection)
    parts = [
        f"# Verdict: {run}\n\n",
        "One section per model × benchmark: the question, the answer naming the test that carries it, and every "
        "test that ran with its null, the kind of evidence it is, whether its validity condition was refuted in "
        "this run and what it could have detected. Rule of the answers, at contamination.alpha / m "
        f"(contamination.alpha = {contamination_alpha:g}, Bonferroni over the m tests with a p-value in the "
        "section): **Evidence of exposure** only from a *design* test, whose null a randomisation guarantees (the "
        "testbed's random split, the complement twin, randomized publication, Oren et al.'s test on an order "
        "declared random); a rejection by an *observational* test (against the user's controls, a reference "
        "model or the variants) reads what it found and what it assumes, never evidence of exposure; a rejection "
        "whose condition fails, or that its table does not count, is **inconclusive**; no rejection reads **no "
        "evidence** only where the most sensitive valid test detects an AUC of at most "
        f"audit.max_detectable_auc = {settings.max_detectable_auc:g} with 80% power, and **inconclusive** "
        "otherwise. A check that did not reject reads *not refuted*: it could only have shown a condition false. "
        f"Per-sample flags use calibration.alpha = {alpha:g}. Intervals: Clopper-Pearson for counts, bootstrap "
        f"for AUC (detection), as each table computes them. {DECIDED_BY}\n",
    ]
    for benchmark in benchmarks:
        parts += headline(tables, benchmark)
    if benchmarks:
        parts.append(
            "\nThe testbed's full tables: " + ", ".join(f"[{b}](aggregate/{b}/report.md)" for b in benchmarks) + ".\n"
        )
    sections = page_sections(tables, settings)
    if not sections:
        parts.append("\nThis run wrote no table a verdict rests on (no testbed benchmark, no audit).\n")
    parts += [s.render(contamination_alpha, settings.max_detectable_auc) for s in sections]
    text = "".join(parts)
    check_wording(text, "verdict.md")
    return text
