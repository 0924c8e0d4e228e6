"""Benchmark-vs-corpus near-duplicate scan (LessLeak-Bench's DetectLeak, with
automatic verification): tokenisation and shingles, MinHash signatures equal to
datasketch's, an LSH index of the benchmark, corpus sources, granularity,
skip accounting, clone-type verification and an optional LLM judge."""
