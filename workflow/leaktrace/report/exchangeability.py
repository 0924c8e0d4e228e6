"""The audit's order test as Markdown (``audit/exchangeability.md``)."""

from __future__ import annotations

from leaktrace.contamination.exchangeability import ASSUMPTION
from leaktrace.report.tables import markdown_table


def _p(value: float | None) -> str | None:
    return None if value is None else f"{value:.3g}"


def exchangeability_markdown(records: list[dict]) -> str:
    shown = [
        {
            **r,
            "shards": f"{r['n_shards']} ({r['n_examples']} of {r['n_benchmark_examples']} examples)",
            "rank sum (null mean)": None
            if r["rank_sum"] is None
            else f"{r['rank_sum']} ({r['rank_sum_null_mean']:.1f})",
            "p": _p(r["p_value"]),
            "t-test p": _p(r["t_test_p_value"]),
        }
        for r in records
    ]
    columns = [
        "model",
        "benchmark",
        "shards",
        "n_permutations",
        "rank sum (null mean)",
        "mean_difference",
        "p",
        "t-test p",
        "p_method",
    ]
    return (
        "# Order test (Oren et al.'s sharded exchangeability test)\n\n"
        "Each benchmark's examples in its published order (the file's), packed into shards that fit the model's "
        "context; per shard the published order's log-likelihood ranked among distinct random orders of the same "
        "examples (rank 1: the published order is the most likely). A model trained on the release in its order "
        "ranks it first more often than chance. No control set: p is the rank sum's, exact under one "
        "assumption; the t-test across shards (Oren et al.'s) is beside it. `mean_difference`: published minus "
        "permuted log-likelihood in nats, mean over shards.\n\n"
        + markdown_table(shown, columns)
        + f"\n**Assumption.** {ASSUMPTION}\n"
    )
