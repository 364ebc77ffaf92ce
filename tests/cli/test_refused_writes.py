"""Every failure is one true line (issue 22): a write the machine refuses — a full disk, a
file-size limit, permission denied, a read-only file system — is named in one `error:` line,
exit 1, the ref unchanged and no partial file of loopx's left. Real limits: a small tmpfs
(mounted as root), `ulimit -f`, `chattr +i`, a read-only remount; skipped where the machine
does not allow them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import git, run_loopx
from syncutil import STATE, event_ids
from loopx.hooks import unrecorded


@contextlib.contextmanager
def _tmpfs(mount: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs at ``mount``, unmounted afterwards (the test is skipped without root)."""
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["chattr", "-R", "-i", str(mount)], capture_output=True)
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs with a repository and a ledger on it, unmounted afterwards."""
    with _tmpfs(tmp_path / "disk") as mount:
        repo = mount / "repo"
        git(mount, "init", "-q", str(repo))
        git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        assert run_loopx(repo, "init").code == 0
        assert run_loopx(repo, "note", "add", "before").code == 0
        yield repo


def _refused(repo: Path, said: str, *args: str, shell: str = "") -> None:
    tip, events = git(repo, "rev-parse", STATE), event_ids(repo)
    argv = args or ("note", "add", "refused")
    if shell:
        quoted = " ".join(f"'{a}'" for a in argv)
        proc = subprocess.run(["sh", "-c", f"{shell}; exec git loopx {quoted}"], cwd=repo,
                              capture_output=True, text=True)
        code, err = proc.returncode, proc.stderr
    else:
        result = run_loopx(repo, *argv)
        code, err = result.code, result.err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1, err
    assert len(errors) == 1 and said in errors[0] and "nothing was changed" in errors[0], err
    assert "Traceback" not in err and "hint: rerun" not in err
    assert git(repo, "rev-parse", STATE) == tip and event_ids(repo) == events
    loopx_dir = repo / ".git" / "loopx"
    assert not list(loopx_dir.rglob("*.tmp")), list(loopx_dir.rglob("*.tmp"))
    assert not [p for p in (loopx_dir / "tmp").rglob("*") if p.is_file()]


def _fill(repo: Path) -> Path:
    fill = repo.parent / "fill"
    subprocess.run(["dd", "if=/dev/zero", f"of={fill}", "bs=4k"], capture_output=True)
    return fill


def test_a_full_disk_is_named_and_nothing_is_half_written(small_disk: Path) -> None:
    fill = _fill(small_disk)
    _refused(small_disk, "no space left on device")
    _refused(small_disk, "no space left on device", "goal", "add", "a goal", "--accept", "it works")
    fill.unlink()
    assert run_loopx(small_disk, "note", "add", "after").code == 0
    listed = run_loopx(small_disk, "note", "list").out
    assert "before" in listed and "after" in listed


def _temporary_files(repo: Path) -> list[Path]:
    """loopx's temporary files anywhere under .git (git's own tmp_obj_* are git's to remove)."""
    return [p for p in (repo / ".git").rglob("*tmp*")
            if p.is_file() and not p.name.startswith("tmp_obj_")]


def test_a_full_disk_leaves_no_temporary_file_of_a_derived_file(small_disk: Path) -> None:
    """status writes host.json and hooks install the hook files, each through a temporary
    file renamed into place: on a full disk each left its temporary file behind, one more
    per command."""
    fill = _fill(small_disk)
    assert run_loopx(small_disk, "status").code == 0  # host.json is never required
    _refused(small_disk, "no space left on device", "hooks", "install")
    assert run_loopx(small_disk, "status").code == 0
    assert _temporary_files(small_disk) == []
    fill.unlink()
    assert run_loopx(small_disk, "hooks", "install").code == 0
    assert run_loopx(small_disk, "status").code == 0
    assert (small_disk / ".git" / "loopx" / "host.json").is_file()
    assert _temporary_files(small_disk) == []


@pytest.fixture
def small_hub(tmp_path: Path) -> Iterator[Path]:
    """A bare hub on a 4 MiB tmpfs of its own, unmounted afterwards."""
    with _tmpfs(tmp_path / "hub-disk") as mount:
        git(mount, "init", "-q", "--bare", str(mount / "hub.git"))
        yield mount / "hub.git"


def _synced(result: object, said: str) -> None:
    code, err = result.code, result.err  # type: ignore[attr-defined]
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(errors) == 1, err
    assert said in errors[0] and "nothing was changed" in errors[0], err
    assert "could not reach" not in err and "may be missing here" not in err, err


