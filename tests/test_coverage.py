"""Every module of the package is covered by a test module named for it
(``tests/**/test_<module>.py`` or ``test_<module>_*.py``) or by a reason stated here that names
the test modules which exercise it. A reason that names no existing test module, or a module
that has since got its own test module, fails: the map stays true as files come and go."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

# module (relative to loopx/) -> the test modules that exercise it, and how.
COVERED_ELSEWHERE = {
    # The CLI's command modules only parse and render (docs/design.md): their commands run,
    # as users type them, in the tests of what the commands do.
    "cli/effect.py": "tests/cli/test_messages.py, tests/ops/test_effects.py "
                     "(`effect intend|confirm|fail|list`)",
    "agents/hosts/claude.py": "tests/cli/test_watch_host.py (a stand-in `claude -p`)",
    "agents/hosts/codex.py": "tests/cli/test_watch_host.py (a stand-in `codex exec -`)",
    "agents/hosts/gemini.py": "tests/cli/test_watch_host.py (a stand-in `gemini -p`)",
    "agents/hosts/custom.py": "tests/cli/test_watch_host.py (`--host command -- CMD`)",
    "cli/quota.py": "tests/ops/test_enforced.py (`quota set|spend|show`)",
    "storage/files.py": "tests/ledger/test_not_a_file.py (a fifo, device or link in place of "
                        "each file read), tests/cli/test_refused_writes.py (a full disk "
                        "leaves no temporary file)",
    "cli/wake.py": "tests/cli/test_waiting.py, tests/ops/test_wakes.py "
                   "(`wake set|clear|ack|list`)",
    "cli/config.py": "tests/cli/test_cli.py, tests/ledger/test_signatures.py "
                     "(`config show|set`, `signer add|remove|list`)",
    "cli/upkeep.py": "tests/upkeep/test_doctor.py, tests/ledger/test_checkpoints.py, "
                     "tests/cli/test_cli.py (`doctor`, `checkpoint`, "
                     "`schema export|check`)",
    "cli/app.py": "tests/cli/test_cli.py (every command's App: actor, --now, --json, exit codes)",
    "cli/completion.py": "tests/cli/test_help.py (`git loopx completion bash|zsh|fish`)",
    "cli/core.py": "tests/cli/test_cli.py, tests/cli/test_help.py, tests/cli/test_manpage.py "
                   "(init, config, schema, help)",
    "cli/evidence.py": "tests/recovery/test_ci.py, tests/ops/test_evidence.py "
                          "(`evidence add|list|show`, `ci record`)",
    "cli/gate.py": "tests/ledger/test_gate_decisions.py, tests/cli/test_cli.py "
                   "(`gate open|answer|withdraw|show`)",
    "cli/goal.py": "tests/cli/test_cli.py, tests/cli/test_status.py (`goal add|update|close`)",
    "cli/hooks.py": "tests/hooks/test_hooks.py, tests/hooks/test_capture.py, "
                    "tests/ops/test_evidence.py (`hooks install|queue|drain`, `hook NAME`, "
                    "`run`, `rerun`)",
    "cli/launch.py": "tests/cli/test_startup.py (the entry point: what each command imports)",
    "cli/note.py": "tests/cli/test_messages.py, tests/review/test_changes.py "
                   "(`note add|list|dismiss`)",
    "cli/sync.py": "tests/remote/test_sync.py, tests/ledger/test_checkpoints.py, "
                     "tests/upkeep/test_doctor.py (`sync`, `fetch`, `push`, `checkpoint`, "
                     "`doctor`)",
    "cli/render.py": "tests/cli/test_terminal.py, tests/cli/test_status.py (the text "
                     "renderings of status, next and the lists)",
    "cli/review.py": "tests/review/test_changes.py, tests/review/test_validate.py "
                     "(`log`, `diff`, `validate`)",
    "cli/serve.py": "tests/mcp/test_server.py, tests/cli/test_smoke.py (`git loopx mcp`)",
    "cli/notify.py": "tests/ops/test_notify.py (`git loopx notify` in-process)",
    "recovery/notify.py": "tests/ops/test_notify.py (a webhook on 127.0.0.1, notify-send)",
    "cli/web.py": "tests/web/test_server_http.py, tests/web/test_browser.py (`git loopx web`)",
    "cli/session.py": "tests/ops/test_sessions.py (`session open|send|inbox|...`)",
    "cli/todo.py": "tests/cli/test_cli.py, tests/ops/test_todos.py, tests/cli/test_bad_input.py "
                   "(`todo add|claim|done|...`)",
    "errors.py": "tests/cli/test_bad_input.py, tests/cli/test_messages.py (each error's "
                 "message and exit code)",
    "version.py": "tests/cli/test_startup.py (`git loopx --version`)",
    "remote/inbox.py": "tests/remote/test_sync_fleet.py (parked tips folded, tidied, "
                         "hostile ones quarantined)",
    "remote/pushing.py": "tests/remote/test_sync.py, tests/remote/test_sync_fleet.py "
                           "(what a push may send; an unreachable remote named)",
    "redaction/gitleaks.py": "tests/redaction/test_redact_classes.py (the packaged gitleaks rules "
                            "convert and catch the corpus)",
    "redaction/shapes.py": "tests/redaction/test_redact_classes.py (flag values, base64 user:pass)",
    "hooks/unrecorded.py": "tests/hooks/test_killed_commits.py (commits whose hook was "
                              "killed, found by the next command)",
    "recovery/briefing.py": "tests/cli/test_status.py (`git loopx brief`)",
    "recovery/ci/command.py": "tests/recovery/test_ci.py (the command provider)",
    "recovery/ci/github.py": "tests/recovery/test_ci.py (against a real HTTP server on "
                             "127.0.0.1)",
    "recovery/effects.py": "tests/ops/test_effect_readback.py (http:, github:, cmd: readbacks, "
                           "bounded in time)",
    "recovery/rest.py": "tests/recovery/test_githubapi.py, tests/recovery/test_ci.py (against real "
                        "HTTP servers on 127.0.0.1)",
    "recovery/ci/recorded.py": "tests/recovery/test_ci.py (ci evidence read back)",
    "recovery/primer.py": "tests/cli/test_prime.py (`git loopx prime`)",
    "upkeep/salvage.py": "tests/ledger/test_gc_prune.py (doctor names each lost event, "
                           "repair keeps every other), tests/upkeep/test_doctor.py",
    "upkeep/schema.py": "tests/cli/test_cli.py (`schema export|check`), "
                          "tests/projection/test_answers.py (the status schema)",
    "agents/transcripts.py": "tests/ops/test_sessions.py (session transcripts)",
    "ledger/seen.py": "tests/projection/test_clocks.py, tests/remote/test_hostile_clocks.py (first "
                      "sight of leases, wakes and sessions by skewed clones)",
    "ledger/draft.py": "tests/ledger/test_book.py (every staged write is a Draft)",
    "ledger/replay.py": "tests/ledger/test_cache.py, tests/remote/test_hostile_clocks.py "
                        "(cold replay and its refusals)",
    "ledger/rows.py": "tests/ledger/test_cache.py (the SQLite rows of the cache)",
    "ledger/txn.py": "tests/ledger/test_book.py, tests/ops/test_library.py (one write, all "
                     "or nothing)",
    "web/page.py": "tests/web/test_server_http.py, tests/web/test_browser.py (the page served)",
    "model/paths.py": "tests/ledger/test_layout.py, tests/remote/test_incoming_paths.py "
                      "(event paths)",
    "model/yamlevents.py": "tests/model/test_codec.py (every document the slow way; what a "
                           "parse leaves for the cycle collector), tests/model/test_codec_fast.py",
    "model/plain.py": "tests/review/test_changes.py (`log` on a warm cache), "
                      "tests/cli/test_startup.py (without pydantic)",
    "model/limits.py": "tests/ops/test_declare.py (the bounds declarations and event models "
                       "share)",
    # The payload models: one module per family, all validated through the event model.
    **{f"model/payloads/{name}.py": "tests/model/test_events.py, tests/model/test_bounds.py "
       "(every event type's payload, its bounds)"
       for name in ("base", "effect_events", "evidence_events", "gate_events", "goal_events",
                    "ledger_events", "note_events", "quota_events", "session_events",
                    "todo_events", "wake_events")},
    "ops/catalog_records.py": "tests/ops/test_declare.py (each declaration against its "
                              "command, its schema and its event's bounds), "
                              "tests/ops/test_sessions.py",
    "ops/catalog_recovery.py": "tests/ops/test_declare.py, tests/cli/test_status.py "
                               "(status, next, brief, prime, log, diff, validate, sync)",
    "ops/worker.py": "tests/mcp/test_server.py, tests/web/test_server_http.py (every call of "
    "both servers runs in it)",
    "ops/catalog_plan.py": "tests/ops/test_declare.py (each declaration against its command, "
                           "its schema and its event's bounds), tests/cli/test_cli.py",
    "ops/sync.py": "tests/remote/test_sync.py, tests/ledger/test_checkpoints.py (`sync`)",
    "ops/catalog.py": "tests/ops/test_declare.py (every declared operation)",
    "ops/gates.py": "tests/ops/test_library.py, tests/ledger/test_gate_decisions.py",
    "ops/goals.py": "tests/ops/test_library.py, tests/ops/test_todos.py",
    "ops/hooks.py": "tests/hooks/test_hooks.py, tests/hooks/test_spool.py (what the "
                      "git hooks run)",
    "ops/ledgers.py": "tests/ops/test_library.py, tests/cli/test_cli.py (open, init, actor)",
    "ops/lookup.py": "tests/ops/test_library.py, tests/cli/test_cli.py (id prefixes)",
    "ops/notes.py": "tests/ops/test_library.py, tests/ledger/test_gc_prune.py",
    "ops/notices.py": "tests/cli/test_messages.py, tests/projection/test_history.py (notices of "
                      "events the fold did not apply)",
    "ops/quotas.py": "tests/ops/test_enforced.py (budgets enforced)",
    "ops/config.py": "tests/cli/test_cli.py (`config show|set`), tests/ops/test_wakes.py",
    "ops/status.py": "tests/ops/test_library.py, tests/cli/test_status.py (status, next, "
                     "brief)",
    "ops/review.py": "tests/review/test_changes.py, tests/review/test_validate.py",
    "ops/upkeep.py": "tests/upkeep/test_doctor.py (`doctor` and its rollback)",
    "projection/appliers.py": "tests/projection/test_folding.py, tests/projection/test_rules.py (the fold's "
                         "properties)",
    "projection/authority.py": "tests/ledger/test_authority_acts.py, "
                          "tests/ledger/test_gate_decisions.py (who may decide a gate; signed "
                          "acts)",
    "projection/checks.py": "tests/projection/test_rules.py (every refusal of the rules)",
    "projection/environment.py": "tests/projection/test_answers.py, tests/cli/test_status.py (the "
    "environment part of the status answer)",
    "projection/rule_base.py": "tests/projection/test_rules.py (unknown goals and todos)",
    "projection/session_rules.py": "tests/projection/test_rules.py, tests/ops/test_sessions.py "
    "(every refusal of the session rules)",
    "projection/entities.py": "tests/projection/test_folding.py, tests/projection/test_rules.py",
    "projection/views.py": "tests/projection/test_folding.py, tests/projection/test_history.py",
    "storage/refdamage.py": "tests/ledger/test_damaged_refs.py (each kind of damaged state ref, "
                            "named, refused and repaired)",
    "storage/repacking.py": "tests/ledger/test_fanout.py, tests/storage/test_store.py (maintenance "
                            "with gc.auto=0 beside a writer)",
    "storage/commits.py": "tests/ledger/test_signatures.py, tests/projection/test_history.py "
                          "(log walks, signatures)",
    "storage/locks.py": "tests/storage/test_store.py, tests/hooks/test_spool.py (a lock "
                        "held by another process, one left by a killed one)",
    "storage/batches.py": "tests/storage/test_bulk_reads.py (each answer read at once and "
                          "the checked way, cut short, padded or of another object)",
    "storage/packfile.py": "tests/storage/test_oracle.py (packs read back by GitPython)",
    "storage/trees.py": "tests/storage/test_oracle.py (trees read back by GitPython)",
    "storage/worktrees.py": "tests/ledger/test_checked_out_state.py",
}


def _modules() -> list[str]:
    return sorted(str(p.relative_to(ROOT / "loopx")) for p in (ROOT / "loopx").rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def _has_own_test(module: str) -> bool:
    """A test module named for it in the folder that mirrors its own: a command, its
    operations and the module that does the work share a name (docs/design.md, Layers), so
    ``cli/sync.py`` is not covered by ``tests/remote/test_sync.py``."""
    folder, stem = ROOT / "tests" / Path(module).parent, Path(module).stem
    return (folder / f"test_{stem}.py").is_file() or any(folder.glob(f"test_{stem}_*.py"))


def test_every_module_has_a_test_module_or_a_stated_reason() -> None:
    modules = _modules()
    uncovered = [m for m in modules if not _has_own_test(m) and m not in COVERED_ELSEWHERE]
    assert uncovered == [], "add tests/<layer>/test_<module>.py, or a reason above"
    stale = sorted(set(COVERED_ELSEWHERE) - set(modules))
    assert stale == [], "these modules no longer exist"
    own = sorted(m for m in COVERED_ELSEWHERE if _has_own_test(m))
    assert own == [], "these have their own test module now: drop their reason"


def test_each_reason_names_test_modules_that_exist() -> None:
    for module, reason in COVERED_ELSEWHERE.items():
        named = re.findall(r"tests/[\w/]+\.py", reason)
        assert named, (module, reason)
        missing = [path for path in named if not (ROOT / path).is_file()]
        assert missing == [], (module, missing)


def test_no_two_test_modules_share_a_name() -> None:
    # pytest imports test modules by their base name (the tests folders are not packages):
    # two of one name in different folders stop the whole run with "import file mismatch".
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        assert path.name not in seen, f"{path} and {seen[path.name]} share a name"
        seen[path.name] = path
