"""Test hosts reached over SSH, all on 127.0.0.1: asyncssh servers in their own processes, and a real OpenSSH sshd.

Fixtures
--------
ssh_client           the client side every host of a test shares: a client HOME (tmp) with
                     .ssh/config (one alias per host), .ssh/known_hosts and the client key .ssh/id_ed25519.
                     Attributes: home, config_path, known_hosts, key_path, user,
                     ssh_options (SshOptions reading that config and known_hosts),
                     env (os.environ with HOME=home and no SSH_AUTH_SOCK: for `planner` subprocesses).
make_ssh_host(...)   a factory: each call starts one more host (tests/ssh/sshserver.py) and adds its alias:
                         make_ssh_host(alias=None,          # default "host1", "host2", ...
                                       env=None,            # extra remote env, e.g. {"PLANNER_CPUS": "1"}
                                       auth="key",          # or "password": a host that takes only a password
                                       host_key="known",    # "unknown": known_hosts has no line for it;
                                                            # "changed": known_hosts holds another key for it
                                       planner="planner",   # HostSpec.planner (the remote planner command)
                                       sftp=True)           # False: the host's SSH server has no SFTP subsystem
                     returns an SshTestHost.
ssh_host             one default host (make_ssh_host()).
unreachable_host     an SshTestHost whose alias points at a 127.0.0.1 port nothing listens on (never started).
sshd_host            an SshTestHost served by the real OpenSSH sshd (`sshd -f CONFIG -D -e`), with its own host
                     key and authorized_keys in tmp; skipped where /usr/sbin/sshd is missing.

SshTestHost
-----------
alias, port, user          the ssh_config alias (HostName 127.0.0.1, its Port, User, IdentityFile)
spec                       HostSpec.parse(alias, planner=...): what `--host ALIAS` gives the planner
ssh_options, env           the shared client's (see ssh_client)
remote_home                the remote HOME: commands run there; relative SFTP paths resolve against it
remote_env                 the env each remote command gets: HOME, USER, PATH (the venv's bin first, so
                           `planner` is the project's), LANG, the extras given
host_key                   the host's public key (asyncssh.SSHKey); fingerprint: host_key.get_fingerprint()
log_path                   the server's stderr
authorized_keys            the keys the host lets in (read at each login: overwrite it to refuse the client)
kill()                     SIGKILL the server: every connection drops at once, as a cut network;
                           commands running on the host go on (they get EOF on stdin, EPIPE on stdout)
restart()                  start it again on the same port with the same host key (after kill() or stop())
pause() / resume()         SIGSTOP / SIGCONT the server: it stops answering without closing anything
stop()                     SIGTERM the server (teardown does this and ends what its commands left running)

Example
-------
    def test_two_hosts(make_ssh_host):
        fast = make_ssh_host("fast")
        slow = make_ssh_host("slow", env={"PLANNER_CPUS": "1"})
        conn = await open_connection(slow.spec, slow.ssh_options)
        subprocess.run(["planner", "fleet", ...], env=fast.env)   # HOME=the client home: aliases resolve

Every process a host's commands start (detached ones too) carries SSH_TEST_HOST=<id> in its env, so
teardown finds and ends them: nothing outlives the test.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import psutil
import pytest

from planner.ssh.hosts import HostSpec, SshOptions

SERVER_SCRIPT = Path(__file__).resolve().parent / "sshserver.py"
SSHD = Path("/usr/sbin/sshd")
SSHD_MISSING = "install openssh-server (apt-get install openssh-server) to run the real-sshd tests"
START_WAIT_S = 20.0
STOP_WAIT_S = 5.0
PASSWORD = "correct horse battery staple"
MARKER = "SSH_TEST_HOST"
# Variables a login shell would also have from the system; passed on where the test run has them.
_PASS_THROUGH = ("LD_LIBRARY_PATH", "TZ", "TMPDIR")


def _public_line(key: asyncssh.SSHKey) -> str:
    """`ssh-ed25519 AAAA...` without a comment."""
    return " ".join(key.export_public_key("openssh").decode().split()[:2])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _end_marked(host_id: str) -> None:
    """End every process started on the test host `host_id` (found by the marker in its env), bounded in time."""
    marked = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(MARKER) == host_id:
                marked.append(proc)
    _end(marked)


def _end(procs: list[psutil.Process]) -> None:
    """SIGTERM, then SIGKILL what is left, each wait bounded."""
    marked = procs
    for proc in marked:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(marked, timeout=STOP_WAIT_S)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=STOP_WAIT_S)


@dataclass
class SshClient:
    """The client side of a test's SSH hosts: one HOME whose ~/.ssh holds the config, known_hosts and key."""

    home: Path
    user: str = field(default_factory=getpass.getuser)
    hosts: list[SshTestHost] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ssh_dir.mkdir(parents=True, exist_ok=True)
        self.ssh_dir.chmod(0o700)
        self.key = asyncssh.generate_private_key("ssh-ed25519", comment="planner-tests")
        self.key.write_private_key(self.key_path)
        self.key_path.chmod(0o600)
        self.key.write_public_key(self.key_path.with_suffix(".pub"))
        self.known_hosts.touch()
        self.write()

    @property
    def ssh_dir(self) -> Path:
        """~/.ssh of the client HOME."""
        return self.home / ".ssh"

    @property
    def config_path(self) -> Path:
        """The ssh_config with one alias per host."""
        return self.ssh_dir / "config"

    @property
    def known_hosts(self) -> Path:
        """The known_hosts file the hosts' keys are written to (or left out of, for host_key="unknown")."""
        return self.ssh_dir / "known_hosts"

    @property
    def key_path(self) -> Path:
        """The client's private key; every host with auth="key" authorizes its public half."""
        return self.ssh_dir / "id_ed25519"

    @property
    def public_key(self) -> str:
        """The client key's authorized_keys line."""
        return _public_line(self.key)

    @property
    def ssh_options(self) -> SshOptions:
        """Options that read this client's ssh_config and known_hosts (not the user's own ~/.ssh)."""
        return SshOptions(config_paths=(self.config_path,), known_hosts=self.known_hosts, connect_timeout_s=10.0)

    @property
    def env(self) -> dict[str, str]:
        """The environment for a `planner` subprocess: HOME is the client home, so `ssh`'s files are these."""
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(self.home)
        return env

    def write(self) -> None:
        """Write ~/.ssh/config with every host's alias (known_hosts lines are added by each host)."""
        blocks = [
            f"Host {h.alias}\n"
            f"    HostName 127.0.0.1\n"
            f"    Port {h.port}\n"
            f"    User {h.user}\n"
            f"    IdentityFile {self.key_path}\n"
            f"    IdentitiesOnly yes\n"
            f"    UserKnownHostsFile {self.known_hosts}\n"
            for h in self.hosts
        ]
        self.config_path.write_text("\n".join(blocks))

    def add_known_host(self, port: int, key: asyncssh.SSHKey) -> None:
        """Record `key` as the key of 127.0.0.1:port, as OpenSSH writes it for a non-22 port."""
        with self.known_hosts.open("a") as out:
            out.write(f"[127.0.0.1]:{port} {_public_line(key)}\n")


