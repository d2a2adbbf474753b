"""Generates half_torch.txt: float32 -> float16 / bfloat16 conversions done by
PyTorch, on the CPU and on a CUDA GPU, for TestHalfAgainstTorch.

Run where torch (with CUDA) is installed:  python3 gen_half_torch.py > half_torch.txt
Each data line: f32bits f16_cpu f16_cuda bf16_cpu bf16_cuda (hex).
"""
import struct, sys
import numpy as np
import torch

rng = np.random.default_rng(20260917)
bits = [0x00000000, 0x80000000, 0x3F800000, 0x477FE000, 0x477FEFFF, 0x477FF000,
        0x477FFFFF, 0x47800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x33000000,
        0x33000001, 0x33800000, 0x387FC000, 0x38800000, 0x00000001, 0x807FFFFF,
        0x3F808000, 0x3F818000, 0x3F808001, 0x7F7F8000, 0x7F7F7FFF]
# binary16 ties: exact midpoints between neighbouring finite f16 codes.
for h in rng.integers(0, 0x7BFF, 400):
    a = float(np.array([h], np.uint16).view(np.float16)[0])
    b = float(np.array([h + 1], np.uint16).view(np.float16)[0])
    m = np.float32((a + b) / 2)
    bits.append(int(np.array([m]).view(np.uint32)[0]) | (int(rng.integers(0, 2)) << 31))
# random values over the binary16 range and beyond
for _ in range(700):
    e = int(rng.integers(127 - 30, 127 + 20))
    bits.append(int(rng.integers(0, 2)) << 31 | e << 23 | int(rng.integers(0, 1 << 23)))
# bfloat16 ties and random bits over the whole float32 range (no NaN)
for _ in range(200):
    bits.append(int(rng.integers(0, 1 << 16)) << 16 | 0x8000)
for _ in range(300):
    b = int(rng.integers(0, 1 << 32))
    if (b >> 23) & 0xFF != 0xFF:
        bits.append(b)

x = torch.tensor(np.array(bits, np.uint32).view(np.float32))
f16c = x.to(torch.float16).view(torch.int16).numpy().view(np.uint16)
bf16c = x.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
xg = x.cuda()
f16g = xg.to(torch.float16).view(torch.int16).cpu().numpy().view(np.uint16)
bf16g = xg.to(torch.bfloat16).view(torch.int16).cpu().numpy().view(np.uint16)
print(f"# torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")
print("# f32bits f16_cpu f16_cuda bf16_cpu bf16_cuda")
for i, b in enumerate(bits):
    print(f"{b:08x} {f16c[i]:04x} {f16g[i]:04x} {bf16c[i]:04x} {bf16g[i]:04x}")