def test_a_full_disk_on_either_side_of_a_sync_is_named_as_that_side(
        small_disk: Path, small_hub: Path, tmp_path: Path) -> None:
    """A full hub was "origin refused loopx/state: [remote rejected] (unpacker error); objects
    it needs may be missing here: `git loopx doctor` names them", a full clone "could not
    reach origin": neither disk was named, and both sent the user the wrong way."""
    git(small_disk, "remote", "add", "origin", str(small_hub))
    assert run_loopx(small_disk, "sync").code == 0
    noise = subprocess.run(["sh", "-c", "head -c 3000 /dev/urandom | base64 -w0 | tr -d /+"],
                           capture_output=True, text=True).stdout
    assert run_loopx(small_disk, "note", "add", "to push " + noise).code == 0
    hub_fill = small_hub.parent / "fill"
    subprocess.run(["dd", "if=/dev/zero", f"of={hub_fill}", "bs=4k"], capture_output=True)
    hub_tip = git(small_hub, "rev-parse", STATE)
    _synced(run_loopx(small_disk, "sync"), "origin's side: no space left on device")
    assert git(small_hub, "rev-parse", STATE) == hub_tip
    hub_fill.unlink()
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(small_hub), str(other))
    assert run_loopx(other, "sync").code == 0
    assert run_loopx(other, "note", "add", "to fetch " + noise).code == 0
    assert run_loopx(other, "sync").code == 0
    fill, tip = _fill(small_disk), git(small_disk, "rev-parse", STATE)
    _synced(run_loopx(small_disk, "sync"), "this clone: no space left on device")
    assert git(small_disk, "rev-parse", STATE) == tip
    fill.unlink()
    assert run_loopx(small_disk, "sync").code == 0
    listed = run_loopx(small_disk, "note", "list").out
    assert "to push" in listed and "to fetch" in listed


