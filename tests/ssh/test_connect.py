"""Connecting over SSH as a user meets it: an alias logs in, and each refusal says what happened and what to do.

Also the test hosts' own promises the other SSH tests build on: a restart keeps the host key, a kill
drops the connection, a detached command outlives its channel, the remote env and home are as set up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import sys
import time
from pathlib import Path

import asyncssh
import pytest

from planner.ssh.connect import (
    AuthRefused,
    HostKeyChanged,
    HostKeyUnknown,
    HostUnreachable,
    SshConnectError,
    open_connection,
)

WAIT_S = 60


def _run(coro):
    return asyncio.run(asyncio.wait_for(coro, WAIT_S))


def _refusal(host, **options) -> SshConnectError:
    """Connect to `host` with its client's options (changed by `options`) and return the error raised."""
    with pytest.raises(SshConnectError) as caught:
        _run(_echo(host, **options))
    return caught.value


async def _echo(host, command="echo ok", **options) -> str:
    conn = await open_connection(host.spec, dataclasses.replace(host.ssh_options, **options))
    async with conn:
        result = await conn.run(command, check=True)
    return str(result.stdout)


def test_an_alias_from_ssh_config_logs_in_and_runs_a_command(ssh_host):
    home = str(ssh_host.remote_home)
    assert _run(_echo(ssh_host, "echo ok; echo $HOME; pwd")).split() == ["ok", home, home]


def test_a_port_nothing_listens_on_is_unreachable(unreachable_host):
    err = _refusal(unreachable_host)
    assert isinstance(err, HostUnreachable)
    assert err.problem == (
        f"Cannot reach unreachable (127.0.0.1 port {unreachable_host.port}): the connection was refused "
        f"(no SSH server listens on port {unreachable_host.port})"
    )
    assert "SSH server runs" in err.fix
    assert err.host == "unreachable"


def test_a_host_that_never_answers_is_unreachable_after_the_time_out(ssh_host):
    ssh_host.pause()
    try:
        err = _refusal(ssh_host, connect_timeout_s=1.0)
    finally:
        ssh_host.resume()
    assert isinstance(err, HostUnreachable)
    assert err.problem == f"Cannot reach host1 (127.0.0.1 port {ssh_host.port}): no answer within 1 s"


def test_a_key_the_host_does_not_know_is_refused_with_how_to_copy_it(ssh_host):
    ssh_host.authorized_keys.write_text(asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode())
    err = _refusal(ssh_host)
    assert isinstance(err, AuthRefused)
    user = ssh_host.user
    assert err.problem == (
        f"host1 (127.0.0.1 port {ssh_host.port}) refused every key offered for user {user} (from the agent and "
        f"the key files); the planner never asks for a password"
    )
    assert f"ssh-copy-id {user}@host1" in err.fix


def test_a_host_that_only_takes_a_password_is_refused_in_batch_mode(make_ssh_host):
    host = make_ssh_host("pwonly", auth="password")
    err = _refusal(host)
    assert isinstance(err, AuthRefused)
    assert f"lets {host.user} in only with a password (it offers password)" in err.problem
    assert "never types passwords (it runs in batch mode, with no prompts)" in err.problem
    assert err.fix == (
        f"set up key login once: `ssh-keygen -t ed25519` if you have no key, then `ssh-copy-id {host.user}@pwonly`"
    )


def test_an_unknown_host_key_shows_its_fingerprint_then_is_accepted_and_remembered(make_ssh_host):
    host = make_ssh_host("fresh", host_key="unknown")
    known_hosts = host.ssh_options.known_hosts
    assert known_hosts is not None
    before = known_hosts.read_text()
    fingerprint = host.host_key.get_fingerprint("sha256")

    err = _refusal(host)
    assert isinstance(err, HostKeyUnknown)
    assert err.fingerprint == fingerprint
    assert err.problem == (
        f"fresh (127.0.0.1 port {host.port}) is not a known host (not in {known_hosts}); it presents the "
        f"ssh-ed25519 key {fingerprint}"
    )
    assert "run again with --accept-new-host-key" in err.fix
    assert known_hosts.read_text() == before, "a refused key must not be recorded"

    assert _run(_echo(host, accept_new_host_key=True)) == "ok\n"
    added = known_hosts.read_text().removeprefix(before).splitlines()
    assert added == [f"[127.0.0.1]:{host.port} {' '.join(host.host_key.export_public_key().decode().split()[:2])}"]
    assert _run(_echo(host)) == "ok\n", "a recorded key needs no flag the next time"
    if shutil.which("ssh-keygen"):
        # OpenSSH itself finds the line: the format is its own.
        found = subprocess.run(
            ["ssh-keygen", "-F", f"[127.0.0.1]:{host.port}", "-f", str(known_hosts)], capture_output=True, text=True
        )
        assert found.returncode == 0 and "ssh-ed25519" in found.stdout


def test_accept_new_creates_a_known_hosts_file_that_is_not_there_yet(ssh_host, tmp_path):
    known_hosts = tmp_path / "new" / "known_hosts"
    assert _run(_echo(ssh_host, known_hosts=known_hosts, accept_new_host_key=True)) == "ok\n"
    assert known_hosts.read_text().startswith(f"[127.0.0.1]:{ssh_host.port} ssh-ed25519 ")


