"""``python -m leaktrace serve MODEL``: a small OpenAI-compatible server over
the transformers backend (``/v1/models``, ``/v1/completions`` with ``echo``
and ``logprobs``, ``/v1/chat/completions``), on the loopback interface by
default. It is what the HTTP client is tested against, and a way to put a
local model behind the same interface as a hosted one.

Requests run one at a time through one model (a lock), so answers do not
depend on what else was asked. Where OpenAI gives the first prompt token no
log-probability, this server gives log p(token | BOS). ``logprobs`` returns
the chosen tokens' log-probabilities only (``logprobs: 0``)."""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from leaktrace.models.backend import Sampling

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 16  # OpenAI's default for completions


class RequestError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _field(body: dict, name: str, kinds: tuple[type, ...], default=None):
    value = body.get(name, default)
    if value is not None and (not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds):
        raise RequestError(400, f"`{name}` must be {' or '.join(k.__name__ for k in kinds)}")
    return value


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, lm, name: str, host: str, port: int, *, api_key: str | None = None):
        super().__init__((host, port), _Handler)
        self.lm, self.served_name, self.api_key = lm, name, api_key
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    # --- the work behind each endpoint ---

    def _sampling(self, body: dict) -> Sampling:
        stop = _field(body, "stop", (str, list))
        stop = [stop] if isinstance(stop, str) else stop or []
        if not all(isinstance(s, str) for s in stop):
            raise RequestError(400, "`stop` must be a string or a list of strings")
        if _field(body, "n", (int,), 1) != 1:
            raise RequestError(400, "only n=1 is supported")
        try:
            return Sampling(
                max_new_tokens=_field(body, "max_tokens", (int,), DEFAULT_MAX_TOKENS),
                temperature=float(_field(body, "temperature", (int, float), 1.0)),
                top_p=float(_field(body, "top_p", (int, float), 1.0)),
                seed=_field(body, "seed", (int,)),
                stop=tuple(stop),
            )
        except ValueError as err:
            raise RequestError(400, str(err)) from None

    def _token_logprobs(self, prompt: str, text: str, echo: bool) -> dict:
        """The chosen tokens' log-probabilities of the prompt's and the
        completion's tokens (each tokenised on its own, as generation saw
        them); ``text_offset`` counts characters of prompt + text."""
        prompt_ids, text_ids = self.lm.encode(prompt), self.lm.encode(text)
        logprobs = self.lm.sequence_logprobs(prompt_ids + text_ids).tolist()
        offsets = [len(self.lm.decode(prompt_ids[:k])) for k in range(len(prompt_ids))]
        offsets += [len(prompt) + len(self.lm.decode(text_ids[:k])) for k in range(len(text_ids))]
        tokens = [self.lm.decode([t]) for t in prompt_ids + text_ids]
        keep = slice(0, None) if echo else slice(len(prompt_ids), None)
        return {
            "tokens": tokens[keep],
            "token_logprobs": logprobs[keep],
            "text_offset": offsets[keep],
            "top_logprobs": None,
        }

    def completions(self, body: dict) -> dict:
        prompts = _field(body, "prompt", (str, list))
        prompts = [prompts] if isinstance(prompts, str) else prompts
        if not prompts or not all(isinstance(p, str) for p in prompts):
            raise RequestError(400, "`prompt` must be a string or a non-empty list of strings")
        echo = bool(_field(body, "echo", (bool,), False))
        logprobs = _field(body, "logprobs", (int,))
        if logprobs not in (None, 0):
            raise RequestError(400, "only logprobs=0 (the chosen tokens') is supported")
        zero = body.get("max_tokens") == 0
        if zero and not echo:
            raise RequestError(400, "max_tokens 0 needs echo")
        sampling = self._sampling({**body, "max_tokens": 1} if zero else body)
        for p in prompts:
            room = self.lm.max_length - 1 - len(self.lm.encode(p))
            if room < sampling.max_new_tokens and not zero:
                raise RequestError(400, f"prompt and max_tokens exceed the model's {self.lm.max_length}-token context")
        answers = [None] * len(prompts) if zero else self.lm.complete(prompts, sampling)
        choices = []
        for i, (prompt, answer) in enumerate(zip(prompts, answers, strict=True)):
            text = "" if answer is None else answer.text
            choices.append(
                {
                    "index": i,
                    "text": prompt + text if echo else text,
                    "logprobs": None if logprobs is None else self._token_logprobs(prompt, text, echo),
                    "finish_reason": "length" if answer is None else answer.finish_reason,
                }
            )
        return {"object": "text_completion", "choices": choices}

    def chat_completions(self, body: dict) -> dict:
        messages = _field(body, "messages", (list,))
        if not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        ):
            raise RequestError(400, "`messages` must be a non-empty list of {role, content} strings")
        if body.get("logprobs"):
            raise RequestError(400, "logprobs are offered on /v1/completions only")
        try:
            [answer] = self.lm.chat_many([messages], self._sampling(body))
        except ValueError as err:  # no chat template
            raise RequestError(400, str(err)) from None
        return {
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer.text},
                    "finish_reason": answer.finish_reason,
                }
            ],
        }


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        log.info("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "code": status}})

    def _authorised(self) -> bool:
        if self.server.api_key is None or self.headers.get("Authorization") == f"Bearer {self.server.api_key}":
            return True
        self._error(401, "missing or wrong API key")
        return False

    def do_GET(self):
        if not self._authorised():
            return
        if self.path.rstrip("/") != "/v1/models":
            return self._error(404, f"no such endpoint {self.path}")
        self._send(
            200,
            {"object": "list", "data": [{"id": self.server.served_name, "object": "model", "owned_by": "leaktrace"}]},
        )

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self._authorised():
            return
        route = {"/v1/completions": self.server.completions, "/v1/chat/completions": self.server.chat_completions}
        handler = route.get(self.path.rstrip("/"))
        if handler is None:
            return self._error(404, f"no such endpoint {self.path}")
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise RequestError(400, "the request body must be a JSON object")
            if body.get("model") != self.server.served_name:
                raise RequestError(
                    404, f"model {body.get('model')!r} is not served here ({self.server.served_name!r} is)"
                )
            with self.server.lock:
                answer = handler(body)
        except json.JSONDecodeError as err:
            return self._error(400, f"the request body is not JSON: {err}")
        except RequestError as err:
            return self._error(err.status, str(err))
        except Exception as err:  # the server outlives any one request
            log.exception("request failed")
            return self._error(500, f"{type(err).__name__}: {err}")
        self._send(
            200,
            {
                "id": f"leaktrace-{time.monotonic_ns()}",
                "created": int(time.time()),
                "model": self.server.served_name,
                **answer,
            },
        )


def serve(
    spec,
    *,
    name: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    chat_template: str | None = None,
    api_key_env: str | None = None,
    max_length: int | None = None,
) -> None:
    """Load the model and answer until interrupted; the address (with the
    port the system chose for port 0) is logged as ``serving NAME at URL``."""
    import os

    from leaktrace.models.hf import HFLanguageModel

    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"{host} is not a loopback address: pass --allow-remote to serve beyond this machine")
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if not api_key:
            raise ValueError(f"the API key variable {api_key_env} is not set")
    lm = HFLanguageModel(spec, max_length=max_length, progress=False)
    if chat_template is not None:
        lm.tokenizer.chat_template = chat_template
    server = ModelServer(lm, name or spec.name_or_path, host, port, api_key=api_key)
    log.info("serving %s at %s", server.served_name, server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