@dataclass
class SshTestHost:
    """One test host: its alias in the shared client config, its server process, and the remote side's folders."""

    client: SshClient
    alias: str
    folder: Path
    port: int
    remote_env: dict[str, str]
    planner: str = "planner"
    user: str = ""
    host_key: asyncssh.SSHKey | None = None
    process: subprocess.Popen[bytes] | None = None
    command: list[str] = field(default_factory=list)  # how to start a server that is not sshserver.py (sshd)
    host_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def spec(self) -> HostSpec:
        """The host as `--host ALIAS` names it."""
        return HostSpec.parse(self.alias, planner=self.planner)

    @property
    def ssh_options(self) -> SshOptions:
        """The shared client's options (its ssh_config and known_hosts)."""
        return self.client.ssh_options

    @property
    def env(self) -> dict[str, str]:
        """The shared client's environment for `planner` subprocesses."""
        return self.client.env

    @property
    def remote_home(self) -> Path:
        """HOME on the remote side."""
        return Path(self.remote_env["HOME"])

    @property
    def authorized_keys(self) -> Path:
        """The host's authorized_keys (the client key); read at each login, so a test can change it."""
        return self.folder / "authorized_keys"

    @property
    def log_path(self) -> Path:
        """What the server wrote to stderr."""
        return self.folder / "server.log"

    @property
    def config_file(self) -> Path:
        return self.folder / "server.json"

    def start(self) -> None:
        """Start the server and wait (bounded) until it listens; the port it took is kept for restarts."""
        port_file = self.folder / "port"
        port_file.unlink(missing_ok=True)
        if self.command:
            argv = self.command
        else:
            config = json.loads(self.config_file.read_text())
            config["port"] = self.port
            self.config_file.write_text(json.dumps(config, indent=2))
            argv = [sys.executable, str(SERVER_SCRIPT), str(self.config_file)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(argv, stdout=log, stderr=log)
        deadline = time.monotonic() + START_WAIT_S
        while not self._listening(port_file):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"test SSH host {self.alias} did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.05)

    def _listening(self, port_file: Path) -> bool:
        if not self.command:
            if port_file.exists():
                self.port = int(port_file.read_text())
                return True
            return False
        # sshd writes no port file (its port was chosen before): listening is a TCP connect that succeeds.
        with socket.socket() as probe:
            probe.settimeout(1.0)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0

    def kill(self) -> None:
        """Drop every connection at once (SIGKILL the server); what runs on the host goes on."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=STOP_WAIT_S)

    def restart(self) -> None:
        """Start the server again, on the same port with the same host key."""
        self.kill()
        self.start()

    def pause(self) -> None:
        """Stop the server answering (SIGSTOP), connections left open: a network that went silent."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server answer again."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=STOP_WAIT_S)

    def close(self) -> None:
        """Teardown: the server and its connections' processes, then whatever its commands left running."""
        children = []
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(psutil.Error):
                children = psutil.Process(self.process.pid).children(recursive=True)
        self.stop()
        _end(children)
        _end_marked(self.host_id)


