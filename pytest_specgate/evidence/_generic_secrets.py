"""Credentials found without knowing their vendor: by shape, by the word before them, by a cut.

A catalogue of vendor prefixes (:mod:`._secret_rules`) is always one vendor behind. The two ideas
that catch what it lacks are detect-secrets' high-entropy plugins (a run of credential-alphabet
characters that reads as random) and TruffleHog's keyword-scoped detectors (the value after
``password``, ``token``, ``api-key``...). This module holds both as pure functions and the
patterns :mod:`._redact` compiles into rules, plus the explicit allowlist of identifiers that
evidence must keep readable even though they are long and look random: commits and sha256
digests, UUIDs, run and request ids, node ids, model and repository ids, repository paths and
version strings.

Why a character-class *transition* count and not only entropy: words, identifiers and model ids
change between small letters, capitals and digits once per word (``Meta-Llama-3-8B-Instruct``
changes 4 times in 24 characters), a random token about every other character (62 symbols drawn
uniformly change class with probability 0.62). Entropy alone cannot tell a long camel-case name
from a key; the two together can.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections import Counter
from collections.abc import Callable

CREDENTIAL_ALPHABET = "A-Za-z0-9+/_=-"
_UPPER_OR_DIGIT = re.compile(r"[A-Z0-9]")
_ALPHABET_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=-")
MIN_TOKEN_LENGTH = 16
"""Letters and digits a run needs before its shape alone makes it a credential."""
MIN_CUT_LENGTH = 8
"""Letters and digits a run next to a ``...`` cut needs: pytest cut the rest away."""
MIN_WEAK_VALUE_LENGTH = 8
"""Letters and digits the value after a weak keyword (``key``, ``auth``) needs."""

_SEGMENT_SPLIT = re.compile(r"[-_/+=]+")
_DIGEST_LENGTHS = frozenset({40, 64, 128})
"""A git commit (sha1), a sha256 and a sha512 digest in hex: evidence shows them."""
_UUID = r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"
_ID_PREFIXES = r"(?:chatcmpl|cmpl|req|request|run|trace|span|msg|call|job|task|id)"
"""Prefixes of ids servers and runners give requests and jobs (vLLM's ``chatcmpl-…``)."""
_ALLOWED_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uuid", re.compile(rf"(?:{_ID_PREFIXES}-)?{_UUID}")),
    ("run id", re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}|merged-[0-9a-f]{12}")),
    ("request id",
     re.compile(rf"{_ID_PREFIXES}-[0-9a-f]{{32}}(?:-\d+)?")),
    ("digest", re.compile(r"(?:sha1|sha256|sha512|md5|blake2b?)[-_:=]?[0-9a-f]{32,128}")),
    ("labelled digest", re.compile(r"(?:sha1|sha256|sha384|sha512)-[A-Za-z0-9+/=]{27,88}")),
)
"""Identifiers evidence must keep, whole-run shapes (a commit and a sha256 digest are the bare
hex lengths of :data:`_DIGEST_LENGTHS`; node ids, model ids, paths and versions never reach a
rule as one run: ``::``, ``.`` and word-like pieces split or sink them, see :func:`looks_generated`)."""


def allowed_identifier(run: str) -> str | None:
    """The allowlist entry ``run`` is, or None: what evidence shows even though it looks random."""
    if _is_hex(run) and len(run) in _DIGEST_LENGTHS:
        return "commit or digest"
    for name, shape in _ALLOWED_SHAPES:
        if shape.fullmatch(run):
            return name
    return None


def _is_hex(value: str) -> bool:
    """Whether ``value`` is hex digits in either case (no other character lowers to one)."""
    return _HEX.fullmatch(value) is not None


_HEX = re.compile(r"[0-9a-fA-F]+")


def shape(value: str) -> tuple[int, int, bool, bool, bool, float]:
    """Letters and digits in ``value``; class changes between neighbours (a separator breaks the
    chain); whether it has a digit, a small and a capital letter; Shannon bits per character.

    ASCII text of :data:`_LOOP_LONGEST` characters or more (a backtracking run, a run of one
    word repeated) is read by ``str`` methods, each character's kind written as a letter of its
    own (:data:`_KINDS`): a class change is one of the six pairs of two kinds (none overlaps
    itself, so ``count`` finds each), and the counts behind the entropy (one ``count`` per
    character present when few are, else one ``Counter``) are summed in the order the
    characters first occur, as the loop does. Shorter or other text is read a character at a
    time, which is faster there. Both give the same numbers, float for float
    (tests/evidence/test_judgement_equivalence.py compares them)."""
    if len(value) < _LOOP_LONGEST or not value.isascii():
        return _shape_of_any(value)
    kinds = value.translate(_KINDS)
    present = _ALPHANUMERIC.intersection(value)
    if len(present) * 16 <= len(value):
        counts = [value.count(character) for character in sorted(present, key=value.index)]
    else:
        counts = [count for character, count in Counter(value).items() if character in present]
    length = sum(counts)
    transitions = sum(kinds.count(change) for change in _CHANGES)
    entropy = -sum(n / length * math.log2(n / length) for n in counts) if length else 0.0
    return length, transitions, "d" in kinds, "l" in kinds, "u" in kinds, entropy


