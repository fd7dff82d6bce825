#!/usr/bin/env python3
"""Threefry-2x32 with 20 rounds (Salmon et al., Random123; the generator behind jax.random), in
plain integer arithmetic modulo 2^32. Prints the results that
tests/planner/stablehlo_int_exact_test.cpp's threefry case expects, split into 16-bit halves (f32 host tensors
hold those exactly). Lane 0 is Random123's known-answer vector: key (0x13198a2e, 0x03707344),
counter (0x243f6a88, 0x85a308d3) -> (0xc4923a9c, 0x483df7a0)."""

M = 0xFFFFFFFF


def rotl(x, d):
    return ((x << d) | (x >> (32 - d))) & M


def threefry2x32(k0, k1, x0, x1):
    ks = [k0, k1, k0 ^ k1 ^ 0x1BD11BDA]
    rot = [[13, 15, 26, 6], [17, 29, 16, 24]]
    x0 = (x0 + ks[0]) & M
    x1 = (x1 + ks[1]) & M
    for i in range(5):
        for r in rot[i % 2]:
            x0 = (x0 + x1) & M
            x1 = rotl(x1, r) ^ x0
        x0 = (x0 + ks[(i + 1) % 3]) & M
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M
    return x0, x1


lanes = [(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3), (0x13198A2E, 0x03707344, 0, 1)]
out = [threefry2x32(*lane) for lane in lanes]
assert out[0] == (0xC4923A9C, 0x483DF7A0), [hex(v) for v in out[0]]
for name, idx in (("x0", 0), ("x1", 1)):
    words = [o[idx] for o in out]
    print(name, [hex(w) for w in words], "hi", [w >> 16 for w in words], "lo", [w & 0xFFFF for w in words])