def _remote_env(home: Path, user: str, host_id: str, extra: dict[str, str] | None) -> dict[str, str]:
    venv_bin = Path(sys.executable).parent
    env = {
        "HOME": str(home),
        "USER": user,
        "LOGNAME": user,
        "SHELL": "/bin/sh",
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        MARKER: host_id,
    }
    env.update({k: os.environ[k] for k in _PASS_THROUGH if k in os.environ})
    env.update(extra or {})
    return env


def pytest_collection_modifyitems(config, items):
    """Mark the SSH tests that measure nothing (`scripted_ssh`: a scripted remote engine, or no engine at all), so
    `make test` runs them three at a time; those that run real plans are marked `worker` and stay one at a time."""
    here = str(config.rootpath / "tests" / "ssh")
    for item in items:
        if str(item.path).startswith(here) and "worker" not in item.keywords:
            item.add_marker(pytest.mark.scripted_ssh)


@pytest.fixture
def ssh_client(tmp_path_factory) -> Iterator[SshClient]:
    """The client HOME every SSH host of this test is added to."""
    client = SshClient(home=tmp_path_factory.mktemp("client-home"))
    try:
        yield client
    finally:
        for host in client.hosts:
            host.close()


@pytest.fixture
def make_ssh_host(ssh_client, tmp_path_factory) -> Callable[..., SshTestHost]:
    """Start one more test host per call (see the module docstring for the arguments)."""

    def make(
        alias: str | None = None,
        *,
        env: dict[str, str] | None = None,
        auth: str = "key",
        host_key: str = "known",
        planner: str = "planner",
        sftp: bool = True,
    ) -> SshTestHost:
        if auth not in ("key", "password") or host_key not in ("known", "unknown", "changed"):
            raise ValueError(f"auth={auth!r} host_key={host_key!r}: see tests/ssh/conftest.py")
        alias = alias or f"host{len(ssh_client.hosts) + 1}"
        folder = tmp_path_factory.mktemp(f"sshd-{alias}")
        home = folder / "home"
        home.mkdir()
        key = asyncssh.generate_private_key("ssh-ed25519")
        key_path = folder / "host_key"
        key.write_private_key(key_path)
        authorized = folder / "authorized_keys"
        authorized.write_text(ssh_client.public_key + "\n")
        host = SshTestHost(
            client=ssh_client, alias=alias, folder=folder, port=0, remote_env={}, planner=planner,
            user=ssh_client.user, host_key=key.convert_to_public(),
        )  # fmt: skip
        host.remote_env = _remote_env(home, host.user, host.host_id, env)
        host.config_file.write_text(
            json.dumps(
                {
                    "port": 0,
                    "port_file": str(folder / "port"),
                    "host_key": str(key_path),
                    "user": host.user,
                    "auth": auth,
                    "authorized_keys": str(authorized),
                    "password": PASSWORD,
                    "home": str(home),
                    "env": host.remote_env,
                    "sftp": sftp,
                }
            )
        )
        ssh_client.hosts.append(host)
        host.start()
        if host_key == "known":
            ssh_client.add_known_host(host.port, key)
        elif host_key == "changed":
            ssh_client.add_known_host(host.port, asyncssh.generate_private_key("ssh-ed25519"))
        ssh_client.write()
        return host

    return make


