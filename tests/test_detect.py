"""Each detector against a hand-computed value on fixed token statistics,
orientation included (higher = member)."""

import math
import zlib

import numpy as np
import pytest

from leaktrace.detect.dc_pdd import first_occurrences
from leaktrace.detect.evidence import SampleEvidence, lowest_k_mean
from leaktrace.detect.recall_relative_ll import prefix_shots, select_prefix_samples
from leaktrace.detect.registry import configured_methods
from leaktrace.detect.srdetection_blackbox import (
    GenerationEvidence,
    blackbox_decisions,
    continuation_overlaps,
    generation_evidence,
    ngram_overlap,
    ngrams,
    split_prefix_suffix,
)
from leaktrace.models.backend import TokenStats
from leaktrace.models.token_counts import TokenCounts


def stats(logprobs, mu=None, sigma=None):
    lp = np.asarray(logprobs, dtype=np.float32)
    return TokenStats(
        token_ids=np.arange(len(lp), dtype=np.int32),
        logprobs=lp,
        mu=np.asarray(mu if mu is not None else np.zeros_like(lp), dtype=np.float32),
        sigma=np.asarray(sigma if sigma is not None else np.ones_like(lp), dtype=np.float32),
        truncated=False,
    )


TEXT = "def f(x):\n    return x + 1\n"
ORIGINAL = stats([-1.0, -2.0, -3.0, -4.0, -0.5], mu=[-1.5, -1.5, -2.0, -2.0, -1.0], sigma=[0.5, 1.0, 2.0, 1.0, 0.5])
LOWER = stats([-2.0, -3.0, -3.0, -4.0, -3.0])
VARIANTS = (stats([-2.0, -2.0, -3.0]), stats([-3.0, -2.5]), stats([-1.0, -1.0, -4.0, -4.0]))
EVIDENCE = SampleEvidence("b/1", TEXT, ORIGINAL, LOWER, VARIANTS)

CONFIG = {
    "loss": {},
    "zlib": {},
    "lowercase": {},
    "min_k": {"ratios": [0.2, 0.4]},
    "min_k_plus_plus": {"ratios": [0.4]},
    "srdetection_graybox": {"n_variants": 10},
}


def by_name():
    return {m.name: m for m in configured_methods(CONFIG)}


def test_loss_is_mean_log_likelihood():
    assert by_name()["loss"].score(EVIDENCE) == pytest.approx(-2.1)


def test_zlib_divides_log_likelihood_by_compressed_bytes():
    expected = -2.1 / len(zlib.compress(TEXT.encode()))
    assert by_name()["zlib"].score(EVIDENCE) == pytest.approx(expected)


def test_lowercase_is_loss_ratio_lower_over_original():
    assert by_name()["lowercase"].score(EVIDENCE) == pytest.approx(3.0 / 2.1)


def test_min_k_averages_the_lowest_tokens_with_at_least_one():
    methods = by_name()
    assert methods["min_k_20"].score(EVIDENCE) == pytest.approx(-4.0)  # floor(0.2*5)=1
    assert methods["min_k_40"].score(EVIDENCE) == pytest.approx(-3.5)  # floor(0.4*5)=2
    assert lowest_k_mean(np.array([-1.0, -2.0]), 0.1) == -2.0  # floor(0.2)=0 -> 1


def test_min_k_plus_plus_standardises_by_the_next_token_distribution():
    z = [(-1.0 + 1.5) / 0.5, (-2.0 + 1.5) / 1.0, (-3.0 + 2.0) / 2.0, (-4.0 + 2.0) / 1.0, (-0.5 + 1.0) / 0.5]
    expected = np.mean(sorted(z)[:2])
    assert by_name()["min_k_pp_40"].score(EVIDENCE) == pytest.approx(expected)


def test_srdetection_gap_and_decision():
    method = by_name()["srdetection_graybox"]
    # losses: original 2.1; variants 7/3, 2.75, 2.5 -> min 7/3
    assert method.score(EVIDENCE) == pytest.approx(7 / 3 - 2.1)
    assert method.decide(EVIDENCE) is True
    harder = SampleEvidence("b/2", TEXT, ORIGINAL, LOWER, (stats([-1.0, -1.0]),))
    assert method.score(harder) == pytest.approx(1.0 - 2.1)
    assert method.decide(harder) is False


