#!/bin/sh
# loopx-hook-shim v1: @HOOK@
# Runs `git loopx hook @HOOK@` after any hook that was here before loopx (@HOOK@.loopx-chained,
# same arguments and stdin, its exit status kept). Installed by `git loopx hooks install`;
# `git loopx hooks uninstall` puts back exactly what was here. See docs/hooks.md.
hook=@HOOK@
loopx_python='@PYTHON@'
chained="$0.loopx-chained"

# pre-push and post-rewrite read stdin; keep it (trailing newlines too) for both readers.
input=
case $hook in pre-push|post-rewrite) input=$(cat; echo x); input=${input%x} ;; esac

status=0
if [ -x "$chained" ]; then
    printf '%s' "$input" | "$chained" "$@"
    status=$?
    # A failing pre-push hook stops the push, as it did before loopx: nothing more to do.
    [ "$hook" = pre-push ] && [ $status -ne 0 ] && exit $status
fi

# loopx's stderr goes through a file so that a loopx that cannot run at all (interpreter
# gone, package removed: exit 126/127 or a traceback) is reported in one line, not raw.
err=$(mktemp 2>/dev/null) || err=
run_loopx() { if [ -n "$err" ]; then "$@" 2>"$err"; else "$@"; fi; }
if command -v git-loopx >/dev/null 2>&1; then
    printf '%s' "$input" | run_loopx git-loopx hook "$hook" "$@"
elif [ -n "$loopx_python" ] && "$loopx_python" -c 'import loopx' 2>/dev/null; then
    printf '%s' "$input" | run_loopx "$loopx_python" -m loopx hook "$hook" "$@"
else
    echo "loopx: $hook hook skipped: git-loopx is not installed (reinstall loopx, or remove $0)" >&2
    exit $status
fi
loopx_status=$?
if [ -z "$err" ]; then
    :
elif [ $loopx_status -eq 0 ] || grep -q '^loopx: ' "$err"; then
    cat "$err" >&2
else
    why=$(grep -v '^[[:space:]]*$' "$err" | tail -n 1)
    echo "loopx: $hook hook skipped: git-loopx could not run (exit $loopx_status${why:+: $why}); reinstall loopx, or remove $0" >&2
    loopx_status=0
fi
[ -z "$err" ] || rm -f "$err"
# loopx fails open: only loopx.hooks.strict=true lets a loopx failure stop git.
if [ $loopx_status -ne 0 ] && [ "$(git config --bool loopx.hooks.strict)" = true ]; then
    exit $loopx_status
fi
exit $status
