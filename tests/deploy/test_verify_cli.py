"""The CLI, `planner verify DIR` (here for the deploy fixtures): each package's checks in words, and the exit
status a script can rely on."""

from __future__ import annotations

import json
import shutil

import pytest


@pytest.mark.worker
def test_verify_prints_each_check_and_exits_0_when_all_pass(cli, written_plan):
    out, _ = written_plan
    # A tolerance no machine misses: the exit status must not depend on this machine's load.
    code, stdout, stderr = cli("verify", str(out / "deploy"), "--tolerance", "1000000")
    assert code == 0, stdout + stderr
    assert "files     pass" in stdout and "fidelity  pass" in stdout and "latency   pass" in stdout
    assert "1 of 1 package passed" in stdout


@pytest.mark.worker
def test_verify_json_and_an_edited_package_fails_naming_the_file(cli, written_plan, tmp_path):
    out, _ = written_plan
    copy = shutil.copytree(out / "deploy", tmp_path / "deploy")
    with open(copy / "winner" / "samples.npz", "ab") as fh:
        fh.write(b"\0")
    code, stdout, _ = cli("verify", str(copy), "--json")
    assert code == 1
    [verdict] = json.loads(stdout)
    assert verdict["passed"] is False
    assert verdict["problems"] == ["samples.npz was changed after the plan wrote it (its SHA-256 differs from "
                                   "manifest.json)"]


def test_verify_of_a_missing_folder_is_a_clear_error(cli, tmp_path):
    code, _, stderr = cli("verify", str(tmp_path / "nowhere"))
    assert code != 0 and "does not exist" in stderr and "fix:" in stderr
    code, _, stderr = cli("verify", str(tmp_path), "--tolerance", "0")
    assert code != 0 and "--tolerance must be more than 0" in stderr
