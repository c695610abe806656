# Sourced by the scale scripts. scale_layouts LAYOUT...: sets `layouts` to the arguments, else
# the issue's four (32x4 64x4 32x8 128x2). fake_layout NODESxPER sets nodes, per, n (ranks) and
# fake (the XCCL_FAKE_NODES value: PER repeated NODES times).
scale_layouts() {
  layouts=("$@")
  [ ${#layouts[@]} -eq 0 ] && layouts=(32x4 64x4 32x8 128x2)
}
fake_layout() {
  nodes=${1%x*}
  per=${1#*x}
  n=$((nodes * per))
  fake=$(printf "$per,%.0s" $(seq "$nodes"))
  fake=${fake%,}
}
