"""The endpoint backend never passes one server off as another configuration, and says what it serves."""

from __future__ import annotations

import json
from contextlib import closing

import httpx
import pytest

from pytest_specgate.contracts.engine import EngineBootError
from pytest_specgate.contracts.engine_config import EngineConfig
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.engines.client import OpenAIClient
from pytest_specgate.engines.endpoint import served_model
from pytest_specgate.engines.endpoint_routes import EndpointUnserved, route_endpoint
from pytest_specgate.engines.mock import MockEngine
from pytest_specgate.selection.endpoint_routes import EndpointRoute, parse_endpoint_route
from pytest_specgate.selection.settings import parse_endpoint_routes

SPECULATIVE = EngineConfig(backend="endpoint", target="t", draft="d", num_draft_tokens=4,
                           options=(("url", "http://127.0.0.1:8000"),))
BASELINE_ROUTE = EndpointRoute(changes=(("draft", None), ("num_draft_tokens", None)),
                               url="http://127.0.0.1:8001")


def test_a_route_reads_changes_then_the_url() -> None:
    route = parse_endpoint_route("draft=none,num_draft_tokens=null=http://127.0.0.1:8001/v1/")
    assert route == BASELINE_ROUTE
    assert parse_endpoint_route("num_draft_tokens=2=https://h:9").changes == (("num_draft_tokens", 2),)
    assert parse_endpoint_route("draft=small-draft=http://h:9").changes == (("draft", "small-draft"),)


@pytest.mark.parametrize("text", ["http://127.0.0.1:8001", "draft=none", "=http://h:1", "draft=http://h:1x,y"])
def test_a_bad_route_is_a_usage_error_quoting_it(text: str) -> None:
    with pytest.raises(SpecgateInputError, match=r"^--specgate-endpoint-for: expected ") as error:
        parse_endpoint_routes([text])
    assert repr(text) in str(error.value) or "KEY=VALUE" in str(error.value)


def test_a_changed_configuration_without_a_named_server_is_refused_with_the_option_to_use() -> None:
    with pytest.raises(EndpointUnserved) as error:
        route_endpoint(SPECULATIVE, SPECULATIVE.changed(draft=None, num_draft_tokens=None), (),
                       "boot_engine(draft=None, num_draft_tokens=None)")
    message = str(error.value)
    assert message.startswith("boot_engine(draft=None, num_draft_tokens=None): the endpoint backend cannot "
                              "reconfigure the server at http://127.0.0.1:8000")
    assert message.endswith("--specgate-endpoint-for=draft=none,num_draft_tokens=none=http://HOST:PORT")


def test_the_named_server_answers_for_its_configuration_only() -> None:
    baseline = SPECULATIVE.changed(draft=None, num_draft_tokens=None)
    routed = route_endpoint(SPECULATIVE, baseline, (BASELINE_ROUTE,), "boot_engine")
    assert routed == baseline.with_options(url="http://127.0.0.1:8001")
    with pytest.raises(EndpointUnserved, match=r"into \(endpoint target=t draft=d gamma=2\)"):
        route_endpoint(SPECULATIVE, SPECULATIVE.changed(num_draft_tokens=2), (BASELINE_ROUTE,), "boot_engine")


def test_client_options_and_an_explicit_url_keep_or_choose_the_server() -> None:
    timeout = SPECULATIVE.changed(request_timeout_s=5)
    assert route_endpoint(SPECULATIVE, timeout, (), "boot_engine") == timeout
    # The same client option beside a change the server would have to make: refused without
    # a named server, handed that server's URL with one (the client option kept).
    baseline = timeout.changed(draft=None, num_draft_tokens=None)
    with pytest.raises(EndpointUnserved, match=r"cannot reconfigure the server at http://127\.0\.0\.1:8000"):
        route_endpoint(SPECULATIVE, baseline, (), "boot_engine")
    routed = route_endpoint(SPECULATIVE, baseline, (BASELINE_ROUTE,), "boot_engine")
    assert routed == baseline.with_options(url="http://127.0.0.1:8001")
    assert routed.option("request_timeout_s") == 5
    explicit = SPECULATIVE.changed(draft=None, url="http://127.0.0.1:8002")
    assert route_endpoint(SPECULATIVE, explicit, (), "boot_engine") == explicit
    mock = EngineConfig(backend="mock", draft="d")
    assert route_endpoint(mock, mock.changed(draft=None), (), "boot_engine") == mock.changed(draft=None)


