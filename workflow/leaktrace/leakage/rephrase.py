"""The rephrase channel: nearest neighbours by embedding, for copies that
share too few shingles for any other channel.

A sample reworded beyond renaming (statements rewritten, the docstring
dropped) or translated to another language keeps next to none of its token
n-grams, so MinHash, containment and the problem text all miss it. LLM
Decontaminator (Yang et al. 2023) finds such copies by embedding every
benchmark sample and every corpus unit, keeping each sample's top-k corpus
units by cosine similarity, and asking an LLM judge about those few. This
module is the search: two embedders behind one interface and an exact top-k
(:class:`TopK`); the judge is :mod:`leaktrace.leakage.judge`'s.

Embedders (``embed(texts, languages)`` gives one L2-normalised row a text;
``fit`` sees the benchmark side first):

- ``hf`` (:class:`HFEmbedder`): the mean-pooled last hidden state of a local
  Hugging Face model (a code model in a real run), opened as every stage
  opens models (:mod:`leaktrace.models.configured`); one forward pass per
  text, cut to the model's context.
- ``tfidf`` (:class:`TfidfEmbedder`), the model-free stand-in of the
  default and offline runs. A text is lexed (comments dropped,
  :mod:`leaktrace.leakage.lexer`) into two bags: *lexical* (identifier
  sub-tokens, camelCase and snake_case split and lowercased, one-letter
  ones dropped; keywords; number literals; short string literals; prose
  strings of 4 words or more, docstrings among them, are left out) and
  *shape* (3-grams of the token kinds: ``ID``, ``NUM``, ``STR``, keywords,
  operators; block punctuation ``{ } ; :`` dropped, so Python and C-family
  blocks read alike). Keywords and operators are mapped to one spelling
  across Python and C-family languages (``&&``/``and``, ``null``/``None``,
  ``===``/``==``, ``function``/``def``, ...). Each bag is hashed (2^20
  features, stateless, so every shard agrees), weighted by sublinear TF-IDF
  whose IDF is fitted on the benchmark side (a feature no benchmark sample
  has gets ``UNSEEN_IDF``, the weight of a feature in every sample: it still
  counts in a unit's norm, so a long unit is not near everything, but a
  renamed copy's new names do not swamp what it kept), L2-normalised, and
  the two bags joined with weights ``sqrt(LEXICAL)`` and ``sqrt(1 -
  LEXICAL)``: the cosine of two texts is ``LEXICAL`` x the lexical cosine +
  the rest x the shape cosine. The vectors stay sparse and exact: no
  dimension reduction (a projection fitted on the benchmark side would drop
  what a corpus unit has outside the benchmark's span and inflate its
  cosine; a random projection adds noise of about 1/sqrt(d) to every score).
  What it can see: names that keep their words (a translation's
  ``hasCloseElements`` against ``has_close_elements``), the builtins,
  attributes, type annotations and literals a renaming keeps, and the run of
  statement kinds a rewrite keeps. What it cannot: meaning. A copy whose
  names are random and whose statements are rewritten is found only through
  what is left (builtins, literals, shape), and any unit that uses the same
  builtins in the same shapes scores as high; a translation that renames and
  restructures too is out of its reach.

:class:`TopK` keeps each sample's ``k`` best corpus units over batches: a
batch's similarity matrix is one (sparse or dense) product, similarities are
rounded to ``DECIMALS`` places, ties are ordered by the corpus unit's key
(document id, first line, last line, unit name), so the result does not
depend on batch sizes or the order shards come in, and pairs listed in
``excluded`` (another channel already calls them duplicates) are never kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from leaktrace.leakage.lexer import keywords_for, lex
from leaktrace.settings.leakage import RephraseSettings
from leaktrace.settings.models import ModelSettings
from leaktrace.settings.score import TokenBatch

EMBEDDERS = ("tfidf", "hf")
DECIMALS = 6  # similarities are compared rounded, so ties do not hang on float summation order
LEXICAL = 0.5  # the lexical bag's share of the stand-in's cosine (the shape bag has the rest)
UNSEEN_IDF = 1.0  # the stand-in's IDF of a feature no benchmark sample has (the IDF of one every sample has)
N_FEATURES = 1 << 20
PROSE_WORDS = 4  # string literals of this many words or more (docstrings, messages) are left out


# --- settings ---------------------------------------------------------------------------------


def rephrase_settings(name: str, settings: RephraseSettings) -> RephraseSettings:
    """The scan's rephrase settings, checked: a bad value is an error naming the scan."""
    if settings.embedder not in EMBEDDERS:
        raise ValueError(
            f"leakage scan {name!r}: rephrase: unknown embedder {settings.embedder!r}; known: {', '.join(EMBEDDERS)}"
        )
    if settings.embedder == "hf" and not settings.model:
        raise ValueError(f"leakage scan {name!r}: rephrase: embedder hf needs a model (a hub id or a local path)")
    for key, least in (("top_k", 1), ("batch_size", 1), ("max_length", 2)):
        value = getattr(settings, key)
        if value is not None and value < least:
            raise ValueError(f"leakage scan {name!r}: rephrase: {key} must be an integer >= {least}, got {value}")
    return settings