def test_srdetection_uses_only_the_first_n_variants():
    (method,) = configured_methods({"srdetection_graybox": {"n_variants": 1}})
    assert method.score(EVIDENCE) == pytest.approx(7 / 3 - 2.1)


def test_orientation_member_scores_higher():
    member = SampleEvidence("m", TEXT, stats([-0.1, -0.2, -0.1]), stats([-2.0, -2.0, -2.0]), VARIANTS)
    nonmember = SampleEvidence("n", TEXT, stats([-3.0, -4.0, -5.0]), stats([-3.1, -4.0, -5.0]), VARIANTS)
    for method in configured_methods(CONFIG):
        if method.name.startswith("min_k_pp"):
            continue  # depends on mu/sigma, checked above
        assert method.score(member) > method.score(nonmember), method.name


def test_unknown_method_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown detection methods"):
        configured_methods({"min_k_plus_plus_plus": {}})


def test_lowercase_without_lowercase_pass_is_a_clear_error():
    with pytest.raises(ValueError, match="lowercase"):
        by_name()["lowercase"].score(SampleEvidence("x", TEXT, ORIGINAL))


def test_empty_text_cannot_be_scored():
    with pytest.raises(ValueError, match="empty"):
        by_name()["loss"].score(SampleEvidence("x", "", stats([])))
    assert math.isfinite(by_name()["loss"].score(EVIDENCE))


# --- DC-PDD -----------------------------------------------------------------

COUNTS = TokenCounts("tok", np.array([3, 0, 1, 6, 0]))  # sum 10, V 5: f = (c + 1) / 15


def dc_evidence(probabilities, token_ids):
    lp = np.log(np.asarray(probabilities, dtype=np.float64)).astype(np.float32)
    s = TokenStats(np.asarray(token_ids, dtype=np.int32), lp, np.zeros_like(lp), np.ones_like(lp), False)
    return SampleEvidence("d", "text", s)


def test_token_frequencies_are_laplace_smoothed():
    np.testing.assert_allclose(COUNTS.frequencies(), np.array([4, 1, 2, 7, 1]) / 15)
    assert COUNTS.frequencies().sum() == pytest.approx(1.0)


def test_dc_pdd_keeps_first_occurrences_and_clips():
    evidence = dc_evidence([0.5, 0.9, 0.2, 0.8, 0.3], [1, 3, 1, 4, 3])  # kept: positions 0, 1, 3
    assert list(first_occurrences(np.array([1, 3, 1, 4, 3]))) == [0, 1, 3]
    alphas = [0.5 * math.log(15), 0.9 * math.log(15 / 7), 0.8 * math.log(15)]
    (unclipped,) = configured_methods({"dc_pdd": {"clip": 100.0, "corpus": "c"}}, token_counts=COUNTS)
    assert unclipped.score(evidence) == pytest.approx(np.mean(alphas), rel=1e-6)
    (clipped,) = configured_methods({"dc_pdd": {"clip": 1.0, "corpus": "c"}}, token_counts=COUNTS)
    assert clipped.score(evidence) == pytest.approx((1.0 + alphas[1] + 1.0) / 3, rel=1e-6)
    (default,) = configured_methods({"dc_pdd": {"corpus": "c"}}, token_counts=COUNTS)
    assert default.params["clip"] == 0.01 and default.score(evidence) == pytest.approx(0.01)


def test_dc_pdd_orientation_and_errors():
    (method,) = configured_methods({"dc_pdd": {"clip": 100.0, "corpus": "c"}}, token_counts=COUNTS)
    assert method.score(dc_evidence([0.9, 0.9], [1, 4])) > method.score(dc_evidence([0.1, 0.1], [1, 4]))
    with pytest.raises(ValueError, match="another tokenizer"):
        method.score(dc_evidence([0.5], [7]))
    with pytest.raises(ValueError, match="token_counts"):
        configured_methods({"dc_pdd": {"corpus": "c"}})
    with pytest.raises(ValueError, match="missing required parameters \\['corpus'\\]"):
        configured_methods({"dc_pdd": {}}, token_counts=COUNTS)


