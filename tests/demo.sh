#!/usr/bin/env bash
# make demo: the owner flow on a throwaway RUKH_HOME, with the binaries in
# ./bin. Each step prints the command it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUKH_HOME="$PWD/.demo"
rm -rf "$RUKH_HOME" && mkdir -p "$RUKH_HOME"
PATH="$PWD/bin:$PATH"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "RUKH_HOME=$RUKH_HOME"
step rukh version

# An extension author checks releases before publishing them.
for ext in examples/deploy examples/greet examples/legacy examples/hello-go examples/ask; do
	step rukh ext validate "$ext"
done
printf '\n\033[1m$ rukh ext validate tests/testdata/broken-release\033[0m   (refused, exit status 1)\n'
if rukh ext validate tests/testdata/broken-release; then
	echo "the broken release was accepted" >&2
	exit 1
fi

# The publisher signs and packs; the owner trusts the publisher and installs.
step rukh trust keygen "$RUKH_HOME/acme.key"
step rukh trust add acme "$RUKH_HOME/acme.key.pub"
for ext in deploy greet legacy hello-go ask; do
	step rukh ext pack "examples/$ext" --key "$RUKH_HOME/acme.key" -o "$RUKH_HOME/$ext.tar.gz"
	step rukh ext install "$RUKH_HOME/$ext.tar.gz"
done
step rukh ext list
step rukh trust list

# Releases from where a team keeps them: an OCI registry (here Debian's
# docker-registry on 127.0.0.1, plain HTTP on loopback) when it is installed.
if command -v docker-registry >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$RUKH_HOME/registry"
	printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
		"$RUKH_HOME/registry/data" "$port" >"$RUKH_HOME/registry/config.yml"
	docker-registry serve "$RUKH_HOME/registry/config.yml" >"$RUKH_HOME/registry/log" 2>&1 &
	registry=$!
	trap 'kill $registry 2>/dev/null || true' EXIT
	ready() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "http://127.0.0.1:$port/v2/" 2>/dev/null; }
	for _ in $(seq 100); do ready && break; sleep 0.1; done
	ready || { echo "docker-registry did not answer on 127.0.0.1:$port within 10 s:" >&2; cat "$RUKH_HOME/registry/log" >&2; exit 1; }
	export DOCKER_CONFIG="$RUKH_HOME/docker" # no credentials: the registry wants none
	step rukh ext publish "$RUKH_HOME/greet.tar.gz" "oci://127.0.0.1:$port/acme/greet:0.1.0"
	step rukh ext remove acme.greet
	step rukh ext install "oci://127.0.0.1:$port/acme/greet:0.1.0"
	step rukh ext list
	step rukh ext outdated
	kill "$registry" && wait "$registry" 2>/dev/null || true
	trap - EXIT
else
	echo "(docker-registry is not installed: skipping publishing to and installing from a registry)"
fi

# A person runs the commands: typed flags, text or JSON results, exit codes.
step rukh --help
step rukh greet Ana -n 2
step rukh deploy status --env stage --limit 1
step rukh ds -e prod --json
step rukh hello Rukh --count 2
step rukh legacy run --raw 'argv, untouched'
# A command that asks at the terminal, as the shell's own child would; here
# `script` gives it a terminal and types the answer.
ask() {
	printf '\n\033[1m$ rukh ask\033[0m   (at a terminal; answering "%s")\n' "$1"
	printf '%s\n' "$1" | script -qec "rukh ask" /dev/null
}
ask Ada
printf '\n\033[1m$ rukh deploy status --env stage --limit 1.5\033[0m   (refused, exit status 2)\n'
if rukh deploy status --env stage --limit 1.5; then
	echo "1.5 was accepted as an integer" >&2
	exit 1
fi
step rukh invocations list

# Nothing is exposed to agents until the owner says so.
step rukh tools
step rukh profile apply -f examples/profile.json
step rukh tools
step rukh profile history

# An agent sees the same commands as MCP tools: `rukh mcp` on stdio, driven
# by the official Go SDK client (tests/mcpdemo): list, then call.
go build -o "$RUKH_HOME/mcpdemo" ./tests/mcpdemo
step "$RUKH_HOME/mcpdemo" "$PWD/bin/rukh" acme.greet/hello '{"name":"agent","times":2}'

# An agent on another machine reaches the same tools over HTTP with an
# OAuth bearer token: tests/httpdemo plays a local authorization server,
# adds an mcp.http section trusting it to the profile, starts
# `rukh mcp --http 127.0.0.1:0` and calls a tool with a token it minted.
go build -o "$RUKH_HOME/httpdemo" ./tests/httpdemo
step "$RUKH_HOME/httpdemo" "$PWD/bin/rukh" examples/profile.json acme.greet/hello '{"name":"remote agent","times":1}'
step rukh invocations list -n 2

# The owner can present the same commands as one dispatch tool (the agent
# reads the catalog on demand and names commands as ops), and keep
# destructive commands for a person's approval at a terminal. An agent
# that stays connected is told the tools changed, and lists them again.
step "$RUKH_HOME/mcpdemo" --then-apply examples/profile-dispatch.json "$PWD/bin/rukh" acme.greet/hello '{"name":"agent","times":1}'
step rukh tools
printf '\n\033[1m$ rukh deploy rollback api --env stage\033[0m   (kept for approval, exit status 77)\n'
if rukh deploy rollback api --env stage; then
	echo "the destructive command ran without approval" >&2
	exit 1
fi
step rukh approve --list

# The same commands with the daemon: rukhd keeps the store open and the
# projection warm; rukh forwards each command line to it with this
# terminal, and rukh mcp sends its calls there. Same output, faster start.
trap 'rukh daemon stop >/dev/null 2>&1 || true' EXIT
step rukh daemon start
step rukh daemon status
step rukh greet Ana -n 2
step rukh deploy status --env stage --limit 1
ask Grace
step rukh doctor
step "$RUKH_HOME/mcpdemo" "$PWD/bin/rukh" acme.greet/hello '{"name":"agent via rukhd","times":1}'
step rukh invocations list -n 4
step rukh daemon stop
