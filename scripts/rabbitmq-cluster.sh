#!/usr/bin/env bash
# A 3-node RabbitMQ cluster on loopback for the cluster tests (client-it, *ClusterIT and *StreamIT), beside the
# single broker on 127.0.0.1:5672, which this script never touches.
#
#   scripts/rabbitmq-cluster.sh start    starts the nodes, clusters them; returns when all three are clustered
#                                        and answer AMQP. Idempotent: fast when the cluster is already up, and
#                                        a node whose application was stopped (stop_app) is started again. When
#                                        no node runs, the nodes' old data is removed first.
#   scripts/rabbitmq-cluster.sh stop     stops the three nodes and deletes their data. Idempotent.
#   scripts/rabbitmq-cluster.sh status   exits 0 when all three nodes run, are clustered and answer AMQP. As a user
#                                        other than root or rabbitmq (the CLI needs one of them), only the three
#                                        AMQP ports are checked, and it says membership was not checked.
#
# Nodes: rabbit2@localhost, rabbit3@localhost, rabbit4@localhost; AMQP on 127.0.0.1:5673-5675, Erlang
# distribution on 25683-25685 (25672 is the single broker's). Data and logs under $WARREN_CLUSTER_DIR
# (default /var/tmp/warren-cluster), owned by the rabbitmq user. About 130 MB of memory per node.
#
# Needs root (or the rabbitmq user) and RabbitMQ 3.9+ as installed by the distribution package: the nodes run
# as the rabbitmq user, so they share the single broker's Erlang cookie (/var/lib/rabbitmq/.erlang.cookie) and
# `rabbitmqctl -n rabbit2@localhost ...` works as it does for the single broker.
set -euo pipefail

BASE="${WARREN_CLUSTER_DIR:-/var/tmp/warren-cluster}"
NODES=(rabbit2 rabbit3 rabbit4)
AMQP_PORTS=(5673 5674 5675)
DIST_PORTS=(25683 25684 25685)
RABBIT_HOME=/var/lib/rabbitmq
BIN=/usr/lib/rabbitmq/bin

log() { printf '[rabbitmq-cluster] %s\n' "$*" >&2; }

# root or the rabbitmq user: the CLI can reach the nodes (runuser refuses anyone else)
can_use_cli() { [ "$(id -u)" = 0 ] || [ "$(id -u)" = "$(id -u rabbitmq 2>/dev/null)" ]; }

# Runs a RabbitMQ command as the rabbitmq user, with its home (and so its Erlang cookie).
as_rabbitmq() {
  if [ "$(id -u)" = "$(id -u rabbitmq)" ]; then
    env HOME="$RABBIT_HOME" "$@"
  else
    runuser -u rabbitmq -- env HOME="$RABBIT_HOME" "$@"
  fi
}

ctl() { # ctl NODE ARGS...
  local node="$1"; shift
  as_rabbitmq "$BIN/rabbitmqctl" -q -n "$node@localhost" "$@"
}

