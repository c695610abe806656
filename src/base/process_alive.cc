#include "base/process_alive.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace xccl {

bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  // The state follows the command name, which is in parentheses and may hold spaces.
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  char state = line[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

}  // namespace xccl
