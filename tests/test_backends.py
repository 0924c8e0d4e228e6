"""The LLM backends: the OpenAI-compatible client against a real local
``leaktrace serve`` server on the shipped tiny model (same answers as the
transformers backend), its bad-input outcomes (server down, slow, garbage),
the response cache, backend selection by capability, and the vLLM adapter
against a stand-in engine bound to vLLM's real call signatures."""

import inspect
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaktrace.cli import main
from leaktrace.detect.registry import FAMILIES
from leaktrace.models.backend import Capability, Completion, ModelSpec, PromptLogprobs, Sampling
from leaktrace.models.cache import CachedModel, ResponseCache
from leaktrace.models.hf import HFLanguageModel
from leaktrace.models.openai_http import OpenAIModel, OpenAISettings
from leaktrace.models.select import METHOD_NEEDS, BackendError, method_needs, open_model, select_backend
from leaktrace.models.serve import ModelServer
from leaktrace.models.vllm_engine import VLLMApi, VLLMModel, VLLMSettings

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "resources" / "models" / "leaktrace-tiny")
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
PROMPTS = ["def add(a, b):\n", "import os\n\ndef main():\n"]
GREEDY = Sampling(max_new_tokens=12)


@pytest.fixture(scope="module")
def lm():
    """The tiny model on one torch thread: with the server's thread and this
    one both running it, two threads each leave the other's thread pool
    spinning on a 2-core machine (seconds per call instead of milliseconds)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = HFLanguageModel(ModelSpec(TINY), batch_size=4, max_length=256, progress=False)
    model.tokenizer.chat_template = TEMPLATE
    yield model
    torch.set_num_threads(threads)


def _start(server: ThreadingHTTPServer):
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture(scope="module")
def served(lm):
    server = _start(ModelServer(lm, "tiny", "127.0.0.1", 0))
    yield server
    server.shutdown()
    server.server_close()


def client(url: str, **settings) -> OpenAIModel:
    return OpenAIModel(
        ModelSpec("tiny", backend="openai"),
        OpenAISettings(base_url=url, **{"timeout_s": 30, "prompt_logprobs": True, **settings}),
        sleep=lambda s: None,
    )


def test_client_against_the_server_answers_as_the_transformers_backend(lm, served):
    remote = client(served.url)
    stop = Sampling(max_new_tokens=16, stop=("\n",))
    assert remote.complete(PROMPTS, GREEDY) == lm.complete(PROMPTS, GREEDY)
    stopped = remote.complete(PROMPTS, stop)
    assert stopped == lm.complete(PROMPTS, stop) and all("\n" not in c.text for c in stopped)
    chat = [
        [{"role": "user", "content": "def add(a, b):"}],
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "x = 1"}],
    ]
    assert remote.chat_many(chat, GREEDY) == lm.chat_many(chat, GREEDY)
    sampled = Sampling(max_new_tokens=8, temperature=1.0, seed=7)
    assert remote.complete(PROMPTS[:1], sampled) == lm.complete(PROMPTS[:1], sampled)  # seeded: repeatable
    for got, want in zip(remote.prompt_logprobs(PROMPTS), lm.prompt_logprobs(PROMPTS), strict=True):
        assert got.tokens == want.tokens and got.tokens
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-5)  # batched with others, or alone
    assert remote.counts == {"ok": 2 + 2 + 2 + 1 + 2}


def test_api_key_comes_from_the_named_variable(served, monkeypatch):
    served.api_key = "s3cret"
    try:
        monkeypatch.delenv("LT_TEST_KEY", raising=False)
        with pytest.raises(ValueError, match="LT_TEST_KEY"):
            client(served.url, api_key_env="LT_TEST_KEY")
        [refused] = client(served.url).complete(PROMPTS[:1], GREEDY)
        assert refused.outcome == "http_401" and refused.text is None
        monkeypatch.setenv("LT_TEST_KEY", "s3cret")
        [answered] = client(served.url, api_key_env="LT_TEST_KEY").complete(PROMPTS[:1], GREEDY)
        assert answered.ok
    finally:
        served.api_key = None


class _BadServer(BaseHTTPRequestHandler):
    """Answers by the first path segment: slow, garbage, shapeless, error."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        mode = self.path.split("/")[1]
        self.server.hits[mode] = self.server.hits.get(mode, 0) + 1
        if mode == "slow":
            time.sleep(0.5)
        body, status = {
            "garbage": (b"<html>busy</html>", 200),
            "shapeless": (b'{"choices": []}', 200),
            "error": (b"overloaded", 503),
            "slow": (b"{}", 200),
        }[mode]
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def bad_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BadServer)
    server.daemon_threads, server.hits = True, {}
    yield _start(server)
    server.shutdown()
    server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_down_slow_and_garbage_servers_are_counted_outcomes_with_their_cause(bad_server):
    host, port = bad_server.server_address[:2]
    waits = []
    down = OpenAIModel(
        ModelSpec("tiny", backend="openai"),
        OpenAISettings(base_url=f"http://127.0.0.1:{_free_port()}/v1", max_retries=2, backoff_s=0.5),
        sleep=waits.append,
    )
    answers = down.complete(PROMPTS[:2], GREEDY)
    assert [a.outcome for a in answers] == ["connection", "connection"] and all(a.text is None for a in answers)
    assert sorted(waits) == [0.5, 0.5, 1.0, 1.0] and down.counts == {"connection": 2}

    slow = client(f"http://{host}:{port}/slow/v1", timeout_s=0.1, max_retries=1)
    [late] = slow.complete(PROMPTS[:1], GREEDY)
    assert late.outcome == "timeout" and "0.1s" in late.error and bad_server.hits["slow"] == 2

    for mode, outcome, asked in [
        ("garbage", "bad_response", 1),
        ("shapeless", "bad_response", 1),
        ("error", "http_503", 3),
    ]:
        remote = client(f"http://{host}:{port}/{mode}/v1", max_retries=2)
        [answer] = remote.chat_many([[{"role": "user", "content": "hi"}]], GREEDY)
        [scores] = remote.prompt_logprobs(["x = 1"])
        assert answer.outcome == outcome and scores.outcome == outcome and remote.counts == {outcome: 2}
        assert bad_server.hits[mode] == 2 * asked
        bad_server.hits[mode] = 0


