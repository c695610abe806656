#!/usr/bin/env bash
# Installs what building and testing xccl needs on Debian, only when something is missing.
set -euo pipefail
needed=()
command -v cmake >/dev/null || needed+=(cmake)
command -v g++ >/dev/null || needed+=(g++)
command -v make >/dev/null || needed+=(make)
[ -f /usr/include/gtest/gtest.h ] || needed+=(libgtest-dev)
command -v pkg-config >/dev/null || needed+=(pkg-config)
command -v objdump >/dev/null || needed+=(binutils)
[ -f /usr/include/infiniband/verbs.h ] || needed+=(libibverbs-dev)
# The Python binding's tests run on Debian's interpreter (python/CMakeLists.txt: XCCL_PYTHON).
py=/usr/bin/python3
[ -x $py ] || needed+=(python3)
for module in numpy:python3-numpy pytest:python3-pytest pip:python3-pip setuptools:python3-setuptools; do
  [ -x $py ] && $py -c "import ${module%%:*}" 2>/dev/null || needed+=("${module#*:}")
done
if [ ${#needed[@]} -gt 0 ]; then
  echo "xccl: installing ${needed[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${needed[@]}"
fi
