#!/usr/bin/env bash
# Runs one example QA suite (docs/webdriver.md, "Example suites") against a
# fresh playground and `miniapp-host webdriver`, the WebDriver front of
# WebKitWebDriver:
#
#   xvfb-run -a examples/qa/run.sh go     # examples/qa/go, tebeka/selenium
#   xvfb-run -a examples/qa/run.sh npm    # examples/qa/npm, selenium-webdriver under node:test
#
# Arguments after the suite's name go to `go test` (-run TestX) or to
# `node --test` (--test-name-pattern=X).
#
# It builds the WebKitGTK 4.1 host (or takes BIN=path/to/miniapp-host, which
# must link WebKitGTK 4.1), starts `miniapp-host playground --no-window` on
# free loopback ports with a random MINIAPP_HOST_SECRET (new at each run),
# starts `miniapp-host webdriver` on a free loopback port with that secret
# (it hands it to each host on a pipe) for the playground's dashboard and
# service, hands the suite what it needs in
# QA_* variables, and always stops what it started (by PID) and removes its
# temporary folder.
#
# Every wait is bounded: QA_START_TIMEOUT (seconds, default 120) for the
# playground and the front to come up, QA_SUITE_TIMEOUT (default 600) for
# the suite itself.
set -euo pipefail

say() { echo "qa: $*" >&2; }
die() { say "$*"; exit 1; }

