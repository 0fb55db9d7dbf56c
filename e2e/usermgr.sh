#!/usr/bin/env bash
# usermgr.sh - give an unprivileged test user a real `systemd --user` manager,
# and run commands as that user inside it.  Used by the end-to-end suite
# (e2e/*.go); must be run as root.
#
#   usermgr.sh up USER
#       Create USER if missing (useradd -m -s /bin/bash), make /run/user/$UID
#       (0700, the user's; under a systemd PID 1 logind makes it), and make
#       sure a user manager for USER is running.  Idempotent: does nothing
#       if one is already running.  The manager outlives this call.
#   usermgr.sh run USER [-C DIR] [VAR=value ...] -- CMD [ARGS...]
#       Run CMD as USER, in the manager's mount namespace and in the user's
#       cgroup subtree, with a clean environment (HOME USER LOGNAME PATH
#       XDG_RUNTIME_DIR DBUS_SESSION_BUS_ADDRESS, then the VAR=value words),
#       in the user's home or DIR.  stdin/stdout/stderr pass through and the
#       exit status is CMD's (the process *becomes* CMD through a chain of
#       exec's, so signals sent to it reach CMD directly).  If the script
#       fails before CMD starts it exits 125 with a message on stderr.
#   usermgr.sh down USER
#       Stop the manager, kill whatever is left in the user's cgroup subtree,
#       remove the state and the cgroup directories / runtime dir that `up`
#       made.  Exit 0 if nothing was running.  Does not delete the user.
#   usermgr.sh status USER
#       Print the manager PID and exit 0 if it runs, exit 1 otherwise.
#
# Environment knobs:
#   USERMGR_TIMEOUT  seconds to wait for boot / shutdown (default 30)
#   USERMGR_MODE     force "systemd" (PID 1 is systemd: use user@.service) or
#                    "ns" (boot our own manager, see below); default: detected
#
# Two ways to get a manager:
#
# * PID 1 is systemd (workstation, most CI): ask the system manager for the
#   real user@$UID.service (linger + start) - nothing special.
#
# * PID 1 is not systemd (the project's dev/CI VMs, see DESIGN.md "The
#   machines here"): boot `systemd --user` by hand:
#     - in a private mount namespace with a tmpfs on /run/systemd holding an
#       empty /run/systemd/system directory: that directory is how systemd
#       tools decide "the system was booted with systemd" (sd_booted()), and a
#       user instance refuses to run / systemctl refuses to talk without it.
#       The tmpfs keeps that lie out of the host's view;
#     - in a cgroup user.slice/user-$UID.slice/user@$UID.service created in
#       each relevant hierarchy and delegated (chowned) to the user, exactly
#       the place the system manager would have given it, so the user
#       manager can create cgroups for its units and transient scopes (this
#       is what makes MemoryMax=/TasksMax= work);
#     - detached (setsid, stdin /dev/null, output to a log file), so that it
#       survives the caller and holds none of the caller's pipes open.
#   State lives in /run/contextd-e2e/USER/ (mode, pid, manager.log).
#
# Commands run through `run` are first moved into a leaf cgroup below
# user@$UID.service: systemd can only adopt a process into a transient scope
# (systemd-run --user --scope, what a login session's processes get) when the
# user manager may move it, i.e. when the process already sits inside the
# user's own, delegated cgroup subtree (cgroup v2: write access to the common
# ancestor of source and destination is required).

set -euo pipefail

readonly PROG=${0##*/}
readonly STATE_ROOT=/run/contextd-e2e
readonly CGROUP_MNT=/sys/fs/cgroup
readonly SYSTEMD_BIN=/lib/systemd/systemd
readonly USER_PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin
# Leaf cgroup (below user@$UID.service) that `run` puts its processes in.  No
# unit suffix on purpose, so it can never collide with a unit's cgroup.
readonly RUN_LEAF=e2e-run
TIMEOUT=${USERMGR_TIMEOUT:-30}
[[ $TIMEOUT =~ ^[0-9]+$ ]] || TIMEOUT=30
readonly TIMEOUT

# Exit status used by die(); `run` switches it to 125 so that failures of
# this script are distinguishable from the usual exit codes of CMD.
DIE_STATUS=1

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
	log "error: $*"
	exit "$DIE_STATUS"
}

