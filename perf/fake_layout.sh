# Sourced by the scale scripts: fake_layout NODESxPER sets nodes, per, n (ranks) and fake (the
# XCCL_FAKE_NODES value: PER repeated NODES times).
fake_layout() {
  nodes=${1%x*}
  per=${1#*x}
  n=$((nodes * per))
  fake=$(printf "$per,%.0s" $(seq "$nodes"))
  fake=${fake%,}
}