_LOOP_LONGEST = 32
_ALPHANUMERIC = frozenset(string.ascii_letters + string.digits)
_KINDS = str.maketrans(
    {chr(code): "d" if chr(code).isdigit() else "l" if chr(code).islower() else "u" if chr(code).isupper()
     else " " for code in range(128)}
)
"""An ASCII character's kind for :func:`shape`: a digit, a small or a capital letter, or a
separator (which breaks the chain of class changes)."""
_CHANGES = ("dl", "du", "ld", "lu", "ud", "ul")


def _shape_of_any(value: str) -> tuple[int, int, bool, bool, bool, float]:
    length = transitions = 0
    digit = lower = upper = False
    previous = ""
    counts: dict[str, int] = {}
    for character in value:
        if character.isdigit():
            kind, digit = "d", True
        elif character.islower():
            kind, lower = "l", True
        elif character.isupper():
            kind, upper = "u", True
        else:
            previous = ""
            continue
        length += 1
        counts[character] = counts.get(character, 0) + 1
        if previous and previous != kind:
            transitions += 1
        previous = kind
    entropy = -sum(n / length * math.log2(n / length) for n in counts.values()) if length else 0.0
    return length, transitions, digit, lower, upper, entropy


def reads_random(value: str, minimum: int) -> bool:
    """Whether ``value`` (one segment or a whole run) reads as drawn at random, not written.

    Hex (digits and one case of a-f) needs a digit and a letter and 3 bits of entropy
    (detect-secrets' hex limit); anything else needs two kinds of character, frequent class
    changes, and entropy near the most its length allows. Padding (a character repeated four
    times or more at either end, ``AAAAAAAAAAAAAAAAAAAAA…``) is left out of the judgement."""
    value = _PADDING.sub("", value)
    length, transitions, digit, lower, upper, entropy = shape(value)
    if length < minimum:
        return False
    ratio = transitions / (length - 1)
    if digit and _one_case_hex_letters(value):
        return entropy >= 3.0 and ratio >= (0.15 if length >= 32 else 0.25)
    kinds = digit + lower + upper
    if kinds < 2:
        return False
    ceiling = math.log2(min(length, 62))
    if kinds == 3:
        return ratio >= 0.3 and entropy >= 0.8 * ceiling
    if not digit:
        return length >= 20 and ratio >= 0.4 and entropy >= 0.85 * ceiling
    digit_count = sum(map(value.count, string.digits)) if value.isascii() else sum(map(str.isdigit, value))
    digits = digit_count / length
    if length >= 32:
        return ratio >= 0.1 and 0.04 <= digits <= 0.9 and entropy >= 0.75 * math.log2(36)
    if length >= 20:
        return ratio >= 0.12 and 0.1 <= digits <= 0.9 and entropy >= 0.8 * math.log2(min(length, 36))
    return ratio >= 0.3 and 0.1 <= digits <= 0.9 and entropy >= 0.75 * ceiling


_PADDING = re.compile(r"^(.)\1{3,}|(.)\2{3,}$")


def _one_case_hex_letters(value: str) -> bool:
    """Whether ``value`` has letters, all of one case and all hex digits."""
    letters = value.translate(_LETTERS_ONLY) if value.isascii() else "".join(filter(str.isalpha, value))
    return bool(letters) and (letters.islower() or letters.isupper()) and _is_hex(letters.lower())


_LETTERS_ONLY = str.maketrans("", "", "".join(chr(code) for code in range(128) if not chr(code).isalpha()))