# --- Ref, Neighbor, ReCaLL ---------------------------------------------------------


def test_ref_subtracts_the_reference_log_likelihood():
    method, oracle = configured_methods({"ref": {"model": "small"}})
    assert method.needs_reference and not method.needs_oracle_reference
    evidence = SampleEvidence("r", TEXT, ORIGINAL, reference=stats([-3.0, -3.5]), oracle_reference=stats([-2.0, -3.0]))
    assert method.score(evidence) == pytest.approx(-2.1 + 3.25)
    with pytest.raises(ValueError, match="reference model"):
        method.score(EVIDENCE)
    # the oracle: the same difference against the target's own base model, labelled by its name
    assert (oracle.name, oracle.family, oracle.needs_oracle_reference) == ("ref_oracle", "ref", True)
    assert oracle.score(evidence) == pytest.approx(-2.1 + 2.5)
    assert [m.name for m in configured_methods({"ref": {"oracle": False}})] == ["ref"]


def test_neighbor_subtracts_the_mean_neighbour_log_likelihood():
    (method,) = configured_methods({"neighbor": {"n_neighbors": 2}})
    assert method.needs_variants
    assert method.score(EVIDENCE) == pytest.approx(-2.1 + (7 / 3 + 2.75) / 2)  # mean, not max
    (all_three,) = configured_methods({"neighbor": {}})
    assert all_three.score(EVIDENCE) == pytest.approx(-2.1 + (7 / 3 + 2.75 + 2.5) / 3)
    with pytest.raises(ValueError, match="variant"):
        method.score(SampleEvidence("x", TEXT, ORIGINAL))


def prefixed_like(original, logprobs):
    return TokenStats(
        original.token_ids[: len(logprobs)],
        np.asarray(logprobs, dtype=np.float32),
        np.zeros(len(logprobs), np.float32),
        np.ones(len(logprobs), np.float32),
        False,
        prefix_shots=1,
        prefix_tokens=10,
    )


def test_recall_is_conditional_over_unconditional_log_likelihood():
    (method,) = configured_methods({"recall": {}})
    assert method.needs_prefixed and method.params["n_shots"] == 12
    evidence = SampleEvidence("r", TEXT, ORIGINAL, prefixed=prefixed_like(ORIGINAL, [-2.0, -3.0, -3.0, -4.0, -1.0]))
    assert method.score(evidence) == pytest.approx(-2.6 / -2.1)
    # truncated prefixed pass: both means over the first three tokens
    short = SampleEvidence("r", TEXT, ORIGINAL, prefixed=prefixed_like(ORIGINAL, [-1.0, -1.0, -1.0]))
    assert method.score(short) == pytest.approx(-1.0 / -2.0)


def test_recall_orientation_member_loses_more_from_the_prefix():
    (method,) = configured_methods({"recall": {}})
    original = stats([-1.0, -1.0])
    member = SampleEvidence("m", TEXT, original, prefixed=prefixed_like(original, [-1.5, -1.5]))
    nonmember = SampleEvidence("n", TEXT, original, prefixed=prefixed_like(original, [-0.9, -0.9]))
    assert method.score(member) > 1 > method.score(nonmember)


def test_recall_rejects_missing_or_mismatched_prefixed_pass():
    (method,) = configured_methods({"recall": {}})
    with pytest.raises(ValueError, match="prefix"):
        method.score(EVIDENCE)
    other = TokenStats(
        np.array([9, 9], np.int32),
        np.array([-1.0, -1.0], np.float32),
        np.zeros(2, np.float32),
        np.ones(2, np.float32),
        False,
        prefix_shots=1,
        prefix_tokens=10,
    )
    with pytest.raises(ValueError, match="other tokens"):
        method.score(SampleEvidence("r", TEXT, ORIGINAL, prefixed=other))


