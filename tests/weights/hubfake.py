"""A local fake of the Hugging Face Hub HTTP API, for tests and benchmarks.

It is a real HTTP server on 127.0.0.1 that speaks the part of the hub protocol
``huggingface_hub`` uses for ``model_info``, ``snapshot_download`` and
``get_hf_file_metadata`` (checked against huggingface_hub 2.4 source):

- ``GET /api/models/{ns}/{name}/revision/{rev}``: ``id``, ``sha``, ``siblings``
- ``GET /api/models/{ns}/{name}/tree/{rev}``: the recursive file listing
- ``HEAD``/``GET /{ns}/{name}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag``
  (git blob sha1), ``X-Linked-Etag`` and ``X-Linked-Size`` for LFS files,
  ``Content-Length``, and ``Range`` requests for resumed downloads.

Private repos answer 401 unless ``Authorization: Bearer <token>`` matches. Faults are
set per file with ``FileFaults``. Every request lands in ``FakeHub.request_log`` so a
test can prove which files were (never) fetched. Only namespaced repo ids (``ns/name``)
are served.

Use ``running_fake_hub([repo, ...])`` and point huggingface_hub at ``hub.base_url``
(``endpoint=`` or ``HF_ENDPOINT``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

__all__ = [
    "FakeFile",
    "FakeHub",
    "FakeRepo",
    "FileFaults",
    "LoggedRequest",
    "running_fake_hub",
    "staging_leftovers",
    "tiny_model_files",
    "tiny_safetensors",
    "tree_bytes",
]

LFS_SUFFIXES = (".safetensors", ".bin", ".pth", ".gguf")
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass(frozen=True)
class FileFaults:
    """How the fake misbehaves for one file.

    ``digest``: the digest header the hub sends (``X-Linked-Etag`` for LFS files,
    ``ETag`` for git files) is correct, wrong, or absent. ``drop_after_bytes``: the
    first GET sends this many body bytes and closes the connection. ``after_drop``:
    what later GETs of that file (huggingface_hub's retry or ``Range`` resume) get:
    ``serve`` (the right bytes), ``refuse`` (the connection closes before any
    response), ``corrupt`` (the right length with one byte flipped: a broken mirror
    that only a checksum can catch). ``status``: every request for the file gets this
    HTTP error status instead (403 gated, 5xx hub trouble).
    """

    digest: Literal["correct", "wrong", "absent"] = "correct"
    drop_after_bytes: int | None = None
    after_drop: Literal["serve", "refuse", "corrupt"] = "serve"
    status: int | None = None


@dataclass(frozen=True)
class FakeFile:
    """One file in a repo; LFS files are served with LFS headers and listed with an lfs oid."""

    content: bytes
    lfs: bool
    faults: FileFaults = FileFaults()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def lfs_pointer(self) -> bytes:
        return (
            "version https://git-lfs.github.com/spec/v1\n"
            f"oid sha256:{self.sha256}\nsize {len(self.content)}\n"
        ).encode()

    @property
    def git_blob_sha1(self) -> str:
        """Blob id git stores: of the pointer for LFS files, of the content otherwise."""
        stored = self.lfs_pointer if self.lfs else self.content
        return hashlib.sha1(f"blob {len(stored)}\0".encode() + stored).hexdigest()


@dataclass(frozen=True)
class FakeRepo:
    """A model repo with one commit, reachable by that commit's sha or by ``branch``."""

    repo_id: str
    files: Mapping[str, FakeFile]
    token: str | None = None
    branch: str = "main"

    @classmethod
    def from_contents(
        cls, repo_id: str, contents: Mapping[str, bytes], *, token: str | None = None
    ) -> FakeRepo:
        """Files ending in an LFS suffix (``.safetensors``, ``.bin``, ...) are LFS files."""
        files = {path: FakeFile(data, path.endswith(LFS_SUFFIXES)) for path, data in contents.items()}
        return cls(repo_id=repo_id, files=files, token=token)

    @property
    def commit(self) -> str:
        listing = json.dumps(sorted((p, f.sha256, f.lfs) for p, f in self.files.items()))
        return hashlib.sha1(f"{self.repo_id}\n{listing}".encode()).hexdigest()

    def with_faults(self, path: str, faults: FileFaults) -> FakeRepo:
        if path not in self.files:
            raise KeyError(f"{self.repo_id} has no file {path!r}; files: {sorted(self.files)}")
        return replace(self, files={**self.files, path: replace(self.files[path], faults=faults)})

    def without(self, path: str) -> FakeRepo:
        return replace(self, files={p: f for p, f in self.files.items() if p != path})


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    authorization: str | None
    range: str | None


@dataclass
class FakeHub:
    """A running fake: its URL, its repos and what clients asked it."""

    base_url: str
    repos: Mapping[str, FakeRepo]
    _log: list[LoggedRequest] = field(default_factory=list)
    _gets_per_file: dict[tuple[str, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def request_log(self) -> tuple[LoggedRequest, ...]:
        with self._lock:
            return tuple(self._log)

    def file_requests(self, repo_id: str, path: str) -> tuple[LoggedRequest, ...]:
        """Every HEAD/GET of ``path`` in ``repo_id``, at any revision."""
        prefix = f"/{repo_id}/resolve/"
        return tuple(
            r
            for r in self.request_log
            if r.path.startswith(prefix) and r.path[len(prefix) :].partition("/")[2] == path
        )

    def downloads(self, repo_id: str) -> tuple[str, ...]:
        """Paths of ``repo_id`` whose body was requested (GET), in request order."""
        prefix = f"/{repo_id}/resolve/"
        return tuple(
            r.path[len(prefix) :].partition("/")[2]
            for r in self.request_log
            if r.method == "GET" and r.path.startswith(prefix)
        )

    def _record(self, request: LoggedRequest) -> None:
        with self._lock:
            self._log.append(request)

    def _count_get(self, repo_id: str, path: str) -> int:
        """How many GETs of this file came before this one."""
        with self._lock:
            seen = self._gets_per_file.get((repo_id, path), 0)
            self._gets_per_file[(repo_id, path)] = seen + 1
            return seen


@contextmanager
def running_fake_hub(repos: Iterable[FakeRepo]) -> Iterator[FakeHub]:
    """Serve ``repos`` on a free 127.0.0.1 port for the duration of the block."""
    by_id = {repo.repo_id: repo for repo in repos}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    hub = FakeHub(base_url=f"http://{host!s}:{port}", repos=by_id)
    server.hub = hub  # type: ignore[attr-defined]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-hub", daemon=True
    )
    thread.start()
    try:
        yield hub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    @property
    def hub(self) -> FakeHub:
        hub: FakeHub = self.server.hub  # type: ignore[attr-defined]
        return hub

    def log_message(self, format: str, *args: object) -> None:
        """Requests are in ``FakeHub.request_log``; stderr stays quiet."""

    def do_HEAD(self) -> None:
        self._route(send_body=False)

    def do_GET(self) -> None:
        self._route(send_body=True)

    def _route(self, *, send_body: bool) -> None:
        path = urlsplit(self.path).path
        self.hub._record(
            LoggedRequest(
                method=self.command,
                path=unquote(path),
                authorization=self.headers.get("Authorization"),
                range=self.headers.get("Range"),
            )
        )
        segments = [unquote(s) for s in path.strip("/").split("/")]
        if segments[:2] == ["api", "models"] and len(segments) >= 6:
            repo_id, kind, revision = "/".join(segments[2:4]), segments[4], segments[5]
            if kind in ("revision", "tree"):
                self._api(repo_id, kind, revision, send_body=send_body)
                return
        if len(segments) >= 5 and segments[2] == "resolve":
            repo_id, revision, file_path = "/".join(segments[:2]), segments[3], "/".join(segments[4:])
            self._resolve(repo_id, revision, file_path, send_body=send_body)
            return
        self._error(HTTPStatus.NOT_FOUND, "RouteNotFound", f"no route for {path}", send_body)

    def _repo_at(self, repo_id: str, revision: str, send_body: bool) -> FakeRepo | None:
        """The repo if it exists, the caller may see it and ``revision`` names its commit."""
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(HTTPStatus.NOT_FOUND, "RepoNotFound", f"{repo_id} not found", send_body)
            return None
        if repo.token is not None and self.headers.get("Authorization") != f"Bearer {repo.token}":
            self._error(HTTPStatus.UNAUTHORIZED, None, "Invalid username or password.", send_body)
            return None
        if revision not in (repo.branch, repo.commit):
            self._error(HTTPStatus.NOT_FOUND, "RevisionNotFound", f"Invalid rev id: {revision}", send_body)
            return None
        return repo

    def _api(self, repo_id: str, kind: str, revision: str, *, send_body: bool) -> None:
        repo = self._repo_at(repo_id, revision, send_body)
        if repo is None:
            return
        payload: object
        if kind == "revision":
            payload = {
                "id": repo.repo_id,
                "sha": repo.commit,
                "private": repo.token is not None,
                "siblings": [{"rfilename": p} for p in sorted(repo.files)],
            }
        else:
            payload = [_tree_entry(p, f) for p, f in sorted(repo.files.items())]
        body = json.dumps(payload).encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _resolve(self, repo_id: str, revision: str, file_path: str, *, send_body: bool) -> None:
        repo = self._repo_at(repo_id, revision, send_body)
        if repo is None:
            return
        served = repo.files.get(file_path)
        if served is None:
            self._error(HTTPStatus.NOT_FOUND, "EntryNotFound", f"{file_path} not found", send_body)
            return
        faults = served.faults
        if faults.status is not None:
            self._error(HTTPStatus(faults.status), None, f"fault injected for {file_path}", send_body)
            return
        attempt = self.hub._count_get(repo_id, file_path) if send_body else 0
        dropping = faults.drop_after_bytes is not None
        if dropping and attempt > 0 and faults.after_drop == "refuse":
            self.close_connection = True
            return
        total = len(served.content)
        start, end = _byte_range(self.headers.get("Range"), total)
        body = served.content[start : end + 1]
        if dropping and attempt > 0 and faults.after_drop == "corrupt" and body:
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        self.send_response(HTTPStatus.OK if (start, end) == (0, total - 1) else HTTPStatus.PARTIAL_CONTENT)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        if (start, end) != (0, total - 1):
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        for name, value in _digest_headers(served).items():
            self.send_header(name, value)
        self.end_headers()
        if not send_body:
            return
        if dropping and attempt == 0:
            self.wfile.write(body[: faults.drop_after_bytes])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def _error(self, status: HTTPStatus, code: str | None, message: str, send_body: bool) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        if code is not None:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)


def _tree_entry(path: str, served: FakeFile) -> dict[str, object]:
    entry: dict[str, object] = {
        "type": "file",
        "path": path,
        "size": len(served.content),
        "oid": served.git_blob_sha1,
    }
    if served.lfs:
        entry["lfs"] = {
            "oid": served.sha256,
            "size": len(served.content),
            "pointerSize": len(served.lfs_pointer),
        }
    return entry


def _digest_headers(served: FakeFile) -> dict[str, str]:
    """ETag is the git blob sha1; LFS files add the content sha256 as X-Linked-Etag."""
    digest = served.faults.digest
    wrong_sha256 = hashlib.sha256(b"not " + served.content).hexdigest()
    wrong_sha1 = hashlib.sha1(b"not " + served.content).hexdigest()
    headers: dict[str, str] = {}
    if served.lfs:
        headers["ETag"] = f'"{served.git_blob_sha1}"'
        headers["X-Linked-Size"] = str(len(served.content))
        if digest != "absent":
            linked = served.sha256 if digest == "correct" else wrong_sha256
            headers["X-Linked-Etag"] = f'"{linked}"'
    elif digest != "absent":
        headers["ETag"] = f'"{served.git_blob_sha1 if digest == "correct" else wrong_sha1}"'
    return headers


def _byte_range(header: str | None, total: int) -> tuple[int, int]:
    """Inclusive (start, end) of a ``bytes=N-[M]`` request; the whole file otherwise."""
    match = _RANGE.fullmatch(header.strip()) if header else None
    if match is None:
        return 0, total - 1
    start = min(int(match.group(1)), total)
    end = min(int(match.group(2)), total - 1) if match.group(2) else total - 1
    return start, end


def tiny_safetensors(seed: int, *, rows: int = 32, columns: int = 32) -> bytes:
    """A real (tiny) safetensors file of deterministic float32 weights."""
    import numpy as np
    from safetensors.numpy import save

    rng = np.random.default_rng(seed)
    tensors = {
        "embed.weight": rng.standard_normal((rows, columns), dtype=np.float32),
        "lm_head.weight": rng.standard_normal((rows, columns), dtype=np.float32),
    }
    return save(tensors)


def tiny_model_files(
    *, seed: int = 0, shards: int = 1, rows: int = 32, with_extras: bool = True
) -> dict[str, bytes]:
    """Files of a tiny model repo: weights, config, tokenizer, chat template.

    ``with_extras`` adds files outside the default allow-list (README, a pickle
    checkpoint, an ``original/`` consolidated file) so tests can prove they are skipped.
    """
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 32, "vocab_size": rows}
    files: dict[str, bytes] = {
        "config.json": json.dumps(config, sort_keys=True).encode(),
        "generation_config.json": b'{"do_sample": false}',
        "tokenizer.json": json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}}}).encode(),
        "tokenizer_config.json": b'{"eos_token": "</s>"}',
        "special_tokens_map.json": b'{"eos_token": "</s>"}',
        "chat_template.jinja": b"{% for m in messages %}{{ m.content }}{% endfor %}",
    }
    if shards == 1:
        files["model.safetensors"] = tiny_safetensors(seed, rows=rows)
    else:
        names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
        for offset, name in enumerate(names):
            files[name] = tiny_safetensors(seed + offset, rows=rows)
        weight_map = {f"layers.{i}.weight": name for i, name in enumerate(names)}
        files["model.safetensors.index.json"] = json.dumps({"weight_map": weight_map}).encode()
    if with_extras:
        files["README.md"] = b"# tiny model\n"
        files[".gitattributes"] = b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
        files["pytorch_model.bin"] = b"\x80\x04pickle-never-fetched"
        files["original/consolidated.00.pth"] = b"never fetched"
    return files


def staging_leftovers(models_dir: Path) -> list[str]:
    """Whatever a fetch left in ``models_dir/.incomplete`` (it should leave nothing)."""
    root = models_dir / ".incomplete"
    if not root.exists():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) or ["(empty .incomplete)"]


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, to prove a directory was left untouched."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
