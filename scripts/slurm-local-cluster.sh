#!/usr/bin/env bash
# A local single-node SLURM cluster for proving the SLURM profile
# (config/profiles/slurm): Debian's slurm-wlm and munge, started as the
# current user's daemons with their configuration in a state directory, and
# stopped by their PIDs. Nothing is written outside that directory: jobs find
# the cluster through SLURM_CONF (`env` below), which sbatch passes on.
#
#   scripts/slurm-local-cluster.sh up [--accounting]   start munged, slurmctld, slurmd
#                                                    (--accounting: also mariadbd and slurmdbd,
#                                                    so that sacct answers; without it sacct says
#                                                    "accounting storage is disabled")
#   scripts/slurm-local-cluster.sh env               the exports a shell needs to talk to it
#   scripts/slurm-local-cluster.sh run [ARGS...]     snakemake through the profile on it
#                                                    (default ARGS: the micro config)
#   scripts/slurm-local-cluster.sh down              stop every daemon `up` started
#
# The node offers every CPU and most of the memory of this machine in two
# partitions, `cpu` (the default) and `gpu` (no GPU behind it); give them to a
# run with `--config cluster='{cpu_partition: cpu, gpu_partition: gpu}'`.
# State: $LEAKTRACE_SLURM_DIR (default ${TMPDIR:-/tmp}/leaktrace-slurm-$UID).
# Root is needed only to install the Debian packages (`up` runs apt-get when
# they are missing; otherwise it asks for them) and for --accounting, whose
# clients reach munged only at its system socket, /run/munge.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${LEAKTRACE_SLURM_DIR:-${TMPDIR:-/tmp}/leaktrace-slurm-$(id -u)}
SNAKEMAKE=${SNAKEMAKE:-$ROOT/.venv/bin/snakemake}
USER_NAME=$(id -un)
CLUSTER=leaktrace
CTLD_PORT=${LEAKTRACE_SLURM_PORT:-16817}
SLURMD_PORT=$((CTLD_PORT + 1))
DBD_PORT=$((CTLD_PORT + 2))
DB_PORT=$((CTLD_PORT + 3))

# The accounting clients (sacct, sacctmgr) reach munged only at its default
# socket, whatever AuthInfo says: as root use that one; otherwise one of our own.
if [[ $(id -u) == 0 ]]; then MUNGE_SOCKET=/run/munge/munge.socket.2; else MUNGE_SOCKET=$STATE/munge/munge.socket; fi

log() { echo "slurm-local-cluster: $*" >&2; }
trap 'log "failed at line $LINENO: $BASH_COMMAND (logs: $STATE/log)"' ERR

