#!/usr/bin/env bash
# Starts a miniapp-host command; without a display it starts a virtual one (Xvfb) and says
# which, with the command that takes a screenshot of it (ImageMagick's import, scripts/deps.sh).
set -euo pipefail
if [ "${1:-}" = "--in-xvfb" ]; then
	shift
	echo "run: virtual display DISPLAY=$DISPLAY XAUTHORITY=$XAUTHORITY" >&2
	echo "run: screenshot of the whole window: DISPLAY=$DISPLAY XAUTHORITY=$XAUTHORITY import -window root shot.png" >&2
	exec "$@"
fi
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
	echo "run: no display found; starting under a virtual display (xvfb-run)." >&2
	echo "run: the window is not visible: take screenshots with the command below, or drive it through the automation channel it prints (its screenshot command with \"area\":\"window\" too)." >&2
	exec xvfb-run -a -s "-screen 0 1280x900x24" "$0" --in-xvfb "$@"
fi
exec "$@"