suite=${1:-}
case $suite in
go | npm) shift ;;
*) echo "usage: examples/qa/run.sh go|npm [ARGS of go test or node --test]   (under a display: xvfb-run -a examples/qa/run.sh go)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
start_timeout=${QA_START_TIMEOUT:-120}
suite_timeout=${QA_SUITE_TIMEOUT:-600}
# The host's secret, shared by the playground's server and the hosts: random,
# new at each run, never written to a file.
secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[ ${#secret} -eq 64 ] || { echo "qa: could not read a random secret from /dev/urandom" >&2; exit 1; }
# The operator key of the playground's server, likewise: the front runs the
# service's development controls with it (docs/webdriver.md, "The service's
# development controls").
opkey=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
[ ${#opkey} -eq 64 ] || { echo "qa: could not read a random operator key from /dev/urandom" >&2; exit 1; }
# Where the logs go when the suite fails.
logs=${QA_LOGS:-$root/artifacts/qa/$suite}

[ -n "${DISPLAY:-}" ] || die "no DISPLAY: each WebDriver session opens the host's window; run under a display (xvfb-run -a examples/qa/run.sh $suite)"
command -v WebKitWebDriver >/dev/null || die "WebKitWebDriver is not installed (Debian package webkit2gtk-driver; scripts/deps.sh installs it)"
if [ "$suite" = npm ]; then
	command -v npm >/dev/null || die "npm is not installed: the npm suite needs Node.js 20 or later and npm"
fi

# withhold copies its input with the secret replaced (it is hex: no
# character of it is special to sed).
withhold() { sed -e "s/$secret/withheld/g" -e "s/$opkey/withheld/g"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/miniapp-qa.XXXXXX")
pids=()
cleanup() {
	local rc=$? pid
	# Last started, first stopped: the front ends the hosts it started.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		pid=${pids[i]}
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ] && [ -s "$work/driver.log" ]; then
		say "the front's output (and that of the hosts and drivers it started), last 40 lines:"
		tail -n 40 "$work/driver.log" | withhold >&2
		# Nothing prints the secret (docs/security.md, "Secrets"); should
		# anything ever, the artifacts a CI keeps still do not hold it.
		mkdir -p "$logs" && for f in "$work"/*.log "$work"/*.err; do
			[ -f "$f" ] && withhold <"$f" >"$logs/$(basename "$f")"
		done && say "the playground's and the front's whole output are in $logs"
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The host: WebKitWebDriver is built on WebKitGTK 4.1 and drives no input
# into a 4.0 host (docs/webdriver.md, "Limits"), so the suites need 4.1.
bin=${BIN:-}
if [ -z "$bin" ]; then
	"${PKG_CONFIG:-pkg-config}" --exists webkit2gtk-4.1 ||
		die "WebKitGTK 4.1 is not installed (Debian package libwebkit2gtk-4.1-dev): WebKitWebDriver drives no input into a 4.0 host (docs/webdriver.md, \"Limits\"), so these suites need the 4.1 build"
	bin=$work/miniapp-host
	say "building the WebKitGTK 4.1 host"
	# A plain build links 4.1; the 4.0 tag, if make passed it on in GOFLAGS, is left out.
	goflags=${GOFLAGS:-}
	(cd "$root" && GOFLAGS="${goflags//-tags=webkit2_40/}" go build -o "$bin" ./cmd/miniapp-host)
fi
[ -x "$bin" ] || die "BIN=$bin is not an executable"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
if [[ $(ldd "$bin") != *libwebkit2gtk-4.1* ]]; then
	die "$bin does not link WebKitGTK 4.1 (ldd finds no libwebkit2gtk-4.1): WebKitWebDriver drives no input into a 4.0 host; build it without the tag webkit2_40: go build ./cmd/miniapp-host"
fi

# The playground, every part on a free port; its stdout is read line by
# line until the last address it prints, then drained into a log.
mkfifo "$work/playground.fifo"
MINIAPP_HOST_SECRET=$secret MINIAPP_HOST_OPERATOR_KEY=$opkey "$bin" playground --no-window --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 \
	>"$work/playground.fifo" 2>"$work/playground.err" &
pids+=($!)
exec 3<"$work/playground.fifo"
deadline=$((SECONDS + start_timeout))
dashboard='' service='' public='' confidential='' broken='' broken_stage='' broken_code=''
while :; do
	left=$((deadline - SECONDS))
	[ "$left" -gt 0 ] || die "the playground printed no addresses within ${start_timeout}s: $(cat "$work/playground.err")"
	IFS= read -r -t "$left" line <&3 || die "the playground stopped before printing its addresses: $(cat "$work/playground.err")"
	echo "$line" >>"$work/playground.log"
	read -r -a f <<<"$line"
	case $line in
	"dashboard_url "*) dashboard=${f[1]} ;;
	"issuer "*) service=${f[1]} ;;
	"demo Miniapp "*"--id demo-public "*) public=${f[2]} ;;
	"demo Miniapp "*"--id demo-confidential "*) confidential=${f[2]} ;;
	# "broken Miniapp  ORIGIN  --id broken-unregistered  (broken, rejected at STAGE with CODE)"
	"broken Miniapp "*"--id broken-unregistered "*)
		broken=${f[2]} broken_stage=${f[8]} broken_code=${f[10]%)} ;;
	"subjects "*) break ;;
	esac
done
cat <&3 >>"$work/playground.log" &
pids+=($!)
exec 3<&-
for v in dashboard service public confidential broken broken_stage broken_code; do
	[ -n "${!v}" ] || die "the playground's output has no $v:"$'\n'"$(cat "$work/playground.log")"
done

# The WebDriver front on a free loopback port (docs/webdriver.md): it prints
# its URL once it listens. The secret reaches it in its environment, which it
# removes at once; each host gets it on a pipe. The front is started for the
# playground's dashboard and service, the only ones the secret goes to
# (docs/webdriver.md, "One service").
mkfifo "$work/front.fifo"
MINIAPP_HOST_SECRET=$secret MINIAPP_HOST_OPERATOR_KEY=$opkey "$bin" webdriver --port 0 --dashboard "$dashboard" --service "$service" \
	>"$work/front.fifo" 2>>"$work/driver.log" &
pids+=($!)
exec 3<"$work/front.fifo"
driver_url=''
IFS= read -r -t "$start_timeout" line <&3 || die "miniapp-host webdriver printed no URL within ${start_timeout}s: $(cat "$work/driver.log")"
case $line in
"webdriver http://127.0.0.1:"*) driver_url=${line#webdriver } ;;
*) die "miniapp-host webdriver printed $line, not its URL" ;;
esac
cat <&3 >/dev/null &
pids+=($!)
exec 3<&-

export QA_WEBDRIVER_URL=$driver_url QA_DASHBOARD_URL=$dashboard QA_SERVICE_URL=$service \
	QA_PUBLIC_ORIGIN=$public QA_CONFIDENTIAL_ORIGIN=$confidential \
	QA_BROKEN_ORIGIN=$broken QA_BROKEN_ID=broken-unregistered QA_BROKEN_STAGE=$broken_stage QA_BROKEN_CODE=$broken_code
say "playground dashboard $dashboard, service $service; miniapp-host webdriver $driver_url; host $bin"

# The suite runs in the background and is waited for, so that a signal to
# this script runs the trap at once, which stops the suite first.
case $suite in
go)
	cd "$root"
	timeout --kill-after=10 "$suite_timeout" go test -tags qa -count=1 -v ./examples/qa/go/ "$@" &
	;;
npm)
	cd "$root/examples/qa/npm"
	timeout --kill-after=10 "$start_timeout" npm ci --no-audit --no-fund
	timeout --kill-after=10 "$suite_timeout" npm test -- "$@" &
	;;
esac
suite_pid=$!
pids+=("$suite_pid")
rc=0
wait "$suite_pid" || rc=$?
unset 'pids[-1]' # reaped: never signal its PID again
exit "$rc"
