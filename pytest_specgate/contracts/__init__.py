"""Layer 0, contracts: the typed values every other layer hands to the next.

Host facts, hardware requirements and verdicts, run modes, the engine protocol and its
capabilities, marker names, declared merge gates, the per-test payload, the wire names
(metric names, status keys, fault kinds), the validation kit and the one input error.
Nothing here does I/O or imports pytest, so any layer (and any tool outside pytest,
such as the mock engine or the CLI) can read them, and a name typed here is the only
place it is spelled.
"""
