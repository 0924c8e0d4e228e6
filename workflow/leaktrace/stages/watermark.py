"""watermark: randomized publication of a benchmark and its exact rank test.

``publish``: K + 1 forms of each problem proven equivalent in the sandbox,
the forms table written, then one form per problem chosen by the secret's
keyed draw, the release written in the input's layout, and the commitment.
``test_release``: the commitment checked, every form of every testable
problem scored in one batched pass (the detectors' token pass), the
published form's rank and p per problem, and the benchmark's exact
p-value. ``calibrate``: random publications re-drawn over the forms scored
under unexposed models, the calibration table's rows. ``report``: the
testbed's section: p per model and epoch beside dataset inference and the
variant-preference test of the targets trained on the originals, the
calibration, the per-problem p-values' histogram."""

from __future__ import annotations

import logging
import random
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pyarrow as pa

from leaktrace.artifacts import read_records, write_table
from leaktrace.calibration.table import write_rows
from leaktrace.errors import InputError
from leaktrace.models.token_table import read_token_stats, write_token_stats
from leaktrace.sandbox import SandboxLimits, SandboxUnavailable, isolation_level
from leaktrace.seeding import derive_seed
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.sandbox import SandboxOverrides
from leaktrace.settings.score import TokenBatch
from leaktrace.settings.watermark import FieldOverrides, WatermarkReportSettings
from leaktrace.variants.lexicon import IdentifierLexicon
from leaktrace.variants.naming import NameProposer
from leaktrace.variants.synonyms import WordAlternatives
from leaktrace.watermark.calibration import calibration_rows
from leaktrace.watermark.choice import choose, secret_for, testbed_secret
from leaktrace.watermark.commitment import read_commitment, write_commitment
from leaktrace.watermark.committed import (
    COMMITMENT,
    FORMS,
    PUBLISHED,
    SECRET,
    checked_release,
    forms_by_problem,
    private_dir,
)
from leaktrace.watermark.forms import FormSettings, make_forms
from leaktrace.watermark.ranks import published_rank, rank_sum_test
from leaktrace.watermark.release import layout, published_record, read_problems, release_reader, write_jsonl

log = logging.getLogger(__name__)


FORMS_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),  # the record's id (what the keyed choice reads)
        ("candidate", pa.int32()),  # generation order; 0 = the original
        ("form", pa.int32()),  # index among the problem's forms, which the choice draws from; null: not a form
        ("generator", pa.string()),  # the transforms that changed it, joined by "+"; "original"
        ("text", pa.string()),  # the whole code
        ("prompt", pa.string()),  # what the record's prompt field holds for this form ("" without one)
        ("solution", pa.string()),
        ("valid", pa.bool_()),  # same test record as the original's (the original: passes its tests); null: not run
        ("invalid_reason", pa.string()),
        ("isolation", pa.string()),  # the sandbox's: full or weak
    ]
)

RANKS_SCHEMA = pa.schema(
    [
        ("problem_id", pa.string()),
        ("forms", pa.int32()),  # m: the problem's forms
        ("rank", pa.int32()),  # the published form's, 1 = lowest loss
        ("p_value", pa.float64()),  # rank / m
        ("loss", pa.float64()),  # the published form's per-token loss
        ("lowest_other", pa.float64()),  # the lowest loss among the other forms
    ]
)

RESULT_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("problems", pa.int32()),  # problems in the release
        ("testable", pa.int32()),  # with at least two forms
        ("rank_sum", pa.int64()),
        ("expected", pa.float64()),  # the rank sum's mean under the null
        ("p_value", pa.float64()),
        ("method", pa.string()),  # exact convolution | normal approximation
        ("rank_one", pa.int32()),  # problems whose published form has the lowest loss
        ("truncated", pa.int32()),  # forms cut to the model's context
    ]
)

COUNTS_SCHEMA = pa.schema([("model", pa.string()), ("forms", pa.int32()), ("rank", pa.int32()), ("count", pa.int64())])


