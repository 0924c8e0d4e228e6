"""Identifiers as words: split a name into its word parts, and join new words in the name's own style.

A renamed identifier keeps its naming convention (snake_case, camelCase,
CapWords, UPPER_CASE, digits and underscores where they were), so a variant
changes what a name says, never how it is written.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence

# Underscore runs, digit runs, an acronym (not the capital that starts the next
# word), a word with an optional leading capital, or letters outside ASCII.
_PIECE = re.compile(r"_+|\d+|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+")


def split_identifier(name: str) -> list[str]:
    """The pieces of `name`: words, digit runs and underscore runs; "".join(pieces) == name.

    >>> split_identifier("has_close_elements"), split_identifier("parseHTTPHeader2")
    (['has', '_', 'close', '_', 'elements'], ['parse', 'HTTP', 'Header', '2'])
    """
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not an identifier")
    pieces = _PIECE.findall(name)
    return pieces if "".join(pieces) == name else [name]  # characters no piece covers: one piece


def is_word(piece: str) -> bool:
    return piece[0].isalpha()


def recase(word: str, like: str) -> str:
    """`word` (lower case) written in the case of `like`: lower, Capitalised or UPPER."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[0].isupper():
        return word[:1].upper() + word[1:]
    return word


def word_choices(name: str, alternatives: Callable[[str], Sequence[str]]) -> list[tuple[str, ...]]:
    """For each piece of `name`, the pieces it may become: itself first, then the
    alternatives of its lower-cased word written in its case. Digit and
    underscore runs have no alternatives."""
    choices = []
    for piece in split_identifier(name):
        options = [piece]
        if is_word(piece):
            options += [recase(word, piece) for word in alternatives(piece.lower()) if word != piece.lower()]
        choices.append(tuple(dict.fromkeys(options)))
    return choices


class NameProposer:
    """Draws new names for identifiers, word by word.

    Each word of a name becomes one of its alternatives or stays, with weight
    sqrt(count + 1), count being how often programmers use the word in names
    (the kept word competes on the same footing): words programmers use often
    are preferred without a few taking every draw, and each word keeps its
    meaning.
    """

    def __init__(self, alternatives: Callable[[str], Sequence[str]], word_counts: Mapping[str, int]):
        self._alternatives = alternatives
        self._word_counts = word_counts
        self._choices: dict[str, list[tuple[tuple[str, ...], list[float]]]] = {}

    def can_rename(self, name: str, fixed: Collection[str] = ()) -> bool:
        """Whether some word of `name` that is not in `fixed` (lower case) has an alternative."""
        return any(len(options) > 1 and options[0].lower() not in fixed for options, _ in self._weighted_choices(name))

    def draw(self, name: str, rng: random.Random, fixed: Collection[str] = ()) -> str:
        """One draw, keeping the words in `fixed` (lower case); may return `name` itself, when every word stays."""
        return "".join(
            options[0]
            if len(options) == 1 or options[0].lower() in fixed
            else rng.choices(options, cum_weights=weights)[0]
            for options, weights in self._weighted_choices(name)
        )

    def _weight(self, word: str) -> float:
        return math.sqrt(self._word_counts.get(word.lower(), 0) + 1)

    def _weighted_choices(self, name: str) -> list[tuple[tuple[str, ...], list[float]]]:
        if name not in self._choices:
            self._choices[name] = [
                (options, list(itertools.accumulate(self._weight(option) for option in options)))
                for options in word_choices(name, self._alternatives)
            ]
        return self._choices[name]