def looks_generated(run: str, minimum: int = MIN_TOKEN_LENGTH) -> bool:
    """Whether a run of credential characters is a credential: not on the allowlist, and the
    whole run (a prefix and its body) or one of its segments between separators reads as
    random, or holds a hex body behind a vendor's prefix or suffix (``sbp_<40 hex>``,
    ``AC<32 hex>``, ``<36 hex>NRAL``), or is a UUID behind a prefix that is not an id's
    (``pat-na1-<uuid>``). A run with a word-like part between slashes is a path
    (``attachments/…``, ``models--org--name/…``) and each part is judged alone. Bare hex passes
    only at 32 characters or more (shorter hex is an abbreviated commit or digest, an address,
    a colour), and never at a digest's length. Memoised for runs up to :data:`_MEMO_LONGEST`
    characters: judging a run reads each character in Python, and a later pass and the escape
    decoding meet the same runs again."""
    if len(run) > _MEMO_LONGEST:
        return _judged(run, minimum)
    return _judged_memo(run, minimum)


def _judged(run: str, minimum: int) -> bool:
    parts = _path_parts(run)
    if parts is not None:
        return any(
            _part_generated(part, minimum) for part in dict.fromkeys(parts) if not _UUID4_NAME.fullmatch(part)
        )
    return _part_generated(run, minimum)


_MEMO_LONGEST = 4096
_judged_memo = functools.lru_cache(maxsize=4096)(_judged)
"""The judgements of runs up to 4,096 characters, 4,096 of them at most (16 MB of keys at worst),
shared by every redactor of the process: a pure function of the run."""


def forget_judgements() -> None:
    """Empty :func:`looks_generated`'s memo (a benchmark times a redaction from cold)."""
    _judged_memo.cache_clear()


def _path_parts(run: str) -> list[str] | None:
    """The components of ``run`` when it is a path (a word-like part between slashes), else None."""
    parts = run.split("/")
    return parts if len(parts) > 1 and any(_WORDY.fullmatch(part) for part in dict.fromkeys(parts)) else None


_WORDY = re.compile(r"[a-z]{3,}(?:[_.-]+[a-z0-9]+)*")
"""A path component written by a person (``attachments``, ``test_data``)."""
_UUID4_NAME = re.compile(r"(?:[a-z][a-z0-9]*[_-])*[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}")
"""A path component named by a random UUID in hex, alone or after words (vLLM's
``/tmp/vllm_dist_<uuid4 hex>``): a temporary name, not a credential; bare, outside a path, such
hex is still judged (a 32-hex key is a UUID's shape one time in 64)."""
_ATTACHMENT_PREFIX = re.compile(r"[0-9a-f]{16}-")
"""The digest prefix of a stored attachment's name (``attachments/83cfd6fbacb55b9a-server.log``)."""
_PREFIXED_HEX = re.compile(
    r"([A-Za-z]{1,8}?)([0-9a-fA-F]{20,})([A-Za-z]{0,8})|([0-9a-fA-F]{20,})([A-Za-z]{1,8})"
)
"""A hex body with letters glued before or after it: a vendor's prefix or suffix."""
_VENDOR_PREFIX = re.compile(r"^(?:[a-z]{1,10}[_-])+")
"""Small-letter words a vendor puts before a body (``dckr_pat_``, ``sb_secret_``): the body is
judged without them too; words before a short hex body name a content hash
(``tiny-llama-ad3ef2f7643d01c4``), not a credential."""
_PREFIXED_UUID = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*[-_]" + _UUID)


def _part_generated(run: str, minimum: int) -> bool:
    if allowed_identifier(run) is not None:
        return False
    prefix = _ATTACHMENT_PREFIX.match(run)
    if prefix is not None:
        run = run[prefix.end():]
    if _PREFIXED_UUID.fullmatch(run):
        return True
    body = _VENDOR_PREFIX.sub("", run)
    if body != run and _is_hex(body.replace("-", "")) and len(body) < 20:
        return False
    if _whole(run) and reads_random(run, minimum) and not _short_hex(run, minimum):
        return True
    if body != run and _whole(body) and reads_random(body, minimum) and not _short_hex(body, minimum):
        return True
    pieces = [piece for piece in _SEGMENT_SPLIT.split(run) if piece]
    if not pieces:
        return False
    # Each distinct piece once (a run of one word repeated has thousands), with whether it
    # also stands after the first piece, where a plain hex run counts.
    after_first = dict.fromkeys(pieces, True)
    after_first[pieces[0]] = pieces.count(pieces[0]) > 1
    for piece, later in after_first.items():
        if len(piece) < minimum and len(piece) < 20:
            continue
        if reads_random(piece, minimum) and not _short_hex(piece, minimum):
            return True
        if _hex_body(piece) or (later and _hex_run(piece)):
            return True
    return False