def test_a_commit_on_a_held_lease_with_the_loopx_folder_full_says_so_and_is_recorded_later(
        leased: Path, tmp_path: Path) -> None:
    """Only <git common dir>/loopx is full (its own tmpfs): git commits, the shim cannot queue
    the record and loopx cannot write it. The commit said "printf: I/O error" (the shim's
    printf) and "post-commit hook failed: [Errno 28] No space left on device"; the next
    command after room is made records the commit."""
    folder = leased / ".git" / "loopx"
    kept = tmp_path / "kept"
    shutil.copytree(folder, kept, symlinks=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        shutil.copytree(kept, folder, symlinks=True, dirs_exist_ok=True)
        fill = folder / "fill"
        subprocess.run(["dd", "if=/dev/zero", f"of={fill}", "bs=1k"], capture_output=True)
        (leased / "a.txt").write_text("a\n")
        git(leased, "add", "a.txt")
        proc = subprocess.run(["git", "commit", "-q", "-m", "on a full loopx folder"], cwd=leased,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "no space left on device; nothing was changed" in lines[0], lines
        assert "Errno" not in proc.stderr and "printf" not in proc.stderr
        fill.unlink()
        time.sleep(unrecorded.GRACE_S + 0.5)  # the reflog line is no longer young
        assert run_loopx(leased, "status").code == 0
        evidence = run_loopx(leased, "evidence", "list").out
        assert "on a full loopx folder" in evidence, evidence
        assert _temporary_files(leased) == []
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_run_with_its_temporary_folder_nearly_full_ends_and_records_nothing(
        ledger: object, repo: Path, tmp_path: Path) -> None:
    """`run` keeps the command's output in a temporary file: once that file could not grow,
    its reader thread died, the command blocked on its full pipe and `run` waited for it,
    both forever. (A TMPDIR with no room at all is passed over by Python itself.)"""
    mount = tmp_path / "tmpdir"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mount / "fill").write_bytes(b"\0" * 40 * 1024)
        tip = git(repo, "rev-parse", STATE)
        try:
            proc = subprocess.run(["git", "loopx", "run", "--", "seq", "1", "400000"], cwd=repo,
                                  capture_output=True, text=True, timeout=60,
                                  env={**os.environ, "TMPDIR": str(mount)})
        except subprocess.TimeoutExpired:
            pytest.fail("`git loopx run` hung on a full temporary folder")
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout.endswith("399999\n400000\n")  # the output still went through
        assert proc.stderr.strip() == (f"error: cannot write {mount}: no space left on device; "
                                       "nothing was changed")
        assert git(repo, "rev-parse", STATE) == tip
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_run_whose_stdout_is_a_file_on_a_full_disk_ends_and_records_the_whole_output(
        ledger: object, repo: Path, small_disk: Path) -> None:
    """Writing the command's output to our stdout failed (ENOSPC) in the reader thread: the
    thread ended, the command blocked on its full pipe and `run` waited, both forever. Then
    its answer could not be printed either: that said "nothing was changed" of a recorded
    write, and a traceback followed (the JSON error went to the same stdout)."""
    fill = _fill(small_disk)
    with open(small_disk.parent / "fill", "ab") as full:
        try:
            proc = subprocess.run(["git", "loopx", "run", "--json", "--", "seq", "1", "400000"],
                                  cwd=repo, stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("`git loopx run` hung on a stdout it cannot write")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == ("error: cannot write: no space left on device, after this "
                                   "command's write was recorded (`git loopx log` shows it)")
    recorded = git(repo, "show", STATE)  # the evidence event, with its output's tail
    assert "evidence.recorded" in recorded and "399999" in recorded and "400000" in recorded
    fill.unlink()


def test_a_file_size_limit_is_named(small_disk: Path) -> None:
    noise = subprocess.run(["sh", "-c", "head -c 6000 /dev/urandom | base64 -w0"],
                           capture_output=True, text=True).stdout
    _refused(small_disk, "file too large", "note", "add", "x" + noise.replace("/", "a"),
             shell="ulimit -f 4")


def test_an_immutable_object_store_is_named(small_disk: Path) -> None:
    objects = small_disk / ".git" / "objects"
    dirs = [objects, *[d for d in objects.iterdir() if d.is_dir()]]
    if subprocess.run(["chattr", "+i", *map(str, dirs)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    _refused(small_disk, "operation not permitted")


def test_an_immutable_ref_file_is_named(small_disk: Path) -> None:
    """git says only "couldn't set" when the rename over the ref's file fails: it was exit 3."""
    if subprocess.run(["chattr", "+i", str(small_disk / ".git" / STATE)],
                      capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    _refused(small_disk, "the ref's file could not be replaced")
    assert run_loopx(small_disk, "status").code == 0


def test_an_unwritable_loopx_folder_is_named(small_disk: Path) -> None:
    folder = small_disk / ".git" / "loopx"
    (folder / "write.lock").unlink()
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    _refused(small_disk, "write.lock: operation not permitted")
    assert run_loopx(small_disk, "status").code == 0  # reading needs no write


def test_a_read_only_file_system_is_named(small_disk: Path) -> None:
    mount = small_disk.parent
    if subprocess.run(["mount", "-o", "remount,ro", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot remount read-only here")
    _refused(small_disk, "read-only file system")
    status = run_loopx(small_disk, "status")
    assert status.code == 0, status.err


def _replace(path: Path, by: str) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    {"file": lambda: path.write_text("x\n"), "folder": lambda: path.mkdir(),
     "broken link": lambda: path.symlink_to(path.parent / "gone" / "x")}[by]()


# Something of the wrong kind where loopx writes: (what, replaced by, said). Each was exit 3
# ("unexpected FileExistsError", "NotADirectoryError", "IsADirectoryError").
IN_THE_WAY = {
    "the loopx folder a file": ("loopx", "file", "loopx: it is a file or a broken link, not a folder"),
    "the loopx folder a broken link": ("loopx", "broken link", "it is a file or a broken link"),
    "its tmp folder a file": ("loopx/tmp", "file", "a file (not a folder) is in the way"),
    "its write.lock a folder": ("loopx/write.lock", "folder", "write.lock: it is a folder"),
}


@pytest.mark.parametrize("name", list(IN_THE_WAY))
def test_something_of_the_wrong_kind_in_the_way_is_named(ledger: object, repo: Path,
                                                         name: str) -> None:
    where, by, said = IN_THE_WAY[name]
    assert run_loopx(repo, "note", "add", "before").code == 0
    _replace(repo / ".git" / where, by)
    _refused(repo, said)
    _refused(repo, said, "goal", "add", "a goal", "--accept", "it works")
    status = run_loopx(repo, "status")  # reading needs no write
    assert status.code == 0, status.err
    if where == "loopx":
        assert "loopx is not a folder (a file or a broken link)" in run_loopx(repo, "doctor").out
    _replace(repo / ".git" / where, "folder")
    if by == "folder":
        (repo / ".git" / where).rmdir()
    assert run_loopx(repo, "note", "add", "after").code == 0
    assert "after" in run_loopx(repo, "note", "list").out
