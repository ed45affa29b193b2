#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the sharding test (tests/cli/slurm.rs):
#   scripts/slurm_local.sh install   install Debian's slurm-wlm and munge (root or sudo; apt)
#   scripts/slurm_local.sh start     install if needed, start munged, slurmctld and slurmd; wait until the node is idle
#   scripts/slurm_local.sh stop      stop the daemons this script started (by the PIDs in their pid files)
#   scripts/slurm_local.sh env       print `export SLURM_CONF=…` for clients
# State, configuration and logs live in $LLMPERF_SLURM_DIR (default /tmp/llmperf-slurm). Idempotent.
set -euo pipefail
DIR=${LLMPERF_SLURM_DIR:-/tmp/llmperf-slurm}
CONF=$DIR/slurm.conf
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

have() { command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; }

install() {
  have && return 0
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  have
}

start_munge() {
  if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
  $SUDO mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge
  if ! $SUDO test -s /etc/munge/munge.key; then
    $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  $SUDO chown -R munge: /etc/munge /var/log/munge /run/munge /var/lib/munge
  $SUDO chmod 0700 /etc/munge
  $SUDO chmod 0400 /etc/munge/munge.key
  $SUDO runuser -u munge -- /usr/sbin/munged
  touch "$DIR/munged.started"
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "slurm_local: munged did not come up" >&2
  return 1
}

write_conf() {
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(( $(free -m | awk '/^Mem:/{print $2}') * 9 / 10 ))
  mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
  cat >"$CONF" <<CONF
ClusterName=llmperf
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
}

running() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  install
  mkdir -p "$DIR"
  start_munge
  if ! running "$DIR/slurmctld.pid" || ! running "$DIR/slurmd.pid"; then
    write_conf
    running "$DIR/slurmctld.pid" || $SUDO slurmctld -f "$CONF"
    running "$DIR/slurmd.pid" || $SUDO slurmd -f "$CONF"
  fi
  for _ in $(seq 100); do
    if SLURM_CONF=$CONF sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "slurm_local: node $(hostname -s) up (SLURM_CONF=$CONF)"
      return 0
    fi
    sleep 0.2
  done
  echo "slurm_local: the node did not become idle; see $DIR/log" >&2
  return 1
}

stop() {
  for d in slurmd slurmctld; do
    if running "$DIR/$d.pid"; then $SUDO kill "$(cat "$DIR/$d.pid")" || true; fi
  done
  if [ -f "$DIR/munged.started" ] && [ -f /run/munge/munged.pid ]; then
    $SUDO kill "$(cat /run/munge/munged.pid)" || true
    rm -f "$DIR/munged.started"
  fi
  echo "slurm_local: stopped"
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) echo "usage: $0 install|start|stop|env" >&2; exit 2 ;;
esac
