"""How bytes are opened for redaction: text encodings and compressed containers.

A byte string is never waved through as "binary": a stray NUL or one invalid byte must not
switch redaction off. Text (UTF-8, or UTF-16/32 by a BOM or the NUL pattern of ASCII in
UTF-16, or UTF-8 with a few stray bytes) is redacted as text, each stray byte kept. Bytes that
are not text, and images whatever their bytes, are
never rewritten in place (a pattern matching inside a PNG would break the picture): they are
read in every way that can hide text (UTF-8 with the undecodable bytes kept aside, latin-1,
UTF-16) and withheld with a reason when a credential shows in one of those readings.
Compressed containers (gzip, bzip2, xz, zip) are opened, their contents redacted and the
container rebuilt deterministically. What cannot be opened (an unknown compression, an
encrypted zip member, a container over the size limit) is refused with a reason, never
copied through."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

MAX_EXPANDED_BYTES = 256 * 1024 * 1024
"""A compressed attachment expanding beyond this is refused (a decompression bomb)."""
MAX_NESTING = 4
"""Containers inside containers deeper than this are refused."""
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_UTF16_SAMPLE = 4096


class RefusedPayload(ValueError):
    """Bytes redaction cannot open, so they may not be written at all; the message says why."""


@dataclass(frozen=True)
class TextForm:
    """Bytes that are text in ``codec`` (with a BOM when ``bom`` is set)."""

    codec: str
    bom: bytes

    def decode(self, data: bytes) -> str:
        return data[len(self.bom) :].decode(self.codec)

    def encode(self, text: str) -> bytes:
        return self.bom + text.encode(self.codec)


_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


_IMAGE_MAGIC: tuple[bytes, ...] = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"II*\x00",
    b"MM\x00*",
)


def is_image(data: bytes) -> bool:
    """Whether ``data`` opens with the signature of a PNG, JPEG, GIF, TIFF or WebP picture."""
    return data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT_BYTES = 16 * 1024 * 1024
"""A compressed PNG text chunk expanding beyond this is not opened (the whole file is read then)."""


def png_readable_parts(data: bytes) -> bytes | None:
    """What of a PNG a reader can read as text: every byte but the compressed pixel data (IDAT),
    with compressed text chunks (zTXt, compressed iTXt) opened, the parts one per line; None when
    ``data`` is not a well-formed PNG (then all of it is read). Shape rules read pixel data as
    random characters, and a long enough picture holds a run that looks like a credential: a
    plot an honest run attached was withheld."""
    if not data.startswith(_PNG_SIGNATURE):
        return None
    parts, position = [data[:8]], 8
    while position < len(data):
        if position + 12 > len(data):
            return None
        length = int.from_bytes(data[position : position + 4], "big")
        kind = data[position + 4 : position + 8]
        end = position + 12 + length
        if end > len(data):
            return None
        body = data[position + 8 : end - 4]
        if kind == b"IDAT":
            parts.append(data[position : position + 8])
        else:
            try:
                opened = _opened_png_text(kind, body)
            except ValueError:
                return None
            parts += [data[position:end], *([opened] if opened is not None else [])]
        position = end
        if kind == b"IEND":
            parts.append(data[position:])
            break
    return b"\n".join(parts)


def _opened_png_text(kind: bytes, body: bytes) -> bytes | None:
    """A zTXt or compressed iTXt chunk's text; None for other chunks; ValueError when it cannot
    be opened (corrupt, or larger than :data:`_PNG_TEXT_BYTES`)."""
    if kind == b"zTXt":
        _, _, rest = body.partition(b"\0")
        compressed = rest[1:]
    elif kind == b"iTXt":
        _, _, rest = body.partition(b"\0")
        if rest[:1] != b"\x01":
            return None
        compressed = rest[2:].split(b"\0", 2)[-1]
    else:
        return None
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(compressed, _PNG_TEXT_BYTES)
    except zlib.error as error:
        raise ValueError(f"a {kind.decode()} chunk does not inflate: {error}") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"a {kind.decode()} chunk inflates beyond {_PNG_TEXT_BYTES} bytes")
    return text


_STRAY_BYTES_SHARE = 0.05
"""Text may hold this share of bytes that are not text (a NUL, a cut UTF-8 sequence) and still be
text: a log with a stray byte is redacted like a log, not withheld like a picture."""
_NOT_TEXT = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\udc80-\udcff]")


def is_mostly_text(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 text but for a few stray bytes (an image never is)."""
    if is_image(data):
        return False
    stray = len(_NOT_TEXT.findall(data.decode("utf-8", "surrogateescape")))
    return stray <= _STRAY_BYTES_SHARE * len(data)


