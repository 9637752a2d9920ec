#!/usr/bin/env bash
# Installs what gavel needs on a fresh Debian/Ubuntu machine, only when it is
# missing: C and C++ compilers (cgo; policy/lp's stop.cpp), pkg-config and the
# COIN-OR CLP/CBC development packages (the LP and MILP solvers behind policy/),
# then downloads the Go modules.
set -euo pipefail

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
pkg-config --exists clp 2>/dev/null || need+=(coinor-libclp-dev)
pkg-config --exists cbc 2>/dev/null || need+=(coinor-libcbc-dev)
if ((${#need[@]})); then
	echo "setup: installing ${need[*]}" >&2
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -q >/dev/null
	$sudo apt-get install -y -q "${need[@]}" >/dev/null
fi
command -v go >/dev/null 2>&1 || { echo "setup: Go is required (https://go.dev/dl/), with PATH including its bin directory" >&2; exit 1; }
go mod download