def test_recall_prefix_selection_is_deterministic_and_order_free():
    pool = [f"b/{i}" for i in range(30)]
    chosen = select_prefix_samples(pool, 12, seed=5)
    assert len(set(chosen)) == 12 and set(chosen) <= set(pool)
    assert select_prefix_samples(pool[::-1], 12, seed=5) == chosen
    assert select_prefix_samples(pool, 12, seed=6) != chosen
    with pytest.raises(ValueError, match="only 3"):
        select_prefix_samples(pool[:3], 12, seed=5)


def test_recall_prefix_shots_end_in_two_blank_lines():
    texts = ["def a():\n    pass\n", "x = 1"]
    assert prefix_shots(texts) == ["def a():\n    pass\n\n\n", "x = 1\n\n\n"]


def test_recall_needs_a_prefix_token_before_the_text():
    (method,) = configured_methods({"recall": {}})
    original = stats([-1.0, -1.0])
    unconditioned = TokenStats(
        original.token_ids, original.logprobs, None, None, False, prefix_shots=0, prefix_tokens=0
    )
    with pytest.raises(ValueError, match="no prefix token fit"):
        method.score(SampleEvidence("r", TEXT, original, prefixed=unconditioned))


# --- SrDetection: variant-count sensitivity and black-box ---------------------------


def test_srdetection_sensitivity_instances_reuse_the_same_variants():
    methods = {
        m.name: m for m in configured_methods({"srdetection_graybox": {"n_variants": 3, "sensitivity": [1, 2, 3]}})
    }
    assert list(methods) == [
        "srdetection_graybox",
        "srdetection_graybox_n1",
        "srdetection_graybox_n2",
        "srdetection_graybox_n3",
    ]
    assert not methods["srdetection_graybox"].sensitivity and methods["srdetection_graybox_n1"].sensitivity
    # variant losses 7/3, 2.75, 2.5; original 2.1
    assert methods["srdetection_graybox_n1"].score(EVIDENCE) == pytest.approx(7 / 3 - 2.1)
    assert methods["srdetection_graybox_n2"].score(EVIDENCE) == pytest.approx(7 / 3 - 2.1)
    harder = SampleEvidence("h", TEXT, stats([-2.6, -2.6]), variants=VARIANTS)  # loss 2.6
    assert methods["srdetection_graybox_n1"].decide(harder) is False  # 7/3 < 2.6
    assert methods["srdetection_graybox_n2"].decide(harder) is False
    assert methods["srdetection_graybox_n2"].score(harder) == pytest.approx(7 / 3 - 2.6)
    assert methods["srdetection_graybox_n3"].score(harder) == pytest.approx(7 / 3 - 2.6)
    assert methods["srdetection_graybox"].score(harder) == methods["srdetection_graybox_n3"].score(harder)
    only_second = SampleEvidence("h", TEXT, stats([-2.4]), variants=VARIANTS[1:])  # losses 2.75, 2.5
    assert methods["srdetection_graybox_n1"].decide(only_second) is True  # 2.4 < 2.75
    assert methods["srdetection_graybox_n2"].decide(only_second) is True  # 2.4 < 2.5


def test_variant_count_errors():
    with pytest.raises(ValueError, match="distinct positive"):
        configured_methods({"srdetection_graybox": {"sensitivity": [1, 1]}})
    with pytest.raises(ValueError, match="positive integer"):
        configured_methods({"srdetection_graybox": {"n_variants": 0}})
    with pytest.raises(ValueError, match="unknown parameters \\['n'\\]"):
        configured_methods({"neighbor": {"n": 3}})


def test_ngram_overlap_on_known_ids():
    assert ngrams([1, 2, 3, 1, 2, 3], 3) == {(1, 2, 3), (2, 3, 1), (3, 1, 2)}
    suffix = [1, 2, 3, 4, 5, 6, 7, 8, 9]  # 3 seven-grams
    assert ngram_overlap(suffix, suffix, 7) == 1.0
    assert ngram_overlap([0, 1, 2, 3, 4, 5, 6, 7, 0], suffix, 7) == pytest.approx(1 / 3)
    assert ngram_overlap([1, 2, 3, 4, 5, 6, 0, 8, 9], suffix, 7) == 0.0
    assert ngram_overlap([9, 9], [1, 2, 3], 2) == 0.0
    assert ngram_overlap([1, 2, 2, 3], [1, 2, 1, 2], 2) == pytest.approx(1 / 2)  # sets: {12, 21} vs {12, 22, 23}
    assert math.isnan(ngram_overlap([1, 2, 3], [1, 2, 3], 7))