def text_form(data: bytes) -> TextForm | None:
    """The encoding ``data`` strictly decodes in, or None when it is not (only) text."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _decodes(data, TextForm(codec, bom))
    utf16 = _utf16_without_bom(data)
    if utf16 is not None:
        return utf16
    return _decodes(data, TextForm("utf-8", b""))


def _decodes(data: bytes, form: TextForm) -> TextForm | None:
    try:
        form.decode(data)
    except UnicodeDecodeError:
        return None
    return form


def _utf16_without_bom(data: bytes) -> TextForm | None:
    """ASCII-heavy UTF-16 shows as NULs on one side of every byte pair and hardly any on the other."""
    sample = data[:_UTF16_SAMPLE]
    if len(data) % 2 or len(sample) < 8:
        return None
    pairs = len(sample) // 2
    even_nuls = sample[0::2].count(0)
    odd_nuls = sample[1::2].count(0)
    if odd_nuls >= 0.3 * pairs and even_nuls <= 0.05 * pairs:
        return _decodes(data, TextForm("utf-16-le", b""))
    if even_nuls >= 0.3 * pairs and odd_nuls <= 0.05 * pairs:
        return _decodes(data, TextForm("utf-16-be", b""))
    return None


BytesRedaction = Callable[[bytes, int], bytes]
"""Redact ``data`` found ``depth`` containers deep."""

_REFUSED_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x04\x22\x4d\x18", "lz4-compressed"),
)


def container_redaction(data: bytes, depth: int, redact: BytesRedaction) -> bytes | None:
    """``data`` rebuilt with its contents redacted, or None when it is not a container."""
    if data.startswith(b"\x1f\x8b"):
        inner = _expand(data, depth, "gzip", gzip.open)
        return gzip.compress(redact(inner, depth + 1), mtime=0)
    if data.startswith(b"BZh") and len(data) > 10 and data[4:10] == b"\x31\x41\x59\x26\x53\x59":
        inner = _expand(data, depth, "bzip2", bz2.BZ2File)
        return bz2.compress(redact(inner, depth + 1))
    if data.startswith(b"\xfd7zXZ\x00"):
        inner = _expand(data, depth, "xz", lzma.LZMAFile)
        return lzma.compress(redact(inner, depth + 1))
    if data.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_redaction(data, depth, redact)
    for magic, what in _REFUSED_MAGIC:
        if data.startswith(magic):
            raise RefusedPayload(f"{what} content cannot be opened for redaction")
    return None


def _expand(data: bytes, depth: int, what: str, opener: Callable[[io.BytesIO], io.BufferedIOBase]) -> bytes:
    if depth >= MAX_NESTING:
        raise RefusedPayload(f"{what} nested {depth} containers deep (the limit is {MAX_NESTING})")
    try:
        with opener(io.BytesIO(data)) as stream:
            inner = stream.read(MAX_EXPANDED_BYTES + 1)
    except (OSError, EOFError, lzma.LZMAError, zlib.error) as error:
        raise RefusedPayload(f"{what} content is damaged and cannot be opened: {error}") from None
    if len(inner) > MAX_EXPANDED_BYTES:
        raise RefusedPayload(f"{what} content expands beyond {MAX_EXPANDED_BYTES} bytes")
    return inner


def _zip_redaction(data: bytes, depth: int, redact: BytesRedaction) -> bytes:
    if depth >= MAX_NESTING:
        raise RefusedPayload(f"zip nested {depth} containers deep (the limit is {MAX_NESTING})")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
            if any(member.flag_bits & 0x1 for member in members):
                raise RefusedPayload("an encrypted zip member cannot be opened for redaction")
            if sum(member.file_size for member in members) > MAX_EXPANDED_BYTES:
                raise RefusedPayload(f"zip content expands beyond {MAX_EXPANDED_BYTES} bytes")
            contents = [(member.filename, archive.read(member)) for member in members]
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError) as error:
        raise RefusedPayload(f"zip content is damaged and cannot be opened: {error}") from None
    output = io.BytesIO()
    taken: set[str] = set()
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_DEFLATED) as rebuilt:
        for name, content in contents:
            redacted_name = _unused(redact(name.encode(), depth + 1).decode("utf-8", "replace"), taken)
            info = zipfile.ZipInfo(redacted_name, _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            rebuilt.writestr(info, redact(content, depth + 1))
    return output.getvalue()


def _unused(name: str, taken: set[str]) -> str:
    """Two member names can redact to the same text; keep both members."""
    candidate, counter = name, 2
    while candidate in taken:
        candidate, counter = f"{name}#{counter}", counter + 1
    taken.add(candidate)
    return candidate
