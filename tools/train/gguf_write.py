"""A small GGUF v3 writer (and the matching reader, used to check what was written).

File layout (little-endian), as the GGUF specification describes it:
  magic "GGUF" | u32 version = 3 | u64 tensor_count | u64 kv_count
  kv_count x  (string key, u32 value_type, value)
  tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset)
  zero padding to `general.alignment` (32 by default)
  tensor data, each tensor starting at its offset (relative to the data start, aligned)
A string is u64 byte length + UTF-8 bytes; an array is u32 element type + u64 count + items.
ne[0] is the fastest-varying dimension, so a numpy array of shape (rows, cols) is stored
with ne = [cols, rows].
"""
import struct

import numpy as np

ALIGNMENT = 32

# GGUF metadata value types.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, \
    FLOAT64 = range(13)
_SCALAR_FORMATS = {UINT8: "B", INT8: "b", UINT16: "H", INT16: "h", UINT32: "I", INT32: "i",
                   FLOAT32: "f", BOOL: "?", UINT64: "Q", INT64: "q", FLOAT64: "d"}

# ggml tensor types used here.
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
Q8_0_BLOCK = 32  # Q8_0 block: f16 scale d, then 32 int8 q; value = d * q


def quantize_q8_0(values):
    """values: float32 [rows, cols], cols % 32 == 0 -> bytes in ggml's block_q8_0 layout."""
    blocks = values.astype(np.float32).reshape(-1, Q8_0_BLOCK)
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    x = blocks * inv
    q = (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int8)  # roundf: half away from 0
    out = np.empty(len(blocks), dtype=[("d", "<f2"), ("q", "i1", Q8_0_BLOCK)])
    out["d"], out["q"] = d[:, 0].astype(np.float16), q
    return out.tobytes()


def dequantize_q8_0(raw, shape):
    blocks = np.frombuffer(raw, dtype=[("d", "<f2"), ("q", "i1", Q8_0_BLOCK)])
    return (blocks["d"].astype(np.float32)[:, None] * blocks["q"]).reshape(shape)


def _string(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(vtype, value):
    if vtype == STRING:
        return _string(value)
    return struct.pack("<" + _SCALAR_FORMATS[vtype], value)


class GGUFWriter:
    def __init__(self):
        self.kvs = []  # (key, type, value, element type for arrays)
        self.tensors = []  # (name, ne, ggml type, bytes)

    def add(self, key, vtype, value):
        self.kvs.append((key, vtype, value, None))

    def add_array(self, key, elem_type, values):
        self.kvs.append((key, ARRAY, list(values), elem_type))

    def add_tensor(self, name, array, ggml_type):
        """array: numpy float array, shape (..., cols); stored as F32, F16 or Q8_0."""
        array = np.ascontiguousarray(array, dtype=np.float32)
        if ggml_type == GGML_F32:
            raw = array.astype("<f4").tobytes()
        elif ggml_type == GGML_F16:
            raw = array.astype("<f2").tobytes()
        elif ggml_type == GGML_Q8_0:
            if array.shape[-1] % Q8_0_BLOCK:
                raise ValueError(f"{name}: Q8_0 needs rows of a multiple of 32, got {array.shape}")
            raw = quantize_q8_0(array)
        else:
            raise ValueError(f"{name}: unsupported ggml type {ggml_type}")
        self.tensors.append((name, list(reversed(array.shape)), ggml_type, raw))

    def write(self, path):
        head = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kvs))]
        for key, vtype, value, elem_type in self.kvs:
            head.append(_string(key) + struct.pack("<I", vtype))
            if vtype == ARRAY:
                head.append(struct.pack("<IQ", elem_type, len(value)))
                head.extend(_value(elem_type, v) for v in value)
            else:
                head.append(_value(vtype, value))
        offset, data = 0, []
        for name, ne, ggml_type, raw in self.tensors:
            head.append(_string(name) + struct.pack("<I", len(ne)))
            head.append(struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", ggml_type, offset))
            padded = raw + b"\0" * (-len(raw) % ALIGNMENT)
            data.append(padded)
            offset += len(padded)
        head = b"".join(head)
        with open(path, "wb") as f:
            f.write(head + b"\0" * (-len(head) % ALIGNMENT))
            f.writelines(data)


class _Cursor:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def string(self):
        n = self.take("Q")
        self.pos += n
        return bytes(self.buf[self.pos - n:self.pos]).decode("utf-8")

    def value(self, vtype):
        if vtype == STRING:
            return self.string()
        if vtype == ARRAY:
            elem_type, count = self.take("I"), self.take("Q")
            return [self.value(elem_type) for _ in range(count)]
        return self.take(_SCALAR_FORMATS[vtype])


def read_gguf(path):
    """Returns (metadata dict, {tensor name: float32 numpy array with numpy shape})."""
    with open(path, "rb") as f:
        buf = f.read()
    cur = _Cursor(buf)
    if cur.take("4s") != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    version, n_tensors, n_kvs = cur.take("IQQ")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, expected 3")
    meta = {}
    for _ in range(n_kvs):
        key = cur.string()
        meta[key] = cur.value(cur.take("I"))
    infos = []
    for _ in range(n_tensors):
        name, n_dims = cur.string(), cur.take("I")
        ne = [cur.take("Q") for _ in range(n_dims)]
        infos.append((name, ne, *cur.take("IQ")))
    alignment = meta.get("general.alignment", ALIGNMENT)
    data_start = cur.pos + (-cur.pos % alignment)
    tensors = {}
    for name, ne, ggml_type, offset in infos:
        shape, count = tuple(reversed(ne)), int(np.prod(ne))
        start = data_start + offset
        if ggml_type == GGML_F32:
            t = np.frombuffer(buf, "<f4", count, start)
        elif ggml_type == GGML_F16:
            t = np.frombuffer(buf, "<f2", count, start).astype(np.float32)
        elif ggml_type == GGML_Q8_0:
            nbytes = count // Q8_0_BLOCK * (2 + Q8_0_BLOCK)
            t = dequantize_q8_0(buf[start:start + nbytes], shape)
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported ggml type {ggml_type}")
        tensors[name] = t.reshape(shape)
    return meta, tensors
