#!/usr/bin/env bash
# Installs the Debian packages Miniapp Host needs, only when they are missing.
# Called by `make run` and `make test`; a no-op on a machine that has them.
#
#   scripts/deps.sh                    WebKitGTK's preferred API: 4.1 (libsoup 3) where the
#                                      distribution has it, else 4.0 (libsoup 2)
#   scripts/deps.sh --all-webkit-apis  every WebKitGTK API the distribution has (`make test`
#                                      runs the engine's tests against each)
# WEBKIT_API=4.0 or 4.1 in the environment (the Makefile passes it on) asks for that API too.
# See docs/webkitgtk.md, "WebKitGTK 4.0 and 4.1".
set -euo pipefail

all_apis=false
for a in "$@"; do
	case $a in
	--all-webkit-apis) all_apis=true ;;
	-h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "deps: unknown argument $a (scripts/deps.sh --help)" >&2; exit 2 ;;
	esac
done
forced=${WEBKIT_API:-}
case $forced in
"" | 4.0 | 4.1) ;;
*) echo "deps: WEBKIT_API=$forced: use 4.0 or 4.1, or leave it empty" >&2; exit 2 ;;
esac

# Build: the host's engine (host/webkitgtk) links gtk+-3.0 and WebKitGTK through
# pkg-config (webkit2gtk-4.1, or webkit2gtk-4.0 with the build tag webkit2_40);
# the WebKitGTK development package is chosen below.
# Run without a display: Xvfb and xauth (xvfb-run).
# The playground's plain-browser-tab tests drive Debian's headless Chromium.
# The host's tests click with xdotool (XTest): real input, as a user gives it.
# `make run` without a display prints how to take a screenshot of its virtual display with
# ImageMagick's import (imagemagick; scripts/run.sh).
# WebKitWebDriver (webkit2gtk-driver) drives a WebKitGTK browser over WebDriver.
# The store's tests run a temporary PostgreSQL server from Debian's postgresql (authserver/store/pgserver).
# WebKitGTK runs its web processes in a sandbox with bubblewrap (/usr/bin/bwrap) and
# xdg-dbus-proxy (docs/webkitgtk.md, "The web process sandbox").
# The metrics test scrapes a running server with a real Prometheus server (Debian's prometheus;
# docs/deploy.md, "Metrics").
pkgs=(pkg-config gcc libgtk-3-dev xvfb xauth chromium xdotool imagemagick webkit2gtk-driver postgresql bubblewrap xdg-dbus-proxy prometheus)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

sudo=""
need_root() {
	[ "$(id -u)" -eq 0 ] && return 0
	if command -v sudo >/dev/null 2>&1; then sudo="sudo"; return 0; fi
	echo "deps: cannot $1: not root and no sudo." >&2
	echo "deps: run as root: apt-get update && apt-get install -y $2" >&2
	exit 1
}

log=/tmp/miniapp-host-apt.log
updated=false
apt_update() {
	$updated && return 0
	need_root "run apt-get update" "${pkgs[*]}"
	if ! $sudo apt-get update -qq >"$log" 2>&1; then
		echo "deps: apt-get update failed; its log is $log:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	updated=true
}

# The WebKitGTK APIs a distribution has, from /etc/os-release: known without apt's
# lists, so a machine that has what it needs never waits for apt. Debian 13 and
# Ubuntu 24.04 dropped 4.0 (libsoup 2); Debian 12 and Ubuntu 22.04 have both.
# Empty: not known here, ask apt.
distro_apis() {
	local ID="" VERSION_ID="" VERSION_CODENAME=""
	# shellcheck disable=SC1091
	[ -r /etc/os-release ] && . /etc/os-release
	case $ID in
	debian)
		case ${VERSION_ID%%.*} in
		12) echo "4.1 4.0" ;;
		1[3-9] | [2-9][0-9]) echo "4.1" ;;
		"") case $VERSION_CODENAME in bookworm) echo "4.1 4.0" ;; *) echo "4.1" ;; esac ;; # testing, sid
		esac
		;;
	ubuntu)
		case $VERSION_ID in
		22.* | 23.*) echo "4.1 4.0" ;;
		2[4-9].* | [3-9][0-9].*) echo "4.1" ;;
		esac
		;;
	esac
}

# webkit_available API: the distribution has libwebkit2gtk-API-dev.
webkit_available() {
	local pkg=libwebkit2gtk-$1-dev known
	installed "$pkg" && return 0
	known=$(distro_apis)
	if [ -n "$known" ]; then
		[[ " $known " == *" $1 "* ]]
		return
	fi
	# Not known: ask apt, with lists fetched first when it has none.
	compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null || apt_update
	local candidate
	candidate=$(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ {print $2}')
	[ -n "$candidate" ] && [ "$candidate" != "(none)" ]
}

webkit=()
if [ -n "$forced" ]; then
	if ! webkit_available "$forced"; then
		echo "deps: WEBKIT_API=$forced, but this distribution has no libwebkit2gtk-$forced-dev;" \
			"leave WEBKIT_API empty to use the API it has" >&2
		exit 1
	fi
	webkit+=("libwebkit2gtk-$forced-dev")
fi
if $all_apis; then
	for api in 4.1 4.0; do
		[ "$api" = "$forced" ] && continue
		if webkit_available "$api"; then webkit+=("libwebkit2gtk-$api-dev"); fi
	done
elif [ -z "$forced" ]; then
	for api in 4.1 4.0; do
		if webkit_available "$api"; then webkit+=("libwebkit2gtk-$api-dev"); break; fi
	done
fi
if [ ${#webkit[@]} -eq 0 ]; then
	echo "deps: this distribution has neither libwebkit2gtk-4.1-dev nor libwebkit2gtk-4.0-dev" >&2
	exit 1
fi
pkgs+=("${webkit[@]}")

missing=()
for p in "${pkgs[@]}"; do
	installed "$p" || missing+=("$p")
done
# The bridge's JavaScript is tested under Node.js 18 or later: any node on PATH will do.
# The reference server's FAPI proof (authserver/fapi-rp, docs/fapi.md) installs oauth4webapi with npm.
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing missing Debian packages: ${missing[*]}" >&2
need_root "install ${missing[*]}" "${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_update
if ! $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
	echo "deps: apt-get failed to install ${missing[*]}; its log is $log:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
echo "deps: installed ${missing[*]}" >&2