usage() {
	cat >&2 <<EOF
usage: $PROG up USER
       $PROG run USER [-C DIR] [VAR=value ...] -- CMD [ARGS...]
       $PROG down USER
       $PROG status USER
EOF
	exit 2
}

# ---------------------------------------------------------------------------
# helpers

# load_user USER: set U_NAME U_UID U_GID U_HOME from the passwd database.
load_user() {
	local ent
	ent=$(getent passwd "$1") || return 1
	IFS=: read -r U_NAME _ U_UID U_GID _ U_HOME _ <<<"$ent"
}

# alive PID: the process exists and is not a zombie.  (PID 1 on these VMs is
# not an init that necessarily reaps orphans quickly, so a dead manager can
# linger as a zombie; `kill -0` would still succeed on it.)
alive() {
	local stat st
	[[ -n ${1:-} ]] || return 1
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${stat##*) }
	st=${st%% *}
	[[ $st != Z && $st != X ]]
}

# is_manager PID UID: PID is a live `systemd` process owned by UID, i.e. our
# user manager (guards against acting on a recycled PID).
is_manager() {
	alive "$1" || return 1
	[[ $(cat "/proc/$1/comm" 2>/dev/null) == systemd ]] || return 1
	[[ $(stat -c %u "/proc/$1" 2>/dev/null) == "$2" ]]
}

pid1_is_systemd() {
	[[ $(cat /proc/1/comm 2>/dev/null) == systemd && -d /run/systemd/system ]]
}

# get_mode STATE_DIR: "systemd" or "ns" (see header).  Recorded at `up` so
# that later calls agree with how the manager was started; USERMGR_MODE only
# decides for an `up` that has no state yet.
get_mode() {
	if [[ -r $1/mode ]]; then
		cat "$1/mode"
	elif [[ -n ${USERMGR_MODE:-} ]]; then
		[[ $USERMGR_MODE == systemd || $USERMGR_MODE == ns ]] ||
			die "USERMGR_MODE must be 'systemd' or 'ns', not '$USERMGR_MODE'"
		echo "$USERMGR_MODE"
	elif pid1_is_systemd; then
		echo systemd
	else
		echo ns
	fi
}

# cgroup_hierarchies: the cgroup mount points we place the user in, one per
# line.  On a pure cgroup v2 host that is /sys/fs/cgroup itself; on v1 /
# hybrid hosts it is those of systemd (name=systemd), unified (cgroup2,
# what systemd uses for tracking in hybrid mode), memory, pids, cpu and
# cpuacct that are actually mounted.  systemd treats cpu and cpuacct as one
# controller: where they are separate hierarchies, delegating cpu without
# cpuacct makes it accept CPUQuota= and silently not enforce it.  Other v1
# controllers are left alone: the user manager does not need them.
cgroup_hierarchies() {
	local h t
	if [[ $(stat -fc %T "$CGROUP_MNT" 2>/dev/null) == cgroup2fs ]]; then
		echo "$CGROUP_MNT"
		return
	fi
	for h in systemd unified memory pids cpu cpuacct; do
		t=$(stat -fc %T "$CGROUP_MNT/$h" 2>/dev/null) || continue
		[[ $t == cgroupfs || $t == cgroup2fs ]] && echo "$CGROUP_MNT/$h"
	done
	return 0
}

# user_cgroup HIERARCHY UID: path of user@UID.service in that hierarchy.
user_cgroup() {
	echo "$1/user.slice/user-$2.slice/user@$2.service"
}

# delegate DIR UID GID: hand a cgroup directory to the user the way systemd
# delegates one (Delegate=yes): the directory itself (so the user can create
# children) and the files that move processes / enable controllers.  The
# resource-limit files stay root's, so the user cannot raise its own limits.
delegate() {
	local f
	chown "$2:$3" "$1"
	for f in cgroup.procs tasks cgroup.threads cgroup.subtree_control; do
		[[ -e $1/$f ]] && chown "$2:$3" "$1/$f"
	done
	return 0
}

# cgroup_pids UID: PIDs of all processes anywhere below user@UID.service, in
# any hierarchy, one per line (deduplicated).
cgroup_pids() {
	local h base
	while read -r h; do
		base=$(user_cgroup "$h" "$1")
		[[ -d $base ]] || continue
		find "$base" -name cgroup.procs -exec cat {} + 2>/dev/null || true
	done < <(cgroup_hierarchies) | sort -un
}

# enter_user_cgroup PID UID GID: move PID into the leaf $RUN_LEAF below
# user@UID.service in every hierarchy where that exists.  Fails if it could
# not be done in at least one hierarchy.
enter_user_cgroup() {
	local h base leaf moved=0
	while read -r h; do
		base=$(user_cgroup "$h" "$2")
		[[ -d $base ]] || continue
		leaf=$base/$RUN_LEAF
		mkdir -p "$leaf"
		delegate "$leaf" "$2" "$3"
		echo "$1" >"$leaf/cgroup.procs" ||
			die "cannot move process $1 into $leaf"
		moved=1
	done < <(cgroup_hierarchies)
	((moved)) || die "no user@$2.service cgroup found under $CGROUP_MNT (is the manager up?)"
}

# manager_pid STATE_DIR UID: PID of the running user manager, or fail.
manager_pid() {
	local pid
	case $(get_mode "$1") in
	systemd)
		systemctl is-active --quiet "user@$2.service" 2>/dev/null || return 1
		pid=$(systemctl show -p MainPID --value "user@$2.service" 2>/dev/null) || return 1
		[[ -n $pid && $pid != 0 ]] || return 1
		echo "$pid"
		;;
	ns)
		pid=$(cat "$1/pid" 2>/dev/null) || return 1
		is_manager "$pid" "$2" || return 1
		echo "$pid"
		;;
	esac
}

