"""Raw element bit patterns <-> a lane's 32-bit register words.

Inside a lane, an operand's elements form one little-endian bit stream: element
``j`` of ``b``-bit width occupies bits ``[j*b, (j+1)*b)`` of the word sequence,
so element 0 sits in the least significant bits of the first register, and a
64-bit element spans two consecutive words, low word first.
"""

from __future__ import annotations

import numpy as np


def words_to_elements(words: np.ndarray, bits: int) -> np.ndarray:
    """(..., nwords) uint32 -> (..., nelem) uint64 raw element bit patterns."""
    words = np.asarray(words, dtype=np.uint32)
    if bits == 64:
        w = words.astype(np.uint64)
        return w[..., 0::2] | (w[..., 1::2] << np.uint64(32))
    per = 32 // bits
    shifts = (np.arange(per, dtype=np.uint64) * np.uint64(bits))
    mask = np.uint64((1 << bits) - 1)
    el = (words.astype(np.uint64)[..., :, None] >> shifts) & mask
    return el.reshape(*words.shape[:-1], words.shape[-1] * per)


def elements_to_words(elems: np.ndarray, bits: int) -> np.ndarray:
    """(..., nelem) raw bit patterns -> (..., nwords) uint32."""
    elems = np.asarray(elems).astype(np.uint64)
    if bits == 64:
        out = np.empty(elems.shape[:-1] + (elems.shape[-1] * 2,), dtype=np.uint32)
        out[..., 0::2] = (elems & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out[..., 1::2] = (elems >> np.uint64(32)).astype(np.uint32)
        return out
    per = 32 // bits
    mask = np.uint64((1 << bits) - 1)
    el = (elems & mask).reshape(*elems.shape[:-1], elems.shape[-1] // per, per)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    return np.bitwise_or.reduce(el << shifts, axis=-1).astype(np.uint32)
