"""The OpenAI-compatible HTTP backend: ``vllm serve``, llama.cpp's server,
``python -m leaktrace serve``, or any hosted endpoint, through ``requests``.

Each prompt is one request (a failure stays with its item), sent by at most
``concurrency`` threads; connection errors, timeouts, 429 and 5xx answers are
retried with exponential backoff; every item ends as a counted outcome with
its cause ("ok", "timeout", "connection", "http_<status>", "bad_response"),
never an exception. The API key is read from the environment variable the
config names, never from the config."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import requests

from leaktrace.models.backend import (
    BACKEND_CAPABILITIES,
    Capability,
    Completion,
    Message,
    ModelSpec,
    PromptLogprobs,
    Sampling,
)

log = logging.getLogger(__name__)

RETRIED_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class OpenAISettings:
    base_url: str  # up to and including /v1
    api_key_env: str | None = None  # the environment variable holding the key (None: no key sent)
    timeout_s: float = 60.0  # per request, connect and read
    max_retries: int = 3  # further attempts after a retryable failure
    backoff_s: float = 1.0  # wait before retry k is backoff_s * 2**k
    concurrency: int = 4  # requests in flight at once
    prompt_logprobs: bool = False  # the server gives prompt log-probabilities (echo + logprobs on completions)

    @classmethod
    def from_config(cls, config: dict) -> OpenAISettings:
        return cls(**config)


class _Failure(Exception):
    def __init__(self, cause: str, retry: bool):
        super().__init__(cause)
        self.cause, self.retry = cause, retry


class OpenAIModel:
    def __init__(self, spec: ModelSpec, settings: OpenAISettings, *, sleep: Callable[[float], None] = time.sleep):
        if spec.adapter is not None:
            raise ValueError(
                f"{spec.name_or_path}: an OpenAI-compatible server serves its adapters as models of their "
                "own; name the served adapter as the model instead of setting `adapter`"
            )
        self.spec, self.settings, self._sleep = spec, settings, sleep
        self.name = spec.name_or_path
        self.capabilities = BACKEND_CAPABILITIES["openai"] | (
            {Capability.PROMPT_LOGPROBS} if settings.prompt_logprobs else set()
        )
        self.counts: Counter = Counter()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._headers = {"Content-Type": "application/json"}
        if settings.api_key_env:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise ValueError(f"the API key variable {settings.api_key_env} named in the config is not set")
            self._headers["Authorization"] = f"Bearer {key}"

    def _session(self) -> requests.Session:
        """One session per thread (a ``requests.Session`` is not thread-safe)."""
        if not hasattr(self._local, "session"):
            self._local.session = requests.Session()
        return self._local.session

    def _post_once(self, path: str, payload: dict) -> dict:
        url = self.settings.base_url.rstrip("/") + path
        try:
            response = self._session().post(url, json=payload, headers=self._headers, timeout=self.settings.timeout_s)
        except requests.Timeout as err:
            raise _Failure(f"timeout: {type(err).__name__} after {self.settings.timeout_s}s", True) from None
        except requests.ConnectionError as err:
            raise _Failure(f"connection: {type(err).__name__} to {url}", True) from None
        except requests.RequestException as err:
            raise _Failure(f"request: {type(err).__name__}: {err}", False) from None
        if response.status_code != 200:
            raise _Failure(
                f"http_{response.status_code}: {response.text[:200]}", response.status_code in RETRIED_STATUS
            )
        try:
            body = response.json()
        except ValueError:
            raise _Failure(f"bad_response: not JSON: {response.text[:200]!r}", False) from None
        if not isinstance(body, dict):
            raise _Failure(f"bad_response: a JSON {type(body).__name__}, not an object", False)
        return body

    def _post(self, path: str, payload: dict, parse: Callable[[dict], object]):
        """``parse`` of the answer, retried with backoff, or the last
        ``_Failure``; the outcome is counted."""
        attempt = 0
        while True:
            try:
                body = self._post_once(path, payload)
                try:
                    result = parse(body)
                except (KeyError, IndexError, TypeError, ValueError) as err:
                    raise _Failure(f"bad_response: {type(err).__name__}: {err}", False) from None
            except _Failure as failure:
                if failure.retry and attempt < self.settings.max_retries:
                    self._sleep(self.settings.backoff_s * 2**attempt)
                    attempt += 1
                    continue
                self._count(failure.cause.split(":", 1)[0])
                log.warning("%s %s failed after %d attempt(s): %s", self.name, path, attempt + 1, failure.cause)
                return failure
            self._count("ok")
            return result

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.counts[outcome] += 1

    def _map(self, fn, items: Sequence) -> list:
        with ThreadPoolExecutor(max_workers=self.settings.concurrency) as pool:
            return list(pool.map(fn, items))

    def _sampling(self, sampling: Sampling) -> dict:
        payload = {
            "model": self.spec.name_or_path,
            "max_tokens": sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if sampling.seed is not None:
            payload["seed"] = sampling.seed
        if sampling.stop:
            payload["stop"] = list(sampling.stop)
        return payload

    def _answers(self, path: str, payloads: list[dict], text_of: Callable[[dict], object]) -> list[Completion]:
        def parse(body: dict) -> Completion:
            choice = body["choices"][0]
            text = text_of(choice)
            if not isinstance(text, str):
                raise TypeError(f"the answer's text is a {type(text).__name__}")
            return Completion(text, choice.get("finish_reason"))

        results = self._map(lambda payload: self._post(path, payload, parse), payloads)
        return [Completion(None, None, r.cause) if isinstance(r, _Failure) else r for r in results]

    def complete(self, prompts: Sequence[str], sampling: Sampling) -> list[Completion]:
        base = self._sampling(sampling)
        return self._answers("/completions", [{**base, "prompt": p} for p in prompts], lambda c: c["text"])

    def chat_many(self, conversations: Sequence[Sequence[Message]], sampling: Sampling) -> list[Completion]:
        base = self._sampling(sampling)
        return self._answers(
            "/chat/completions",
            [{**base, "messages": [dict(m) for m in c]} for c in conversations],
            lambda c: c["message"]["content"],
        )

    def prompt_logprobs(self, texts: Sequence[str]) -> list[PromptLogprobs]:
        """The legacy completions request for prompt log-probabilities: the
        prompt echoed with ``logprobs`` and one new token, of which only the
        tokens starting inside the prompt (``text_offset``) are kept."""
        if not self.settings.prompt_logprobs:
            raise ValueError(
                f"{self.name}: the config does not declare that this server gives prompt log-probabilities "
                "(prompt_logprobs: true)"
            )

        def parse(text: str):
            def read(body: dict) -> PromptLogprobs:
                lp = body["choices"][0]["logprobs"]
                rows = [
                    (t, p)
                    for t, p, o in zip(lp["tokens"], lp["token_logprobs"], lp["text_offset"], strict=True)
                    if o < len(text)
                ]
                if any(p is not None and not isinstance(p, int | float) for _, p in rows):
                    raise ValueError("a log-probability is not a number")
                return PromptLogprobs(
                    tuple(t for t, _ in rows), tuple(None if p is None else float(p) for _, p in rows)
                )

            return read

        payload = {"model": self.spec.name_or_path, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 0}
        results = self._map(lambda t: self._post("/completions", {**payload, "prompt": t}, parse(t)), texts)
        return [PromptLogprobs(error=r.cause) if isinstance(r, _Failure) else r for r in results]