install_packages() {
    local missing=()
    command -v slurmctld >/dev/null || missing+=(slurm-wlm)
    command -v munged >/dev/null || missing+=(munge)
    if [[ ${1:-} == accounting ]]; then
        command -v slurmdbd >/dev/null || missing+=(slurmdbd)
        command -v mariadbd >/dev/null || missing+=(mariadb-server)
    fi
    ((${#missing[@]} == 0)) && return 0
    if [[ $(id -u) != 0 ]]; then
        log "missing ${missing[*]}: install them (apt-get install ${missing[*]}) and run again"
        exit 1
    fi
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2
    shift 2
    for ((i = 0; i < limit * 4; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    log "$what did not come up in ${limit}s; see $STATE/log"
    exit 1
}

start_munge() {
    mkdir -p "$STATE/munge"
    chmod 755 "$STATE/munge"  # clients must reach the socket; the key itself is 0400
    [[ -f $STATE/munge/munge.key ]] || dd if=/dev/urandom of="$STATE/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$STATE/munge/munge.key"
    if [[ -S $MUNGE_SOCKET ]] && munge --socket="$MUNGE_SOCKET" -n >/dev/null 2>&1; then
        log "a munged already answers at $MUNGE_SOCKET: stop it first"
        exit 1
    fi
    mkdir -p "$(dirname "$MUNGE_SOCKET")"
    munged --key-file="$STATE/munge/munge.key" --socket="$MUNGE_SOCKET" \
        --pid-file="$STATE/munge/munged.pid" --log-file="$STATE/log/munged.log" \
        --seed-file="$STATE/munge/munged.seed" --force
    wait_for 10 munged munge --socket="$MUNGE_SOCKET" -n
}

start_database() {
    local db=$STATE/mysql
    if [[ ! -d $db/mysql ]]; then
        mariadb-install-db --no-defaults --datadir="$db" --user="$USER_NAME" \
            --auth-root-authentication-method=socket >"$STATE/log/mariadb-install.log" 2>&1
    fi
    mariadbd --no-defaults --datadir="$db" --user="$USER_NAME" --socket="$STATE/mysql.sock" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$STATE/mariadbd.pid" \
        --log-error="$STATE/log/mariadbd.log" --innodb-buffer-pool-size=64M >/dev/null 2>&1 &
    wait_for 60 mariadbd mariadb --no-defaults --socket="$STATE/mysql.sock" -u root -e "select 1"
    mariadb --no-defaults --socket="$STATE/mysql.sock" -u root -e \
        "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"
    cat >"$STATE/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=$USER_NAME
PidFile=$STATE/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$STATE/etc/slurmdbd.conf"
    SLURM_CONF=$STATE/etc/slurm.conf slurmdbd  # reads slurmdbd.conf beside slurm.conf
    wait_for 60 slurmdbd timeout 5 sacctmgr -i list cluster
    sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true
}

write_slurm_conf() {
    local accounting=$1 cpus mem
    cpus=$(nproc)
    # leave 1 GB to the system; slurmd refuses a node with less than it announces
    mem=$(($(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) - 1024))
    cat >"$STATE/etc/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$USER_NAME
SlurmdUser=$USER_NAME
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# finished jobs stay visible to squeue for 10 minutes: the executor plugin
# polls status with squeue only when MinJobAge >= 3x its first-check delay
MinJobAge=600
JobCompType=jobcomp/none
EOF
    if [[ $accounting == yes ]]; then
        # jobacct_gather/linux: sacct's TotalCPU (the kernel's count at the job's end) and MaxRSS
        # (sampled every JobAcctGatherFrequency s); the job's comment (its rule and wildcards) kept
        cat >>"$STATE/etc/slurm.conf" <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
EOF
    else
        printf "AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n" >>"$STATE/etc/slurm.conf"
    fi
    cat >>"$STATE/etc/slurm.conf" <<EOF
NodeName=localhost CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=cpu Nodes=localhost Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=localhost MaxTime=INFINITE State=UP
EOF
}

cmd_up() {
    local accounting=no
    [[ ${1:-} == --accounting ]] && accounting=yes
    if [[ $accounting == yes && $(id -u) != 0 ]]; then
        log "--accounting needs root: sacct and sacctmgr reach munged only at /run/munge"
        exit 1
    fi
    if [[ -f $STATE/slurmctld.pid ]] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
        log "already up ($STATE); run down first"
        exit 1
    fi
    install_packages "$([[ $accounting == yes ]] && echo accounting)"
    rm -rf "$STATE/etc" "$STATE/ctld" "$STATE/slurmd" "$STATE/log"
    mkdir -p "$STATE/etc" "$STATE/ctld" "$STATE/slurmd" "$STATE/log"
    export SLURM_CONF=$STATE/etc/slurm.conf
    write_slurm_conf "$accounting"
    start_munge
    [[ $accounting == yes ]] && start_database
    slurmctld -i
    wait_for 30 slurmctld scontrol ping
    slurmd
    wait_for 30 slurmd bash -c "sinfo -h -N -o %t | grep -qE '^(idle|mix|alloc)'"
    echo "$accounting" >"$STATE/accounting"
    log "up: $(sinfo -h -o '%P %D %c CPUs %m MB %a' | tr '\n' ';') accounting=$accounting"
    log "in a shell: eval \"\$($0 env)\""
}

cmd_env() {
    echo "export SLURM_CONF=$STATE/etc/slurm.conf"
}

stop_pidfile() {
    local file=$1 pid
    [[ -f $file ]] || return 0
    pid=$(cat "$file")
    if kill "$pid" 2>/dev/null; then
        for ((i = 0; i < 60; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$file"
}

cmd_down() {
    export SLURM_CONF=$STATE/etc/slurm.conf
    if [[ -f $STATE/slurmctld.pid ]]; then
        scancel --user="$USER_NAME" >/dev/null 2>&1 || true
    fi
    stop_pidfile "$STATE/slurmd.pid"
    stop_pidfile "$STATE/slurmctld.pid"
    stop_pidfile "$STATE/slurmdbd.pid"
    stop_pidfile "$STATE/mariadbd.pid"
    stop_pidfile "$STATE/munge/munged.pid"
    log "down"
}

cmd_run() {
    export SLURM_CONF=$STATE/etc/slurm.conf
    sinfo -h >/dev/null || { log "no cluster answers; run up first"; exit 1; }
    local args=("$@")
    ((${#args[@]})) || args=(--configfile config/micro.yaml)
    cd "$ROOT"
    # the README's command as written: a one-job group is sized to the node by the executor
    PYTHONPATH=$ROOT/workflow${PYTHONPATH:+:$PYTHONPATH} "$SNAKEMAKE" --workflow-profile config/profiles/slurm "${args[@]}"
}

case ${1:-} in
up) shift; cmd_up "$@" ;;
down) cmd_down ;;
env) cmd_env ;;
run) shift; cmd_run "$@" ;;
*) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
