"""Layer 0, contracts: the typed values every other layer hands to the next.

Host facts, hardware requirements and verdicts, run modes, the engine protocol and its
capabilities, marker names, declared merge gates and the per-test payload. Nothing here
does I/O or imports pytest, so any layer (and any tool outside pytest) can read them.
"""