# exec_as_user STATE_DIR MODE PID DIR [VAR=value ...] -- CMD [ARGS...]
# Turn the current (sub)shell into CMD running as U_NAME: move it into the
# user's cgroup, enter the manager's mount namespace (ns mode), drop to the
# user (setpriv: exec's in place, no lingering root parent, unlike runuser
# which forks and waits), then `env -i` builds the environment and changes
# into DIR as the user (so permission problems show up as they would for
# the real user).  Never returns.
exec_as_user() {
	local mode=$2 pid=$3 dir=$4
	shift 4
	local -a envs=()
	while [[ $1 != -- ]]; do
		envs+=("$1")
		shift
	done
	shift
	enter_user_cgroup "$BASHPID" "$U_UID" "$U_GID"
	local -a ns=()
	[[ $mode == ns ]] && ns=(nsenter -t "$pid" -m --)
	exec "${ns[@]}" setpriv --reuid="$U_UID" --regid="$U_GID" --init-groups -- \
		env -i -C "$dir" -- \
		HOME="$U_HOME" USER="$U_NAME" LOGNAME="$U_NAME" PATH="$USER_PATH" \
		XDG_RUNTIME_DIR="/run/user/$U_UID" \
		DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$U_UID/bus" \
		"${envs[@]}" "$@"
}

# take_lock USER: serialise up/down for one user (parallel test packages).
# fd 9 must not leak into the manager; boot_ns_manager closes it.
take_lock() {
	mkdir -p "$STATE_ROOT"
	chmod 0755 "$STATE_ROOT"
	exec 9>"$STATE_ROOT/$1.lock"
	flock -w $((TIMEOUT * 3)) 9 ||
		die "timed out waiting for $STATE_ROOT/$1.lock (another up/down for $1 stuck?)"
}

# ---------------------------------------------------------------------------
# up

