#!/usr/bin/env bash
# From a fresh Debian/Ubuntu machine to a working tool call:
#   1. install the Debian packages that are missing,
#   2. build contextd and contextd-proxy,
#   3. install them for a user with the systemd user units, enable contextd.socket,
#   4. install the tools into a demo project and call safe_bash through its symlink.
# As a normal user, step 3 and 4 use your own user manager. As root (contextd never
# runs as root), or where no user manager is running (PID 1 not systemd, as on CI
# VMs), they run as the test user `contextd-demo` under a user manager that
# e2e/usermgr.sh boots, exactly as the e2e suite does.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh
make build

demo_cmds='
set -e
proj=$(mktemp -d "$HOME/contextd-demo.XXXXXX")
mkdir "$proj/.git"
cd "$proj"
contextd-proxy install --agent claude >/dev/null
echo "--- demo project: $proj"
echo "\$ .claude/tools/safe_bash/safe_bash '\''echo hello from \$(id -un); uname -sr'\''"
.claude/tools/safe_bash/safe_bash '\''echo hello from $(id -un); uname -sr'\''
echo "\$ .claude/tools/safe_write/safe_write notes.txt --content ..."
.claude/tools/safe_write/safe_write notes.txt --content "written through contextd"
echo "\$ .claude/tools/safe_read/safe_read notes.txt"
.claude/tools/safe_read/safe_read notes.txt
echo "\$ .claude/tools/safe_read/safe_read ~/.bashrc    # outside the workspace: refused"
.claude/tools/safe_read/safe_read ~/.bashrc || echo "(exit $?, as expected)"
'

if [ "$(id -u)" != 0 ]; then
	state=$(systemctl --user is-system-running 2>/dev/null || true)
	case $state in
	running | degraded | starting)
		make install
		PATH="${PREFIX:-$HOME/.local}/bin:$PATH" bash -c "$demo_cmds"
		exit 0
		;;
	esac
	echo "quickstart: no systemd user manager answers for you (systemctl --user: ${state:-no answer})." >&2
	echo "  On a desktop or over SSH it runs by itself (loginctl enable-linger $USER helps on servers);" >&2
	echo "  elsewhere run this as root: it then uses a test user with a user manager of its own." >&2
	exit 69
fi

user=contextd-demo
echo "quickstart: running as root: using test user $user with its own user manager"
bash e2e/usermgr.sh up "$user"
home=$(getent passwd "$user" | cut -d: -f6)
# Hand the user a copy of the binaries it can read, then install as that user.
stage=$(mktemp -d /tmp/contextd-quickstart.XXXXXX)
chmod 0755 "$stage"
cp bin/contextd bin/contextd-proxy bin/contextd-proxy-mcp "$stage/"
trap 'rm -rf "$stage"' EXIT
bash e2e/usermgr.sh run "$user" -- bash -c "
set -e
install -d ~/.local/bin
install -m 0755 $stage/contextd $stage/contextd-proxy $stage/contextd-proxy-mcp ~/.local/bin/
~/.local/bin/contextd install-units --enable
"
bash e2e/usermgr.sh run "$user" PATH="$home/.local/bin:/usr/local/bin:/usr/bin:/bin" -- bash -c "$demo_cmds"
echo "--- the user manager of $user keeps running; stop it with: bash e2e/usermgr.sh down $user"