# --- embedders --------------------------------------------------------------------------------


class Embedder(Protocol):
    name: str

    def fit(self, texts: list[str], languages: list[str | None]) -> None: ...

    def embed(self, texts: list[str], languages: list[str | None]) -> np.ndarray | sparse.csr_matrix: ...


_CANON = {
    "&&": "and",
    "||": "or",
    "!": "not",
    "===": "==",
    "!==": "!=",
    "none": "null",
    "nil": "null",
    "nullptr": "null",
    "undefined": "null",
    "function": "def",
    "func": "def",
    "fn": "def",
    "this": "self",
    "of": "in",
    "throw": "raise",
    "catch": "except",
    "elif": "else if",
}
_DECLARATIONS = frozenset({"let", "const", "var", "auto", "mut"})  # Python declares nothing
_BLOCK = frozenset({"{", "}", ";", ":"})
_SUBTOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_QUOTES = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|'|`)|(\"\"\"|'''|\"|'|`)$")


def subtokens(name: str) -> list[str]:
    """A name's words, lowercased: ``hasCloseElements``, ``has_close_elements`` -> has, close, elements
    (one-letter pieces and digits dropped)."""
    return [w.lower() for w in _SUBTOKEN.findall(name) if len(w) > 1 and not w.isdigit()]


def _number(text: str) -> str:
    t = text.lower().replace("_", "").rstrip("lfu")
    try:
        return repr(float(t)) if not t.startswith("0x") else str(int(t, 16))
    except ValueError:
        return t


def features(text: str, language: str | None) -> tuple[list[str], list[str]]:
    """(the lexical bag, the shape bag's 3-grams) of a text (see the module's docstring)."""
    keywords = {k.lower() for k in keywords_for(language)}
    lexical: list[str] = []
    shape: list[str] = []
    for kind, tok in lex(text, language):
        if kind == "name":
            low = tok.lower()
            if low in keywords or low in _CANON:
                if low in _DECLARATIONS:
                    continue
                for word in _CANON.get(low, low).split():
                    lexical.append("k:" + word)
                    shape.append(word)
            else:
                lexical += ["w:" + w for w in subtokens(tok)]
                shape.append("ID")
        elif kind == "number":
            lexical.append("n:" + _number(tok))
            shape.append("NUM")
        elif kind == "string":
            content = " ".join(_QUOTES.sub("", tok).split()).lower()
            if len(content.split()) >= PROSE_WORDS:
                continue
            lexical.append("s:" + content)
            shape.append("STR")
        elif tok not in _BLOCK:
            op = _CANON.get(tok, tok)
            if op.isalpha():  # &&, ||, !: the keywords and, or, not of Python
                lexical.append("k:" + op)
            shape.append(op)
    grams = ["|".join(g) for g in zip(shape, shape[1:], shape[2:], strict=False)]
    return lexical, grams


