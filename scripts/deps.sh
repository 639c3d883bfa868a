#!/usr/bin/env bash
# Installs the Debian packages Miniapp Host needs, only when they are missing.
# Called by `make run` and `make test`; a no-op on a machine that has them.
set -euo pipefail

# Build: webview_go links gtk+-3.0 and webkit2gtk-4.0 through pkg-config.
# Run without a display: Xvfb and xauth (xvfb-run).
# The playground's plain-browser-tab tests drive Debian's headless Chromium.
# The host's tests click with xdotool (XTest): real input, as a user gives it.
pkgs=(pkg-config gcc libgtk-3-dev libwebkit2gtk-4.0-dev xvfb xauth chromium xdotool)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
# The bridge's JavaScript is tested under Node.js 18 or later: any node on PATH will do.
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
		echo "deps: cannot install ${missing[*]}: not root and no sudo." >&2
		echo "deps: run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/tmp/miniapp-host-apt.log 2>&1; then
	echo "deps: apt-get failed to install ${missing[*]}; its log is /tmp/miniapp-host-apt.log:" >&2
	tail -n 20 /tmp/miniapp-host-apt.log >&2
	exit 1
fi
echo "deps: installed ${missing[*]}" >&2
