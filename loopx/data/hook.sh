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
# written for another state tip is ignored. A commit on a lease held here is queued here too
# (queue_commit) and recorded by a detached drain: `git commit` returns at once. Only when
# loopx could run at all: otherwise the lines below say that it cannot.

# Tests only (LOOPX_HOOK_TEST_PAUSE=<point>:<pid file>, as loopx.hooks.spool.pause_point):
# stop at <point> to be killed there by a real signal.
pause_at() {
    case ${LOOPX_HOOK_TEST_PAUSE:-} in
        "$1":?*) echo $$ > "${LOOPX_HOOK_TEST_PAUSE#*:}"; kill -STOP $$ ;;
    esac
}

# The Crockford base32 digit of $1 (0-31), in $digit: ULIDs, as loopx.model.ids makes them.
b32() {
    set -- "$1" 0 1 2 3 4 5 6 7 8 9 A B C D E F G H J K M N P Q R S T V W X Y Z
    eval "digit=\${$(($1 + 2))}"
}

# A detached `git loopx hooks drain` for what is queued (stdin, stdout and stderr off git's:
# its lines go to hooks.log), unless one holds the queue: that one looks at the queue again
# once it lets go of it (loopx.hooks.spool.drain), so nothing waits for a later command.
# All of it in a background process: git goes on meanwhile. $1: a file to remove first.
start_drain() {
    lock="$common/loopx/spool/.drain.lock"
    if command -v git-loopx >/dev/null 2>&1; then set -- "$1" git-loopx
    else set -- "$1" "$loopx_python" -m loopx; fi
    detach=nohup
    command -v setsid >/dev/null 2>&1 && detach=setsid
    {
        [ -z "$1" ] || rm -f "$1"
        shift
        if [ -f "$lock" ] && command -v flock >/dev/null 2>&1 &&
            ! flock -n "$lock" true; then
            exit 0
        fi
        LOOPX_HOOK_DRAIN=1 exec $detach "$@" hooks drain --quiet
    } </dev/null >>"$common/loopx/hooks.log" 2>&1 &
}

# Queue this commit's record, marked as a post-commit at work while it does (for the check
# that finds commits whose hook was killed, and credits them to who the mark names: as
# loopx.hooks.unrecorded.mark_text writes one). A mark not written whole is none.
queue_commit() {
    mark=
    if [ -f "$common/loopx/commits-watch.json" ]; then
        [ -d "$common/loopx/hooks.running" ] || mkdir -p "$common/loopx/hooks.running" 2>/dev/null
        mark="$common/loopx/hooks.running/$$"
        printf 'loopx-running v1\n%s\n%s\n' "$actor" "$sha" 2>/dev/null > "$mark" ||
            { rm -f "$mark"; mark=; }
    fi
    pause_at start
    queue_entry && { early=; return 0; }  # (the mark is the drain's to remove now)
    [ -z "$mark" ] || rm -f "$mark"
    return 1
}

