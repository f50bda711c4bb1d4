#!/usr/bin/env bash
# A two-"host" MPI run on this machine: two network namespaces joined by a veth pair, Open MPI's
# TCP transport between them, and an ssh stand-in (`ip netns exec`) as mpirun's launch agent.
# Traffic stays on this machine. Needs root (ip netns). docs/distributed.md walks through it.
#
#   scripts/netns-two-hosts.sh TAPESTRY run examples/mlp.tap --plan examples/plans/mlp-megatron.json
#
# Host 1 is namespace tap-h1 at 10.77.0.1, host 2 tap-h2 at 10.77.0.2, one rank each; mpirun
# runs in tap-h1 and starts host 2's daemon through the agent. The namespaces are removed on exit.
set -euo pipefail
tapestry=$(realpath "$1")
shift
ns1=tap-h1
ns2=tap-h2
work=$(mktemp -d)

cleanup() {
  ip netns del "$ns1" 2>/dev/null || true
  ip netns del "$ns2" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cleanup_stale() { ip netns del "$ns1" 2>/dev/null || true; ip netns del "$ns2" 2>/dev/null || true; }
cleanup_stale

# 1. Two namespaces, a veth pair between them, loopback up in each.
ip netns add "$ns1"
ip netns add "$ns2"
ip link add tap-veth1 type veth peer name tap-veth2
ip link set tap-veth1 netns "$ns1"
ip link set tap-veth2 netns "$ns2"
ip -n "$ns1" addr add 10.77.0.1/24 dev tap-veth1
ip -n "$ns2" addr add 10.77.0.2/24 dev tap-veth2
for ns in "$ns1" "$ns2"; do
  ip -n "$ns" link set lo up
done
ip -n "$ns1" link set tap-veth1 up
ip -n "$ns2" link set tap-veth2 up

# 2. The ssh stand-in: `agent HOST COMMAND…` runs COMMAND in HOST's namespace.
cat >"$work/netns-ssh" <<AGENT
#!/bin/sh
host=\$1
shift
case \$host in
  10.77.0.1) ns=$ns1 ;;
  10.77.0.2) ns=$ns2 ;;
  *) echo "netns-ssh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$work/netns-ssh"

# 3. mpirun in host 1, one slot per host, TCP only (no shared memory between the "hosts"),
#    daemons and messages on the veth subnet. --bind-to none: each "host" believes it owns the
#    machine and would bind its rank to core 0, both ranks on one core.
ip netns exec "$ns1" "$tapestry" launch -n 2 --host 10.77.0.1:1 --host 10.77.0.2:1 \
  --mca plm_rsh_agent="$work/netns-ssh" --mca btl=tcp,self \
  --mca btl_tcp_if_include=10.77.0.0/24 --mca oob_tcp_if_include=10.77.0.0/24 \
  --mpirun-arg=--bind-to --mpirun-arg=none -- "$@"
