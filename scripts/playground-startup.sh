#!/usr/bin/env bash
# Times a built `miniapp-host playground` from process start to the launcher loaded in its window
# (the line "window  the launcher is loaded", printed at WEBKIT_LOAD_FINISHED of the launcher page).
# Usage, without a display: xvfb-run -a -s "-screen 0 1280x900x24" scripts/playground-startup.sh bin/miniapp-host [RUNS]
set -euo pipefail
bin=${1:?usage: playground-startup.sh MINIAPP_HOST_BINARY [RUNS]}
runs=${2:-5}
export WEBKIT_DISABLE_COMPOSITING_MODE=1
for i in $(seq 1 "$runs"); do
	out=$(mktemp)
	t0=$(date +%s%N)
	"$bin" playground --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 >"$out" 2>/dev/null &
	pid=$!
	until grep -q "the launcher is loaded" "$out"; do
		if ! kill -0 "$pid" 2>/dev/null; then echo "run $i: the playground exited" >&2; exit 1; fi
		sleep 0.005
	done
	t1=$(date +%s%N)
	echo "run $i: $(((t1 - t0) / 1000000)) ms"
	kill -INT "$pid"
	wait "$pid" || true
	rm -f "$out"
done
