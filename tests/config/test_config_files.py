"""kproxy.config from files: a configuration file's own problems (missing, not YAML,
duplicate keys, not UTF-8...), secrets read from files and the environment, and the
committed JSON schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from kproxy.config.errors import describe_validation_error
from kproxy.config.settings import (
    Secret,
    config_json_schema,
    load_config,
)
from tests.config_builders import REPO, load_error

# --------------------------------------------------------------------------------------
# load_config: file-level problems
# --------------------------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "kproxy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_load_config_ok(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster:\n"
        "  bootstrap_servers: ['broker-1.kafka:9092']\n"
        "  dial_overrides: {'broker-1.kafka:9092': '10.0.0.5:9092'}\n"
        "listeners:\n"
        "  node_port_overrides: {2000: 20000}\n",
    )
    s = load_config(path)
    assert s.cluster.dial_address("broker-1.kafka", 9092) == ("10.0.0.5", 9092)
    assert s.listeners.port_for_node(2000) == 20000
    assert load_config(str(path)) == s


def test_load_config_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert load_error(path) == f"<file>: cannot read {path}: No such file or directory"


def test_load_config_directory(tmp_path: Path) -> None:
    assert load_error(tmp_path).startswith(f"<file>: cannot read {tmp_path}: ")


def test_load_config_invalid_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n  bootstrap_servers: [a:1\n")
    assert load_error(path) == (
        f"<file>: invalid YAML in {path}: expected ',' or ']', but got '<stream end>'"
        " (line 3, column 1)"
    )


def test_load_config_tab_indentation(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n\tbootstrap_servers: [a:1]\n")
    message = load_error(path)
    assert message.startswith(f"<file>: invalid YAML in {path}: ")
    assert "(line 2, column 1)" in message
    assert "\n" not in message


def test_load_config_duplicate_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster:\n  bootstrap_servers: [a:1]\nadmin:\n  port: 1\n  port: 2\n",
    )
    assert load_error(path) == (
        f"<file>: invalid YAML in {path}: duplicate key 'port' (line 5, column 3)"
    )


def test_load_config_top_level_list(tmp_path: Path) -> None:
    path = write(tmp_path, "- cluster\n")
    assert load_error(path) == "<file>: top level must be a mapping, got a list"


def test_load_config_top_level_scalar(tmp_path: Path) -> None:
    path = write(tmp_path, "hello\n")
    assert load_error(path) == "<file>: top level must be a mapping, got a string"


def test_load_config_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "# only a comment\n")
    assert load_error(path) == f"<file>: {path} is empty; top level must be a mapping"


def test_load_config_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"cluster: {bootstrap_servers: ['caf\xe9:1']}\n")
    assert load_error(path) == f"<file>: {path} is not valid UTF-8"


def test_load_config_empty_bootstrap(tmp_path: Path) -> None:
    path = write(tmp_path, "cluster:\n  bootstrap_servers:\n")
    assert load_error(path) == "cluster.bootstrap_servers: must be a list (got None)"


def test_yaml_typing_is_strict(tmp_path: Path) -> None:
    # A quoted number is a string, not a port.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {port: '9644'}\n")
    assert load_error(path) == "admin.port: must be an integer (got '9644')"
    # YAML 1.1 "yes" is a boolean, and a boolean is not an integer.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {port: yes}\n")
    assert load_error(path) == "admin.port: must be an integer (got True)"
    # ... but it is a boolean where one is expected.
    path = write(tmp_path, "cluster: {bootstrap_servers: ['a:1']}\nadmin: {enabled: no}\n")
    assert load_config(path).admin.enabled is False
    # IPv6 needs brackets (and quotes, since "[" starts a YAML flow sequence).
    path = write(tmp_path, "cluster: {bootstrap_servers: ['[::1]:9092']}\n")
    assert load_config(path).cluster.bootstrap_servers == (("::1", 9092),)


# --------------------------------------------------------------------------------------
# secrets: inline, from the environment, from a file
# --------------------------------------------------------------------------------------


class _Credentials(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    password: Secret


_Credentials.model_rebuild(_types_namespace={"Secret": Secret})


def test_secret_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KPROXY_TEST_SECRET", "from-env")
    secret_file = tmp_path / "password"
    secret_file.write_text("from-file\n")
    inline = _Credentials.model_validate({"password": "inline"})
    assert inline.password.get_secret_value() == "inline"
    env = _Credentials.model_validate({"password": {"env": "KPROXY_TEST_SECRET"}})
    assert env.password.get_secret_value() == "from-env"
    got = _Credentials.model_validate({"password": {"file": str(secret_file)}})
    assert got.password.get_secret_value() == "from-file"  # one trailing newline dropped
    assert "from-file" not in repr(got)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"env": "KPROXY_TEST_UNSET"},
            "password: environment variable KPROXY_TEST_UNSET is not set",
        ),
        (
            {"file": "/nonexistent/kproxy-secret"},
            "password: cannot read /nonexistent/kproxy-secret",
        ),
        ({"vault": "x"}, "password: must be a string, {env: NAME} or {file: PATH}"),
    ],
)
def test_secret_errors_name_the_source_not_the_value(
    value: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KPROXY_TEST_UNSET", raising=False)
    with pytest.raises(ValidationError) as info:
        _Credentials.model_validate({"password": value})
    assert str(describe_validation_error(info.value, _Credentials)).startswith(expected)


# --------------------------------------------------------------------------------------
# JSON Schema
# --------------------------------------------------------------------------------------


def test_committed_json_schema_matches_the_code() -> None:
    committed = json.loads((REPO / "docs" / "config.schema.json").read_text())
    assert committed == config_json_schema(), (
        "docs/config.schema.json is stale: kproxy config-schema > docs/config.schema.json"
    )


def test_json_schema_rejects_unknown_keys_and_describes_bounds() -> None:
    schema = config_json_schema()
    assert schema["additionalProperties"] is False
    # One cluster, or several by name (switchover): either section, at least one.
    assert schema["anyOf"] == [{"required": ["cluster"]}, {"required": ["clusters"]}]
    listeners = schema["$defs"]["ListenerSettings"]
    assert listeners["additionalProperties"] is False
    assert listeners["properties"]["bootstrap_port"]["maximum"] == 65535