def _whole(value: str) -> bool:
    """Whether ``value`` reads as one string rather than words joined by separators: both cases of
    letter, a piece of 12 characters or more, or one of half its length (``spec028_ac10_m4_canary``
    is four short words in one case; a base64url token mixes cases and has a separator every 32
    characters on average)."""
    longest = max(map(len, _SEGMENT_SPLIT.split(value)), default=0)
    mixed_case = value.lower() != value and value.upper() != value
    return mixed_case or longest >= 12 or 2 * longest >= len(value)


def _short_hex(value: str, minimum: int) -> bool:
    """Hex under 32 characters, or a digest's length: an identifier, not a credential (a run at
    a ``...`` cut is judged on what is left, so there any length counts)."""
    plain = value.replace("-", "").replace("_", "")
    if not _is_hex(plain):
        return False
    return len(plain) in _DIGEST_LENGTHS or (len(plain) < 32 and minimum >= MIN_TOKEN_LENGTH)


def _hex_body(piece: str) -> bool:
    """A hex body of 20 characters or more behind letters a vendor glued to it."""
    glued = _PREFIXED_HEX.fullmatch(piece)
    return glued is not None and _hex_run(glued.group(2) or glued.group(4))


def _hex_run(piece: str) -> bool:
    """Hex of 20 characters or more with digits and letters: after a vendor's prefix segment
    (``bkua_<40 hex>``) even a digest's length is a token."""
    return (
        len(piece) >= 20 and _is_hex(piece) and not piece.isdigit() and not piece.isalpha()
        and shape(piece)[5] >= 3.0
    )


GENERIC_TOKEN = rf"[{CREDENTIAL_ALPHABET}]{{{MIN_TOKEN_LENGTH},}}+"
"""A whole run of credential characters: possessive, so a search that finds a run takes all of
it and the next search starts after it (no look-around at every character of a long run)."""
CUT_TOKEN = (
    rf"[A-Za-z0-9+/_-](?<![{CREDENTIAL_ALPHABET}][A-Za-z0-9+/_-])"
    rf"[{CREDENTIAL_ALPHABET}]{{{MIN_CUT_LENGTH - 1},}}+"
    r"(?=\.\.\.|…)"
    rf"|(?:(?<=\.\.\.)|(?<=…))[{CREDENTIAL_ALPHABET}]{{{MIN_CUT_LENGTH},}}+"
)
"""A run that ends at a ``...`` (or ``…``) cut, or starts after one: pytest's ``saferepr`` keeps
the two ends of a long value and drops its middle."""
CUT_TOKEN_LINES = r"\.\.\.|…"
"""What a line holding a :data:`CUT_TOKEN` holds: the cut."""


_DIGEST_LABEL = re.compile(r"(?i:sha(?:1|256|384|512)|md5)[:-]")
"""What labels a digest in base64 (an SSH key fingerprint ``SHA256:7OiV…``, a subresource
integrity value ``sha384-…``): the run after it is a digest, shown as evidence."""


_RUN_START = rf"[{CREDENTIAL_ALPHABET}](?<![{CREDENTIAL_ALPHABET}][{CREDENTIAL_ALPHABET}])"
JOINED_TOKEN = (
    rf"(?:(?<=<SECRET>)|(?<=<TOKEN>))[.$!:%_-]([{CREDENTIAL_ALPHABET}]{{{MIN_CUT_LENGTH},}}+)"
    rf"|({_RUN_START}[{CREDENTIAL_ALPHABET}]{{{MIN_CUT_LENGTH - 1},}}+)"
    r"(?=[.$!:%](?:[A-Za-z0-9]{1,12}[.$!:%])?<(?:SECRET|TOKEN)>)"
)
"""A part of a token that a joiner (``.``, ``$``, ``!``, ``:``, ``%``) ties to a part already
replaced, possibly across one short word: ``pat…<SECRET>.<64 hex>``, ``<14>.atlasv1.<SECRET>``,
``00D…!<SECRET>``. It is found in the pass after the first part's, the text a placeholder
left."""
JOINED_TOKEN_LINES = r"<(?:secret|token)>"
"""What a line holding a :data:`JOINED_TOKEN` holds: the placeholder of the part replaced."""
_PLACEHOLDERS = ("<SECRET>", "<TOKEN>")
_SHORT_PART = 15
"""Characters of a token that may stand between its replaced first part and a break: a part
shorter than a generic token is not judged on its own (an escaped ``\\u005f``, decoded to ``_``
only after the first part was replaced, left it apart)."""
_TAIL = (
    r"[ \t]{0,8}(?=[^\s0-9]*+[0-9]|[^\sa-z]*+[a-z][^\sA-Z]*+[A-Z])(?![a-z_]++[ \t]*[:=])"
    rf"([{CREDENTIAL_ALPHABET}]{{{MIN_CUT_LENGTH},}}+)"
)
"""The rest of a token on the far side of a break: it reads as a random tail (a digit, or a capital
after a small letter, as a token continued on the next line must), is no ``name:`` or ``name=``
of its own, and has 8 characters or more (group 1)."""
ESCAPED_BREAK_TAIL = (
    "(?:" + "|".join(f"(?<={re.escape(placeholder)})" for placeholder in _PLACEHOLDERS) + ")"
    rf"[.{CREDENTIAL_ALPHABET}]{{0,{_SHORT_PART}}}(?:\\[nrt]|\\x0[aAdD]|\\u000[aAdD]|%0[aAdD]){{1,2}}{_TAIL}"
)
"""The rest of a token after an escaped line break (a repr's or JSON's ``\\n``, a percent-encoded
``%0A``, a ``\\x0a`` or ``\\u000a``) whose first part a placeholder already replaced: a first part
long enough to read as generated on its own is replaced before :data:`ESCAPED_BREAK_TOKEN` can
join the two, and the decoding step leaves an escaped break as written."""
ESCAPED_BREAK_TAIL_LINES = r"<(?:secret|token)>[^\n]{0,15}(?:\\|%0)"
"""What a line holding an :data:`ESCAPED_BREAK_TAIL` holds: the placeholder and the escape."""


