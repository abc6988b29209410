"""Layer 2, fetching: what a run needs on disk before an engine can start.

Pinned model weights verified by sha256 (``weights``), the tiny local models and the
speculative pair built offline (``tiny_models``), and recorded reference outputs
(``references``).
"""
