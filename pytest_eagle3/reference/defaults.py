"""Defaults of the reference measurement, importable without torch (the options layer validates against them)."""

from __future__ import annotations

#: ``reference.acceptance`` fails below this mean acceptance length (a draft that is never accepted gives 1.0).
DEFAULT_MIN_ACCEPTANCE = 1.3
#: Draft steps per verification (k): SGLang's and vLLM's usual ``num_speculative_tokens`` for EAGLE-3 demos.
DEFAULT_STEPS = 3
#: Tokens generated greedily per prompt for the acceptance walk.
DEFAULT_NEW_TOKENS = 64
#: Devices the reference forward runs on (torch device types that hold float32 weights and run matmuls).
DEVICE_TYPES = ("cpu", "cuda")
#: engine.acceptance fails when an engine's prediction is more than this below the as-trained figure
#: (accepted tokens per draft).
DEFAULT_MAX_LOSS = 0.1
#: Bounds of --eagle3-k and --eagle3-continuation.
MAX_STEPS = 16
MIN_CONTINUATION, MAX_CONTINUATION = 8, 4096
