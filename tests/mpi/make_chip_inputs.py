"""Writes the inputs of tp_mlp.mlir compiled with --presharded on its 1x8 mesh as .npy files
(float32, C order; the standard library only): x.npy (64x128, replicated) and, per chip c,
w1.chip{c}.npy (128x32), b1.chip{c}.npy (32) and w2.chip{c}.npy (32x128), uniform in [-1, 1).
    make_chip_inputs.py DIR"""
import random
import struct
import sys


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(
        f"{d}," for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        f.write(struct.pack(f"<{len(values)}f", *values))


def main(out):
    rng = random.Random(7)

    def values(n):
        return [rng.uniform(-1, 1) for _ in range(n)]

    write_npy(f"{out}/x.npy", (64, 128), values(64 * 128))
    for c in range(8):
        write_npy(f"{out}/w1.chip{c}.npy", (128, 32), values(128 * 32))
        write_npy(f"{out}/b1.chip{c}.npy", (32,), values(32))
        write_npy(f"{out}/w2.chip{c}.npy", (32, 128), values(32 * 128))


if __name__ == "__main__":
    main(sys.argv[1])