def _line_end_after_placeholder() -> str:
    """Look-behinds, from a line break, for a line that ends with a placeholder and at most
    :data:`_SHORT_PART` token characters; one per width (a look-behind has one width)."""
    by_width: dict[int, list[str]] = {}
    for placeholder in _PLACEHOLDERS:
        for short in range(_SHORT_PART + 1):
            for line_end in ("\n", "\r\n"):
                spelled = f"{re.escape(placeholder)}[.{CREDENTIAL_ALPHABET}]{{{short}}}{re.escape(line_end)}"
                by_width.setdefault(len(placeholder) + short + len(line_end), []).append(spelled)
    return "|".join(f"(?<={'|'.join(spelled)})" for spelled in by_width.values())


LINE_BREAK_TAIL = rf"\n(?:{_line_end_after_placeholder()}){_TAIL}"
"""The rest of a token on the line after its first part's placeholder: the first part was
replaced before a line break joined it to the rest, as when an escaped character (``\\u005f``,
``%5F``) ended the first line and only the decoding step spelled it. Found from the line break
(the engine skips ahead to each), never across a placeholder."""


LINE_END_HEAD_LONGEST = _SHORT_PART
LINE_END_HEAD = (
    rf"{_RUN_START}[{CREDENTIAL_ALPHABET}]{{3,{LINE_END_HEAD_LONGEST - 1}}}+"
    r"(?=\r?\n[ \t]{0,8}<(?:SECRET|TOKEN)>)"
)
"""The first part of a token a line break cut, 4 to 15 characters ending its line, when the next
line starts with the placeholder of its rest (a rest of 16 characters or more was replaced as
a generic token, the first part too short to be judged alone): found in the pass after the
rest's, from the line break (:data:`LINE_END_HEAD_BEFORE`)."""
LINE_END_HEAD_BEFORE = r"\n[ \t]{0,8}<(?:SECRET|TOKEN)>"
"""What a :data:`LINE_END_HEAD` is followed by (after a ``\r``, if any): the line break and the
rest's placeholder; a plain ``\n`` first, so the engine skips to each line break."""


def line_end_head(match: re.Match[str]) -> bool:
    """The first part reads random on its own at its short length, or is six letters or more of
    both cases that change case at every other letter at least (``TeKdNnFRIBXu``): a word, a
    camel-case name (``TestCase``, ``getName``) or a number before a replaced line stays."""
    head = match.group(0)
    length, transitions, digit, lower, upper, _ = shape(head)
    mixed_letters = not digit and lower and upper and length >= 6 and transitions >= (length - 1) / 2
    return mixed_letters or reads_random(head, 4)


def joined_token(match: re.Match[str]) -> bool:
    """The joined part has letters and digits, or both cases, and no run of one kind longer than
    a word: beside a replaced part it is the rest of the token (a digest's length of hex too)."""
    part = (match.group(1) or match.group(2)).strip("=")
    length, transitions, digit, lower, upper, entropy = shape(part)
    mixed = (digit and (lower or upper)) or (lower and upper)
    return mixed and length >= MIN_CUT_LENGTH and transitions / (length - 1) >= 0.1 and entropy >= 2.5


