"""Every bad input is one clear line (exit 2, or a usage error inside pytest), never a traceback.

Each test feeds one bad input the way a user would and asserts the line they see:
it names the file, option or marker, what was expected and what was found.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_specgate.cli import main
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import one_line_text, parse_json, shown_on_one_line
from pytest_specgate.qualification import HttpCounterProbe
from pytest_specgate.qualification._budget import measured_durations

DEEP = 100_000


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_depth_counts_brackets_outside_strings_only() -> None:
    text = '{"a": [1, {"b": "' + "[{" * 500 + '"}], "c": "\\"]"}'
    assert parse_json(text, "f.json", max_depth=3)["c"] == '"]'
    with pytest.raises(SpecgateInputError, match=r"^f.json: JSON nested deeper than 2 levels$"):
        parse_json(text, "f.json", max_depth=2)


@pytest.mark.parametrize("depth", [101, 999, DEEP])
def test_parse_json_refuses_depth_nan_and_infinity_with_where(depth: int) -> None:
    with pytest.raises(SpecgateInputError, match=r"^f.json: JSON nested deeper than 100 levels$"):
        parse_json(_deep(depth), "f.json")
    for constant in ("NaN", "Infinity", "-Infinity"):
        not_finite = rf"^f.json: found {constant}; expected a finite number$"
        with pytest.raises(SpecgateInputError, match=not_finite):
            parse_json(f'{{"x": {constant}}}', "f.json")
    assert json.dumps(parse_json(_deep(100), "f.json")) == _deep(100)


def test_parse_json_refuses_a_number_that_overflows_to_infinity_and_keeps_the_largest_finite_ones() -> None:
    """``1e400`` is valid JSON that parses to inf: a record holding it passed the schema (a number)
    and every threshold, then crashed merge and compare --json when they wrote it back; an integer
    past the largest float crashed every reader of the record (``float()`` of it)."""
    for written in ("1e400", "-1e999", "1.8e308"):
        beyond = rf"^f.json: found {written}, beyond the range of a finite number$"
        with pytest.raises(SpecgateInputError, match=beyond):
            parse_json(f'{{"value": {written}}}', "f.json")
    assert parse_json('[1.7976931348623157e308, -5e-324, 1e-400, 0.5, 10]', "f.json") == [
        1.7976931348623157e308, -5e-324, 0.0, 0.5, 10]
    largest = int(1.7976931348623157e308)
    for written in (str(2 * 10**308), str(-(10**400))):
        digits = len(written.lstrip("-"))
        beyond = rf"^f.json: found an integer of {digits} digits, beyond the range of a finite number$"
        with pytest.raises(SpecgateInputError, match=beyond):
            parse_json(f'{{"ci_low": {written}}}', "f.json")
    assert parse_json(f"[{largest}, {-largest}, {10**308}, 7]", "f.json") == [largest, -largest, 10**308, 7]


def test_a_deeply_nested_note_fails_the_test_and_a_shallower_one_stays_readable_by_the_gate(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_notes=(
        "import pytest\n\n"
        "def nested(depth):\n"
        "    value = []\n"
        "    for _ in range(depth - 1):\n"
        "        value = [value]\n"
        "    return value\n\n"
        "@pytest.mark.ac('AC-1')\n"
        "@pytest.mark.parametrize('depth', [64, 5000])\n"
        "def test_note(evidence, depth):\n"
        "    evidence.note('deep', nested(depth))\n"
    ))

    result = pytester.runpytest("--specgate-evidence=out")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*ValueError: evidence.note('deep'): value nested 65 levels deep (or more); "
                                 "expected at most 64"])
    bundle = next((pytester.path / "out").glob("*/manifest.json")).parent
    assert main(["render", str(bundle)]) == 0


def test_one_line_text_names_the_character_and_where() -> None:
    assert one_line_text("speedup ≥ 1.4× on M4", "title=") == "speedup ≥ 1.4× on M4"
    with pytest.raises(SpecgateInputError, match=r"^title=: expected one line of printable text, found '\\r' "
                                         r"\(U\+000D\) at position 1$"):
        one_line_text("a\rb", "title=")



def test_shown_on_one_line_escapes_what_could_break_or_rewrite_the_line_and_keeps_the_rest() -> None:
    honest = "AC-10: speedup ≥ 1.4× on M4 — naïve 日本 t.py::test_x[a\\nb]"
    assert shown_on_one_line(honest) == honest
    forged = "t.py::x\nspecgate gate: accepted\r\x85\u2028\u2029\u202e\x1b[2K\t::error::"
    shown = shown_on_one_line(forged)
    assert shown == r"t.py::x\nspecgate gate: accepted\r\x85\u2028\u2029\u202e\x1b[2K\t::error::"
    assert shown.isprintable() and len(shown.splitlines()) == 1


@pytest.fixture
def spec_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_spec=(
        "import pytest\n\n"
        "@pytest.mark.hardware(min_memory_gb=1)\n"
        "def test_needs_memory():\n"
        "    pass\n"
    ))
    return pytester


def test_deeply_nested_host_facts_file_is_a_usage_error(spec_project: pytest.Pytester) -> None:
    facts = spec_project.path / "facts.json"
    facts.write_text('{"os": "linux", "arch": "x86_64", "extra": ' + _deep(DEEP) + "}")

    result = spec_project.runpytest(f"--specgate-host-facts={facts}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --specgate-host-facts: host facts file {facts}: JSON nested "
                                 "deeper than 100 levels"])
    assert "RecursionError" not in result.stdout.str() + result.stderr.str()


def test_host_facts_file_that_is_not_utf8_is_a_usage_error(spec_project: pytest.Pytester) -> None:
    facts = spec_project.path / "facts.json"
    facts.write_bytes(b'{"os": "linux", "arch": "x86_64", "cpu_brand": "caf\xe9"}')

    result = spec_project.runpytest(f"--specgate-host-facts={facts}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --specgate-host-facts: host facts file {facts}: expected "
                                 "UTF-8 text, found byte 0xe9 at offset 51"])


def test_deeply_nested_engine_option_is_a_usage_error(spec_project: pytest.Pytester) -> None:
    result = spec_project.runpytest(f"--specgate-engine-option=faults={_deep(DEEP)}")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*: error: argument --specgate-engine-option: faults: JSON nested deeper "
                                 "than 100 levels"])


@pytest.mark.parametrize(("title", "shown"), [
    ("a\\rb", "'\\r' (U+000D) at position 1"),
    ("a\\u2028## AC-9 evidence", "'\\u2028' (U+2028) at position 1"),
])
def test_an_ac_title_that_breaks_the_markdown_is_refused_at_collection(
    pytester: pytest.Pytester, title: str, shown: str
) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_titles=(
        "import pytest\n\n"
        f'@pytest.mark.ac("AC-1", title="{title}")\n'
        "def test_titled():\n"
        "    pass\n"
    ))

    result = pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: test_titles.py::test_titled: @pytest.mark.ac: title=: expected one "
                                 f"line of printable text, found {shown}"])


@pytest.mark.parametrize("bound", ['float("nan")', 'float("inf")'])
def test_nan_or_inf_as_a_hardware_bound_is_a_usage_error(pytester: pytest.Pytester, bound: str) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    pytester.makepyfile(test_bounds=(
        "import pytest\n\n"
        f"@pytest.mark.hardware(min_memory_gb={bound})\n"
        "def test_bounded():\n"
        "    pass\n"
    ))

    result = pytester.runpytest()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: test_bounds.py::test_bounded: @pytest.mark.hardware: min_memory_gb "
                                 f"must be a finite number > 0, got {bound.split(chr(34))[1]}"])


def test_infinite_duration_scale_is_a_usage_error(spec_project: pytest.Pytester) -> None:
    result = spec_project.runpytest("--specgate-duration-scale=inf")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*: error: argument --specgate-duration-scale: expected a finite number "
                                 "> 0, got inf"])


def _cli(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    code = main(list(arguments))
    return code, capsys.readouterr().err


def test_hosts_with_a_missing_pyproject_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"

    assert _cli(capsys, "hosts", f"--pyproject={missing}") == (
        2, f"specgate hosts: --pyproject={missing}: no such file\n")


BINARY_GARBAGE = b"\x00\xff\xfe\x80 not toml \xc3\x28"


def test_hosts_with_a_binary_pyproject_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.toml"
    garbage.write_bytes(BINARY_GARBAGE)

    assert _cli(capsys, "hosts", f"--pyproject={garbage}") == (
        2, f"specgate hosts: {garbage}: cannot read: not UTF-8 text (invalid start byte at byte 1)\n")


def test_waivers_with_a_binary_pyproject_is_an_error_not_ignored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.toml"
    garbage.write_bytes(BINARY_GARBAGE)
    (tmp_path / "bundle").mkdir()

    code, err = _cli(capsys, "waivers", str(tmp_path / "bundle"), f"--pyproject={garbage}")

    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"specgate waivers: error: --pyproject={garbage}: not UTF-8 text")


def test_tiny_models_with_an_empty_out_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert _cli(capsys, "tiny-models", "--out=") == (
        2, "specgate tiny-models: --out= is empty: expected the cache folder to build into "
           "(e.g. --out=.tiny-models)\n")
    assert list(tmp_path.iterdir()) == []


def test_mock_engine_with_a_step_out_of_range_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(capsys, "mock-engine", "--port=1", "--target-step-ms=1e308") == (
        2, "specgate mock-engine: mock option target_step_ms must be within [0, 60000] ms "
           "(a minute per step), got 1e+308\n")


def test_mock_engine_port_out_of_range_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cli(capsys, "mock-engine", "--port=70000") == (
        2, "specgate mock-engine: --port=70000: expected a port from 1 to 65535\n")


def test_mock_engine_port_in_use_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        code, err = _cli(capsys, "mock-engine", f"--port={port}")

    assert code == 2
    assert err == (f"specgate mock-engine: --port={port}: cannot listen on 127.0.0.1:{port}: "
                   "Address already in use\n")


class _BrokenCounters(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"vllm:request_success_total{ 3\n" if self.path == "/metrics" else _deep(DEEP).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


@contextmanager
def _serving_broken_counters() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _BrokenCounters)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_malformed_metrics_page_reads_as_unavailable_in_a_fault_gate() -> None:
    with _serving_broken_counters() as base_url:
        reading = HttpCounterProbe(base_url).read()

    assert (reading.requests_total, reading.slots_active, reading.cancelled_total) == (None, None, None)
    assert reading.source.startswith("unavailable (/metrics line 1: ")
    assert "/v1/status: JSON nested deeper than 100 levels)" in reading.source


def test_checkpoint_lines_that_are_nested_too_deep_or_not_finite_are_skipped() -> None:
    lines = [
        '{"gate": "boot", "passed": true, "duration_s": 12.5}',
        '{"gate": "soak", "passed": true, "duration_s": NaN}',
        '{"gate": "deep", "passed": true, "duration_s": 1, "x": ' + _deep(DEEP) + "}",
    ]

    assert measured_durations(lines) == {"boot": 12.5}