def test_a_route_naming_the_same_server_is_refused() -> None:
    same = EndpointRoute(changes=(("draft", None),), url="http://127.0.0.1:8000")
    with pytest.raises(EndpointUnserved, match="the same server the test's engine runs on"):
        route_endpoint(SPECULATIVE, SPECULATIVE.changed(draft=None), (same,), "boot_engine")


def _client(status: int, body: bytes) -> OpenAIClient:
    return OpenAIClient("http://127.0.0.1:9", backend="endpoint",
                        transport=httpx.MockTransport(lambda _: httpx.Response(status, content=body)))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", r"http://127.0.0.1:9/v1/models did not answer a JSON model list \(EngineResponseError: "
              r"endpoint engine: GET http://127.0.0.1:9/v1/models answered malformed JSON \(.*\); "
              r"first bytes: b''\)"),
        (b"<html>ok</html>", r"http://127.0.0.1:9/v1/models did not answer a JSON model list"),
        (b"[1, 2]", r"http://127.0.0.1:9/v1/models answered JSON without a 'data' list"),
        (json.dumps({"data": []}).encode(), r"http://127.0.0.1:9/v1/models lists no models \(data: \[\]\)"),
        (json.dumps({"data": [{"object": "model"}]}).encode(), r"/v1/models lists no models"),
    ],
)
def test_an_empty_or_non_json_model_list_is_an_error_naming_the_url(body: bytes, message: str) -> None:
    with closing(_client(200, body)) as client, pytest.raises(EngineBootError, match=message):
        served_model(client, "wanted-model")


def test_a_model_the_server_does_not_list_is_refused() -> None:
    with closing(_client(200, json.dumps({"data": [{"id": "a"}, {"id": "b"}]}).encode())) as client:
        assert served_model(client, None) == "a"
        with pytest.raises(EngineBootError, match=r"does not serve 'c'; it serves \['a', 'b'\]"):
            served_model(client, "c")


BASELINE_SPEC = """
import pytest

@pytest.mark.engine("endpoint", target="specgate-mock-target", draft="specgate-mock-draft",
                    num_draft_tokens=4)
def test_baseline(engine, boot_engine):
    baseline = boot_engine(draft=None, num_draft_tokens=None)
    print("BASELINE_URL", baseline.base_url, "ENGINE_URL", engine.base_url)
    assert baseline.chat([{"role": "user", "content": "hi"}], max_tokens=2).text
"""


def test_boot_engine_on_an_endpoint_refuses_then_uses_the_named_server(
    pytester: pytest.Pytester, spec_engine: MockEngine, baseline_engine: MockEngine
) -> None:
    pytester.makepyfile(test_endpoint_spec=BASELINE_SPEC)
    refused = pytester.runpytest("-p", "no:cacheprovider", f"--specgate-endpoint={spec_engine.base_url}")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines([
        "*boot_engine(draft=None, num_draft_tokens=None): the endpoint backend cannot reconfigure the "
        f"server at {spec_engine.base_url} *--specgate-endpoint-for=draft=none,num_draft_tokens=none="
        "http://HOST:PORT",
    ])
    assert "During handling" not in refused.stdout.str()
    served = pytester.runpytest(
        "-p", "no:cacheprovider", "-s", f"--specgate-endpoint={spec_engine.base_url}",
        f"--specgate-endpoint-for=draft=none,num_draft_tokens=none={baseline_engine.base_url}",
    )
    served.assert_outcomes(passed=1)
    served.stdout.fnmatch_lines([
        f"*BASELINE_URL {baseline_engine.base_url} ENGINE_URL {spec_engine.base_url}",
    ])


def test_a_malformed_endpoint_for_option_stops_the_run_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--specgate-endpoint-for=draft=none")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --specgate-endpoint-for: expected CHANGES=URL such as "
                                 "draft=none=http://127.0.0.1:8001, got 'draft=none'"])
