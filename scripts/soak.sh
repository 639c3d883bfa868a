#!/usr/bin/env bash
# Soak run of the playground (package soak, cmd/soak): uses it through its automation
# channel for SOAK_MINUTES (default 30) and reports freezes, the exit after SIGTERM,
# RSS and the load average. Exits non-zero on a freeze or an unclean exit.
#
#   scripts/soak.sh [path/to/miniapp-host] [soak flags, e.g. -pick-ports -freeze-bt FILE]
#
# Without a path it builds bin/miniapp-host. Without a display it runs itself under
# a virtual one (xvfb-run).
set -euo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"

if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	echo "soak: no display found; running under a virtual display (xvfb-run)." >&2
	exec xvfb-run -a -s "-screen 0 1280x900x24" "$self" "$@"
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
exec bin/soak -binary "$bin" "$@"
