#!/usr/bin/env bash
# Builds warren-perf and runs it: one command, PerfTest's options.
#
#   client-benchmarks/src/main/scripts/warren-perf.sh                 # 1 producer, 1 consumer, 10 s, localhost
#   client-benchmarks/src/main/scripts/warren-perf.sh --compare -c 100 --runs 3 --report perf.html
#   client-benchmarks/src/main/scripts/warren-perf.sh --peer sink     # the client alone, no broker
#   client-benchmarks/src/main/scripts/warren-perf.sh --help
#
# The build is ./mvnw -B -q -DskipTests package of client-benchmarks and the modules it needs
# (MVN_OPTS adds options, e.g. MVN_OPTS=-o offline); the jar is client-benchmarks/target/warren-perf.jar.
# JAVA_OPTS go to the JVM that runs the tool.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../../.." && pwd)"
# shellcheck disable=SC2086
(cd "$root" && ./mvnw -B -q -DskipTests ${MVN_OPTS:-} package -pl client-benchmarks -am)
# shellcheck disable=SC2086
exec java ${JAVA_OPTS:-} -jar "$root/client-benchmarks/target/warren-perf.jar" "$@"