def publish(
    source: Path,
    out_dir: Path,
    reader: dict,
    settings: FormSettings,
    *,
    seed: int,
    limits: SandboxLimits,
    workers: int,
    seed_file: Path | None = None,
    lexicon: Path | None = None,
    limit: int | None = None,
    testbed_seed: int | None = None,
) -> None:
    """Forms, then the choice, then the release and the commitment, in that order."""
    if (out_dir / COMMITMENT).exists():
        raise InputError(
            str(out_dir / COMMITMENT),
            None,
            "this directory holds a release already; a benchmark is "
            "released once (a second draw of the same problems breaks the guarantee)",
        )
    records, problems = read_problems(source, reader, "release", limit)
    counts = IdentifierLexicon.from_records(read_records(lexicon)).word_counts if lexicon else Counter()
    names = NameProposer(WordAlternatives(counts), counts)
    try:
        isolation = isolation_level(limits)
    except SandboxUnavailable as error:
        raise InputError("sandbox", None, str(error)) from None
    rows = make_forms(problems, names, settings, seed, limits, workers, isolation)
    forms_path = private_dir(out_dir) / FORMS
    write_table(rows, FORMS_SCHEMA, forms_path)
    secret = secret_for(
        seed_file or private_dir(out_dir) / SECRET,
        derived=None if testbed_seed is None else testbed_secret(testbed_seed, source.name),
    )
    forms = forms_by_problem(rows)
    published = []
    for record, problem in zip(records, problems, strict=True):
        own = forms[problem.problem_id]
        chosen = own[choose(secret, problem.problem_id, len(own))]
        published.append(published_record(record, reader, chosen["prompt"], chosen["solution"]))
    write_jsonl(published, out_dir / PUBLISHED)
    sizes = Counter(len(own) for own in forms.values())
    commitment = write_commitment(
        out_dir / COMMITMENT,
        secret=secret,
        forms=forms_path,
        published=out_dir / PUBLISHED,
        details={
            "layout": release_reader(reader),
            "problems": len(problems),
            "forms": settings.size,
            "problems_by_forms": {str(m): n for m, n in sorted(sizes.items())},
            "choice": "HMAC-SHA256(secret, problem id), rejection sampling to a uniform "
            "index among the problem's forms",
        },
    )
    log.info(
        "published %d problems (%d with %d forms; by forms %s) to %s; commitment %s",
        len(problems),
        sizes[settings.size],
        settings.size,
        dict(sorted(sizes.items())),
        out_dir / PUBLISHED,
        commitment["forms_sha256"],
    )


Transform = Literal["rename", "test_cases", "T3", "T1"]


def publish_benchmark(
    input: Annotated[Path, "a benchmark file: JSONL (.gz), JSON, Parquet or CSV"],
    out_dir: Annotated[Path, "the release: published.jsonl and commitment.json to publish, private/ to keep"],
    /,
    forms: Annotated[int, "K: each problem gets K + 1 equivalent forms, one published"],
    seed_file: Annotated[
        Path | None,
        "the secret (256 random bits in hex), created 0600 where absent; default OUT_DIR/private/secret.key",
    ] = None,
    include_original: Annotated[
        bool, "the original is one of the K + 1 forms (only for an original never made public)"
    ] = False,
    preset: Annotated[str, "the input's field names (leaktrace/data/benchmarks.py PRESETS)"] = "humaneval",
    format: Annotated[Literal["jsonl", "json", "parquet", "csv"] | None, "default: from the name"] = None,
    fields: Annotated[FieldOverrides | None, 'field mapping overrides as JSON, e.g. \'{"id": "name"}\''] = None,
    limit: Annotated[int | None, "the first N problems only"] = None,
    transforms: Annotated[tuple[Transform, ...], "how forms are made, applied in this order"] = (
        "rename",
        "test_cases",
        "T3",
    ),
    candidates: Annotated[int | None, "candidate forms validated per problem; default 2 (K + 1)"] = None,
    names_per_form: Annotated[int | None, "names each renaming changes; default every name"] = None,
    t3_target: Annotated[float, "T3's target line similarity"] = 0.9,
    lexicon: Path | None = None,
    seed: Annotated[int, "the forms' generation seed (not the secret)"] = 0,
    workers: Annotated[int, "sandbox runs at a time"] = 1,
    isolation: Annotated[Literal["full", "weak"], "the sandbox's isolation"] = "full",
    sandbox: Annotated[SandboxOverrides | None, "other SandboxLimits fields as JSON"] = None,
    secret_from_seed: Annotated[
        int | None, "testbed only: derive the secret from this run seed (reproducible, so no secret)"
    ] = None,
) -> None:
    """Publish a benchmark at random: K + 1 equivalent forms of each problem,
    one published per problem by a secret's keyed draw, and the commitment.

    The forms are proven equivalent in the sandbox; the release is written in
    the input's layout (:func:`publish`)."""
    try:
        settings = FormSettings(
            forms=forms,
            candidates=candidates or 2 * (forms + 1),
            transforms=tuple(transforms),
            names_per_form=names_per_form,
            t3_target=t3_target,
            include_original=include_original,
        )
    except ValueError as err:
        raise InputError("arguments", None, str(err)) from None
    reader = layout(input, format, {"preset": preset, "fields": None if fields is None else fields.as_config()})
    overrides = {} if sandbox is None else sandbox.given()
    publish(
        input,
        out_dir,
        reader,
        settings,
        seed=seed,
        limits=SandboxLimits(**{"isolation": isolation, **overrides}),
        workers=workers,
        seed_file=seed_file,
        lexicon=lexicon,
        limit=limit,
        testbed_seed=secret_from_seed,
    )


