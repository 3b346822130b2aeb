"""The block-scaled group kernel (kind::mxf4 / mxf4nvf4: GST-FDPA); its tables are tables.group_tables."""

from __future__ import annotations

import numpy as np
from numba import prange

from ...numerics.fused import _bits_f32
from ..hostfpu import fp_env_ok as _fp_env_ok
from .dot import _round8_common
from .tables import _exp2of_f, _pow2f

def _group_kernel(a, b, c, e, d, SFA, SFB, need, M, K, Ka, fa, wa, sa, ba, fb, wb, sb, bb, fc, wc, fd, wd, sp,
                  sparse, G, st, fracf, rp, lut_a, lut_b, snan, sexp, sval, zon, zexp, chunk, q64, q32, pa2, pb2):
    """Every warp of a block-scaled group recipe; need[w] = 2 for warps left to the exact kernel (a NaN
    scale, a NaN / inf C, a host FPU not in its default state), else 0."""
    W = a.shape[0]
    N = 8
    NG = Ka // G
    nchunks = (W + chunk - 1) // chunk
    for ch in prange(nchunks):
        w0 = ch * chunk
        w1 = min(W, w0 + chunk)
        if not _fp_env_ok(q64, q32):
            for w in range(w0, w1):
                need[w] = 2
            continue
        AV = np.empty(M * Ka, np.float64)
        BR = np.empty(K * N, np.float64)          # B row-major (K, 8)
        CV = np.empty(M * N, np.float64)
        LC = np.empty(M * Ka, np.int64)
        DV = np.empty(M * N, np.uint32)
        GS = np.empty(N, np.float64)
        T = np.empty((NG, N), np.float64)
        GG = np.empty((NG, N), np.float64)
        TE = np.empty((NG, N), np.float64)
        SBV = np.empty((NG, N), np.float64)
        SBE = np.empty((NG, N), np.float64)
        EM = np.empty(N, np.float64)
        VV8 = np.empty(N, np.float64)
        OV8 = np.empty(N, np.float64)
        OB8 = np.empty(N, np.uint64)
        am = (1 << ba) - 1
        bm = (1 << bb) - 1
        for w in range(w0, w1):
            bad = False
            if ba == 4 and bb == 4 and pa2.shape[0] > 1:
                # two elements a byte: one table look-up each for the low and the high nibble
                a8 = a[w].reshape(a.shape[1] * a.shape[2]).view(np.uint8)
                b8 = b[w].reshape(b.shape[1] * b.shape[2]).view(np.uint8)
                for x in range(a8.shape[0]):
                    v = a8[x]
                    AV[pa2[x, 0]] = lut_a[v & 15]
                    AV[pa2[x, 1]] = lut_a[v >> 4]
                for x in range(b8.shape[0]):
                    v = b8[x]
                    BR[pb2[x, 0]] = lut_b[v & 15]
                    BR[pb2[x, 1]] = lut_b[v >> 4]
            else:
                for lane in range(32):
                    for j in range(fa.shape[1]):
                        AV[fa[lane, j]] = lut_a[(a[w, lane, wa[lane, j]] >> sa[lane, j]) & am]
                    for j in range(fb.shape[1]):
                        f = fb[lane, j]                # B^T flat: column * K + row
                        BR[(f % K) * N + f // K] = lut_b[(b[w, lane, wb[lane, j]] >> sb[lane, j]) & bm]
            for lane in range(32):
                for j in range(fc.shape[1]):
                    v = np.float64(_bits_f32(c[w, lane, wc[lane, j]]))
                    bad |= v - v != 0.0
                    CV[fc[lane, j]] = v
            for i in range(M):
                for s in range(SFA.shape[2]):
                    bad |= snan[SFA[w, i, s]]
            for j in range(N):
                for s in range(SFB.shape[2]):
                    bad |= snan[SFB[w, j, s]]
            if bad:
                need[w] = 2
                continue
            need[w] = 0
            for g in range(NG):          # B's scale values and exponents, per group and column
                for j in range(N):
                    xb = SFB[w, j, (g * G) // st]
                    SBV[g, j] = sval[xb]
                    SBE[g, j] = np.float64(sexp[xb])
            if sparse:
                for lane in range(32):
                    for j in range(fa.shape[1]):
                        idx = (np.int64(e[w, sp[lane, j, 0]]) >> sp[lane, j, 1]) & 3
                        LC[fa[lane, j]] = sp[lane, j, 2] + sp[lane, j, 3] * idx + sp[lane, j, 4]
            for i in range(M):
                # every group's exact sum (any order: exact), the groups' chains interleaved
                for g in range(NG):
                    for j in range(N):
                        GG[g, j] = 0.0
                if sparse:
                    for g in range(NG):
                        for t in range(g * G, g * G + G):
                            x = AV[i * Ka + t]
                            r = LC[i * Ka + t]
                            for j in range(N):
                                GG[g, j] += x * BR[r * N + j]
                else:
                    # eight chains a set in locals (registers), even and odd terms in two sets
                    for g in range(NG):
                        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
                        u0 = u1 = u2 = u3 = u4 = u5 = u6 = u7 = 0.0
                        t0 = g * G
                        for h in range(G // 2):
                            t = t0 + 2 * h
                            x = AV[i * Ka + t]
                            y = AV[i * Ka + t + 1]
                            bx = BR[t * N:t * N + 16]
                            s0 += x * bx[0]
                            s1 += x * bx[1]
                            s2 += x * bx[2]
                            s3 += x * bx[3]
                            s4 += x * bx[4]
                            s5 += x * bx[5]
                            s6 += x * bx[6]
                            s7 += x * bx[7]
                            u0 += y * bx[8]
                            u1 += y * bx[9]
                            u2 += y * bx[10]
                            u3 += y * bx[11]
                            u4 += y * bx[12]
                            u5 += y * bx[13]
                            u6 += y * bx[14]
                            u7 += y * bx[15]
                        if G % 2:
                            t = t0 + G - 1
                            x = AV[i * Ka + t]
                            s0 += x * BR[t * N]
                            s1 += x * BR[t * N + 1]
                            s2 += x * BR[t * N + 2]
                            s3 += x * BR[t * N + 3]
                            s4 += x * BR[t * N + 4]
                            s5 += x * BR[t * N + 5]
                            s6 += x * BR[t * N + 6]
                            s7 += x * BR[t * N + 7]
                        GG[g, 0] = s0 + u0
                        GG[g, 1] = s1 + u1
                        GG[g, 2] = s2 + u2
                        GG[g, 3] = s3 + u3
                        GG[g, 4] = s4 + u4
                        GG[g, 5] = s5 + u5
                        GG[g, 6] = s6 + u6
                        GG[g, 7] = s7 + u7
                for g in range(NG):
                    xa = SFA[w, i, (g * G) // st]
                    sav = sval[xa]
                    sae = np.float64(sexp[xa])
                    nz = 0
                    for j in range(N):       # branch-free: a zero term's exponent is settled below
                        tv = GG[g, j] * sav * SBV[g, j]
                        T[g, j] = tv
                        TE[g, j] = sae + SBE[g, j] if tv != 0.0 else zexp
                        nz += tv == 0.0
                    if nz:
                        for j in range(N):
                            if T[g, j] != 0.0 or sav == 0.0 or SBV[g, j] == 0.0:
                                continue
                            # a zero sum of nonzero products still has its scales' exponent
                            for t in range(g * G, g * G + G):
                                r = LC[i * Ka + t] if sparse else t
                                if AV[i * Ka + t] != 0.0 and BR[r * N + j] != 0.0:
                                    TE[g, j] = sae + SBE[g, j]
                                    break
                # largest exponent, then the truncated terms: loops over the 8 columns (vector code);
                # the float64 sum of the truncated terms is exact in any order
                for j in range(N):
                    cv = CV[i * N + j]
                    EM[j] = np.float64(max(_exp2of_f(cv), -126)) if cv != 0.0 else zexp
                for g in range(NG):
                    for j in range(N):
                        EM[j] = max(EM[j], TE[g, j])
                for j in range(N):
                    EM[j] = max(EM[j], -900.0)
                    GS[j] = _pow2f(np.int64(fracf - EM[j]))
                    VV8[j] = np.trunc(CV[i * N + j] * GS[j])
                for g in range(NG):
                    for j in range(N):
                        VV8[j] += np.trunc(T[g, j] * GS[j])
                for j in range(N):
                    VV8[j] *= _pow2f(np.int64(EM[j] - fracf))
                _round8_common(VV8, OB8, OV8, rp)
                for j in range(N):
                    DV[i * N + j] = np.uint32(OB8[j])
            for lane in range(32):
                for j in range(fd.shape[1]):
                    d[w, lane, wd[lane, j]] = DV[fd[lane, j]]

def _nibble_positions(fa, wa, sa, ba, fb, wb, sb, bb, k):
    """For 4-bit A and B: per byte of a warp's words (lane-major, little-endian), where its low and high
    nibble go: A's flat position (row * Ka + term), B's row-major (K, 8) position.  (1, 2) dummies else."""
    if ba != 4 or bb != 4:
        return np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64)
    out = []
    for flat, word, shift, nw in ((fa, wa, sa, None), (fb, wb, sb, None)):
        nwords = int(word.max()) + 1
        pos = np.full((32 * nwords * 4, 2), -1, np.int64)
        lane = np.repeat(np.arange(32), flat.shape[1])
        byte = lane * nwords * 4 + word.ravel() * 4 + shift.ravel() // 8
        half = (shift.ravel() % 8) // 4
        pos[byte, half] = flat.ravel()
        out.append(pos)
    pa2, pb2 = out
    pb2 = np.where(pb2 >= 0, (pb2 % k) * 8 + pb2 // k, -1)
    if (pa2 < 0).any() or (pb2 < 0).any():
        return np.zeros((1, 2), np.int64), np.zeros((1, 2), np.int64)
    return np.ascontiguousarray(pa2), np.ascontiguousarray(pb2)
