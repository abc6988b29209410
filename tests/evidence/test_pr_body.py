"""The PR-body parser takes bodies as people write them, and only what a reviewer can see.

Each form from issue 12 (headings #-###, words after "evidence", quoted blocks, prose that
mentions the tool, CRLF, stdin, the GitHub event payload) and from issue 11 (blocks inside
HTML comments, fenced or indented code are not evidence) has its own case here.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from evidence_testkit import TEST_ENV, GitRepo, gate, qualifying_bundle
from hypothesis import example, given
from hypothesis import strategies as st

from pytest_specgate.evidence import (
    HiddenEvidence,
    PrBodyError,
    WrittenBundle,
    read_pr_body,
)
from pytest_specgate.evidence._markdown import digest_line

AC_SHA = "a" * 64
BUNDLE_SHA = "b" * 64
DIGEST = f"`{digest_line('AC-3', AC_SHA, BUNDLE_SHA)}`"


def _block(heading: str = "## AC-3 evidence", digest: str = DIGEST) -> str:
    return f"{heading}\n\n**Verdict: PASSED · QUALIFYING**\n\n- Host: m4\n\n{digest}\n"


def _only(text: str) -> tuple[str, str, str, int, str | None]:
    body = read_pr_body(text, "PR.md")
    assert body.hidden == ()
    (block,) = body.blocks
    return block.ac_id, block.ac_sha256, block.bundle_sha256, block.line, block.verdict_text


@pytest.mark.parametrize(
    "heading",
    [
        "# AC-3 evidence",
        "## AC-3 evidence",
        "### AC-3 evidence",
        "## AC-3 evidence — M4 desk run, 16 GB",
        "### AC-3 Evidence (re-run after the fix) ###",
    ],
)
def test_headings_one_to_three_with_words_after(heading: str) -> None:
    text = f"## Summary\n\nFaster decoding.\n\n{_block(heading)}"
    assert _only(text) == ("AC-3", AC_SHA, BUNDLE_SHA, 5, "PASSED · QUALIFYING")


def test_a_fourth_level_heading_is_not_an_evidence_block() -> None:
    assert read_pr_body(_block("#### AC-3 evidence"), "PR.md").blocks == ()


def test_a_quoted_block_counts() -> None:
    quoted = "".join(f"> {line}\n" if line else ">\n" for line in _block().splitlines())
    assert _only("Evidence from the desk M4:\n\n" + quoted) == (
        "AC-3", AC_SHA, BUNDLE_SHA, 3, "PASSED · QUALIFYING"
    )


def test_prose_mentioning_the_tool_is_not_a_second_digest_line() -> None:
    text = _block() + (
        "\nThe specgate-evidence line above binds this block to the bundle; "
        "run `specgate gate` to check specgate-evidence locally.\n"
    )
    assert _only(text)[:3] == ("AC-3", AC_SHA, BUNDLE_SHA)


def test_crlf_line_ends() -> None:
    assert _only(_block().replace("\n", "\r\n")) == ("AC-3", AC_SHA, BUNDLE_SHA, 1, "PASSED · QUALIFYING")


def test_a_block_ends_at_the_next_heading_of_its_level() -> None:
    text = f"## AC-3 evidence\n\n**Verdict: PASSED · QUALIFYING**\n\n## Notes\n\n{DIGEST}\n"
    with pytest.raises(PrBodyError, match=r"^PR\.md:1: block '## AC-3 evidence' has no 'specgate-evidence"):
        read_pr_body(text, "PR.md")


def test_two_digest_lines_in_one_block_are_refused_naming_both_lines() -> None:
    with pytest.raises(PrBodyError, match=r"has 2 specgate-evidence lines \(lines 7, 8\); expected one"):
        read_pr_body(_block() + DIGEST + "\n", "PR.md")


def test_a_malformed_digest_line_is_named() -> None:
    broken = _block(digest="`specgate-evidence AC-3 ac-sha256=abc bundle-sha256=def`")
    with pytest.raises(PrBodyError, match=r"^PR\.md:7: malformed digest line"):
        read_pr_body(broken, "PR.md")


@pytest.mark.parametrize(
    ("text", "hidden_in", "line"),
    [
        (f"<!--\n{_block()}-->\n", "an HTML comment", 2),
        (f"Intro <!-- {_block().replace(chr(10), ' ')} -->\n", "an HTML comment", 1),
        (f"```markdown\n{_block()}```\n", "a fenced code block", 2),
        (f"~~~~\n{_block()}~~~~\n", "a fenced code block", 2),
        ("Paste this:\n\n" + "".join(f"    {line}\n" for line in _block().splitlines()),
         "an indented code block", 3),
    ],
    ids=["comment", "inline-comment", "fence", "tilde-fence", "indented"],
)
def test_blocks_hidden_from_reviewers_are_not_evidence(text: str, hidden_in: str, line: int) -> None:
    body = read_pr_body(text, "PR.md")
    assert body.blocks == ()
    assert body.hidden_for("AC-3")[0] == HiddenEvidence("AC-3", line, hidden_in)


def test_a_digest_line_inside_a_comment_of_a_visible_block_is_named() -> None:
    text = _block(digest=f"<!-- {DIGEST} -->")
    hidden = r"\(line 7 is inside an HTML comment, which a reviewer cannot see\)"
    with pytest.raises(PrBodyError, match=hidden):
        read_pr_body(text, "PR.md")


def test_a_visible_block_after_a_fenced_example_counts() -> None:
    text = f"```\n## AC-9 evidence\n```\n\n{_block()}"
    body = read_pr_body(text, "PR.md")
    assert [block.ac_id for block in body.blocks] == ["AC-3"]
    assert body.hidden == (HiddenEvidence("AC-9", 2, "a fenced code block"),)


def test_a_block_without_a_verdict_line_says_so() -> None:
    body = read_pr_body(f"## AC-3 evidence\n\n{DIGEST}\n", "PR.md")
    assert (body.blocks[0].verdict_text, body.blocks[0].verdict_line) == (None, None)


# --- through `specgate gate` with a real bundle ---------------------------------------------


@pytest.fixture
def bundle(git_repo: GitRepo) -> WrittenBundle:
    return qualifying_bundle(git_repo.path, TEST_ENV)


def _quoted(markdown: str) -> str:
    return "".join(f"> {line}\n" if line else ">\n" for line in markdown.splitlines())


def test_gate_reads_the_body_from_stdin(
    bundle: WrittenBundle, git_repo: GitRepo, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(bundle.markdown.replace("\n", "\r\n")))
    code, out, _ = gate(capsys, "--pr-body=-", f"--evidence={bundle.path}", "--require=AC-10",
                        f"--commit={git_repo.commit}")
    assert (code, out) == (0, ["specgate gate: accepted AC-10"])


def test_gate_reads_the_body_from_the_github_event(
    bundle: WrittenBundle, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event = tmp_path / "event.json"
    body = "## Summary\r\n\r\nSPEC-028.\r\n\r\n" + _quoted(bundle.markdown)
    event.write_text(json.dumps({"action": "opened", "pull_request": {"number": 7, "body": body}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_SHA", git_repo.commit)
    code, out, _ = gate(capsys, "--pr-body-from-event", f"--evidence={bundle.path}",
                         "--require=AC-10", "--require=AC-11")
    assert (code, out) == (0, ["specgate gate: accepted AC-10, AC-11"])


def test_gate_on_an_event_without_a_pull_request_exits_2(
    bundle: WrittenBundle, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")
    code, out, err = gate(capsys, "--pr-body-from-event", f"--evidence={bundle.path}")
    assert (code, out) == (2, [])
    assert err == (f"specgate gate: error: {event}: the push event has no pull_request; "
                   "run the gate on pull_request events\n")
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    code, _, err = gate(capsys, "--pr-body-from-event", f"--evidence={bundle.path}")
    assert code == 2 and "$GITHUB_EVENT_PATH is not set" in err


def test_gate_names_a_required_block_found_only_in_a_comment(
    bundle: WrittenBundle, git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ac10, ac11 = bundle.markdown.split("## AC-11 evidence")
    body = tmp_path / "PR.md"
    body.write_text(f"{ac10}<!-- reviewers: skip this\n## AC-11 evidence{ac11}-->\n")
    code, out, _ = gate(capsys, f"--pr-body={body}", f"--evidence={bundle.path}",
                         "--require=AC-10", "--require=AC-11", f"--commit={git_repo.commit}")
    hidden_line = ac10.count("\n") + 2
    assert (code, out) == (1, [
        "AC-11: no visible '## AC-11 evidence' block in the PR body: it was found only where a "
        f"reviewer cannot see it (line {hidden_line} is inside an HTML comment); blocks in "
        "comments or code are not evidence"
    ])


MARKDOWN_PIECES = (
    "", " ", "    code", "\tcode", "   > quoted", "> > twice", ">", "```", "~~~", "````python", "   ```",
    "<!--", "-->", "a <!-- b --> c", "<!-- one line -->", "## AC-3 evidence", "# Title", "### AC-3 evidence",
    DIGEST, "- Host: linux", "**Verdict: PASSED · QUALIFYING**", "text", "\x0b", "\u2003x", "x\r", "-",
)


@given(st.lists(st.sampled_from(MARKDOWN_PIECES) | st.text(max_size=6), max_size=14))
@example(["", "    code", "text", "    after text: a paragraph's continuation, not code"])
@example(["<!--", "text -->", "text"])
def test_plain_lines_read_fast_are_read_as_the_full_classification_reads_them(
    pieces: list[str],
) -> None:
    """A line no quote, fence, indent or comment starts is taken as visible without the full
    classification (10,000 pasted blocks are mostly such lines): every body reads the same as
    when each line takes the full classification."""
    from pytest_specgate.evidence import _markdown

    text = "\n".join(pieces)
    fast = _markdown._visible_lines(text)
    with pytest.MonkeyPatch.context() as full:
        full.setattr(_markdown, "plain_line", lambda raw: False)
        assert _markdown._visible_lines(text) == fast


@given(st.text(alphabet=st.sampled_from(" \t#>*_`~-:AVCdeiknorstv0123456789\u00a0"), max_size=24)
       | st.sampled_from(MARKDOWN_PIECES))
@example("   # AC-3 evidence")
@example("**Verdict: PASSED**")
@example(DIGEST)
def test_the_parsers_literal_prefilters_skip_only_lines_their_patterns_cannot_match(text: str) -> None:
    """A line is matched against a heading only where a ``#`` is among its first four characters,
    against the digest patterns only where it holds ``specgate-evidence``, against the verdict
    only where it holds ``Verdict:``: each pattern matches no line its prefilter skips."""
    from pytest_specgate.evidence import _markdown

    if _markdown._HEADING.match(text):
        assert "#" in text[:4]
    if _markdown._DIGEST.search(text) or _markdown._DIGEST_ATTEMPT.search(text):
        assert _markdown.DIGEST_KEYWORD in text
    if _markdown._VERDICT.match(text.strip()):
        assert "Verdict:" in text
