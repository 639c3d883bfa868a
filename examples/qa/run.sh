#!/usr/bin/env bash
# Runs one example QA suite (docs/webdriver.md, "Example suites") against a
# fresh playground and `miniapp-host webdriver`, the WebDriver front of
# WebKitWebDriver:
#
#   xvfb-run -a examples/qa/run.sh go     # examples/qa/go, tebeka/selenium
#   xvfb-run -a examples/qa/run.sh npm    # examples/qa/npm, selenium-webdriver under node:test
#   xvfb-run -a examples/qa/run.sh wdio   # examples/qa/wdio, WebdriverIO under node:test, a hand-written Miniapp
#
# Arguments after the suite's name go to `go test` (-run TestX) or to
# `node --test` (--test-name-pattern=X).
#
# The wdio suite runs against `miniapp-host dev URL` instead of the
# playground: the runner starts its Miniapp (examples/qa/wdio/miniapp, a
# node http server) on a free port, then `dev` for that origin (with the
# random operator key the front's development controls then use, checked
# against dev's ready file); and it runs the suite QA_RUNS times in a
# row against that one dev run (default 2 for wdio, 1 for the others): a
# suite that leaves state behind fails its second run.
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
go | npm | wdio) shift ;;
*) echo "usage: examples/qa/run.sh go|npm|wdio [ARGS of go test or node --test]   (under a display: xvfb-run -a examples/qa/run.sh go)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
start_timeout=${QA_START_TIMEOUT:-120}
suite_timeout=${QA_SUITE_TIMEOUT:-600}
runs=${QA_RUNS:-1}
[ "$suite" = wdio ] && runs=${QA_RUNS:-2}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "qa: QA_RUNS=$runs is not a count of runs (1, 2, ...)" >&2; exit 2; }
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
if [ "$suite" = npm ] || [ "$suite" = wdio ]; then
	command -v npm >/dev/null || die "npm is not installed: the $suite suite needs Node.js 20 or later and npm"
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

start_playground() {
	# The playground, every part on a free port; its stdout is read line by
	# line until the last address it prints, then drained into a log.
	mkfifo "$work/playground.fifo"
	MINIAPP_HOST_SECRET=$secret MINIAPP_HOST_OPERATOR_KEY=$opkey "$bin" playground --no-window --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 \
		>"$work/playground.fifo" 2>"$work/playground.err" &
	pids+=($!)
	exec 3<"$work/playground.fifo"
	local deadline=$((SECONDS + start_timeout)) left f
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
}

