"""LLM policies: the shared chat machinery (``chat``), prompts, tool schemas, reply endings, KV
cache reuse, saved agents, and one module per provider in ``providers/``."""
