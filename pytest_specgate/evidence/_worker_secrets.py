"""Secrets an xdist worker learns, carried to the controller sealed.

A value a spec registers with ``evidence.secret`` (or an engine's ``api_key`` and URL password)
on a worker must be masked on the controller too: its terminal prints the worker's failures,
and its bundle writer redacts every record. The only channel from a worker to the controller
while tests run is the serialized test report, and any plugin on a worker may write serialized
reports to a file, so the values travel sealed: encrypted and authenticated with a key the
controller hands its workers in ``workerinput`` (never written anywhere). The keystream is
HMAC-SHA256 in counter mode under a fresh nonce per report, the tag HMAC-SHA256 over nonce and
ciphertext (encrypt-then-MAC, with separate keys derived from the run's key).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from typing import Final

_NONCE_BYTES: Final = 16
_TAG_BYTES: Final = 32


class SealError(ValueError):
    """A sealed message that is not one this run's key made (altered, cut, or another run's)."""


def _keys(key_hex: str) -> tuple[bytes, bytes]:
    key = bytes.fromhex(key_hex)
    return (hmac.digest(key, b"specgate secrets: encryption", hashlib.sha256),
            hmac.digest(key, b"specgate secrets: authentication", hashlib.sha256))


def _keystream(key: bytes, nonce: bytes, length: int) -> bytes:
    blocks = (hmac.digest(key, nonce + counter.to_bytes(8, "big"), hashlib.sha256)
              for counter in range(-(-length // 32)))
    return b"".join(blocks)[:length]


def _xor(data: bytes, stream: bytes) -> bytes:
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


def seal(values: Iterable[str], key_hex: str) -> str:
    """``values`` encrypted and authenticated under ``key_hex`` (hex, 32 bytes or more), as ASCII."""
    encryption, authentication = _keys(key_hex)
    plain = json.dumps(list(values)).encode()
    nonce = secrets.token_bytes(_NONCE_BYTES)
    cipher = _xor(plain, _keystream(encryption, nonce, len(plain)))
    tag = hmac.digest(authentication, nonce + cipher, hashlib.sha256)
    return base64.b64encode(nonce + cipher + tag).decode("ascii")


def unseal(sealed: object, key_hex: str) -> tuple[str, ...]:
    """The values :func:`seal` sealed under ``key_hex``; :class:`SealError` for anything else."""
    if not isinstance(sealed, str):
        raise SealError(f"expected sealed text, found {type(sealed).__name__}")
    try:
        raw = base64.b64decode(sealed, validate=True)
    except (binascii.Error, ValueError):
        raise SealError("sealed secrets are not base64") from None
    if len(raw) < _NONCE_BYTES + _TAG_BYTES:
        raise SealError(f"sealed secrets of {len(raw)} bytes are shorter than a nonce and a tag")
    encryption, authentication = _keys(key_hex)
    nonce, cipher, tag = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:-_TAG_BYTES], raw[-_TAG_BYTES:]
    if not hmac.compare_digest(tag, hmac.digest(authentication, nonce + cipher, hashlib.sha256)):
        raise SealError("sealed secrets fail their authentication tag (altered, or sealed by another run)")
    values = json.loads(_xor(cipher, _keystream(encryption, nonce, len(cipher))))
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise SealError("sealed secrets are not a list of strings")
    return tuple(values)
