#!/usr/bin/env bash
# Soak run of the playground (package soak, cmd/soak): uses it through its automation
# channel for SOAK_MINUTES (default 30) and reports freezes, the exit after SIGTERM,
# RSS and the load average. Exits non-zero on a freeze or an unclean exit.
#
#   scripts/soak.sh [path/to/miniapp-host] [soak flags, e.g. -pick-ports -freeze-bt FILE]
#
# Without a path it builds bin/miniapp-host; file flags are read from the repository
# root (absolute paths are safest). Without a display it runs itself under
# a virtual one (xvfb-run).
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	echo "soak: no display found; running under a virtual display (xvfb-run)." >&2
	# xvfb-run exits 5 when it fails to remove its own temporary folder,
	# hiding the soak's status: the inner run writes its status to a file.
	status_file="$(mktemp -t soak-status.XXXXXX)"
	trap 'rm -f "$status_file"' EXIT
	rc=0
	SOAK_STATUS_FILE="$status_file" xvfb-run -a -s "-screen 0 1280x900x24" "$self" "$@" || rc=$?
	if [ -s "$status_file" ]; then
		inner="$(cat "$status_file")"
		[ "$inner" != "$rc" ] && echo "soak: xvfb-run exited $rc; the soak's own status is $inner" >&2
		rc="$inner"
	fi
	exit "$rc"
fi

bin=""
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	bin="$(realpath "$1")"
	shift
fi
cd "$(dirname "$self")/.."
GO="${GO:-go}"
if [ -z "$bin" ]; then
	bin="bin/miniapp-host"
	"$GO" build -o "$bin" ./cmd/miniapp-host
fi
"$GO" build -o bin/soak ./cmd/soak

export SOAK_MINUTES="${SOAK_MINUTES:-30}"
export WEBKIT_DISABLE_COMPOSITING_MODE=1
rc=0
bin/soak -binary "$bin" "$@" || rc=$?
[ -n "${SOAK_STATUS_FILE:-}" ] && echo "$rc" >"$SOAK_STATUS_FILE"
exit "$rc"
