#!/usr/bin/env bash
# Starts a miniapp-host command; without a display it starts a virtual one (Xvfb) and says so.
set -euo pipefail
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	echo "run: no display found; starting under a virtual display (xvfb-run)." >&2
	echo "run: the window is not visible; use the automation channel it prints to drive it." >&2
	exec xvfb-run -a -s "-screen 0 1280x900x24" "$@"
fi
exec "$@"