ESCAPED_BREAK_TOKEN = (
    rf"{_RUN_START}[{CREDENTIAL_ALPHABET}]{{3,}}+(?:\\[nrt]){{1,2}}[ \t]{{0,8}}[{CREDENTIAL_ALPHABET}]{{4,}}+"
)
"""A run broken by an escaped line break or tab (``'zq_Xb7Kp2Lm9\\n4Rt6Ws8'``, how pytest's repr
writes a value that held one): judged as the run it was."""
ESCAPED_BREAK_TOKEN_LINES = r"\\[nrt]"
"""What a line holding an :data:`ESCAPED_BREAK_TOKEN` holds: the escape."""


def escaped_break_token(match: re.Match[str]) -> bool:
    joined = re.sub(r"(?:\\[nrt])+[ \t]*", "", match.group(0))
    return looks_generated(joined)


_ESCAPE_CODE = {"\\": re.compile(r"x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})"), "%": re.compile(r"[0-9A-Fa-f]{2}")}
"""The code after a ``\\`` or a ``%`` that :mod:`._redact` decodes: ``\\x41``, ``\\u0041``, ``%41``."""


def escaped_character(code: str) -> str | None:
    """The character the hex ``code`` of an escape is decoded to: a printable one but a quote or
    a backslash (those stay escaped so JSON stays JSON); None when the escape stays as written."""
    character = chr(int(code, 16))
    return character if character.isprintable() and character not in "\"\\" else None


def _rest_of_escape(before: str, run: str) -> bool:
    """Whether ``run`` is the rest of an escape the decoding step reads (and then redacts what it
    spells). An escape of a control character (``\\x00``, ``%00``) stays as written, so the run
    after it is judged here, or nothing would ever judge it."""
    pattern = _ESCAPE_CODE.get(before)
    code = None if pattern is None else pattern.match(run)
    if code is None:
        return before == "\\"
    return escaped_character(code.group(code.lastindex or 0)) is not None


def generic_token(match: re.Match[str]) -> bool:
    """A run of credential characters with a capital or a digit that reads as generated (see
    :func:`looks_generated`): not a labelled digest, not the rest of an escape (``\\x41…``), not
    the end of a run a search started inside."""
    start, run = match.start(), match.group(0)
    before = match.string[start - 1] if start else ""
    if _rest_of_escape(before, run) or (before and before in _ALPHABET_SET):
        return False
    if _UPPER_OR_DIGIT.search(run) is None:
        return False
    label = _DIGEST_LABEL.search(match.string, max(0, start - 7), start)
    return (label is None or label.end() != start) and looks_generated(run)


_DIGEST_WORD_BEFORE = re.compile(r"(?i:sha\d*|digest|commit|etag|revision|rev)[ \t:=-]{1,3}$")


def cut_token(match: re.Match[str]) -> bool:
    """A run at a cut, judged on what is left of it (8 characters or more); hex after a word that
    names a digest is that digest shortened (``bundle-sha256 2ebaf1cad1cf…``), and hex closing a
    cut repr is an object's address (``<TagTrace...7f9f0a5af6b0>``): both shown on purpose."""
    left = match.group(0).strip("=-_/+")
    start = match.start()
    named = _DIGEST_WORD_BEFORE.search(match.string, max(0, start - 12), start) is not None
    if named and _is_hex(left):
        return False
    end = match.end()
    if _is_hex(left) and len(left) <= 16 and match.string[end : end + 1] == ">":
        return False
    parts = _path_parts(left)
    if parts is not None:
        # Only the component at the cut lost characters; the others are whole.
        cut_at_end = match.string.startswith(("...", "…"), end)
        whole, left = (parts[:-1], parts[-1]) if cut_at_end else (parts[1:], parts[0])
        if looks_generated("/".join(whole)):
            return True
    pieces = [left.replace("-", ""), *_SEGMENT_SPLIT.split(left)]
    mixed_hex = any(
        len(piece) >= MIN_CUT_LENGTH and _is_hex(piece) and not piece.isdigit() and not piece.isalpha()
        for piece in pieces
    )
    return mixed_hex or looks_generated(left, MIN_CUT_LENGTH)