def test_serve_stays_on_loopback_unless_told():
    assert main(["serve", TINY, "--host", "0.0.0.0"]) == 2  # refused before any model is loaded


@pytest.mark.slow  # a process of its own: seconds to import torch and transformers
def test_serve_command_answers_on_a_free_port(tmp_path):
    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "leaktrace",
            "serve",
            TINY,
            "--name",
            "tiny",
            "--port",
            "0",
            "--chat-template",
            str(template),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        for line in process.stderr:
            if "serving tiny at " in line:
                url = line.rsplit(" ", 1)[1].strip()
                break
        assert url.startswith("http://127.0.0.1:")
        [reply] = client(url).chat_many([[{"role": "user", "content": "hi"}]], GREEDY)
        assert reply.ok and reply.finish_reason in ("stop", "length")
    finally:
        process.terminate()
        process.wait(timeout=10)


class _Counting:
    """A backend stand-in that answers ``prompt|max_new_tokens`` and records each batch it is asked."""

    def __init__(self, fail_on_batch: int | None = None):
        self.batches, self.fail_on_batch = [], fail_on_batch

    def complete(self, prompts, sampling):
        self.batches.append(list(prompts))
        if len(self.batches) == self.fail_on_batch:
            raise KeyboardInterrupt  # the job is killed mid-run
        return [
            Completion(f"{p}|{sampling.max_new_tokens}", "length")
            if p != "bad"
            else Completion(None, None, "timeout: x")
            for p in prompts
        ]

    def prompt_logprobs(self, texts):
        self.batches.append(list(texts))
        return [PromptLogprobs(("a",), (-1.5,)) for _ in texts]


def _cached(root, inner, spec=ModelSpec(TINY), batch_size=2):
    opened = []

    def open_model():
        opened.append(1)
        return inner

    return CachedModel(spec, frozenset(Capability), open_model, ResponseCache(root), batch_size=batch_size), opened


