"""Minimal safetensors reading and writing for the numeric tests (F32 only,
standard library only): 8-byte little-endian header length, JSON header,
raw little-endian data."""

import json
import struct


def read(path):
    """Returns (tensors, metadata): tensors maps name -> (shape, [floats])."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    metadata = header.pop("__metadata__", {})
    body = data[8 + length :]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        if info["dtype"] != "F32":
            continue
        count = (end - begin) // 4
        tensors[name] = (info["shape"], list(struct.unpack(f"<{count}f", body[begin:end])))
    return tensors, metadata


def write(path, tensors, metadata=None):
    """tensors maps name -> (shape, [floats]); written F32 in name order."""
    header = {}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        shape, values = tensors[name]
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