# wdio: the QA Miniapp first (dev reads its manifest), on a free port;
# it reads the service's addresses from a file written once dev printed
# them. Then `dev` for its origin, every part on a free port, with the
# same secret; its stdout is read up to the launch line (the ready file is
# written before it), then drained into a log.
start_dev() {
	mkfifo "$work/miniapp.fifo"
	node "$root/examples/qa/wdio/miniapp/server.js" --config "$work/miniapp-config.json" \
		>"$work/miniapp.fifo" 2>"$work/miniapp.err" &
	pids+=($!)
	exec 3<"$work/miniapp.fifo"
	IFS= read -r -t "$start_timeout" line <&3 || die "the QA Miniapp printed no address within ${start_timeout}s: $(cat "$work/miniapp.err")"
	case $line in
	"miniapp http://127.0.0.1:"*) miniapp=${line#miniapp } ;;
	*) die "the QA Miniapp printed $line, not its address" ;;
	esac
	cat <&3 >>"$work/miniapp.log" &
	pids+=($!)
	exec 3<&-

	mkfifo "$work/dev.fifo"
	MINIAPP_HOST_SECRET=$secret MINIAPP_HOST_OPERATOR_KEY=$opkey "$bin" dev --no-window --addr 127.0.0.1:0 --launcher-addr 127.0.0.1:0 \
		--ready-file "$work/ready.json" "$miniapp" >"$work/dev.fifo" 2>"$work/dev.err" &
	pids+=($!)
	exec 3<"$work/dev.fifo"
	local deadline=$((SECONDS + start_timeout)) left f
	dashboard='' service='' base_url='' signing=''
	while :; do
		left=$((deadline - SECONDS))
		[ "$left" -gt 0 ] || die "miniapp-host dev printed no launch within ${start_timeout}s: $(cat "$work/dev.err")"
		IFS= read -r -t "$left" line <&3 || die "miniapp-host dev stopped before its launch: $(cat "$work/dev.err")"
		# The host credential line carries the secret: never kept.
		[[ $line == *"$secret"* ]] || echo "$line" >>"$work/dev.log"
		read -r -a f <<<"$line"
		case $line in
		"dashboard_url "*) dashboard=${f[1]} ;;
		"issuer "*) service=${f[1]} ;;
		"base_url "*) base_url=${f[1]} ;;
		"signing_base_url "*) signing=${f[1]} ;;
		"launch "*) break ;;
		esac
	done
	cat <&3 | withhold >>"$work/dev.log" &
	pids+=($!)
	exec 3<&-
	for v in dashboard service base_url signing; do
		[ -n "${!v}" ] || die "miniapp-host dev's output has no $v:"$'\n'"$(cat "$work/dev.log")"
	done
	[ -s "$work/ready.json" ] || die "miniapp-host dev wrote no ready file before its launch line: $(cat "$work/dev.log")"
	# The ready file (docs/your-miniapp.md, "Scripts and CI"): the id, the
	# launch's outcome and the operator key dev runs with (the one given),
	# read with node (the suite's own runtime).
	local ready miniapp_key
	ready=$(node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log([r.id, r.outcome, r.operator_key].join(" "))' "$work/ready.json")
	read -r miniapp_id outcome miniapp_key <<<"$ready"
	[ "$outcome" = accepted ] || die "miniapp-host dev did not accept the QA Miniapp ($outcome):"$'\n'"$(cat "$work/dev.log")"
	[ "$miniapp_key" = "$opkey" ] || die "the ready file's operator_key is not the one dev was given (MINIAPP_HOST_OPERATOR_KEY)"
	printf '{"issuer": "%s", "base_url": "%s", "signing_base_url": "%s"}\n' "$service" "$base_url" "$signing" >"$work/miniapp-config.json.new"
	mv "$work/miniapp-config.json.new" "$work/miniapp-config.json"
}

if [ "$suite" = wdio ]; then
	start_dev
else
	start_playground
fi

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

export QA_WEBDRIVER_URL=$driver_url QA_DASHBOARD_URL=$dashboard QA_SERVICE_URL=$service
if [ "$suite" = wdio ]; then
	export QA_MINIAPP_ORIGIN=$miniapp QA_MINIAPP_ID=$miniapp_id QA_CLIENT_ID=$miniapp_id QA_SUBJECT=sub_ana
	say "dev run of the QA Miniapp $miniapp ($miniapp_id): dashboard $dashboard, service $service; miniapp-host webdriver $driver_url; host $bin"
else
	export QA_PUBLIC_ORIGIN=$public QA_CONFIDENTIAL_ORIGIN=$confidential \
		QA_BROKEN_ORIGIN=$broken QA_BROKEN_ID=broken-unregistered QA_BROKEN_STAGE=$broken_stage QA_BROKEN_CODE=$broken_code
	say "playground dashboard $dashboard, service $service; miniapp-host webdriver $driver_url; host $bin"
fi

# The suite runs in the background and is waited for, so that a signal to
# this script runs the trap at once, which stops the suite first. QA_RUNS
# runs it that many times in a row against the same servers.
case $suite in
npm | wdio)
	cd "$root/examples/qa/$suite"
	# wdio: --ignore-scripts, so that no package's install script runs
	# (WebdriverIO's driver packages would download browser drivers).
	if [ "$suite" = wdio ]; then
		timeout --kill-after=10 "$start_timeout" npm ci --no-audit --no-fund --ignore-scripts
	else
		timeout --kill-after=10 "$start_timeout" npm ci --no-audit --no-fund
	fi
	;;
go) cd "$root" ;;
esac
rc=0
for ((run = 1; run <= runs; run++)); do
	[ "$runs" -eq 1 ] || say "run $run of $runs"
	case $suite in
	go) timeout --kill-after=10 "$suite_timeout" go test -tags qa -count=1 -v ./examples/qa/go/ "$@" & ;;
	npm | wdio) timeout --kill-after=10 "$suite_timeout" npm test -- "$@" & ;;
	esac
	suite_pid=$!
	pids+=("$suite_pid")
	wait "$suite_pid" || rc=$?
	unset 'pids[-1]' # reaped: never signal its PID again
	[ "$rc" -eq 0 ] || { [ "$runs" -eq 1 ] || say "run $run of $runs failed"; break; }
done
exit "$rc"