def test_prefix_suffix_split_on_tokens():
    assert split_prefix_suffix(list(range(10)), 0.5) == (list(range(5)), list(range(5, 10)))
    assert split_prefix_suffix(list(range(7)), 0.5) == ([0, 1, 2], [3, 4, 5, 6])  # floor
    assert split_prefix_suffix([1, 2], 0.1) == ([1], [2])  # at least one token each side
    assert split_prefix_suffix([1, 2], 0.9) == ([1], [2])
    with pytest.raises(ValueError, match="cannot be split"):
        split_prefix_suffix([1], 0.5)


def ngo_row(sample_id, variant_id, ngo):
    return {"sample_id": sample_id, "variant_id": variant_id, "ngo": ngo}


def test_blackbox_decision_and_score_from_rows():
    rows = [
        ngo_row("a", 0, 0.8),
        ngo_row("a", 1, 0.5),
        ngo_row("a", 2, 0.9),
        ngo_row("a", 3, float("nan")),
        ngo_row("b", 0, 0.4),
        ngo_row("b", 2, 0.1),
        ngo_row("b", 1, 0.3),
        ngo_row("c", 0, float("nan")),
        ngo_row("c", 1, 0.2),
    ]
    evidence, skipped = generation_evidence(rows)
    assert skipped == ["c"]
    assert evidence[0] == GenerationEvidence("a", 0.8, (0.5, 0.9)) and evidence[1].variants == (0.3, 0.1)
    decided = {d["sample_id"]: d for d in blackbox_decisions(rows, n_variants=10)}
    assert decided["a"]["decision"] is False and decided["a"]["score"] == pytest.approx(-0.1)
    assert decided["b"]["decision"] is True and decided["b"]["score"] == pytest.approx(0.1)
    assert decided["b"]["n_variants"] == 2
    first_only = {d["sample_id"]: d for d in blackbox_decisions(rows, n_variants=1)}
    assert first_only["a"]["decision"] is True and first_only["a"]["score"] == pytest.approx(0.3)
    methods = {m.name: m for m in configured_methods({"srdetection_blackbox": {"sensitivity": [1]}})}
    assert methods["srdetection_blackbox"].needs_generations and methods["srdetection_blackbox"].params["ngram"] == 7
    assert methods["srdetection_blackbox_n1"].decide(evidence[0]) is True
    assert methods["srdetection_blackbox"].score(evidence[0]) == pytest.approx(-0.1)


class EchoModel:
    """A stand-in LanguageModel over characters: it continues the original
    texts correctly and every other text with 'x's."""

    name = "echo"
    bos = 0
    max_length = 1000

    def __init__(self, originals):
        self.originals = originals
        self.prompts = None

    def encode(self, text):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))

    def generate(self, prompts, *, max_new_tokens, stops=None):
        self.prompts = prompts
        out = []
        for prompt, stop in zip(prompts, stops, strict=True):
            prefix = self.decode(prompt)
            source = next((t for t in self.originals if t.startswith(prefix)), None)
            text = source[len(prefix) :] + "!!!" if source else "x" * max_new_tokens
            out.append(text[:max_new_tokens])
            assert stop(text)
        return out


