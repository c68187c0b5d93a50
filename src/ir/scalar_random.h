// kiln's random numbers: the helpers random ops name in generated code and the interpreter.
//
// Target-neutral, as src/ir/scalar_math.h (whose rules apply): compiled into the reference
// interpreter and pasted into every generated translation unit after scalar_math.h, whose
// kiln_sqrt, kiln_log and kiln_cos the normal draws use.
#ifndef KILN_SCALAR_RANDOM_H
#define KILN_SCALAR_RANDOM_H

// ---- Philox-4x32-10 (Salmon et al., Random123) ---------------------------------------------
// Counter-based: element i of a random tensor is a pure function of (seed, i), so any loop
// order, thread count or backend draws the same numbers. Pure 32/64-bit integer arithmetic.
struct kiln_uint32x4 {
  uint32_t x0, x1, x2, x3;
};
// The Philox-4x32-10 block function itself (Random123's philox4x32_R(10, counter, key)).
KILN_FN kiln_uint32x4 kiln_philox4x32_10(kiln_uint32x4 counter, uint32_t key0, uint32_t key1) {
  uint32_t c0 = counter.x0, c1 = counter.x1, c2 = counter.x2, c3 = counter.x3;
  for (int round = 0; round < 10; ++round) {
    uint64_t product0 = uint64_t(0xD2511F53u) * c0;
    uint64_t product1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t next0 = uint32_t(product1 >> 32) ^ c1 ^ key0;
    uint32_t next2 = uint32_t(product0 >> 32) ^ c3 ^ key1;
    c1 = uint32_t(product1);
    c3 = uint32_t(product0);
    c0 = next0;
    c2 = next2;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  kiln_uint32x4 result = {c0, c1, c2, c3};
  return result;
}
// kiln's stream: key = the 64-bit seed, counter = (element index, 0).
KILN_FN kiln_uint32x4 kiln_philox4x32(uint64_t seed, uint64_t counter) {
  kiln_uint32x4 block = {uint32_t(counter), uint32_t(counter >> 32), 0u, 0u};
  return kiln_philox4x32_10(block, uint32_t(seed), uint32_t(seed >> 32));
}
// 53 random bits scaled into [0, 1).
KILN_FN double kiln_philox_uniform_f64(uint64_t seed, uint64_t counter) {
  kiln_uint32x4 r = kiln_philox4x32(seed, counter);
  uint64_t bits = ((uint64_t(r.x0) << 32) | r.x1) >> 11;
  return double(bits) * 0x1.0p-53;
}
// 24 random bits scaled into [0, 1).
KILN_FN float kiln_philox_uniform_f32(uint64_t seed, uint64_t counter) {
  kiln_uint32x4 r = kiln_philox4x32(seed, counter);
  return float(r.x0 >> 8) * 0x1.0p-24f;
}
// Box-Muller on two uniforms; the radius uniform lies in (0, 1] so its log is finite.
KILN_FN double kiln_philox_normal_f64(uint64_t seed, uint64_t counter) {
  kiln_uint32x4 r = kiln_philox4x32(seed, counter);
  uint64_t radius_bits = ((uint64_t(r.x0) << 32) | r.x1) >> 11;
  uint64_t angle_bits = ((uint64_t(r.x2) << 32) | r.x3) >> 11;
  double radius_uniform = double(radius_bits + 1) * 0x1.0p-53;
  double angle_uniform = double(angle_bits) * 0x1.0p-53;
  return kiln_sqrt(-2.0 * kiln_log(radius_uniform)) *
         kiln_cos(6.283185307179586476925 * angle_uniform);
}
KILN_FN float kiln_philox_normal_f32(uint64_t seed, uint64_t counter) {
  kiln_uint32x4 r = kiln_philox4x32(seed, counter);
  float radius_uniform = float((r.x0 >> 8) + 1) * 0x1.0p-24f;
  float angle_uniform = float(r.x1 >> 8) * 0x1.0p-24f;
  return kiln_sqrt(-2.0f * kiln_log(radius_uniform)) *
         kiln_cos(6.28318530717958647692f * angle_uniform);
}

#endif  // KILN_SCALAR_RANDOM_H