@pytest.fixture
def ssh_host(make_ssh_host) -> SshTestHost:
    """One test host with a known host key that lets the client key in."""
    return make_ssh_host()


@pytest.fixture
def unreachable_host(ssh_client, tmp_path_factory) -> SshTestHost:
    """An alias for a 127.0.0.1 port nothing listens on (its server is never started)."""
    folder = tmp_path_factory.mktemp("sshd-unreachable")
    host = SshTestHost(client=ssh_client, alias="unreachable", folder=folder, port=_free_port(), remote_env={})
    host.user = ssh_client.user
    ssh_client.hosts.append(host)
    ssh_client.write()
    return host


@pytest.fixture
def sshd_host(ssh_client, tmp_path_factory) -> Iterator[SshTestHost]:
    """A host served by the real OpenSSH sshd on a free 127.0.0.1 port; skipped where sshd is not installed."""
    if not SSHD.exists():
        pytest.skip(SSHD_MISSING)
    folder = tmp_path_factory.mktemp("openssh")
    home = folder / "home"
    home.mkdir()
    host = SshTestHost(client=ssh_client, alias="openssh", folder=folder, port=_free_port(), remote_env={})
    host.user = ssh_client.user
    host.remote_env = _remote_env(home, host.user, host.host_id, None)
    key = asyncssh.generate_private_key("ssh-ed25519")
    key_path = folder / "host_key"
    key.write_private_key(key_path)
    key_path.chmod(0o600)
    host.host_key = key.convert_to_public()
    authorized = folder / "authorized_keys"
    authorized.write_text(ssh_client.public_key + "\n")
    # HOME and PATH as the asyncssh hosts give them (sshd sets SetEnv's after its own); SFTP starts in that HOME.
    set_env = " ".join(f"{k}={v}" for k, v in host.remote_env.items() if k in ("HOME", "PATH", "LANG", MARKER))
    config = folder / "sshd_config"
    config.write_text(
        f"Port {host.port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {key_path}\n"
        f"AuthorizedKeysFile {authorized}\n"
        f"PidFile {folder / 'sshd.pid'}\n"
        "StrictModes no\n"
        "UsePAM no\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        f"SetEnv {set_env}\n"
        f"Subsystem sftp internal-sftp -d {home}\n"
    )
    if os.geteuid() == 0:
        # sshd's privilege separation needs this empty folder; a package install creates it at boot.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    host.command = [str(SSHD), "-f", str(config), "-D", "-e"]
    try:
        host.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    ssh_client.hosts.append(host)
    ssh_client.add_known_host(host.port, key)
    ssh_client.write()
    yield host
    # ssh_client's teardown stops it with the others.
