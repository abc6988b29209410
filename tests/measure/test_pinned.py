from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_specgate.measure.pinned import (
    FixtureFileError,
    listed_digest,
    load_model_pairs,
    load_named_prompt_set,
    load_prompt_set,
    model_pair,
    project_fixtures_dir,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_ac10_prompt_fixture_is_pinned_and_well_formed() -> None:
    path = FIXTURES / "prompts" / "spec028-code-iso8601-v1.json"
    prompt_set = load_prompt_set(path)
    assert (prompt_set.id, prompt_set.version) == ("spec028-code-iso8601-v1", 1)
    assert 12 <= len(prompt_set.prompts) <= 20
    assert prompt_set.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert listed_digest(path) == prompt_set.sha256
    assert all("iso" in p.id and p.max_tokens == 256 for p in prompt_set.prompts)
    assert all(p.messages[-1].role == "user" for p in prompt_set.prompts)
    assert prompt_set.to_dict()["sha256"] == prompt_set.sha256


@pytest.mark.parametrize("name", ["short_chat", "streaming_check"])
def test_ac11_prompt_sets_load_by_name(name: str) -> None:
    prompt_set = load_named_prompt_set(name, FIXTURES)
    assert prompt_set.id == name
    assert prompt_set.temperature == 0.0
    assert listed_digest(prompt_set.path) == prompt_set.sha256


def test_the_project_fixtures_dir_is_this_projects_rootdir_fixtures() -> None:
    # This suite runs under the plugin, whose rootdir is this checkout.
    assert project_fixtures_dir() == FIXTURES


def test_pinned_pairs() -> None:
    pairs = load_model_pairs(FIXTURES / "models" / "pairs.json")
    ac10, ac11 = pairs["AC-10"], pairs["AC-11"]
    assert ac10.target.repo_id == "mlx-community/Qwen2.5-Coder-7B-Instruct-4bit"
    assert ac10.draft.repo_id == "mlx-community/Qwen2.5-Coder-1.5B-Instruct-4bit"
    assert ac11.target.repo_id == "mlx-community/Llama-3.2-3B-Instruct-4bit"
    assert ac11.draft.repo_id == "mlx-community/Llama-3.2-1B-Instruct-4bit"
    assert ac10.prompt_sets == ("spec028-code-iso8601-v1",)
    assert ac11.prompt_sets == ("short_chat", "streaming_check")
    for pair in (ac10, ac11):
        assert not pair.revisions_pinned
        assert pair.target.approx_weight_gb > pair.draft.approx_weight_gb
        assert "*.safetensors" in pair.target.allow_patterns
    assert model_pair("AC-10").to_dict()["revisions_pinned"] is False


def _prompt_document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "schema": "specgate.prompts/v1",
        "id": "custom",
        "version": 1,
        "description": "test set",
        "temperature": 0,
        "max_tokens": 16,
        "prompts": [
            {"id": "a", "messages": [{"role": "user", "content": "hi"}]},
            {"id": "b", "max_tokens": 4, "messages": [{"role": "user", "content": "yo"}]},
        ],
    }
    document.update(changes)
    return document