def test_cache_never_asks_twice_and_a_killed_job_loses_one_batch(tmp_path):
    prompts = ["a", "b", "c", "a", "d"]
    model, _ = _cached(tmp_path / "one", _Counting())
    first = model.complete(prompts, GREEDY)
    assert [c.text for c in first] == [f"{p}|12" for p in prompts] and model.counts == {"ok": 4}
    again, opened = _cached(tmp_path / "one", _Counting())
    assert again.complete(prompts, GREEDY) == first and again.counts == {"cached": 4} and not opened
    assert [c.text for c in again.complete(["a"], Sampling(max_new_tokens=5))] == ["a|5"]  # other sampling, other key
    other_bytes = _cached(tmp_path / "two", _Counting())[0]
    other_bytes.complete(prompts, GREEDY)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.json"))
    assert all(
        (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes()
        for f in sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*.json"))
    )
    assert len(files) == 5

    killed, _ = _cached(tmp_path / "killed", _Counting(fail_on_batch=2))
    with pytest.raises(KeyboardInterrupt):
        killed.complete(["p1", "p2", "p3", "p4"], GREEDY)
    resumed_inner = _Counting()
    resumed, _ = _cached(tmp_path / "killed", resumed_inner)
    resumed.complete(["p1", "p2", "p3", "p4"], GREEDY)
    assert resumed_inner.batches == [["p3", "p4"]]

    failing_inner = _Counting()
    failing, _ = _cached(tmp_path / "fail", failing_inner)
    assert failing.complete(["bad", "ok"], GREEDY)[0].outcome == "timeout" and failing.counts == {"timeout": 1, "ok": 1}
    failing.complete(["bad", "ok"], GREEDY)
    assert failing_inner.batches == [["bad", "ok"], ["bad"]]  # a failure is asked again, an answer never
    assert failing.prompt_logprobs(["x"]) == failing.prompt_logprobs(["x"]) == [PromptLogprobs(("a",), (-1.5,))]


def test_cache_writers_of_one_key_at_once_leave_whole_files(tmp_path):
    prompts = [f"p{i}" for i in range(40)]
    models = [_cached(tmp_path, _Counting(), batch_size=5)[0] for _ in range(4)]
    threads = [threading.Thread(target=m.complete, args=(prompts, GREEDY)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list(tmp_path.rglob("*"))
    assert not [f for f in files if f.name.startswith(".tmp-")]
    assert sorted(json.loads(f.read_text())["response"]["text"] for f in files if f.is_file()) == sorted(
        f"{p}|12" for p in prompts
    )


def test_cache_key_follows_the_adapter_contents(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"epoch 1")
    spec = ModelSpec(TINY, adapter=str(adapter))
    model, _ = _cached(tmp_path / "cache", _Counting(), spec)
    model.complete(["a"], GREEDY)
    (adapter / "adapter_model.safetensors").write_bytes(b"epoch 2")  # retrained in place
    inner = _Counting()
    _cached(tmp_path / "cache", inner, spec)[0].complete(["a"], GREEDY)
    assert inner.batches == [["a"]]


def test_open_model_goes_through_the_cache_to_the_configured_backend(lm, served, tmp_path):
    role = {"backend": "openai", "model": "tiny", "openai": {"base_url": served.url, "prompt_logprobs": True}}
    model = open_model(role, {Capability.CHAT, Capability.PROMPT_LOGPROBS}, "the test judge", tmp_path)
    assert model.complete(PROMPTS[:2], GREEDY) == lm.complete(PROMPTS[:2], GREEDY)
    assert model.complete(PROMPTS[:2], GREEDY) and model.counts == {"ok": 2, "cached": 2}


def test_backend_selection_names_what_is_missing():
    vllm = {"backend": "vllm", "model": "m"}
    openai = {"backend": "openai", "model": "m", "openai": {"base_url": "http://x/v1"}}
    hf = {"backend": "transformers", "model": "m"}
    needs = method_needs(["loss", "min_k_plus_plus"])
    with pytest.raises(BackendError, match=r"next_token_distribution.*Backends that can: transformers$"):
        select_backend([vllm, openai], needs, "scoring for min_k_plus_plus")
    assert select_backend([vllm, hf], needs, "scoring") is hf
    assert select_backend([vllm, hf], method_needs(["srdetection_blackbox"]), "black-box") is vllm
    with pytest.raises(BackendError, match="prompt_logprobs"):
        select_backend([openai], method_needs(["loss"]), "loss")
    declared = {**openai, "openai": {**openai["openai"], "prompt_logprobs": True}}
    assert select_backend([declared], method_needs(["loss"]), "loss") is declared
    assert set(METHOD_NEEDS) == set(FAMILIES)


# --- vLLM: a stand-in engine whose every call is bound to vLLM's recorded signatures ---

VLLM = json.loads((Path(__file__).parent / "data" / "vllm_api.json").read_text())


def _signature(entries) -> inspect.Signature:
    kinds = inspect.Parameter
    return inspect.Signature(
        [kinds(e["name"], getattr(kinds, e["kind"]), default=None if e["default"] else kinds.empty) for e in entries]
    )


class _StandIn:
    """Records each call after binding it to the real signature; raises TypeError as vLLM would on a wrong one."""

    calls: list = []

    @classmethod
    def bind(cls, name, args, kwargs):
        bound = _signature(VLLM[name]).bind(*args, **kwargs)
        cls.calls.append((name, bound.arguments))
        return bound.arguments


class _LLM(_StandIn):
    def __init__(self, *args, **kwargs):
        arguments = self.bind("LLM.__init__", args, kwargs)
        engine_args = {f["name"] for f in VLLM["EngineArgs"]}
        unknown = set(arguments.get("kwargs", {})) - engine_args
        assert not unknown, f"LLM(**kwargs) passes these to EngineArgs, which has no {unknown}"

    def _outputs(self, prompts, params, lora):
        out = []
        for p in prompts:
            text = f"{p}/{params.kwargs['max_tokens']}/{lora.kwargs['lora_int_id'] if lora else 0}"
            plp = [None] + [{i: SimpleNamespace(logprob=-float(i), decoded_token=f"t{i}")} for i in (5, 6)]
            out.append(
                SimpleNamespace(
                    outputs=[SimpleNamespace(text=text, finish_reason="stop")],
                    prompt_token_ids=[1, 5, 6],
                    prompt_logprobs=plp,
                )
            )
        return out

    def generate(self, *args, **kwargs):
        a = self.bind("LLM.generate", args, kwargs)
        return self._outputs(a["prompts"], a["sampling_params"], a.get("lora_request"))

    def chat(self, *args, **kwargs):
        a = self.bind("LLM.chat", args, kwargs)
        return self._outputs([m[-1]["content"] for m in a["messages"]], a["sampling_params"], a.get("lora_request"))


class _Params(_StandIn):
    def __init__(self, *args, **kwargs):
        self.kwargs = self.bind(self.record, args, kwargs)


class _SamplingParams(_Params):
    record = "SamplingParams"


class _LoRARequest(_Params):
    record = "LoRARequest"


def test_vllm_adapter_calls_the_engine_with_its_real_signatures(tmp_path):
    _StandIn.calls.clear()
    adapters = [tmp_path / "epoch-1", tmp_path / "epoch-3"]
    for a in adapters:
        a.mkdir()
    api = VLLMApi(_LLM, _SamplingParams, _LoRARequest)
    spec = ModelSpec("org/base", adapter=str(adapters[0]), dtype="bfloat16", revision="abc123", backend="vllm")
    settings = VLLMSettings(tensor_parallel_size=2, gpu_memory_utilization=0.5, max_model_len=2048, max_loras=2)
    model = VLLMModel(spec, settings, api=api)
    init = _StandIn.calls[0][1]
    assert init["model"] == "org/base" and init["revision"] == "abc123" and init["dtype"] == "bfloat16"
    assert init["tensor_parallel_size"] == 2 and init["gpu_memory_utilization"] == 0.5
    assert init["kwargs"] == {"max_model_len": 2048, "enable_lora": True, "max_lora_rank": 16, "max_loras": 2}
    sampled = Sampling(max_new_tokens=9, temperature=0.8, top_p=0.9, seed=3, stop=("\n\n",))
    assert model.complete(["p", "q"], sampled) == [Completion("p/9/1", "stop"), Completion("q/9/1", "stop")]
    params = next(c[1] for c in reversed(_StandIn.calls) if c[0] == "SamplingParams")
    assert params == {"n": 1, "max_tokens": 9, "temperature": 0.8, "top_p": 0.9, "seed": 3, "stop": ["\n\n"]}
    other = model.with_adapter(str(adapters[1]))
    assert other.engine is model.engine  # one engine, many adapters
    assert other.chat_many([[{"role": "user", "content": "u"}]], GREEDY) == [Completion("u/12/2", "stop")]
    assert model.with_adapter(str(adapters[0]))._lora is model._lora
    assert model.with_adapter(None).complete(["p"], GREEDY) == [Completion("p/12/0", "stop")]
    assert model.prompt_logprobs(["x"]) == [PromptLogprobs(("t5", "t6"), (-5.0, -6.0))]
    assert sum(c[0] == "LLM.__init__" for c in _StandIn.calls) == 1
    with pytest.raises(ValueError, match="without LoRA"):
        VLLMModel(ModelSpec("org/base", backend="vllm"), VLLMSettings(), api=api).with_adapter(str(adapters[0]))


@pytest.mark.skipif(
    not os.environ.get("LEAKTRACE_VLLM_WHEEL"), reason="set LEAKTRACE_VLLM_WHEEL to a downloaded vllm wheel"
)
def test_recorded_vllm_signatures_are_those_of_the_wheel():
    from vllm_api import read_wheel

    wheel = Path(os.environ["LEAKTRACE_VLLM_WHEEL"])
    assert wheel.name == VLLM["wheel"]
    assert read_wheel(wheel) == {k: v for k, v in VLLM.items() if k not in ("version", "wheel", "sha256")}


def test_the_schema_takes_a_model_spec_per_role_and_never_a_key():
    import yaml
    from snakemake.utils import validate

    schema = str(ROOT / "config" / "schema.yaml")
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    validate(config, schema, set_default=True)
    assert config["llm"] == {"cache": True, "generator": None, "judge": None, "variant_llm": None}
    config["llm"]["judge"] = {
        "backend": "openai",
        "model": "qwen",
        "openai": {"base_url": "http://127.0.0.1:8000/v1", "api_key_env": "JUDGE_KEY"},
    }
    config["llm"]["generator"] = {"backend": "vllm", "vllm": {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.8}}
    validate(config, schema, set_default=True)
    for bad in [
        {"backend": "openai", "model": "qwen"},  # no base_url
        {"backend": "openai", "model": "q", "openai": {"base_url": "http://h/v1", "api_key": "sk-123"}},
        {"backend": "tgi", "model": "m"},
        {"backend": "vllm", "vllm": {"gpu_memory_utilization": 1.5}},
    ]:
        with pytest.raises(Exception, match="not valid|Error validating"):
            validate({**config, "llm": {"judge": bad}}, schema, set_default=True)


def test_generating_stages_run_through_the_generator_role_and_match_transformers(lm, served, tmp_path):
    from leaktrace.detect.srdetection_blackbox import continuation_overlaps
    from leaktrace.models.configured import generation_model
    from leaktrace.settings.llm import LlmRole
    from leaktrace.settings.models import ModelSettings
    from leaktrace.settings.score import TokenBatch

    base, batch = ModelSettings(TINY, "float32", "cpu", max_length=256), TokenBatch(batch_size=4, token_budget=None)
    assert isinstance(generation_model(base, None, batch, None, None, "t"), HFLanguageModel)  # the default
    role = LlmRole.from_flag(json.dumps({"backend": "openai", "model": "tiny", "openai": {"base_url": served.url}}))
    texts = [("a", 0, "def add(a, b):\n    return a + b\n"), ("b", 0, "def is_even(n):\n    return n % 2 == 0\n")]
    direct = continuation_overlaps(lm, texts, prefix_fraction=0.5, ngram=2, max_new_tokens=6)
    remote = generation_model(base, None, batch, role, tmp_path, "black-box")
    assert continuation_overlaps(remote, texts, prefix_fraction=0.5, ngram=2, max_new_tokens=6) == direct
    again = generation_model(base, None, batch, role, tmp_path, "black-box")
    assert continuation_overlaps(again, texts, prefix_fraction=0.5, ngram=2, max_new_tokens=6) == direct
    assert again.model.counts == {"cached": 2}
    with pytest.raises(BackendError, match="adapters"):  # a served model has no adapter to put on
        generation_model(base, "some/adapter", batch, role, tmp_path, "counterfactual (target)")
    assert remote._cut("abcdef", lambda text: "c" in text) == lm.decode(
        lm.encode("abcdef")[: next(k for k in range(1, 7) if "c" in lm.decode(lm.encode("abcdef")[:k]))]
    )


def test_vllm_roles_share_one_engine_across_adapters(tmp_path, monkeypatch):
    import leaktrace.models.select as select
    import leaktrace.models.vllm_engine as vllm_engine

    monkeypatch.setattr(select, "_VLLM_ENGINES", {})
    monkeypatch.setattr(vllm_engine, "vllm_api", lambda: VLLMApi(_LLM, _SamplingParams, _LoRARequest))
    _StandIn.calls.clear()
    (tmp_path / "e1").mkdir()
    (tmp_path / "e3").mkdir()
    role = {"backend": "vllm", "model": "org/base", "vllm": {"enable_lora": True, "gpu_memory_utilization": 0.7}}
    answers = [
        open_model({**role, "adapter": a}, {Capability.GENERATE}, "t", None).complete(["p"], GREEDY)[0].text
        for a in (str(tmp_path / "e1"), None, str(tmp_path / "e3"))
    ]
    assert answers == ["p/12/1", "p/12/0", "p/12/2"]
    assert sum(c[0] == "LLM.__init__" for c in _StandIn.calls) == 1