# The entry for HEAD ($sha, on $branch, for $actor) in the spool, as loopx.hooks.spool.append
# writes one: a temporary file renamed into place (fsynced when core.fsync asks git to harden
# refs), then a drain started. Returns 1, having queued nothing, at any doubt: loopx decides.
queue_entry() {
    [ -d "$common/loopx" ] && [ ! -L "$common/loopx" ] || return 1
    magic= owner=
    { read -r magic; read -r owner; } 2>/dev/null < "$common/loopx/owner"
    [ "$magic" = "loopx-owner v1" ] && [ "$owner" = "$common" ] || return 1  # not ours
    case $strict in unset|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|[Oo][Ff][Ff]|0) ;; *) return 1 ;; esac
    case $background in unset|[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss]|[Oo][Nn]|1) ;; *) return 1 ;; esac
    case $branch in refs/heads/loopx/*|refs/loopx/*|"") return 1 ;; esac
    case "$actor$branch" in *[!\ -~]*|*[\"\\]*) return 1 ;; esac  # plain JSON strings only
    # An identity the ledger takes (loopx.model.limits.ACTOR_PATTERN): LOOPX_ACTOR=nobody, or
    # no user.email ("human:"), fails in the foreground, where the commit shows it.
    kind=${actor%%:*} lower=abcdefghijklmnopqrstuvwxyz  # not [a-z]: a locale may widen it
    case $actor in *:?*) ;; *) return 1 ;; esac
    case $kind in [$lower]*) ;; *) return 1 ;; esac
    case $kind in *[!0123456789_$lower-]*) return 1 ;; esac
    case ${actor#*:} in *" "*) return 1 ;; esac
    [ ${#kind} -le 32 ] && [ $((${#actor} - ${#kind} - 1)) -le 200 ] || return 1
    amended=null
    if [ -f "$gitdir/logs/HEAD" ]; then
        last=$(tail -n 1 "$gitdir/logs/HEAD")
        old=${last%% *}
        rest=${last#* }
        [ "${rest%% *}" = "$sha" ] || return 1  # HEAD's last reflog line is not this commit
        case ${last#*	} in "commit (amend)"*) amended="\"$old\"" ;; esac
    elif [ -e "$common/reftable" ]; then
        return 1
    fi
    # The entry's ULID: the time in milliseconds, then 80 bits of the commit's id (unique to
    # it, as the random part is unique to an entry).
    set -- $clock
    case $2 in ?????????) ;; *) return 1 ;; esac  # a date(1) without %N
    case $1$2 in *[!0-9]*) return 1 ;; esac
    ms=$(($1 * 1000 + 1${2%??????} - 1000)) at=$3 id= bits=$sha
    while [ ${#id} -lt 10 ]; do b32 $((ms % 32)); id=$digit$id; ms=$((ms / 32)); done
    while [ ${#id} -lt 26 ]; do
        chunk=${bits%"${bits#?????}"} bits=${bits#?????} part=
        case $chunk in ?????) ;; *) return 1 ;; esac
        case $chunk in *[!0-9a-f]*) return 1 ;; esac
        value=$((0x$chunk))
        while [ ${#part} -lt 4 ]; do b32 $((value % 32)); part=$digit$part; value=$((value / 32)); done
        id=$id$part
    done
    spool="$common/loopx/spool"
    [ -d "$spool" ] || mkdir -p "$spool" || return 1
    tmp="$spool/.$id.$$.tmp"
    printf '{"v": 1, "id": "%s", "hook": "post-commit", "inputs": {"commit": "%s", "branch": "%s", "amended": %s}, "actor": "%s", "at": "%s", "state_ref": "refs/heads/loopx/state"}\n' \
        "$id" "$sha" "$branch" "$amended" "$actor" "$at" 2>/dev/null >"$tmp" || { rm -f "$tmp"; return 1; }  # loopx names it
    case $fsync in *ref*|*commit*|*add*|*all*) sync "$tmp" ;; esac
    mv -f "$tmp" "$spool/$id.json" || { rm -f "$tmp"; return 1; }
    case $fsync in *ref*|*commit*|*add*|*all*) sync "$spool" ;; esac
    pause_at queued
    start_drain "$mark"  # which removes the mark, off git's path
    echo "loopx: recording this commit's evidence in the background ($id.json; \`git loopx hooks queue\` shows what waits)" >&2
    return 0
}

# Whether every id the trailers name ($todo_ids, $goal_ids: comma-separated, as git prints
# them) is a todo of an open goal or an open goal, as <git common dir>/loopx/hooks.ids lists
# them for this tip (its content the blob $ids that hooks.state names). Then the record is
# certain to succeed and say nothing the commit must show: the shim queues it. Any other
# id, a prefix, `none`, or a file of other content: loopx decides, in the foreground.
named_open() {
    [ -n "$ids" ] && [ -f "$common/loopx/hooks.ids" ] || return 1
    [ "$(git hash-object "$common/loopx/hooks.ids" 2>/dev/null)" = "$ids" ] || return 1
    open=1 saved_ifs=$IFS
    IFS=' 	,'
    set -f
    for id in $todo_ids; do
        case $id in [Nn][Oo][Nn][Ee]|*[!A-Za-z0-9._-]*) open= ; break ;; esac
        grep -qxF "todo $id" "$common/loopx/hooks.ids" || { open= ; break; }
    done
    for id in $goal_ids; do
        [ -n "$open" ] || break
        case $id in *[!A-Za-z0-9._-]*) open= ; break ;; esac
        grep -qxF "goal $id" "$common/loopx/hooks.ids" || { open= ; break; }
    done
    set +f
    IFS=$saved_ifs
    [ -n "$open" ]
}

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
    # An agent's post-commit is marked at work from here (queue_commit names the commit in
    # the mark later): a hook killed before it decided anything leaves a mark naming who
    # committed, and the check that finds its commit does not credit the lease's holder.
    early=
    if [ -n "${LOOPX_ACTOR:-}" ] && [ -f "$common/loopx/commits-watch.json" ]; then
        [ -d "$common/loopx/hooks.running" ] || mkdir -p "$common/loopx/hooks.running" 2>/dev/null
        early="$common/loopx/hooks.running/$$"
        printf 'loopx-running v1\n%s\n\n' "$LOOPX_ACTOR" 2>/dev/null > "$early" ||
            { rm -f "$early"; early=; }
        trap '[ -z "$early" ] || rm -f "$early"' EXIT
        pause_at marked
    fi
    known= leases= head= queued= ids=
    read -r head 2>/dev/null < "$gitdir/HEAD"
    for entry in "$common"/loopx/spool/*.json; do
        [ -e "$entry" ] && queued=1  # work an earlier hook queued: a drain applies it
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
                "ids "*) ids=${line#ids } ;;
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
    trailers= named=
    if [ -n "$known" ]; then
        said=$(git log -1 --no-show-signature --format='%H%n%(trailers:key=Loopx-Todo,valueonly,separator=%x2C)%n%(trailers:key=Loopx-Goal,valueonly,separator=%x2C)%nend')
        { IFS= read -r sha; IFS= read -r todo_ids; IFS= read -r goal_ids; } <<EOF
$said
EOF
        case "$todo_ids$goal_ids" in *[![:space:]]*) trailers=1 ;; esac
        # A value over several lines (their last may even read "end"): loopx decides.
        if [ "$said" != "$sha
$todo_ids
$goal_ids
end" ]; then trailers=1
        elif [ -n "$trailers" ] && named_open; then named=1; fi
    fi
    if [ -n "$known" ] && { [ -z "$trailers" ] || [ -n "$named" ]; }; then
        held=
        if [ -n "$leases" ] || [ -n "$named" ]; then
            # One git process for every setting read here (the last value wins, as in git;
            # a key without a value, which this shim does not read, makes loopx decide).
            settings=$(git config --get-regexp \
                '^(user\.email|loopx\.hooks\.(strict|background)|core\.fsync)$' 2>/dev/null)
            email= strict=unset background=unset fsync=
            while read -r key value; do
                case $key in
                    user.email) email=$value ;;
                    loopx.hooks.strict) strict=${value:-empty} ;;
                    loopx.hooks.background) background=${value:-empty} ;;
                    core.fsync) fsync=$value ;;
                esac
            done <<EOF
$settings
EOF
            actor=${LOOPX_ACTOR:-}
            [ -n "$actor" ] || actor="human:$email"
            case $head in
                "ref: refs/heads/.invalid"|"") branch=$(git symbolic-ref -q HEAD) ;;
                "ref: "*) branch=${head#ref: } ;;
                *) branch= ;;  # detached: no lease covers it
            esac
            clock=$(date -u '+%s %N %Y-%m-%dT%H:%M:%SZ')
            now=${clock%% *}
            [ -z "$named" ] || held=1  # the trailers name open work: queue its record
            while read -r a b until; do
                [ -n "$a" ] && [ -n "$branch" ] && [ "$a" = "$actor" ] && [ "$b" = "$branch" ] &&
                    [ "$until" -gt "$now" ] && held=1
            done <<EOF
$leases
EOF
            case $now in ""|*[!0-9]*) held=1 ;; esac  # no clock: loopx decides
        fi
        # Nothing to record (said so, for the check that finds commits whose hook was
        # killed), or work on a held lease queued here for a detached drain.
        if [ -z "$held" ] || queue_commit; then
            [ -z "$held" ] && [ -n "$queued" ] && start_drain ""  # what a dead drainer left
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
