"""The Redis users and transport options of records/broker.py, and its command line. What the users can and
cannot do on a real server is tried in tests/runs/test_broker_doors.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from kombu.transport.redis import Channel

from records import broker

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "9f2c" * 8


def test_the_binding_tables_are_kombus() -> None:
    assert (Channel.keyprefix_queue, Channel.keyprefix_binding_permanent) == broker.BINDING_TABLES


def test_a_worker_user_names_its_class_queue_and_the_results_queue_write_only() -> None:
    name, *rules = broker.worker_acl("nvidia-h100", PASSWORD)
    assert name == "kernelindex-worker-nvidia-h100"
    assert rules[:5] == ["reset", "on", broker.password_hash(PASSWORD), "resetchannels", "-@all"]
    assert [rule for rule in rules if "~" in rule] == [
        "~reruns.nvidia-h100",
        "%W~_kombu.binding.reruns.nvidia-h100",
        "%W~_kombu.binding_permanent.reruns.nvidia-h100",
        "%W~kernelindex.results",
    ]
    assert not any(rule.startswith("&") for rule in rules)  # no pub/sub channel


def test_no_file_or_command_holds_a_password() -> None:
    written = broker.acl_file(PASSWORD, {"cpu": PASSWORD[::-1]}) + broker.setuser_commands(PASSWORD, {})
    assert PASSWORD not in written
    assert PASSWORD[::-1] not in written


def test_the_file_turns_the_default_user_off_unless_told() -> None:
    assert broker.acl_file(PASSWORD, {}).splitlines()[0] == "user default off"
    assert "default" not in broker.acl_file(PASSWORD, {}, default_user_off=False)


def test_a_key_pattern_matches_its_key_alone() -> None:
    assert broker.exact("reruns.a*[b]?\\") == "reruns.a\\*\\[b\\]\\?\\\\"


def test_an_unknown_class_has_no_user() -> None:
    with pytest.raises(ValueError, match="nvidia-h999"):
        broker.worker_user("nvidia-h999")


def test_the_command_line_writes_a_file_only_its_owner_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "web").write_text(PASSWORD + "\n")
    (tmp_path / "cpu").write_text("cpu-password\n")
    acl = tmp_path / "users.acl"
    arguments = ["acl", "--web-password-file", str(tmp_path / "web"), "--worker", f"cpu:{tmp_path / 'cpu'}"]
    broker.main([*arguments, "--output", str(acl)])
    assert acl.read_text() == broker.acl_file(PASSWORD, {"cpu": "cpu-password"})
    assert stat.S_IMODE(acl.stat().st_mode) == 0o600
    broker.main([*arguments, "--setuser"])
    assert capsys.readouterr().out == broker.setuser_commands(PASSWORD, {"cpu": "cpu-password"})
    with pytest.raises(SystemExit):
        broker.main([*arguments, "--worker", f"nvidia-h999:{tmp_path / 'cpu'}"])


def test_deploys_example_is_what_the_command_writes() -> None:
    """deploy/redis-users.acl.example: the generator's output with each password's hash left as a placeholder."""
    passwords = {"WEB": "WEB", "CPU_WORKERS": "CPU", "NVIDIA_H100_WORKERS": "H100"}
    written = broker.acl_file("WEB", {"cpu": "CPU", "nvidia-h100": "H100"})
    for name, password in passwords.items():
        written = written.replace(broker.password_hash(password), f"#SHA256_OF_{name}_PASSWORD")
    assert (ROOT / "deploy" / "redis-users.acl.example").read_text() == written