amqp_answers() { timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# The VM of the node answers the CLI (the application may be stopped).
vm_answers() { ctl "$1" eval 'ok.' >/dev/null 2>&1; }

app_running() { as_rabbitmq "$BIN/rabbitmq-diagnostics" -q -n "$1@localhost" check_running >/dev/null 2>&1; }

# One CLI call (each costs ~0.7 s): the nodes the first one sees running the rabbit application, clustered.
clustered() {
  local out n
  out=$(ctl "${NODES[0]}" eval 'rabbit_nodes:all_running().' 2>/dev/null) || return 1
  for n in "${NODES[@]}"; do
    [[ "$out" == *"$n@localhost"* ]] || return 1
  done
}

is_up() {
  local port
  for port in "${AMQP_PORTS[@]}"; do
    amqp_answers "$port" || return 1
  done
  clustered
}

start_node() { # start_node INDEX
  local node="${NODES[$1]}" dir="$BASE/${NODES[$1]}"
  mkdir -p "$dir/mnesia" "$dir/log"
  # Own config: the system rabbitmq.conf pins listeners.tcp.local to 127.0.0.1:5672, which would override
  # RABBITMQ_NODE_PORT. Own env file: the system one sets NODENAME=rabbit@localhost.
  cat > "$dir/rabbitmq.conf" <<EOF
listeners.tcp.local = 127.0.0.1:${AMQP_PORTS[$1]}
EOF
  cat > "$dir/rabbitmq-env.conf" <<EOF
ERL_EPMD_ADDRESS=127.0.0.1
export ERL_FLAGS="-kernel inet_dist_use_interface {127,0,0,1}"
EOF
  echo '[].' > "$dir/enabled_plugins"
  chown -R rabbitmq:rabbitmq "$dir"
  (cd "$RABBIT_HOME" && as_rabbitmq \
    RABBITMQ_NODENAME="$node@localhost" \
    RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
    RABBITMQ_NODE_PORT="${AMQP_PORTS[$1]}" \
    RABBITMQ_DIST_PORT="${DIST_PORTS[$1]}" \
    RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" \
    RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf" \
    RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
    RABBITMQ_MNESIA_BASE="$dir/mnesia" \
    RABBITMQ_LOG_BASE="$dir/log" \
    RABBITMQ_PID_FILE="$dir/$node.pid" \
    ERL_EPMD_ADDRESS=127.0.0.1 \
    ERL_FLAGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    "$BIN/rabbitmq-server" -detached) >/dev/null 2>&1 || true
}

# -detached returns before the node registers with epmd: wait until the CLI reaches it, then for its boot.
await_node() { # await_node INDEX
  local node="${NODES[$1]}" i
  for i in $(seq 1 120); do
    vm_answers "$node" && break
    sleep 0.5
  done
  vm_answers "$node" || { log "$node@localhost did not start; see $BASE/$node/log"; return 1; }
  ctl "$node" await_startup --timeout 120 >/dev/null
}

start() {
  if is_up; then
    log "already up: ${NODES[*]/%/@localhost} on AMQP ports ${AMQP_PORTS[*]}"
    return 0
  fi
  local i node out
  # A node whose VM runs with its application stopped (a test's stop_app) only needs start_app; anything else
  # that is not right (half-started, not clustered) is started again from nothing.
  local vms=0
  for i in "${!NODES[@]}"; do
    vm_answers "${NODES[$i]}" && vms=$((vms + 1))
  done
  if [ "$vms" = "${#NODES[@]}" ]; then
    for node in "${NODES[@]}"; do
      app_running "$node" || { log "start_app on $node@localhost"; ctl "$node" start_app; }
    done
    for node in "${NODES[@]}"; do ctl "$node" await_startup --timeout 120 >/dev/null; done
    if is_up; then
      log "up again"
      return 0
    fi
  fi
  if [ "$vms" = 0 ]; then
    # no node runs (after a reboot, say): data left by an earlier cluster could break join_cluster
    wipe_data
  else
    stop
  fi
  local started=$SECONDS
  log "starting ${NODES[*]/%/@localhost} under $BASE"
  mkdir -p "$BASE"
  for i in "${!NODES[@]}"; do start_node "$i"; done
  for i in "${!NODES[@]}"; do await_node "$i"; done
  for node in "${NODES[@]:1}"; do
    ctl "$node" stop_app >/dev/null
    # join_cluster prints errors about tables of nodes not yet running, which are expected: shown on failure only
    out=$(ctl "$node" join_cluster "${NODES[0]}@localhost" 2>&1) || { log "join_cluster: $out"; return 1; }
    ctl "$node" start_app >/dev/null
    ctl "$node" await_startup --timeout 120 >/dev/null
  done
  for i in "${!NODES[@]}"; do
    for _ in $(seq 1 60); do amqp_answers "${AMQP_PORTS[$i]}" && break; sleep 0.5; done
  done
  if ! is_up; then
    log "the cluster did not come up; logs under $BASE/*/log"
    return 1
  fi
  log "up in $((SECONDS - started)) s: ${NODES[*]/%/@localhost} on 127.0.0.1:${AMQP_PORTS[*]}"
}

# The nodes' directories under $BASE (data, logs, config); $BASE itself may be a shared directory.
wipe_data() {
  local node
  for node in "${NODES[@]}"; do
    if [ -e "$BASE/$node" ]; then
      # a half-started VM the CLI does not reach still holds the directory; a pid from before a reboot may now
      # be another process's, so only an Erlang VM is ended
      local pid=""
      [ -f "$BASE/$node/$node.pid" ] && pid=$(cat "$BASE/$node/$node.pid")
      if [ -n "$pid" ] && [[ "$(ps -p "$pid" -o comm= 2>/dev/null)" == beam* ]]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      fi
      log "no node running: removing the old $BASE/$node"
      rm -rf "${BASE:?}/$node"
    fi
  done
}

stop() {
  local node i
  for node in "${NODES[@]}"; do
    if vm_answers "$node"; then
      log "stopping $node@localhost"
      ctl "$node" stop >/dev/null 2>&1 || true
    fi
  done
  # a VM that did not answer the CLI (half-started) is ended by its pid file
  for node in "${NODES[@]}"; do
    local pidfile="$BASE/$node/$node.pid"
    if [ -f "$pidfile" ]; then
      local pid
      pid=$(cat "$pidfile")
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for i in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      fi
    fi
  done
  rm -rf "$BASE"
}

status() {
  local i up=0
  if ! can_use_cli; then
    # not root: the three AMQP ports are all that can be checked
    for i in "${!NODES[@]}"; do
      if amqp_answers "${AMQP_PORTS[$i]}"; then
        echo "${NODES[$i]}@localhost: AMQP on 127.0.0.1:${AMQP_PORTS[$i]} answers"
        up=$((up + 1))
      else
        echo "${NODES[$i]}@localhost: AMQP on 127.0.0.1:${AMQP_PORTS[$i]} does not answer"
      fi
    done
    if [ "$up" = "${#NODES[@]}" ]; then
      echo "clustered: not checked (the CLI needs root or the rabbitmq user); the three AMQP ports answer"
      return 0
    fi
    echo "cluster: not up (scripts/rabbitmq-cluster.sh start, as root)"
    return 1
  fi
  for i in "${!NODES[@]}"; do
    if app_running "${NODES[$i]}" && amqp_answers "${AMQP_PORTS[$i]}"; then
      echo "${NODES[$i]}@localhost: running, AMQP on 127.0.0.1:${AMQP_PORTS[$i]}"
      up=$((up + 1))
    else
      echo "${NODES[$i]}@localhost: not running"
    fi
  done
  if [ "$up" = "${#NODES[@]}" ] && clustered; then
    echo "clustered: yes"
    return 0
  fi
  echo "cluster: not up (scripts/rabbitmq-cluster.sh start)"
  return 1
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
