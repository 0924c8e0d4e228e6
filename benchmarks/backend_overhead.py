"""What the OpenAI-compatible path and the response cache cost, on the
shipped tiny model: the same greedy completions of HumanEval prompts

(a) in process, through the transformers backend (batched);
(b) through the HTTP client against ``leaktrace serve``'s server on a free
    loopback port (one request per prompt, ``--concurrency`` at once; the
    server runs one request at a time);
(c) from the response cache, on a second pass (no model loaded).

    .venv/bin/python benchmarks/backend_overhead.py [--prompts 32] [--tokens 32] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import torch

from leaktrace.data.humaneval import load_humaneval, shipped_humaneval_path
from leaktrace.models.backend import Capability, ModelSpec, Sampling
from leaktrace.models.hf import HFLanguageModel
from leaktrace.models.select import open_model
from leaktrace.models.serve import ModelServer

TINY = Path(__file__).resolve().parents[1] / "resources" / "models" / "leaktrace-tiny"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)  # the server's thread and this one share the model
    prompts = [s.prompt[-400:] for s in load_humaneval(shipped_humaneval_path(), "h")[: args.prompts]]
    sampling = Sampling(max_new_tokens=args.tokens)
    lm = HFLanguageModel(ModelSpec(str(TINY)), batch_size=16, max_length=512, progress=False)
    server = ModelServer(lm, "tiny", "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    role = {"backend": "openai", "model": "tiny", "openai": {"base_url": server.url, "concurrency": args.concurrency}}
    with tempfile.TemporaryDirectory() as cache:
        timings = {}
        start = time.perf_counter()
        direct = lm.complete(prompts, sampling)
        timings["(a) in process"] = time.perf_counter() - start
        start = time.perf_counter()
        remote = open_model(role, {Capability.GENERATE}, "benchmark", Path(cache)).complete(prompts, sampling)
        timings["(b) HTTP client -> server"] = time.perf_counter() - start
        start = time.perf_counter()
        cached = open_model(role, {Capability.GENERATE}, "benchmark", Path(cache)).complete(prompts, sampling)
        timings["(c) response cache"] = time.perf_counter() - start
    server.shutdown()
    assert remote == cached and sum(a == b for a, b in zip(direct, remote, strict=True)) == len(prompts)
    print(f"{len(prompts)} prompts, {args.tokens} new tokens, greedy; answers identical on all three paths")
    for name, seconds in timings.items():
        print(f"{name:28s} {seconds:7.2f} s   {len(prompts) / seconds:8.1f} prompts/s")


if __name__ == "__main__":
    main()