_STRONG_WORDS = (
    r"(?<=p)ass(?:word|wd|phrase|code)?|(?<=p)wd|(?<=s)ecret|(?<=t)oken|(?<=a)pi[ _.-]?key|(?<=a)pikey"
    r"|(?<=a)ccess[ _.-]?key|(?<=p)rivate[ _.-]?key|(?<=c)redentials?|(?<=l)ogin|(?<=d)sn"
    r"|(?<=c)onnection[ _.-]?string"
)
_WEAK_WORDS = (
    r"(?<=k)ey|(?<=a)uth(?:orization)?|(?<=s)ession|(?<=c)ookie|(?<=s)ig(?:nature)?|(?<=p)at|(?<=j)wt"
    r"|(?<=c)red|(?<=p)in|(?<=o)tp"
)
_STRONG_SUFFIX = re.compile(r"(?i:token|secret|pass(?:word|wd)?|key)$")
"""A weak word's name that ends in a strong one is strong: ``authToken``, ``session_secret``, ``authKey``."""
_SHORT_STRONG = frozenset({"pass", "pwd", "login", "dsn"})
"""Strong words short enough to end another word (``bypass``, ``compass``): only where a name starts."""
_NAME_PART = r"(?:[_.-][A-Za-z0-9]{1,12}|[A-Z][a-z0-9]{1,11})?"
_ASSIGNMENT = r"[\"'\]]{0,2}[ \t]{0,4}(?:=>|:=|==?|:(?![:/]|\\(?![nrt])))[ \t]{0,4}"
_QUOTED_PAIR_INSIDE = (
    rf"[^\"'`\n]{{0,256}}?[pPsStTaAcClLdDkKjJoO](?i:{_STRONG_WORDS}|{_WEAK_WORDS}){_NAME_PART}{_ASSIGNMENT}"
    r"[\"'`][^\"'`\n]{1,256}?"
)
"""A quoted value whose closing quote is the opening quote of the next key's value (a stray
quote before it: ``token=' Api-Key: 'Pa55 word'``): the value runs on to that value's end."""
KEYWORD_VALUE = (
    r"[pPsStTaAcClLdDkKjJoO]"
    rf"(?P<kname>(?i:(?P<strong>{_STRONG_WORDS})|(?P<weak>{_WEAK_WORDS})){_NAME_PART})"
    + _ASSIGNMENT
    + r"(?P<kvq>[\"'`])?"
    + rf"(?P<kvv>(?(kvq)(?:{_QUOTED_PAIR_INSIDE}|[^\"'`\n]{{1,256}}?)(?=[\"'`])"
    + r"|[^\s\"'`,;&<>(){}\[\]]{1,256}+))"
)
"""A credential-ish key in any case or separator (``password``, ``DB_PASSWORD``, ``Api-Key``,
``x-auth-token``, ``apiKey``), its closing quote, an assignment (``=``, ``:``, ``=>``, ``:=``; not the
``::`` of a node id nor a ``://``, nor a colon before a backslash but that of an escaped break or tab:
``password:\\nVALUE`` is how a node id or an escaped log shows a value on the next line), and
the value (group ``kvv``): a quoted string whole (spaces too; through the next key's quoted value
when a key and its assignment end it,
:data:`_QUOTED_PAIR_INSIDE`), or a bare word. Strong words take any value that is not code; weak
ones (``key``, ``auth``, ``session``) only one with a digit or that reads random."""
KEYWORD_VALUE_LINES = (
    r"(?:a(?:ccess|pi|uth)|c(?:o(?:nnection|okie)|red)|dsn|jwt|key|login|otp|p(?:a(?:ss|t)|in|rivate|wd)"
    r"|s(?:e(?:cret|ssion)|ig)|token)[^\n]{0,40}?[=:]"
)
"""What a line holding a :data:`KEYWORD_VALUE` holds in small letters: the start of a keyword
(one branch per next letter, so the engine tries a letter, not every word), then its assignment
within 40 characters (the rest of the longest word, ``connection string``, is 7; the name's own
part 13, a closing quote 2 and spaces 4). The catalogue's ``high-entropy-key-value`` (its
words a subset of these, its name's part up to 24 characters, ``credentials`` 7 after
``cred``: 37) uses it too, so one scan finds the lines of both."""

