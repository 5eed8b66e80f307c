#include "core/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>

namespace kvforge {
namespace {

// XCR0 tells whether the OS saves the wide registers; without it the CPUID
// bits alone are not enough to use AVX.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & (1u << 27);
  const bool has_fma = ecx & (1u << 12);
  const bool has_f16c = ecx & (1u << 29);
  if (!osxsave) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return f;
  f.fma = has_fma && ymm_ok;
  f.f16c = has_f16c && ymm_ok;
  f.avx2 = ymm_ok && (ebx & (1u << 5));
  f.avx512f = zmm_ok && (ebx & (1u << 16));
  f.avx512dq = zmm_ok && (ebx & (1u << 17));
  f.avx512bw = zmm_ok && (ebx & (1u << 30));
  f.avx512vl = zmm_ok && (ebx & (1u << 31));
  f.avx512vnni = zmm_ok && (ecx & (1u << 11));
  // EDX bit 24 AMX-TILE, bit 25 AMX-INT8; XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA).
  f.amx_int8 = zmm_ok && (edx & (1u << 24)) && (edx & (1u << 25)) && (xcr0 & 0x60000) == 0x60000;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (__get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) f.avx512bf16 = zmm_ok && (a1 & (1u << 5));
  return f;
}

SimdLevel machine_level() {
  const CpuFeatures& f = cpu_features();
  // The AVX-512 kernels are compiled with F/BW/VL/DQ/VNNI, so all must be present.
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx2 && f.fma &&
      f.f16c)
    return SimdLevel::Avx512;
  if (f.avx2 && f.fma && f.f16c) return SimdLevel::Avx2;
  return SimdLevel::Scalar;
}

SimdLevel initial_level() {
  SimdLevel level = machine_level();
  if (const char* env = std::getenv("KVFORGE_SIMD")) {
    const std::string_view v(env);
    SimdLevel wanted = level;
    if (v == "scalar") wanted = SimdLevel::Scalar;
    if (v == "avx2") wanted = SimdLevel::Avx2;
    if (v == "avx512") wanted = SimdLevel::Avx512;
    level = std::min(level, wanted);
  }
  return level;
}

std::atomic<SimdLevel>& level_slot() {
  static std::atomic<SimdLevel> level{initial_level()};
  return level;
}

// Linux (5.16+) keeps the tile data state off until a process asks for it;
// a tile instruction before that faults. The grant is for the whole process.
bool os_grants_amx() {
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
  constexpr unsigned long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0) return false;
  return granted & (1ul << kXfeatureXtiledata);
}

bool amx_wanted_at_start() {
  const char* env = std::getenv("KVFORGE_AMX");
  return !env || (std::string_view(env) != "0" && std::string_view(env) != "off");
}

std::atomic<bool>& amx_enabled_slot() {
  static std::atomic<bool> enabled{amx_wanted_at_start()};
  return enabled;
}

}  // namespace

bool amx_int8_usable() {
  static const bool granted = cpu_features().amx_int8 && os_grants_amx();
  return granted && simd_level() == SimdLevel::Avx512 &&
         amx_enabled_slot().load(std::memory_order_relaxed);
}

void set_amx_enabled(bool enabled) { amx_enabled_slot().store(enabled, std::memory_order_relaxed); }

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

SimdLevel simd_level() { return level_slot().load(std::memory_order_relaxed); }

void set_simd_level(SimdLevel level) {
  level_slot().store(std::min(level, machine_level()), std::memory_order_relaxed);
}

std::string simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::Avx512:
      return "avx512";
    case SimdLevel::Avx2:
      return "avx2";
    default:
      return "scalar";
  }
}

}  // namespace kvforge