def test_release(
    out_dir: Annotated[Path, "the release directory publish wrote"],
    /,
    model: Annotated[
        ModelSettings, "a path or hub id (float32 on the CPU), or JSON {path, dtype, device, max_length, revision}"
    ],
    adapter: Annotated[Path | None, "a PEFT adapter directory"] = None,
    name: Annotated[str | None, "the model's name in the results; default its path"] = None,
    published: Annotated[Path | None, "the published file; default OUT_DIR/published.jsonl"] = None,
    commitment: Annotated[Path | None, "default OUT_DIR/commitment.json"] = None,
    seed_file: Annotated[Path | None, "default OUT_DIR/private/secret.key"] = None,
    batch_size: int = 32,
    token_budget: Annotated[int | None, "padded tokens per batch (texts sorted by length)"] = None,
    seed: Annotated[int, "breaks loss ties"] = 0,
    output_dir: Annotated[Path | None, "default OUT_DIR/private/tests/<name>"] = None,
) -> None:
    """Check a release against its commitment, score every form of every
    testable problem under ``model`` and test the published forms' ranks
    (tokens.parquet, ranks.parquet, result.parquet under ``output_dir``)."""
    from leaktrace.models.configured import language_model  # imports torch: only where a model runs

    name = name or model.path
    output_dir = output_dir or private_dir(out_dir) / "tests" / name.replace("/", "--")
    forms, chosen = checked_release(out_dir, published=published, commitment=commitment, seed_file=seed_file)
    keys = [(pid, row["form"], "text") for pid, own in forms.items() if len(own) >= 2 for row in own]
    texts = [forms[pid][form]["text"] for pid, form, _ in keys]
    lm = language_model(model, adapter, TokenBatch(batch_size=batch_size, token_budget=token_budget))
    stats = lm.score(texts, moments=[False] * len(texts))
    output_dir.mkdir(parents=True, exist_ok=True)
    write_token_stats(keys, stats, output_dir / "tokens.parquet")
    losses = _losses(keys, stats)
    ranks, sizes, rows = [], [], []
    for pid, own in forms.items():
        if len(own) < 2:
            continue
        values = losses[pid]
        rank = published_rank(values, chosen[pid], random.Random(derive_seed(seed, "watermark-ties", pid)))
        others = np.delete(values, chosen[pid])
        rows.append(
            {
                "problem_id": pid,
                "forms": len(own),
                "rank": rank,
                "p_value": rank / len(own),
                "loss": float(values[chosen[pid]]),
                "lowest_other": float(others.min()),
            }
        )
        ranks.append(rank)
        sizes.append(len(own))
    result = rank_sum_test(ranks, sizes)
    write_table(rows, RANKS_SCHEMA, output_dir / "ranks.parquet")
    write_table(
        [
            {
                "model": name,
                "problems": len(forms),
                "testable": result.problems,
                "rank_sum": result.rank_sum,
                "expected": result.expected,
                "p_value": result.p_value,
                "method": result.method,
                "rank_one": sum(r == 1 for r in ranks),
                "truncated": sum(s.truncated for s in stats),
            }
        ],
        RESULT_SCHEMA,
        output_dir / "result.parquet",
    )
    log.info(
        "%s: %d testable problems, rank sum %d (expected %.1f under the null), p = %.4g (%s); published form "
        "ranked first in %d",
        name,
        result.problems,
        result.rank_sum,
        result.expected,
        result.p_value,
        result.method,
        sum(r == 1 for r in ranks),
    )