class TfidfEmbedder:
    """The model-free stand-in (see the module's docstring)."""

    name = "tfidf"

    def __init__(self, lexical: float = LEXICAL):
        from sklearn.feature_extraction.text import HashingVectorizer

        if not 0 <= lexical <= 1:
            raise ValueError(f"lexical share must be in [0, 1], got {lexical}")
        self.weights = (np.sqrt(lexical), np.sqrt(1 - lexical))
        self.hasher = HashingVectorizer(
            analyzer=lambda bag: bag, n_features=N_FEATURES, alternate_sign=False, norm=None
        )
        self.idf: list[np.ndarray] | None = None

    def _counts(self, texts: list[str], languages: list[str | None]) -> list[sparse.csr_matrix]:
        bags = [features(t, lang) for t, lang in zip(texts, languages, strict=True)]
        return [self.hasher.transform([b[i] for b in bags]).tocsr() for i in (0, 1)]

    def fit(self, texts: list[str], languages: list[str | None]) -> None:
        """The IDF of each bag over the benchmark side (smooth: ln((1 + n) / (1 + df)) + 1)."""
        n = len(texts)
        self.idf = []
        for counts in self._counts(texts, languages):
            df = np.bincount(counts.indices, minlength=N_FEATURES)
            idf = np.log((1 + n) / (1 + df)) + 1
            idf[df == 0] = UNSEEN_IDF
            self.idf.append(idf)

    def embed(self, texts: list[str], languages: list[str | None]) -> sparse.csr_matrix:
        if self.idf is None:
            raise RuntimeError("fit the stand-in embedder on the benchmark side first")
        blocks = []
        for counts, idf, weight in zip(self._counts(texts, languages), self.idf, self.weights, strict=True):
            counts = counts.astype(np.float64)
            counts.data = 1 + np.log(counts.data)  # sublinear TF
            counts = counts @ sparse.diags(idf)
            norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1))).ravel()
            scale = np.divide(weight, norms, out=np.zeros_like(norms), where=norms > 0)
            blocks.append(sparse.diags(scale) @ counts)
        joined = sparse.hstack(blocks).tocsr()
        norms = np.sqrt(np.asarray(joined.multiply(joined).sum(axis=1))).ravel()  # a text with one bag empty
        return (sparse.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ joined).tocsr()