def test_a_changed_host_key_is_refused_even_with_accept_new(make_ssh_host):
    host = make_ssh_host("moved", host_key="changed")
    known_hosts = host.ssh_options.known_hosts
    assert known_hosts is not None
    before = known_hosts.read_text()
    old_fingerprint = asyncssh.import_public_key(before.split(maxsplit=1)[1]).get_fingerprint("sha256")
    for accept_new in (False, True):
        err = _refusal(host, accept_new_host_key=accept_new)
        assert isinstance(err, HostKeyChanged)
        assert err.problem == (
            f"The host key of moved (127.0.0.1 port {host.port}) has CHANGED: it now presents the ssh-ed25519 key "
            f"{host.host_key.get_fingerprint('sha256')}, but known_hosts holds another for it (line 1 of "
            f"{known_hosts} ({old_fingerprint})). Someone may be intercepting the connection, or the host was "
            f"reinstalled"
        )
        assert f"ssh-keygen -R '[127.0.0.1]:{host.port}' -f {known_hosts}" in err.fix
        assert "--accept-new-host-key alone never replaces a changed key" in err.fix
        assert known_hosts.read_text() == before


def test_the_known_hosts_of_ssh_config_apply_when_no_file_is_given(ssh_host):
    # UserKnownHostsFile in the alias's block names the file that holds the key.
    assert _run(_echo(ssh_host, known_hosts=None)) == "ok\n"


@pytest.mark.skipif(shutil.which("ssh-agent") is None, reason="needs ssh-agent (apt-get install openssh-client)")
def test_a_passphrase_key_held_by_the_agent_logs_in_without_a_prompt(ssh_host, tmp_path, monkeypatch):
    # The usual laptop: IdentityFile names a key with a passphrase, and the agent holds it unlocked.
    key = asyncssh.generate_private_key("ssh-ed25519")
    key_file = tmp_path / "id_locked"
    key.write_private_key(key_file)
    key_file.chmod(0o600)
    key.write_public_key(tmp_path / "id_locked.pub")
    # OpenSSH's own tool puts the passphrase on (asyncssh would need bcrypt for that).
    subprocess.run(["ssh-keygen", "-p", "-q", "-P", "", "-N", "never typed", "-f", str(key_file)], check=True)
    ssh_host.authorized_keys.write_text(key.export_public_key().decode())
    config = tmp_path / "config"
    config.write_text(
        f"Host agent-only\n    HostName 127.0.0.1\n    Port {ssh_host.port}\n    User {ssh_host.user}\n"
        f"    IdentityFile {key_file}\n    IdentitiesOnly yes\n"
    )
    socket_path = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        monkeypatch.setenv("HOME", str(tmp_path))  # no default key files of the user running the tests

        async def go() -> str:
            async with asyncssh.connect_agent(str(socket_path)) as held:
                await held.add_keys([key])
            host = dataclasses.replace(ssh_host.spec, host="agent-only", label="agent-only")
            options = dataclasses.replace(ssh_host.ssh_options, config_paths=(config,))
            async with await open_connection(host, options) as conn:
                return str((await conn.run("echo ok", check=True)).stdout)

        assert _run(go()) == "ok\n"
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def test_a_host_that_goes_silent_is_noticed_by_the_keepalive(ssh_host):
    async def go() -> None:
        conn = await open_connection(ssh_host.spec, dataclasses.replace(ssh_host.ssh_options, keepalive_s=0.5))
        ssh_host.pause()
        try:
            # Three unanswered checks half a second apart: closed in about 2 s, not never.
            await asyncio.wait_for(conn.wait_closed(), 15)
        finally:
            ssh_host.resume()

    _run(go())


def test_real_openssh_sshd_logs_in_by_alias(sshd_host):
    assert _run(_echo(sshd_host)) == "ok\n"


# The test hosts themselves.


def test_a_host_restarts_on_its_port_with_its_key_and_a_kill_drops_the_connection(ssh_host):
    async def cut() -> None:
        conn = await open_connection(ssh_host.spec, ssh_host.ssh_options)
        ssh_host.kill()
        with pytest.raises((asyncssh.Error, OSError)):
            await asyncio.wait_for(conn.run("echo late", check=True), 10)
        conn.close()

    _run(cut())
    with pytest.raises(HostUnreachable):
        _run(_echo(ssh_host))
    ssh_host.restart()
    assert _run(_echo(ssh_host)) == "ok\n"


def test_a_detached_command_outlives_its_channel_and_an_attached_one_reads_eof(ssh_host):
    marker = ssh_host.remote_home / "detached.txt"
    eof = ssh_host.remote_home / "eof.txt"

    async def start_and_drop() -> None:
        conn = await open_connection(ssh_host.spec, ssh_host.ssh_options)
        # Detached: its own session, its output not on the channel; it writes once the channel is long gone.
        await conn.run(f"setsid sh -c 'sleep 1; echo alive > {marker}' </dev/null >/dev/null 2>&1 &", check=True)
        attached = await conn.create_process(f"cat >/dev/null; echo eof > {eof}")
        attached.stdin.write("input\n")
        conn.abort()

    _run(start_and_drop())
    deadline = time.monotonic() + 10
    while not (marker.exists() and eof.exists()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.read_text() == "alive\n"
    assert eof.read_text() == "eof\n"


def test_each_host_has_its_own_env_home_and_sftp_root(make_ssh_host):
    plain = make_ssh_host()
    one_core = make_ssh_host(env={"PLANNER_CPUS": "1"})

    async def look(host) -> tuple[str, bytes]:
        async with await open_connection(host.spec, host.ssh_options) as conn:
            env = await conn.run("echo ${PLANNER_CPUS:-all}; command -v planner", check=True)
            async with conn.start_sftp_client() as sftp:
                async with sftp.open("note.txt", "w") as out:
                    await out.write(host.alias)
        return str(env.stdout), (host.remote_home / "note.txt").read_bytes()

    assert _run(look(plain)) == (f"all\n{Path(sys.executable).parent / 'planner'}\n", b"host1")
    assert _run(look(one_core))[0].startswith("1\n")
    assert (one_core.remote_home / "note.txt").read_text() == "host2"