# wait_ready STATE_DIR MODE: bounded wait until the manager answers
# `systemctl --user is-system-running` with running/degraded and the user
# bus socket exists.
wait_ready() {
	local state=$1 mode=$2 pid st="" deadline=$((SECONDS + TIMEOUT))
	while :; do
		if pid=$(manager_pid "$state" "$U_UID"); then
			st=$( (exec_as_user "$state" "$mode" "$pid" / -- \
				systemctl --user is-system-running) 2>/dev/null </dev/null || true)
			if [[ ($st == running || $st == degraded) && -S /run/user/$U_UID/bus ]]; then
				return 0
			fi
		elif [[ $mode == ns && -e $state/pid ]] && ! alive "$(cat "$state/pid" 2>/dev/null)"; then
			# The manager had started and is gone again: no point in waiting.
			# (A process that is alive but not yet the manager, still
			# setpriv or root's before its exec, is starting: wait on.)
			fail_boot "$state" "$mode" "systemd --user (pid $(cat "$state/pid")) exited during startup"
		fi
		if ((SECONDS >= deadline)); then
			fail_boot "$state" "$mode" "user manager for $U_NAME not ready after ${TIMEOUT}s" \
				"(state: '${st:-no answer}', bus socket /run/user/$U_UID/bus $([[ -S /run/user/$U_UID/bus ]] && echo present || echo missing))"
		fi
		sleep 0.2
	done
}

# fail_boot STATE_DIR MODE MESSAGE...: report a failed boot with the
# manager's log, tear down what was started (so the next `up` starts clean
# instead of finding a half-booted manager) and exit 1.
fail_boot() {
	local state=$1 mode=$2
	shift 2
	log "error: $*"
	if [[ $mode == ns ]]; then
		log "---- manager log ($state/manager.log, last 100 lines) ----"
		tail -n 100 "$state/manager.log" >&2 2>/dev/null || true
		log "---- end of manager log ----"
		local pid
		if pid=$(cat "$state/pid" 2>/dev/null) && is_manager "$pid" "$U_UID"; then
			log "---- systemctl --user status / list-jobs ----"
			(exec_as_user "$state" "$mode" "$pid" / -- sh -c \
				'systemctl --user status --no-pager; systemctl --user list-jobs --no-pager' \
				</dev/null >&2 2>&1) || true
		fi
		log "check: $SYSTEMD_BIN exists, dbus-user-session is installed, cgroups under $CGROUP_MNT are writable"
		# A holder that has not recorded its PID yet is still root and
		# maybe not in the user's cgroups: stop it directly (it is our own
		# child, started by boot_ns_manager).
		if [[ -n ${HOLDER_PID:-} && ! -s $state/pid ]] && alive "$HOLDER_PID"; then
			kill -KILL "$HOLDER_PID" 2>/dev/null || true
		fi
	else
		log "check: systemctl status user@$U_UID.service; journalctl -u user@$U_UID.service"
	fi
	teardown "$state" "$mode" || true
	exit 1
}

