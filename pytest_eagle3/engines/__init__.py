"""Engines: probes that run SGLang / vLLM loaders in their own interpreters."""