def test_continuation_overlaps_rows_and_decision():
    original = "def add(a, b):\n    return a + b\n"
    variant = "def plus(x, y):\n    return x + y\n"
    lm = EchoModel([original])
    rows = continuation_overlaps(lm, [("s", 0, original), ("s", 1, variant)], prefix_fraction=0.5, ngram=3)
    assert lm.prompts == [lm.encode(original[:16]), lm.encode(variant[:16])]  # one batched call
    assert [(r["prefix_tokens"], r["suffix_tokens"]) for r in rows] == [(16, 16), (16, 17)]
    assert rows[0]["generated"] == original[16:]  # cut to the suffix length: no "!!!"
    assert rows[0]["ngo"] == 1.0 and rows[1]["ngo"] == 0.0
    (decision,) = blackbox_decisions(rows, n_variants=10)
    assert decision["decision"] is True and decision["score"] == 1.0
    # recomputed from the stored ids for another n: a 16-token suffix has one 16-gram and no 20-gram
    (again,) = generation_evidence(rows, ngram=16)[0]
    assert again == GenerationEvidence("s", 1.0, (0.0,))
    assert generation_evidence(rows, ngram=20) == ([], ["s"])


def test_echo_model_scores_one_when_the_suffix_runs_past_the_generation_budget():
    original = "def add(a, b):\n    return a + b\n"  # 32 characters: a 16-character suffix
    rows = continuation_overlaps(
        EchoModel([original]), [("s", 0, original)], prefix_fraction=0.5, ngram=3, max_new_tokens=6
    )
    (row,) = rows
    assert row["suffix_tokens"] == 16 and row["suffix_ids"] == [ord(c) for c in original[16:22]]
    assert row["generated"] == original[16:22]
    assert row["ngo"] == 1.0  # the whole suffix would give 4 of its 14 trigrams


class ScriptedModel(EchoModel):
    """Continues every prompt with a fixed text."""

    def __init__(self, continuation):
        super().__init__([])
        self.continuation = continuation

    def generate(self, prompts, *, max_new_tokens, stops=None):
        return [self.continuation[:max_new_tokens] for _ in prompts]


def test_overlap_with_a_budget_cut_suffix_by_hand():
    text = "ABCDEFGHIJabcdefghij"  # prefix ABCDEFGHIJ, suffix abcdefghij, budget 8: abcdefgh
    (row,) = continuation_overlaps(
        ScriptedModel("abcXefghij"), [("s", 0, text)], prefix_fraction=0.5, ngram=3, max_new_tokens=8
    )
    # trigrams of abcXefgh: abc bcX cXe Xef efg fgh; of abcdefgh: abc bcd cde def efg fgh -> 3 of 6
    assert row["generated"] == "abcXefgh" and row["ngo"] == 0.5


def test_blackbox_text_is_cut_to_the_context_before_the_split():
    original = "def add(a, b):\n    return a + b\n"  # 32 characters
    lm = EchoModel([original])
    lm.max_length = 21  # BOS + 20 characters
    (row,) = continuation_overlaps(lm, [("s", 0, original)], prefix_fraction=0.5, ngram=3)
    assert (row["prefix_tokens"], row["suffix_tokens"]) == (10, 10) and lm.prompts == [lm.encode(original[:10])]
    assert row["suffix_ids"] == lm.encode(original[10:20]) and row["ngo"] == 1.0


def test_srdetection_generator_instances_score_that_generators_variants():
    methods = {
        m.name: m for m in configured_methods({"srdetection_graybox": {"n_variants": 2, "generators": ["ast+tt"]}})
    }
    assert list(methods) == ["srdetection_graybox", "srdetection_graybox_ast_tt"]
    composed = methods["srdetection_graybox_ast_tt"]
    assert composed.variant_generator == "ast+tt" and composed.params == {"n_variants": 2, "generator": "ast+tt"}
    # original loss 2.0; the main variants' losses 1.0 and 3.0, the composed ones' 2.5, 2.2 and 0.1 (beyond n)
    evidence = SampleEvidence(
        "g",
        TEXT,
        stats([-2.0, -2.0]),
        variants=(stats([-1.0]), stats([-3.0])),
        alternatives={"ast+tt": (stats([-2.5]), stats([-2.2]), stats([-0.1]))},
    )
    assert methods["srdetection_graybox"].score(evidence) == pytest.approx(-1.0)
    assert methods["srdetection_graybox"].decide(evidence) is False
    assert composed.score(evidence) == pytest.approx(0.2) and composed.decide(evidence) is True