# boot_ns_manager STATE_DIR: start systemd --user ourselves (PID 1 is not
# systemd).
boot_ns_manager() {
	local state=$1 h base
	local -a cgdirs=()

	# Delegated cgroup user.slice/user-$UID.slice/user@$UID.service in each
	# hierarchy (see header).  Parents stay root's, like on a real system.
	while read -r h; do
		base=$(user_cgroup "$h" "$U_UID")
		mkdir -p "$base"
		delegate "$base" "$U_UID" "$U_GID"
		cgdirs+=("$base")
		if [[ $h == "$CGROUP_MNT" ]]; then
			# Pure cgroup v2: controllers must be enabled on the way down
			# for the user manager to get any (best effort: the host may
			# not allow all of them).
			local p=$h c
			for c in user.slice "user-$U_UID.slice"; do
				echo "+memory +pids +cpu" >"$p/cgroup.subtree_control" 2>/dev/null || true
				p=$p/$c
			done
			echo "+memory +pids +cpu" >"$p/cgroup.subtree_control" 2>/dev/null || true
		fi
	done < <(cgroup_hierarchies)
	((${#cgdirs[@]})) || die "no usable cgroup hierarchy under $CGROUP_MNT"

	rm -f "$state/pid"
	: >"$state/manager.log"

	# The holder.  It runs in a new session (setsid: no controlling
	# terminal, not in the caller's process group, so neither hang-ups nor
	# group kills of the caller reach it), with stdin from /dev/null and
	# output to the log (so it keeps none of the caller's pipes open, which
	# would make e.g. Go's cmd.Wait hang), in a new mount namespace whose
	# mounts do not propagate back to the host.  Inside, as root, it
	#   1. mounts a tmpfs on /run/systemd and creates /run/systemd/system
	#      (the "booted with systemd" marker; private to this namespace),
	#   2. moves itself into the delegated cgroups (a process's children
	#      inherit its cgroups, and systemd --user takes the cgroup it starts
	#      in as its own root),
	#   3. records its PID, which stays the manager's PID because every
	#      following step exec's in place, and
	#   4. drops to the user and exec's systemd --user with a clean
	#      environment.  There is no journald here, so services' stdout
	#      and stderr default to "inherit": their output lands in
	#      manager.log instead of being lost.  (The manager's own messages
	#      are not in there: without a journal a user manager logs to
	#      /dev/console, which it cannot open here.  manager.log does get
	#      the errors of the holder's own steps above.)
	# The namespace lives exactly as long as the manager and the processes
	# it or `run` started, so nothing needs unmounting afterwards.
	# shellcheck disable=SC2016 # $vars below are expanded by the inner bash
	local inner='
		set -eu
		state=$1 uid=$2 gid=$3 home=$4 user=$5 path=$6 systemd=$7
		shift 7
		mkdir -p /run/systemd
		mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run/systemd
		mkdir -p /run/systemd/system
		for d in "$@"; do echo $$ >"$d/cgroup.procs"; done
		echo $$ >"$state/pid.tmp"
		mv "$state/pid.tmp" "$state/pid"
		exec setpriv --reuid="$uid" --regid="$gid" --init-groups -- \
			env -i HOME="$home" USER="$user" LOGNAME="$user" SHELL=/bin/bash \
			PATH="$path" XDG_RUNTIME_DIR="/run/user/$uid" \
			DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" \
			"$systemd" --user \
			--default-standard-output=inherit --default-standard-error=inherit
	'
	(
		# Close every inherited descriptor above 2 (our lock on fd 9,
		# anything the caller leaked) so the manager holds none of them.
		for fd in /proc/"$BASHPID"/fd/*; do
			fd=${fd##*/}
			if [[ ! $fd =~ ^[0-9]+$ ]] || ((fd <= 2)); then
				continue
			fi
			{ eval "exec $fd>&-"; } 2>/dev/null || true
		done
		exec setsid unshare --mount --propagation private -- \
			bash -c "$inner" usermgr-holder "$state" "$U_UID" "$U_GID" "$U_HOME" \
			"$U_NAME" "$USER_PATH" "$SYSTEMD_BIN" "${cgdirs[@]}"
	) </dev/null >>"$state/manager.log" 2>&1 &
	HOLDER_PID=$!
	# Not a job of ours any more: no "Killed" report from bash if it dies.
	disown "$HOLDER_PID"

	# Wait for the holder to record the PID (bounded; its steps are quick).
	local deadline=$((SECONDS + TIMEOUT))
	until [[ -s $state/pid ]]; do
		if ! alive "$HOLDER_PID" && sleep 0.5 && [[ ! -s $state/pid ]]; then
			fail_boot "$state" ns "the namespace holder exited before starting systemd --user"
		fi
		((SECONDS < deadline)) ||
			fail_boot "$state" ns "the namespace holder did not start systemd --user within ${TIMEOUT}s"
		sleep 0.05
	done
}

cmd_up() {
	local user=$1 state mode
	state=$STATE_ROOT/$user
	take_lock "$user"

	if ! load_user "$user"; then
		useradd -m -s /bin/bash "$user" >&2 || die "useradd -m -s /bin/bash $user failed"
		load_user "$user" || die "user $user missing right after useradd"
	fi
	mode=$(get_mode "$state")

	if [[ -d $state ]] && manager_pid "$state" "$U_UID" >/dev/null; then
		return 0 # already up: nothing to do
	fi
	if [[ -d $state ]]; then
		# State without a live manager (crash, killed, VM reuse): clear the
		# leftovers first so the boot starts from a known place.
		log "stale state for $user found (manager not running); cleaning up"
		teardown "$state" "$mode" || die "cannot clean up stale state in $state"
	fi
	mkdir -p "$state"
	chmod 0700 "$state"
	echo "$mode" >"$state/mode"

	case $mode in
	systemd)
		# logind creates /run/user/$UID (a tmpfs) itself here.  Linger
		# makes logind start user@$UID.service and keep it without a
		# login session; the explicit start waits until it is up (it is
		# Type=notify).
		loginctl enable-linger "$user" >&2 || die "loginctl enable-linger $user failed"
		timeout "$TIMEOUT" systemctl start "user@$U_UID.service" >&2 ||
			fail_boot "$state" "$mode" "systemctl start user@$U_UID.service failed"
		;;
	ns)
		# The runtime dir normally made by logind (pam_systemd).
		install -d -m 0700 -o "$U_UID" -g "$U_GID" "/run/user/$U_UID"
		chown "$U_UID:$U_GID" "/run/user/$U_UID"
		chmod 0700 "/run/user/$U_UID"
		[[ -x $SYSTEMD_BIN ]] || die "$SYSTEMD_BIN not found (install systemd)"
		boot_ns_manager "$state"
		;;
	esac
	wait_ready "$state" "$mode"
}