class HFEmbedder:
    """Mean-pooled last hidden states of a Hugging Face model (one forward pass per text)."""

    name = "hf"

    def __init__(self, settings: RephraseSettings):
        from leaktrace.models.configured import language_model  # imports torch: only where a model runs

        model = ModelSettings(
            path=settings.model, dtype=settings.dtype, device=settings.device, max_length=settings.max_length
        )
        self.lm = language_model(model, None, TokenBatch(batch_size=settings.batch_size, token_budget=None))
        self.lm.progress = False
        self.batch_size = settings.batch_size

    def fit(self, texts: list[str], languages: list[str | None]) -> None:
        return None  # nothing to fit

    def embed(self, texts: list[str], languages: list[str | None]) -> np.ndarray:
        import torch

        lm = self.lm
        encoded = [lm.encode(t)[: lm.max_length - 1] for t in texts]
        encoded = [[lm.bos_id, *ids] for ids in encoded]  # a BOS first: an empty text has one token too
        order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
        hidden = lm.model.config.hidden_size
        out = np.zeros((len(texts), hidden), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                width = max(len(encoded[i]) for i in rows)
                ids = torch.full((len(rows), width), lm.pad_id, dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    ids[r, : len(encoded[i])] = torch.tensor(encoded[i])
                    mask[r, : len(encoded[i])] = 1
                device = lm.model.device
                states = lm.model(
                    input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=True
                ).hidden_states[-1]
                m = mask.to(device).unsqueeze(-1).to(states.dtype)
                pooled = (states * m).sum(1) / m.sum(1)
                out[rows] = pooled.float().cpu().numpy()
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def make_embedder(settings: RephraseSettings) -> Embedder:
    return HFEmbedder(settings) if settings.embedder == "hf" else TfidfEmbedder()


# --- top-k ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A corpus unit near a sample: ordered best first (the highest similarity, then the unit's key)."""

    neg_similarity: float
    key: tuple  # (doc_id, start_line, end_line, unit name or ""): the tie order
    info: dict  # what the caller keeps about the unit (location, language, text, ...)

    @property
    def similarity(self) -> float:
        return -self.neg_similarity

    def __lt__(self, other: Candidate) -> bool:  # the dict never takes part
        return (self.neg_similarity, self.key) < (other.neg_similarity, other.key)


class TopK:
    """Each benchmark sample's ``k`` corpus units of highest cosine similarity, over batches."""

    def __init__(self, sample_ids: list[str], bench: np.ndarray | sparse.spmatrix, k: int, chunk: int = 4096):
        if k < 1:
            raise ValueError(f"top_k must be >= 1, got {k}")
        self.ids = list(sample_ids)
        self.bench = sparse.csr_matrix(bench) if sparse.issparse(bench) else np.asarray(bench, dtype=np.float32)
        self.k = k
        self.chunk = chunk
        self.best: dict[str, list[Candidate]] = {sid: [] for sid in self.ids}
        self.position = {sid: i for i, sid in enumerate(self.ids)}

    def add(
        self,
        vectors: np.ndarray | sparse.spmatrix,
        keys: list[tuple],
        infos: list[dict],
        excluded: set[tuple[str, tuple]] | None = None,
    ) -> None:
        """Offer a batch of corpus units (rows of ``vectors``, keyed as :class:`Candidate`);
        ``excluded`` holds (sample id, unit key) pairs never to keep."""
        excluded = excluded or set()
        for start in range(0, len(keys), self.chunk):
            part = vectors[start : start + self.chunk]
            chunk_keys = keys[start : start + self.chunk]
            sims = self.bench @ part.T
            sims = sims.toarray() if sparse.issparse(sims) else np.asarray(sims)
            sims = np.round(sims.astype(np.float64), DECIMALS)
            column = {key: c for c, key in enumerate(chunk_keys)}
            for sid, key in excluded:
                if key in column and sid in self.best:
                    sims[self.position[sid], column[key]] = -np.inf
            take = min(self.k, len(chunk_keys))
            for r, sid in enumerate(self.ids):
                row = sims[r]
                kept = self.best[sid]
                floor = kept[-1].similarity if len(kept) >= self.k else -np.inf
                # every unit at or above the chunk's k-th best (ties at the boundary all come along)
                kth = np.partition(row, -take)[-take] if take else np.inf
                chosen = np.flatnonzero((row >= max(kth, floor)) & np.isfinite(row)).tolist()
                if not chosen:
                    continue
                kept += [Candidate(-float(row[c]), chunk_keys[c], infos[start + c]) for c in chosen]
                kept.sort()
                del kept[self.k :]

    def rows(self) -> list[dict]:
        """One row a kept (sample, unit): its similarity and rank (1: the nearest), samples in input order."""
        return [
            {"sample_id": sid, "similarity": c.similarity, "rank": rank, **c.info}
            for sid in self.ids
            for rank, c in enumerate(self.best[sid], 1)
        ]


def merge(rows: list[dict], k: int) -> list[dict]:
    """Each sample's ``k`` best of rows from several shards (each a shard's own top-k), ranked again
    in :class:`TopK`'s order (the highest similarity, then document id, lines, unit name)."""
    by_sample: dict[str, list[dict]] = {}
    for r in rows:
        by_sample.setdefault(r["sample_id"], []).append(r)
    out = []
    for sid in sorted(by_sample):
        ranked = sorted(
            by_sample[sid],
            key=lambda r: (-r["similarity"], r["doc_id"], r["start_line"], r["end_line"], r["unit"] or ""),
        )
        out += [{**r, "rank": rank} for rank, r in enumerate(ranked[:k], 1)]
    return out


def unit_key(doc_id: str, start_line: int, end_line: int, unit: str | None) -> tuple:
    return (doc_id, start_line, end_line, unit or "")


# --- the judge --------------------------------------------------------------------------------


def judge_candidates(rows: list[dict], model, template: str, bench_text: dict[str, str], max_new_tokens: int = 16):
    """Ask the judge (:func:`leaktrace.leakage.judge.judge_pair`) about every candidate: its
    duplicate labels make a "rephrase" leak; any other label, or none it can read, does not."""
    from leaktrace.leakage.judge import judge_pair

    for r in rows:
        verdict = judge_pair(
            model, template, bench_text[r["sample_id"]], r["text"], r["location"], max_new_tokens=max_new_tokens
        )
        r["judge_label"] = verdict.label
        r["duplicate"] = verdict.duplicate
        r["leak"] = "rephrase" if verdict.duplicate else None
    return rows


def unverified(rows: list[dict]) -> list[dict]:
    """Candidates no judge saw: reported with their similarity, never counted as leaks."""
    return [{**r, "judge_label": None, "duplicate": None, "leak": None} for r in rows]
