"""The response cache: every LLM call (completion, chat, prompt
log-probabilities) is stored under ``results/<run>/cache/`` keyed by the
model (backend, id or path, revision, adapter, dtype), the call's kind, its
input and its sampling parameters, so a re-run or a resumed run never asks
twice, and never even loads the model when every answer is cached.

One JSON file per key, written to a temporary file and renamed into place:
concurrent writers of one key write the same bytes and the rename is atomic,
so readers see a whole answer or none. Answers are stored after each batch,
so a killed job loses at most the batch in flight. Failed calls are not
stored: a re-run asks again."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from leaktrace.models.backend import Capability, Completion, Message, ModelSpec, PromptLogprobs, Sampling, TextModel

# Files of a local model or adapter directory larger than this enter its
# fingerprint by name and size only (hashing multi-gigabyte weights on every run costs minutes).
HASHED_BYTES = 64 << 20


def directory_fingerprint(path: str | None) -> str | None:
    """A content hash of a local model or adapter directory (a retrained
    adapter at the same path gets other keys); a hub id is its own name."""
    if path is None or not Path(path).is_dir():
        return path
    digest = hashlib.sha256()
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file()):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path).as_posix()}\0{size}\0".encode())
        if size <= HASHED_BYTES:
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()


def model_identity(spec: ModelSpec) -> dict:
    """What of a model spec decides its answers (the device does not)."""
    return {
        "backend": spec.backend,
        "model": spec.name_or_path,
        "model_files": directory_fingerprint(spec.name_or_path),
        "revision": spec.revision,
        "adapter": directory_fingerprint(spec.adapter),
        "dtype": spec.dtype,
    }


class ResponseCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def key(self, identity: dict, kind: str, request: object, sampling: Sampling | None) -> tuple[str, dict]:
        record = {
            "model": identity,
            "kind": kind,
            "request": request,
            "sampling": None if sampling is None else sampling.as_dict(),
        }
        text = json.dumps(record, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest(), record

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))["response"]
        except FileNotFoundError:
            return None

    def put(self, key: str, record: dict, response: dict) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({**record, "response": response}, f, sort_keys=True, ensure_ascii=False)
        os.replace(tmp, path)


class CachedModel:
    """A ``TextModel`` answered from the cache where it can; the backend is
    opened (``open_model``) on the first miss only. ``counts`` tallies cache
    hits and each asked call's outcome ("ok", "timeout", ...)."""

    def __init__(
        self,
        spec: ModelSpec,
        capabilities: frozenset[Capability],
        open_model: Callable[[], TextModel],
        cache: ResponseCache,
        *,
        batch_size: int = 16,
    ):
        self.spec, self.capabilities, self._open, self.cache = spec, capabilities, open_model, cache
        self.name = spec.name_or_path if spec.adapter is None else f"{spec.name_or_path}+{spec.adapter}"
        self.batch_size = batch_size
        self.counts: Counter = Counter()
        self._model: TextModel | None = None
        self._identity = model_identity(spec)

    @property
    def model(self) -> TextModel:
        if self._model is None:
            self._model = self._open()
        return self._model

    def _cached(
        self,
        kind: str,
        requests: Sequence,
        sampling: Sampling | None,
        ask: Callable[[list], list],
        load: Callable[[dict], object],
    ) -> list:
        keyed = [self.cache.key(self._identity, kind, r, sampling) for r in requests]
        answers: dict[str, object] = {}
        for key, _ in keyed:
            if key not in answers and (hit := self.cache.get(key)) is not None:
                answers[key] = load(hit)
                self.counts["cached"] += 1
        missing = list(
            {
                key: (record, request)
                for (key, record), request in zip(keyed, requests, strict=True)
                if key not in answers
            }.items()
        )
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            for (key, (record, _)), answer in zip(batch, ask([request for _, (_, request) in batch]), strict=True):
                answers[key] = answer
                self.counts[answer.outcome] += 1
                if answer.ok:
                    self.cache.put(key, record, asdict(answer))
        return [answers[key] for key, _ in keyed]

    def complete(self, prompts: Sequence[str], sampling: Sampling) -> list[Completion]:
        return self._cached(
            "complete",
            list(prompts),
            sampling,
            lambda batch: self.model.complete(batch, sampling),
            lambda d: Completion(**d),
        )

    def chat_many(self, conversations: Sequence[Sequence[Message]], sampling: Sampling) -> list[Completion]:
        requests = [[dict(m) for m in c] for c in conversations]
        return self._cached(
            "chat", requests, sampling, lambda batch: self.model.chat_many(batch, sampling), lambda d: Completion(**d)
        )

    def prompt_logprobs(self, texts: Sequence[str]) -> list[PromptLogprobs]:
        return self._cached(
            "prompt_logprobs",
            list(texts),
            None,
            lambda batch: self.model.prompt_logprobs(batch),
            lambda d: PromptLogprobs(tuple(d["tokens"]), tuple(d["logprobs"]), d["error"]),
        )
