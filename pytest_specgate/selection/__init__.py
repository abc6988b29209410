"""Layer 1, selection: which specs run on this host, and how.

Parses the ``ac``, ``hardware`` and ``engine`` markers, probes the host, matches
requirements against it, resolves the session's settings (run mode, backends, host
profiles, declared gates) and orders collected items.
"""
