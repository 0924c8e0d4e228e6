"""The randomized publication's section of the aggregate report, and its
figure: the per-problem p-values under random publications and under the
real one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from leaktrace.report.plots import save  # noqa: E402
from leaktrace.report.tables import markdown_table  # noqa: E402
from leaktrace.settings.watermark import WatermarkReportSettings  # noqa: E402
from leaktrace.watermark.calibration import expected_p_histogram, p_bin  # noqa: E402
from leaktrace.watermark.ranks import RankSumNull  # noqa: E402

ROLES = {
    "reference": "base model (never saw the release)",
    "sham": "sham control (fine-tuned on other code)",
    "twin": "complement twin (trained on the originals of the non-members)",
    "target": "target trained on the originals, never the release",
    "wm": "watermark target: trained on the release",
}


def role(model: str) -> str:
    return ROLES.get(model.split("-")[0], "unexposed model")


def watermark_section(
    summary: Sequence[dict],
    calibration: Sequence[dict],
    sizes: Mapping[int, int],
    settings: WatermarkReportSettings,
    figure: str,
) -> str:
    """The Markdown section: the release, the p-value per model, the calibration."""
    null = RankSumNull([m for m, n in sizes.items() for _ in range(n)])
    problems = sum(sizes.values())
    by_forms = ", ".join(f"{n} with {m}" for m, n in sorted(sizes.items(), reverse=True))
    table = [
        {
            **r,
            "role": role(r["model"]),
            "rank sum (null mean)": f"{r['rank_sum']} ({r['expected']:.1f})",
            "p": f"{r['p_value']:.3g}",
            "DI p, originals' target": _p(r.get("dataset_inference_p")),
            "variant preference p, same": _p(r.get("variant_preference_p")),
        }
        for r in summary
    ]
    cal = [
        {
            **r,
            "rejections / draws": f"{r['rejections']} / {r['n']}",
            "rate [95% CI]": f"{r['rate']:.4f} [{r['ci_low']:.4f}, {r['ci_high']:.4f}]",
            "attainable size": f"{null.size(r['alpha']):.4f}",
        }
        for r in calibration
    ]
    failed = [r for r in calibration if not r["holds"]]
    return (
        "\n## Randomized publication: a release that proves its own leakage\n\n"
        f"The testbed's benchmark published as a maintainer would (`python -m leaktrace publish`): up to K + 1 = "
        f"{settings.forms + 1} forms of each of its {problems} problems ({by_forms} forms; transforms "
        f"{', '.join(settings.transforms)}), each proven equivalent in the sandbox before one was chosen by a keyed "
        "draw. The watermark targets (`wm-…`) are trained as the targets are, on the same mix with the members' "
        "published forms in place of their originals. Under a model that never saw the release, the published form's "
        "rank among its problem's forms (1 = lowest loss) is uniform, so each problem's p = rank / m is exact, and so is "
        f"the benchmark's p-value, P(rank sum ≤ observed) by {null.method} over the {len(null.sizes)} problems with two "
        "forms or more. Beside each watermark target: dataset inference and the variant-preference test of the target "
        "trained on the originals with the same ratio, seed and epoch (the contamination table's; `–` where that "
        "target is not scored).\n\n"
        + markdown_table(
            table,
            [
                "model",
                "role",
                "epoch",
                "seed",
                "testable",
                "rank sum (null mean)",
                "rank_one",
                "p",
                "DI p, originals' target",
                "variant preference p, same",
            ],
        )
        + "\n### Validity: random publications under the unexposed models\n\n"
        "Each row re-draws the publication uniformly at random over the same scored forms (no forward pass) and counts "
        "the draws whose exact p-value is at most α: the test's size. The rank sum is discrete, so the size cannot "
        "exceed the attainable size below α, and a rate below α is what a valid test shows. `holds`: the "
        "Clopper-Pearson interval reaches down to α; `ks_p`: a KS test of the draws' randomised p-values, uniform "
        "under the null. "
        + (
            "Every row holds.\n\n"
            if not failed
            else f"**{len(failed)} rows do not hold**: the p-values above are not evidence.\n\n"
        )
        + markdown_table(
            cal, ["model", "alpha", "rejections / draws", "rate [95% CI]", "attainable size", "holds", "ks_p"], digits=4
        )
        + f"\nThe per-problem p-values, under random publications and under the release: `{figure}`.\n"
    )


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def p_value_histograms(
    null_counts: Mapping[str, Mapping[tuple[int, int], int]],
    releases: Mapping[str, Sequence[dict]],
    sizes: Mapping[int, int],
    bins: int,
    path: Path,
) -> None:
    """Left: per-problem p-values of the random publications under each
    unexposed model, pooled over draws; right: of the real publication under
    every tested model. The exact null share of each bin as a dashed line."""
    expected = expected_p_histogram(sizes, bins)
    centres = (np.arange(bins) + 0.5) / bins
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    colours = plt.get_cmap("tab10").colors
    width = 0.8 / bins
    for axis, groups, title in ((left, null_counts, "random publications (null)"), (right, releases, "the release")):
        n = max(1, len(groups))
        for k, (model, data) in enumerate(groups.items()):
            shares = np.zeros(bins)
            if axis is left:
                for (m, rank), count in data.items():
                    shares[p_bin(np.array([rank / m]), bins)[0]] += count
            else:
                np.add.at(shares, p_bin(np.array([r["p_value"] for r in data]), bins), 1)
            shares /= max(1.0, shares.sum())
            axis.bar(
                centres - 0.4 / bins + (k + 0.5) * width / n,
                shares,
                width=width / n,
                color=colours[k % 10],
                label=model,
            )
        axis.step(
            np.r_[0, np.arange(1, bins + 1) / bins],
            np.r_[expected[0], expected],
            where="pre",
            color="black",
            ls="--",
            lw=1,
            label="exact null",
        )
        axis.set(xlabel="per-problem p = rank / m", xlim=(0, 1), title=title)
        axis.legend(fontsize=7)
    left.set_ylabel("share of problems")
    fig.tight_layout()
    save(fig, path)