CODE_VALUES = frozenset({
    "none", "null", "nil", "true", "false", "str", "bytes", "int", "bool", "dict", "list", "optional",
    "any", "self", "cls", "required", "optional[str]", "undefined", "missing", "redacted",
    "xxx", "***", "...", "env", "string",
})
"""Values that show code or a form, not a credential (``token: str``, ``password=None``)."""
_CODE_SHAPE = re.compile(
    r"(?:self|cls|os|sys|args|kwargs|config|settings|options|request|env|environ|ctx)(?:\.[A-Za-z_]\w*)+"
    r"|[a-z_][a-z0-9_]*\(.*|\$\{?\w+\}?|%\(\w+\)s|\{\w*\}"
)
"""An attribute of a well-known object (``self.token``, ``os.environ``), a call, or a placeholder
(``$TOKEN``, ``{token}``)."""
_AUTH_SCHEME = re.compile(r"(?i:bearer|basic|digest|negotiate|token)(?:%20|\s|$)")
"""An ``Authorization`` value's scheme: the bearer and auth-header rules take the token after it."""


def _starts_a_name(text: str, start: int) -> bool:
    """A keyword at ``start`` begins a word or a part of one (``client_secret``, ``X-Api-Key``,
    ``apiKey``), not the middle of another (``monkey``, ``bypass``)."""
    if start == 0:
        return True
    before, first = text[start - 1], text[start]
    return not (before.isascii() and before.isalnum()) or (first.isupper() and before.islower())


def keyword_value(match: re.Match[str]) -> bool:
    """The value after a strong keyword unless it is code; after a weak one only if it reads
    random (8 characters or more). A weak keyword, and a short strong one (``pass``), must start
    a name."""
    value = match.group("kvv")
    if value.lower() in CODE_VALUES or _CODE_SHAPE.fullmatch(value) or value.startswith("<"):
        return False
    if _AUTH_SCHEME.match(value):
        return False
    strong = match.group("strong")
    if strong is not None:
        strong = match.group(0)[0] + strong
    else:
        suffix = match.group("kname")[len(match.group("weak")):]
        strong = suffix if _STRONG_SUFFIX.search(suffix) else None
    at_start = _starts_a_name(match.string, match.start())
    if strong is not None and (at_start or strong.lower() not in _SHORT_STRONG):
        return True
    return at_start and looks_generated(value, MIN_WEAK_VALUE_LENGTH)


_NETRC_LINE_START = r"(?:^|(?<=\r))"
"""Where a ``.netrc`` line starts: after a ``\n`` or a ``\r`` (a file written with ``\r\n`` or
``\r`` line ends, which curl and Python's ``netrc`` read as whitespace like any other)."""
NETRC_LINE = (
    rf"(?m:{_NETRC_LINE_START}[ \t]*(?:machine[ \t]+\S+|default)"
    r"(?:[ \t]+(?:login|password|account|port|macdef)[ \t]+\S+)+)"
)
"""A ``.netrc`` entry on one line: ``machine HOST login USER password PASS``."""
NETRC_LINE_WORDS = r"machine|default"
NETRC_FIELD = rf"(?m:{_NETRC_LINE_START}[ \t]*(?:password|passwd|login|account)[ \t]+(\S+)[ \t]*(?=\r|$))"
NETRC_FIELD_WORDS = r"password|passwd|login|account"
"""A field of a ``.netrc`` entry written one per line: the keyword, one word, nothing else (a
``\r`` may end the line)."""
_NETRC_VALUE = re.compile(r"(\b(?:login|password|account)[ \t]+)(\S+)")


def netrc_rewrite(line: str) -> str:
    """The netrc line with its login, password and account values replaced."""
    return _NETRC_VALUE.sub(lambda match: match.group(1) + "<SECRET>", line)


FLAG_VALUE = (
    r"-(?<![\w-]-)-?[A-Za-z0-9-]{0,20}?(?i:pass(?:word|wd|phrase)?|token|secret|api[_-]?key|access[_-]?key"
    r"|credentials?|auth)(?:[_-][A-Za-z0-9-]{0,12})?[ \t]+(?![-<])([^\s\"'`]{1,256}+)"
)
"""A value given by position after a command-line flag: ``--password VALUE``, ``--hf-token VALUE``."""
FLAG_VALUE_WORDS = ("pass", "token", "secret", "api", "access", "credential", "auth")
"""What a :data:`FLAG_VALUE` holds in small letters: a start of each of its flag's words."""
USER_FLAG_PASSWORD = r"-(?<![\w-]-)(?:u|-user)[ \t]+[^\s:\"'`]{1,64}:([^\s@\"'`]{1,256}+)"
"""The password of ``curl -u user:PASS`` (``--user`` too)."""

CHECKS: dict[str, Callable[[re.Match[str]], bool]] = {
    "escaped-break-token": escaped_break_token,
    "joined-token": joined_token,
    "generic-token": generic_token,
    "cut-token": cut_token,
    "keyword-value": keyword_value,
}