def _write(tmp_path: Path, document: object, name: str = "custom.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_custom_prompt_set_budgets(tmp_path: Path) -> None:
    prompt_set = load_prompt_set(_write(tmp_path, _prompt_document()))
    assert [p.max_tokens for p in prompt_set.prompts] == [16, 4]
    assert prompt_set.prompts[0].as_messages() == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schema": "other"}, "field 'schema': expected 'specgate.prompts/v1', found 'other'"),
        ({"id": "wrong"}, "field 'id': expected the file name stem 'custom', found 'wrong'"),
        ({"max_tokens": 0}, "field 'max_tokens': expected an integer >= 1, found 0"),
        ({"temperature": -1}, "field 'temperature': expected a number >= 0"),
        ({"prompts": []}, "field 'prompts': expected a non-empty list"),
        ({"prompts": [{"id": "a", "messages": [{"role": "robot", "content": "x"}]}]},
         "field 'prompts[0].messages[0].role': expected one of"),
        ({"prompts": [{"id": "a", "messages": [{"role": "user", "content": ""}]}]},
         "field 'prompts[0].messages[0].content': expected a non-empty string"),
        ({"prompts": [{"id": "a", "messages": [{"role": "user", "content": "q"},
                                               {"role": "assistant", "content": "a"}]}]},
         "field 'prompts[0].messages[-1].role': expected 'user'"),
        ({"prompts": [{"id": "a", "messages": [{"role": "user", "content": "q"}]},
                      {"id": "a", "messages": [{"role": "user", "content": "q"}]}]},
         "field 'prompts[1].id': expected an id unique in the set"),
        ({"prompts": [{"messages": [{"role": "user", "content": "q"}]}]},
         "field 'prompts[0].id': missing"),
    ],
)
def test_prompt_set_errors_name_file_and_field(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    path = _write(tmp_path, _prompt_document(**changes))
    with pytest.raises(FixtureFileError) as raised:
        load_prompt_set(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_digest_listed_beside_the_file_must_match(tmp_path: Path) -> None:
    path = _write(tmp_path, _prompt_document())
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  custom.json\n", encoding="utf-8")
    with pytest.raises(FixtureFileError, match=r"does not match the pinned 0{64}"):
        load_prompt_set(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "SHA256SUMS").write_text(f"{digest}  custom.json\n", encoding="utf-8")
    assert load_prompt_set(path).sha256 == digest


def test_malformed_digest_listing_names_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _prompt_document())
    (tmp_path / "SHA256SUMS").write_text("\nnot-a-digest custom.json\n", encoding="utf-8")
    with pytest.raises(FixtureFileError, match=r"SHA256SUMS:2: expected"):
        load_prompt_set(path)


def test_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(FixtureFileError, match=r"pinned data file .*missing.json: file not found"):
        load_prompt_set(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(FixtureFileError, match=r"broken.json: not valid JSON"):
        load_prompt_set(broken)
    with pytest.raises(FixtureFileError, match="expected a JSON object, found 'list'"):
        load_prompt_set(_write(tmp_path, [1, 2]))


def _pairs_document() -> dict[str, object]:
    return json.loads((FIXTURES / "models" / "pairs.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _edit_target(document: dict[str, object], **changes: object) -> dict[str, object]:
    pairs = document["pairs"]
    assert isinstance(pairs, dict)
    pairs["AC-10"]["target"].update(changes)
    return document


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"revision_pinned": True},
         "field 'pairs.AC-10.target.revision': expected a 40-hex commit sha when "
         "revision_pinned is true, found 'main'"),
        ({"revision_pinned": "no"}, "field 'pairs.AC-10.target.revision_pinned': expected true"),
        ({"repo_id": "no-owner"}, "field 'pairs.AC-10.target.repo_id': expected 'owner/name'"),
        ({"approx_weight_gb": 0}, "field 'pairs.AC-10.target.approx_weight_gb': expected a number"),
        ({"allow_patterns": []}, "field 'pairs.AC-10.target.allow_patterns': expected a non-empty"),
        ({"allow_patterns": ["*.json", ""]},
         "field 'pairs.AC-10.target.allow_patterns[1]': expected a non-empty string"),
    ],
)
def test_model_pair_errors_name_file_and_field(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    path = _write(tmp_path, _edit_target(_pairs_document(), **changes), "pairs.json")
    with pytest.raises(FixtureFileError) as raised:
        load_model_pairs(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_pinned_revision_is_accepted(tmp_path: Path) -> None:
    sha = "a" * 40
    path = _write(tmp_path, _edit_target(_pairs_document(), revision=sha, revision_pinned=True),
                  "pairs.json")
    target = load_model_pairs(path)["AC-10"].target
    assert (target.revision, target.revision_pinned) == (sha, True)


def test_missing_pair_lists_what_exists(tmp_path: Path) -> None:
    path = _write(tmp_path, _pairs_document(), "pairs.json")
    with pytest.raises(FixtureFileError, match=r"no pinned model pair for 'AC-99'; pairs "
                                               r"present: \['AC-10', 'AC-11'\]"):
        model_pair("AC-99", path)
