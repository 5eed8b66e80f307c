#!/usr/bin/env python3
"""Cuts a test fixture out of a GGUF file quantized by llama.cpp's llama-quantize.

Development-time only (needs llama.cpp's gguf-py, see ../shared/peer/README.md):

  PYTHONPATH=$LLAMA/gguf-py /usr/bin/python3 tools/quant_fixtures/make_fixture.py \
      QUANTIZED.gguf TENSOR_NAME MAX_ROWS OUT.bin

writes the first MAX_ROWS rows of the tensor as stored, and gguf-py's own
dequantization of them (gguf.quants.dequantize), which tests/core's
formats_llama_quantized_test compares our dequantizers against bit for bit.

OUT.bin layout (little endian):
  char[4] 'QFIX'; uint32 ggml type id; uint32 rows; uint32 cols
  uint8   raw[rows * row_bytes]          the rows as llama-quantize wrote them
  float32 dequantized[rows][cols]        gguf-py's values
"""
import struct
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def main() -> None:
    path, name, max_rows, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    reader = GGUFReader(path)
    tensor = next((t for t in reader.tensors if t.name == name), None)
    if tensor is None:
        sys.exit(f"{path}: no tensor named {name}")
    cols = int(tensor.shape[0])
    raw = np.asarray(tensor.data)  # [rows][row_bytes] uint8 for quantized types
    rows = min(max_rows, raw.shape[0])
    raw = raw[:rows]
    values = dequantize(raw, tensor.tensor_type).astype(np.float32).reshape(rows, cols)
    with open(out, "wb") as f:
        f.write(b"QFIX")
        f.write(struct.pack("<III", int(tensor.tensor_type), rows, cols))
        f.write(np.ascontiguousarray(raw).astype(np.uint8).tobytes())
        f.write(values.astype("<f4").tobytes())
    print(f"{out}: {tensor.tensor_type.name} {rows} x {cols}")


if __name__ == "__main__":
    main()