# ---------------------------------------------------------------------------
# down

# kill_leftovers UID: SIGKILL everything still in the user's cgroup subtree
# (daemons started through `run`, units the manager failed to stop), until
# it is empty.  Only processes inside user@UID.service are touched.
kill_leftovers() {
	local pids deadline=$((SECONDS + (TIMEOUT > 10 ? TIMEOUT : 10)))
	while :; do
		# Rescan every round: a process may fork while being killed.
		pids=$(cgroup_pids "$1")
		[[ -z $pids ]] && return 0
		if ((SECONDS >= deadline)); then
			log "error: processes still in user@$1.service cgroups after SIGKILL: ${pids//$'\n'/ }"
			return 1
		fi
		# shellcheck disable=SC2206 # one PID per word
		GONE_PIDS+=($pids)
		# shellcheck disable=SC2086 # one PID per word
		kill -KILL $pids 2>/dev/null || true
		sleep 0.1
	done
}

# PID of the process started by boot_ns_manager (becomes the manager).
HOLDER_PID=

# PIDs of the user's processes that teardown stopped or killed.
GONE_PIDS=()

# wait_reaped UID: wait (bounded, 10 s) until the processes in GONE_PIDS
# have disappeared from /proc altogether.  Killed orphans are children of
# PID 1, and the init on these VMs reaps them with a delay of a second or
# so; until then they show up as zombies in `ps -u USER`.  They are harmless,
# so this only waits, it never fails.
wait_reaped() {
	local pid deadline=$((SECONDS + 10))
	for pid in "${GONE_PIDS[@]}"; do
		while [[ $(stat -c %u "/proc/$pid" 2>/dev/null) == "$1" ]]; do
			if ((SECONDS >= deadline)); then
				log "note: exited processes of uid $1 not yet reaped by their parent (zombies): ${GONE_PIDS[*]}"
				return 0
			fi
			sleep 0.05
		done
	done
	return 0
}

# remove_cgroups UID [leaf-only]: remove the cgroup directories `up`/`run`
# created (bottom-up; rmdir only ever removes empty cgroups, so this is
# safe).  With "leaf-only" (systemd mode, where user.slice & co. belong to
# the system manager) only the $RUN_LEAF directories.
remove_cgroups() {
	local h base
	while read -r h; do
		base=$(user_cgroup "$h" "$1")
		if [[ ${2:-} == leaf-only ]]; then
			rmdir "$base/$RUN_LEAF" 2>/dev/null || true
			continue
		fi
		if [[ -d $base ]]; then
			find "$base" -depth -type d -exec rmdir {} + 2>/dev/null || true
		fi
		rmdir "$h/user.slice/user-$1.slice" 2>/dev/null || true
		rmdir "$h/user.slice" 2>/dev/null || true
	done < <(cgroup_hierarchies)
	return 0
}

