"""Run ``fetch_verified`` in a fresh interpreter and print the outcome as one JSON line.

A child process is the only way to test what huggingface_hub reads at import time
(``HF_ENDPOINT``, ``HF_HOME``) and to give one process a file-size limit
(``RLIMIT_FSIZE``) so a real write fails the way a full disk does.

Usage: ``python fetch_child.py '{"repo_id": ..., "revision": ..., "destination": ...,
"endpoint": null, "file_size_limit": null}'``
"""

from __future__ import annotations

import json
import resource
import signal
import sys

from pytest_specgate.fetching.weights import WeightVerificationError, fetch_verified


def main(arguments: dict[str, object]) -> dict[str, object]:
    limit = arguments.get("file_size_limit")
    if isinstance(limit, int):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    endpoint = arguments.get("endpoint")
    try:
        snapshot = fetch_verified(
            str(arguments["repo_id"]),
            str(arguments["revision"]),
            str(arguments["destination"]),
            endpoint=endpoint if isinstance(endpoint, str) else None,
        )
    except WeightVerificationError as error:
        return {"ok": False, "error": error.problem, "message": str(error)}
    return {"ok": True, **snapshot.to_record()}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
