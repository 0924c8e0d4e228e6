"""Text similarity between a ground-truth function x and a generation y.

The functional-memorization paper's text metrics (Sec. 3, *Similarity
metrics*): exact match, BLEU over 1-4-grams, edit similarity normalised by
|x| (Ippolito et al., 2023) and the longest common substring normalised by
|x|. Each returns a float in [0, 1], 1 meaning identical.
"""

import difflib
from collections.abc import Callable

from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rapidfuzz.distance import Levenshtein

_BLEU_WEIGHTS = (0.25, 0.25, 0.25, 0.25)

# Chen & Cherry (2014) method 1: a zero n-gram count becomes 0.1, so a pair
# with no matching 4-gram scores low instead of exactly 0. The codebleu package
# smooths its BLEU component the same way. Method 4's pseudo-count grows with
# log(hypothesis length) and would lift long, unrelated generations.
_BLEU_SMOOTHING = SmoothingFunction().method1


def _normalise_lines(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.splitlines()).strip("\n")


def exact_match(x: str, y: str) -> float:
    """1.0 if x and y are equal up to trailing spaces on lines and surrounding blank lines."""
    return float(_normalise_lines(x) == _normalise_lines(y))


def bleu(x: str, y: str) -> float:
    """Sentence-level BLEU-4 (uniform 1-4-gram weights) of y against x, over whitespace tokens.

    Whitespace tokens are what the paper's BLEU evidently used: nltk BLEU over
    them reproduces its App. E values within 0.02 on 11 of 14 generations
    (tests/test_similarity_structural.py; Examples 3, 5 and 7's targets miss:
    docs/methods/similarity.md, "App. E of the paper"), against 3 of 14 for tokens split at
    operators, which score higher (0.86 for its 0.77 on Example 1). Its
    τ_text = 0.75 is set on that scale.

    An empty generation scores 0. With fewer than four tokens the missing
    n-gram orders are smoothed, so even identical very short snippets score
    below 1.
    """
    reference, hypothesis = x.split(), y.split()
    if not hypothesis:
        return 0.0
    return float(sentence_bleu([reference], hypothesis, _BLEU_WEIGHTS, smoothing_function=_BLEU_SMOOTHING))


def edit_similarity(x: str, y: str) -> float:
    """max(0, 1 - Levenshtein(x, y) / |x|) over characters (Ippolito et al., 2023).

    Normalised by the ground truth's length, as the paper says, so it is not
    symmetric. For an empty x: 1.0 if y is empty too, else 0.0.
    """
    if not x:
        return float(not y)
    return max(0.0, 1.0 - Levenshtein.distance(x, y) / len(x))


def lcs_similarity(x: str, y: str) -> float:
    """Length of the longest common substring (contiguous) of x and y, over |x|.

    For an empty x: 1.0 if y is empty too, else 0.0.
    """
    if not x:
        return float(not y)
    matcher = difflib.SequenceMatcher(None, x, y, autojunk=False)
    return matcher.find_longest_match(0, len(x), 0, len(y)).size / len(x)


TEXT_METRICS: dict[str, Callable[[str, str], float]] = {
    "exact_match": exact_match,
    "bleu": bleu,
    "edit_similarity": edit_similarity,
    "lcs": lcs_similarity,
}