# teardown STATE_DIR MODE: stop the manager and clean up (used by down and
# by up on stale state / failed boot).  U_* must be loaded.
teardown() {
	local state=$1 mode=$2 pid deadline rc=0
	case $mode in
	systemd)
		loginctl disable-linger "$U_NAME" >&2 2>/dev/null || true
		timeout "$TIMEOUT" systemctl stop "user@$U_UID.service" >&2 || {
			log "error: systemctl stop user@$U_UID.service failed"
			rc=1
		}
		# Our leaf cgroups, if systemd left them.
		remove_cgroups "$U_UID" leaf-only
		;;
	ns)
		pid=$(cat "$state/pid" 2>/dev/null || true)
		if is_manager "$pid" "$U_UID"; then
			GONE_PIDS+=("$pid")
			# SIGTERM makes a user manager start exit.target, i.e. the
			# same clean shutdown as `systemctl --user exit`, and needs no
			# bus.  Fall back to SIGKILL after the timeout.
			kill -TERM "$pid" 2>/dev/null || true
			deadline=$((SECONDS + TIMEOUT))
			while alive "$pid"; do
				if ((SECONDS >= deadline)); then
					log "warning: systemd --user (pid $pid) still running ${TIMEOUT}s after SIGTERM; sending SIGKILL"
					kill -KILL "$pid" 2>/dev/null || true
					break
				fi
				sleep 0.1
			done
		fi
		kill_leftovers "$U_UID" || rc=1
		remove_cgroups "$U_UID"
		wait_reaped "$U_UID"
		# The runtime dir `up` made (logind would remove it at logout).
		# Only once nothing of the user's runs any more, and never if
		# something else mounted it.
		if ((rc == 0)) && [[ -d /run/user/$U_UID ]] && ! mountpoint -q "/run/user/$U_UID"; then
			rm -rf --one-file-system "/run/user/$U_UID"
		fi
		# The mount namespace and its /run/systemd tmpfs vanished with the
		# last process in it: nothing to unmount in the host namespace.
		;;
	esac
	((rc == 0)) && rm -rf "$state"
	return "$rc"
}

cmd_down() {
	local user=$1 state mode
	state=$STATE_ROOT/$user
	take_lock "$user"
	if ! load_user "$user"; then
		# No such user: nothing of it can be running.
		[[ -d $state ]] && rm -rf "$state"
		return 0
	fi
	mode=$(get_mode "$state")
	if [[ $mode == systemd && ! -d $state ]]; then
		return 0 # we did not start it; leave the system's manager alone
	fi
	teardown "$state" "$mode" || die "could not fully stop the user manager for $user (see above)"
}

# ---------------------------------------------------------------------------
# status / run

cmd_status() {
	local user=$1 state
	state=$STATE_ROOT/$user
	load_user "$user" || {
		log "no such user: $user"
		exit 1
	}
	manager_pid "$state" "$U_UID" || exit 1
}

cmd_run() {
	local user=$1 state mode pid dir="" dashdash=0
	local -a envs=()
	shift
	DIE_STATUS=125
	while (($#)); do
		case $1 in
		--)
			dashdash=1
			shift
			break
			;;
		-C)
			(($# >= 2)) || die "-C needs a directory"
			dir=$2
			shift 2
			;;
		*=*)
			[[ $1 =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "bad environment assignment '$1'"
			envs+=("$1")
			shift
			;;
		*) die "unexpected argument '$1' before '--' (usage: run USER [-C DIR] [VAR=value ...] -- CMD ...)" ;;
		esac
	done
	((dashdash)) || die "missing '--' before the command"
	(($#)) || die "no command given after '--'"

	state=$STATE_ROOT/$user
	load_user "$user" || die "no such user: $user (run '$PROG up $user' first)"
	mode=$(get_mode "$state")
	pid=$(manager_pid "$state" "$U_UID") ||
		die "no user manager running for $user (run '$PROG up $user' first)"
	exec_as_user "$state" "$mode" "$pid" "${dir:-$U_HOME}" "${envs[@]}" -- "$@"
}

# ---------------------------------------------------------------------------

main() {
	(($# >= 2)) || usage
	local cmd=$1 user=$2
	shift 2
	[[ $cmd == run ]] && DIE_STATUS=125
	[[ $user =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] || die "invalid user name '$user'"
	[[ $(id -u) == 0 ]] || die "must be run as root"
	case $cmd in
	up | down | status)
		(($# == 0)) || usage
		"cmd_$cmd" "$user"
		;;
	run) cmd_run "$user" "$@" ;;
	*) usage ;;
	esac
}

main "$@"