def _losses(keys: list[tuple[str, int, str]], stats: list) -> dict[str, np.ndarray]:
    """problem id -> each form's per-token loss (mean negative log-probability), in form order."""
    losses: dict[str, list[float]] = defaultdict(list)
    for (pid, form, _), s in sorted(zip(keys, stats, strict=True), key=lambda item: (item[0][0], item[0][1])):
        if len(s.logprobs) == 0:
            raise InputError("scores", pid, f"form {form} has no scored token")
        losses[pid].append(-float(np.mean(s.logprobs, dtype=np.float64)))
    return {pid: np.asarray(values) for pid, values in losses.items()}


def calibrate(
    tokens: Mapping[str, Path], alphas: tuple[float, ...], draws: int, seed: int, output: Path, counts: Path
) -> None:
    """Re-draw random publications over each unexposed model's scored forms
    (``tokens``: model -> its watermark-test tokens.parquet): the
    calibration table's rows to ``output``, the null rank counts to ``counts``.

    ``draws``: random publications per model; ``alphas``: the rows' levels."""
    rows, rank_counts = [], []
    for model, path in tokens.items():
        stats = read_token_stats(path)
        losses = _losses(list(stats), list(stats.values()))
        own_rows, own_counts = calibration_rows(
            model,
            [losses[pid] for pid in sorted(losses)],
            alphas,
            draws,
            np.random.default_rng(derive_seed(seed, "watermark-calibration", model)),
        )
        rows += own_rows
        rank_counts += [{"model": model, "forms": m, "rank": r, "count": n} for (m, r), n in sorted(own_counts.items())]
        log.info("%s: %s", model, ", ".join(f"α {r['alpha']:g}: {r['rejections']}/{r['n']}" for r in own_rows))
    write_rows(rows, output)
    write_table(rank_counts, COUNTS_SCHEMA, counts)


SUMMARY_SCHEMA = pa.schema(
    [
        *RESULT_SCHEMA,
        ("ratio", pa.float64()),
        ("seed", pa.int32()),
        ("epoch", pa.int32()),  # 0: the base model
        ("sibling", pa.string()),  # a watermark target's twin in training trained on the originals (target-…)
        ("dataset_inference_p", pa.float64()),  # the sibling's, from the contamination table
        ("variant_preference_p", pa.float64()),
    ]
)
_NAME = re.compile(r"(wm|target|sham|twin)-r([0-9.]+)-s(\d+)-e(\d+)")


def _coordinates(model: str) -> dict:
    match = _NAME.fullmatch(model)
    if not match:
        return {"ratio": None, "seed": None, "epoch": 0 if model == "reference" else None, "sibling": None}
    kind, ratio, seed, epoch = match.groups()
    return {
        "ratio": float(ratio),
        "seed": int(seed),
        "epoch": int(epoch),
        "sibling": f"target-r{ratio}-s{seed}-e{epoch}" if kind == "wm" else None,
    }


def _contamination_p(p_values: Path | None) -> dict[tuple[str, str], float]:
    """(model, test) -> p of dataset inference (testbed validation) and the variant-preference test."""
    if p_values is None:
        return {}
    return {
        (r["model"], r["test"]): r["p_value"]
        for r in read_records(p_values, ["model", "test", "validation", "p_value"])
        if (r["test"], r["validation"]) in (("dataset_inference", "testbed"), ("variant_preference", "variants"))
    }


