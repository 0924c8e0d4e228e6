import ast
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from leaktrace.similarity.function_parse import (
    ParsedFunction,
    function_end_reached,
    parse_generated_function,
)
from leaktrace.similarity.text import (
    TEXT_METRICS,
    bleu,
    edit_similarity,
    exact_match,
    lcs_similarity,
)

FUNCTION = "def add(a, b):\n    total = a + b\n    return total\n"


# --- text metrics ---------------------------------------------------------


def test_registry_names():
    assert set(TEXT_METRICS) == {"exact_match", "bleu", "edit_similarity", "lcs"}


@pytest.mark.parametrize("metric", list(TEXT_METRICS.values()))
def test_identical_code_scores_one(metric):
    assert metric(FUNCTION, FUNCTION) == pytest.approx(1.0)


@pytest.mark.parametrize("metric", list(TEXT_METRICS.values()))
def test_disjoint_text_scores_zero(metric):
    assert metric("aaaa bbbb", "#$%&?!") == 0.0


@given(st.text(max_size=40), st.text(max_size=40))
def test_metrics_stay_in_unit_interval(x, y):
    for metric in TEXT_METRICS.values():
        assert 0.0 <= metric(x, y) <= 1.0


def test_exact_match_ignores_trailing_space_and_surrounding_blank_lines():
    assert exact_match("\n\ndef f():   \n    return 1\n\n", "def f():\n    return 1") == 1.0
    assert exact_match("def f():\n    return 1", "def f():\n  return 1") == 0.0


def test_bleu_hand_computed():
    # Tokens a = b + c vs a = b + d: precisions 4/5, 3/4, 2/3, 1/2, equal lengths.
    assert bleu("a = b + c", "a = b + d") == pytest.approx((4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)


def test_bleu_matches_nltk_on_whitespace_tokens():
    x, y = FUNCTION, "def add(x, y):\n    return x + y\n"
    expected = sentence_bleu([x.split()], y.split(), smoothing_function=SmoothingFunction().method1)
    assert bleu(x, y) == pytest.approx(expected)
    assert 0.0 < bleu(x, y) < 1.0


def test_bleu_of_empty_generation_is_zero():
    assert bleu(FUNCTION, "") == 0.0
    assert bleu(FUNCTION, "   \n") == 0.0


def test_edit_similarity_hand_computed_and_normalised_by_ground_truth():
    # Levenshtein("kitten", "sitting") = 3.
    assert edit_similarity("kitten", "sitting") == pytest.approx(1 - 3 / 6)
    assert edit_similarity("sitting", "kitten") == pytest.approx(1 - 3 / 7)


def test_edit_similarity_is_clipped_at_zero_and_handles_empty_ground_truth():
    assert edit_similarity("ab", "abcdef") == 0.0
    assert edit_similarity("", "") == 1.0
    assert edit_similarity("", "x") == 0.0


def test_lcs_is_longest_common_substring_over_ground_truth_length():
    assert lcs_similarity("abcdef", "zcdez") == pytest.approx(3 / 6)
    # A common subsequence of length 4, but no common substring longer than 1.
    assert lcs_similarity("abcd", "axbxcxd") == pytest.approx(1 / 4)
    assert lcs_similarity("", "") == 1.0


# --- function parsing -----------------------------------------------------


def assert_parses(signature: str, parsed: ParsedFunction) -> None:
    assert parsed.parsed
    ast.parse(textwrap.dedent(signature + parsed.body))


def test_parse_cuts_at_function_end():
    signature = "def f(x):\n"
    parsed = parse_generated_function(signature, "    y = x + 1\n    return y\n\n\nprint(f(1))\n")
    assert parsed == ParsedFunction("    y = x + 1\n    return y\n", parsed=True)


def test_parse_with_signature_without_newline_cuts_at_next_def():
    signature = "def f(x):"
    parsed = parse_generated_function(signature, "\n    return x\n\ndef g():\n    pass\n")
    assert parsed == ParsedFunction("\n    return x\n", parsed=True)


def test_parse_drops_unfinished_trailing_line():
    parsed = parse_generated_function("def f(x):\n", "    y = 2 * x\n    return (y +")
    assert parsed == ParsedFunction("    y = 2 * x\n", parsed=True)


def test_parse_handles_indented_method_with_decorator_and_multiline_signature():
    signature = "    @staticmethod\n    def m(a,\n          b):\n"
    continuation = "        return a + b\n\n    def n(self):\n        pass\n"
    parsed = parse_generated_function(signature, continuation)
    assert parsed.body == "        return a + b\n"
    assert_parses(signature, parsed)


def test_parse_keeps_docstring_line_at_column_zero():
    signature = "def f(x):\n"
    body = '    """Double x.\n\nExample at column 0:\n>>> f(1)\n"""\n    return 2 * x\n'
    parsed = parse_generated_function(signature, body + "\nprint(f(1))\n")
    assert parsed == ParsedFunction(body, parsed=True)


def test_parse_keeps_column_zero_lines_inside_brackets():
    body = "    return [\n1, 2]\n"
    assert parse_generated_function("def f():\n", body + "```\n").body == body


def test_parse_of_empty_continuation_fails():
    assert parse_generated_function("def f(x):\n", "") == ParsedFunction("", parsed=False)


def test_parse_failure_returns_cut_text():
    parsed = parse_generated_function("def f(x):\n", "    y = x +\n    return y\nprint(1)\n")
    assert parsed == ParsedFunction("    y = x +\n    return y\n", parsed=False)


def test_parse_stops_at_inconsistent_dedent():
    signature = "    def m(self):\n"
    parsed = parse_generated_function(signature, "        return 1\n  x = 2\nprint(3)\n")
    assert parsed.body == "        return 1\n"
    assert_parses(signature, parsed)


@given(st.text(alphabet=" \n\t:()[]'\"#\\xy=+1", max_size=60))
def test_parse_returns_a_prefix_that_parses(continuation):
    signature = "def f(x):\n"
    parsed = parse_generated_function(signature, continuation)
    assert continuation.startswith(parsed.body)
    if parsed.parsed:
        assert_parses(signature, parsed)


# --- stopping criterion ---------------------------------------------------


def test_end_reached_after_body_and_complete_dedented_line():
    signature = "def f(x):\n"
    assert not function_end_reached(signature, "    return x\n")
    assert not function_end_reached(signature, "    return x\n\npri")
    assert function_end_reached(signature, "    return x\n\nprint(f(1))\n")


def test_end_needs_a_body_line_first():
    assert not function_end_reached("def f(x):", "\n\n")
    assert not function_end_reached("def f(x):\n", "# note\n")


def test_end_not_reached_inside_docstring():
    signature = "    def m(self):\n"
    docstring = '        """Doc.\n\nat column 0\n'
    assert not function_end_reached(signature, docstring)
    assert function_end_reached(signature, docstring + '"""\n        return 1\n    def n(self):\n')
