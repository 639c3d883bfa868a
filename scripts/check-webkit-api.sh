#!/usr/bin/env bash
# Checks that a binary links the WebKitGTK API it was built for and no other, with the
# libsoup of that API (docs/webkitgtk.md, "Checking a binary"):
#
#   scripts/check-webkit-api.sh BINARY 4.1|4.0
#
# 4.1 is what a plain `go build` links; 4.0 is the build tag webkit2_40's. A binary that
# loads both libsoups stops at start-up, so both are checked.
set -euo pipefail
bin=${1:?usage: scripts/check-webkit-api.sh BINARY 4.1|4.0}
api=${2:?usage: scripts/check-webkit-api.sh BINARY 4.1|4.0}
case $api in
4.1) want=libwebkit2gtk-4.1 soup=libsoup-3.0 other=libwebkit2gtk-4.0 other_soup=libsoup-2.4 ;;
4.0) want=libwebkit2gtk-4.0 soup=libsoup-2.4 other=libwebkit2gtk-4.1 other_soup=libsoup-3.0 ;;
*) echo "check-webkit-api: API $api: use 4.0 or 4.1" >&2; exit 2 ;;
esac
libs=$(ldd "$bin") || { echo "check-webkit-api: ldd $bin failed" >&2; exit 1; }
for lib in "$want" "$soup"; do
	if [[ $libs != *"$lib".so* ]]; then
		echo "check-webkit-api: $bin does not link $lib, but was built for WebKitGTK $api" >&2
		exit 1
	fi
done
for lib in "$other" "$other_soup"; do
	if [[ $libs == *"$lib".so* ]]; then
		echo "check-webkit-api: $bin links $lib beside WebKitGTK $api: a mixed build" >&2
		exit 1
	fi
done
echo "check-webkit-api: $bin links $want and $soup only"