def report(
    results: Mapping[str, Path],
    ranks: Mapping[str, Path],
    calibration: Path,
    counts: Path,
    commitment: Path,
    settings: WatermarkReportSettings,
    output_dir: Path,
    p_values: Path | None = None,
) -> None:
    """Write the testbed's watermark section (summary.parquet, report.md,
    p_values.png to ``output_dir``): p per model beside the originals'
    targets' dataset-level tests, and the calibration.

    ``results``, ``ranks``: model -> its watermark-test result.parquet and
    ranks.parquet; ``p_values``: the contamination table."""
    from leaktrace.report.watermark import p_value_histograms, watermark_section

    contamination = _contamination_p(p_values)
    summary = []
    for model, path in results.items():
        (row,) = read_records(path)
        own = {**row, **_coordinates(model)}
        own["dataset_inference_p"] = contamination.get((own["sibling"], "dataset_inference"))
        own["variant_preference_p"] = contamination.get((own["sibling"], "variant_preference"))
        summary.append(own)
    write_table(summary, SUMMARY_SCHEMA, output_dir / "summary.parquet")
    sizes = {int(m): n for m, n in read_commitment(commitment)["problems_by_forms"].items()}
    rows = read_records(calibration)
    null_counts: dict[str, dict[tuple[int, int], int]] = defaultdict(dict)
    for r in read_records(counts):
        null_counts[r["model"]][(r["forms"], r["rank"])] = r["count"]
    releases = {model: read_records(path) for model, path in ranks.items()}
    p_value_histograms(null_counts, releases, sizes, settings.forms + 1, output_dir / "p_values.png")
    figure = str(output_dir / "p_values.png")
    (output_dir / "report.md").write_text(watermark_section(summary, rows, sizes, settings, figure))
    log.info("watermark report: %d models, %d calibration rows", len(summary), len(rows))


AUDIT_RESULT_SCHEMA = pa.schema(
    [
        ("benchmark", pa.string()),  # the audited benchmark: the release's published file
        *RESULT_SCHEMA,  # model: the audit.models name
        ("assumption", pa.string()),  # what the p-value's validity rests on
    ]
)

AUDIT_ASSUMPTION = (
    "none the audit must trust: each problem's published form was drawn by the secret's keyed choice, fixed at "
    "release by the commitment (the secret, the forms table and the audited file checked against it), so for a "
    "model that never saw the secret or the unpublished forms the published form's rank is uniform and p is exact. "
    "Design-based evidence of exposure to this release."
)


def audit_watermark_table(results: Mapping[tuple[str, str], Path], output: Path, report: Path) -> None:
    """Gather the audit's table of the watermark's rank test per model ×
    released benchmark, and its Markdown.

    ``results``: MODEL:BENCHMARK -> its watermark-test ``result.parquet``."""
    from leaktrace.report.tables import markdown_table

    rows = []
    for (model, benchmark), path in results.items():
        (row,) = read_records(path)
        rows.append({"benchmark": benchmark, **row, "model": model, "assumption": AUDIT_ASSUMPTION})
    write_table(rows, AUDIT_RESULT_SCHEMA, output)
    shown = [
        {**r, "p": f"{r['p_value']:.3g}", "rank sum (null mean)": f"{r['rank_sum']} ({r['expected']:.1f})"}
        for r in rows
    ]
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(
        "# Randomized publication: the watermark's rank test\n\n"
        "Each released benchmark's problems in all their equivalent forms, ranked by the model's loss; the "
        "published form's rank (1 = lowest loss) summed over problems and referred to its exact null. A model "
        "trained on the release ranks its published forms low. No control set.\n\n"
        + markdown_table(
            shown, ["model", "benchmark", "problems", "testable", "rank sum (null mean)", "rank_one", "p", "method"]
        )
        + f"\n**Assumption.** {AUDIT_ASSUMPTION}\n"
    )
