#!/usr/bin/env bash
# A single-node Slurm cluster on loopback, for the tests of `--runner slurm` (and for trying it out).
#
#   scripts/slurm_cluster.sh start    install slurm-wlm + munge if missing (apt-get, needs root),
#                                     write the configuration in $DIR, start munged, slurmctld and
#                                     slurmd, wait until sinfo shows the node idle
#   scripts/slurm_cluster.sh stop     cancel its jobs, stop the three daemons, remove $DIR
#   scripts/slurm_cluster.sh status   sinfo and squeue of the test cluster
#
# DIR is $COURSEPACK_SLURM_DIR, default ${TMPDIR:-/tmp}/coursepack-slurm. It holds slurm.conf, the
# munge key and socket, state, logs and `env` (export SLURM_CONF=...), which tests/test_slurm.py
# reads. Ports 16817/16818 (SLURM_TEST_PORT, +1) keep clear of a real cluster's 6817/6818.
# The node declares 4 CPUs whatever the machine has (config_overrides), so two tasks of a
# 2-core CI machine run at once. Slurm 22.05 (Debian 12); as root, SlurmUser=root.
set -euo pipefail

DIR=${COURSEPACK_SLURM_DIR:-${TMPDIR:-/tmp}/coursepack-slurm}
PORT=${SLURM_TEST_PORT:-16817}
NODE=$(hostname -s)
export SLURM_CONF=$DIR/slurm.conf

say() { echo "slurm_cluster: $*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        say "needs root to run: $*"; exit 1; fi
}

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return
    say "installing slurm-wlm and munge from Debian's packages"
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600)
    if ! as_root "${apt[@]}" install --no-install-recommends slurm-wlm munge >/dev/null; then
        as_root "${apt[@]}" update >/dev/null
        as_root "${apt[@]}" install --no-install-recommends slurm-wlm munge >/dev/null
    fi
}

write_config() {
    mkdir -p "$DIR"/{munge,ctld,spool,log}
    chmod 700 "$DIR" "$DIR/munge"
    [ -f "$DIR/munge/munge.key" ] || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
    cat >"$SLURM_CONF" <<EOF
# Written by scripts/slurm_cluster.sh: one node on loopback, no accounting.
ClusterName=coursepack-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MinJobAge=300
KillWait=5
MessageTimeout=5
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    echo "export SLURM_CONF=$SLURM_CONF" >"$DIR/env"
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_idle() {
    local state=""
    for _ in $(seq 60); do
        state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
        case "$state" in idle|mixed|allocated) return 0 ;; esac
        sleep 0.5
    done
    say "the node did not become idle (state: '${state:-no answer}'); logs in $DIR/log"
    tail -n 5 "$DIR"/log/*.log >&2 || true
    return 1
}

start() {
    install
    write_config
    pid_alive "$DIR/munged.pid" || munged --force --key-file="$DIR/munge/munge.key" \
        --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munged.pid" \
        --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
    pid_alive "$DIR/slurmctld.pid" || slurmctld -f "$SLURM_CONF"
    pid_alive "$DIR/slurmd.pid" || slurmd -f "$SLURM_CONF"
    wait_idle
    say "up: node $NODE idle; SLURM_CONF=$SLURM_CONF (source $DIR/env)"
}

stop_daemon() {
    local pidfile=$DIR/$1.pid pid
    pid_alive "$pidfile" || return 0
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}

stop() {
    [ -d "$DIR" ] || { say "not running (no $DIR)"; return 0; }
    if pid_alive "$DIR/slurmctld.pid"; then
        scancel --user "$(id -un)" 2>/dev/null || true
        for _ in $(seq 30); do [ -z "$(squeue -h -t R,CG 2>/dev/null)" ] && break; sleep 0.2; done
    fi
    stop_daemon slurmd
    stop_daemon slurmctld
    stop_daemon munged
    rm -rf "$DIR"
    say "stopped; removed $DIR"
}

status() {
    pid_alive "$DIR/slurmctld.pid" || { say "not running"; return 1; }
    sinfo
    squeue
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
