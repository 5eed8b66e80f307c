#include <cstdio>

int main() {
  std::puts("kvforge: under construction");
  return 0;
}
