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

# Most commits have nothing for loopx to record: no Loopx-Todo/Loopx-Goal trailer and no lease
# held on this branch. post-commit decides that here, from the small file the ledger keeps
# (<git common dir>/loopx/hooks.state, see docs/hooks.md), without starting Python; a file
# written for another state tip is ignored. Only when loopx could run at all: otherwise the
# lines below say that it cannot.
if [ "$hook" = post-commit ] && [ -z "${LOOPX_STATE_REF:-}${LOOPX_HOOK_TEST_FAIL:-}" ] &&
    { command -v git-loopx >/dev/null 2>&1 || [ -x "$loopx_python" ]; }; then
    where=$(git rev-parse --path-format=absolute --git-common-dir --absolute-git-dir \
        --verify -q 'refs/heads/loopx/state^{commit}' 2>/dev/null)
    found=$?
    { read -r common; read -r gitdir; read -r tip; } <<EOF
$where
EOF
    case $common in /*) ;; *) found=2 ;; esac  # a git before 2.31: loopx itself decides
    # No ledger here, unless the ref is there and its commit is not: loopx says so then.
    [ $found -eq 1 ] && [ ! -f "$common/refs/heads/loopx/state" ] && exit $status
    # A rebase runs post-commit for every pick; post-rewrite remaps them once it is done.
    if [ -d "$gitdir/rebase-merge" ] || [ -d "$gitdir/rebase-apply" ]; then exit $status; fi
    known= leases= head=
    read -r head 2>/dev/null < "$gitdir/HEAD"
    for queued in "$common"/loopx/spool/*.json; do
        [ -e "$queued" ] && found=3  # work an earlier hook queued: loopx applies it now
        break
    done
    # A commit on the state branch itself: loopx warns about it.
    [ "$head" = "ref: refs/heads/loopx/state" ] && found=3
    if [ $found -eq 0 ] && [ -n "$tip" ] && [ -f "$common/loopx/hooks.state" ]; then
        format= check= body=
        while IFS= read -r line; do
            case $line in
                "format "*) format=${line#format } ;;
                "tip "*) [ "${line#tip }" = "$tip" ] && known=1 ;;
                "lease "*) leases="$leases${line#lease }
" ;;
                "check "*) check=${line#check }; continue ;;
            esac
            [ -z "$check" ] || check=-  # a line after the check line: not whole
            body="$body$line
"
        done < "$common/loopx/hooks.state"
        # Believed only whole: the last line is the git blob id of the lines above it (a file
        # cut short, damaged or of another format makes loopx decide, and rewrite it).
        if [ -n "$known" ] && { [ "$format" != 2 ] || [ -z "$check" ] ||
            [ "$(printf '%s' "$body" | git hash-object --stdin)" != "$check" ]; }; then
            known= leases=
        fi
    fi
    trailers=
    if [ -n "$known" ]; then
        said=$(git log -1 --no-show-signature \
            --format='%H %(trailers:key=Loopx-Todo,key=Loopx-Goal,valueonly)')
        sha=${said%% *}
        trailers=$(printf '%s' "${said#* }" | tr -d ' \n')
    fi
    if [ -n "$known" ] && [ -z "$trailers" ]; then
        held=
        if [ -n "$leases" ]; then
            actor=${LOOPX_ACTOR:-}
            [ -n "$actor" ] || actor="human:$(git config user.email)"
            branch=$(git symbolic-ref -q HEAD)
            now=$(date +%s)
            while read -r a b until; do
                [ -n "$a" ] && [ "$a" = "$actor" ] && [ "$b" = "$branch" ] &&
                    [ "$until" -gt "$now" ] && held=1
            done <<EOF
$leases
EOF
        fi
        # Nothing to record; said so, for the check that finds commits whose hook was killed.
        if [ -z "$held" ]; then
            [ -f "$common/loopx/commits-watch.json" ] && echo "$sha" >> "$common/loopx/hooks.done"
            exit $status
        fi
    fi
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
