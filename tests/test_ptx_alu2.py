"""ALU rows of issue 20 (part 2): worked examples derived by hand from the PTX ISA's rules, and the
replay of the gen_alu2 H100 captures (xfail until tests/ptx/data/cap_alu2.npz is committed)."""

from __future__ import annotations

import numpy as np

from warpsim.hw.golden import open_golden
import pytest

import warpsim.ptx as wp
from warpsim.ptx import PTXError, Warp, instruction_status

from alu2_replay import CAPTURE, G, kernel_ptx, run_form

# ----------------------------------------------------------------------------------------------
# worked examples: (id, PTX statements, {register: expected word}); every expectation is derived
# from the rule in the PTX ISA (or IEEE 754 for the rounding), written next to it

EXAMPLES = [
    # div / rem: truncating; x / 0 and x % 0 as modelled (all ones; capture pending)
    ("div.u32", "div.u32 %r1, 100, 7; rem.u32 %r2, 100, 7;", {"%r1": 14, "%r2": 2}),
    ("div.s32-trunc", "div.s32 %r1, -7, 2; rem.s32 %r2, -7, 2;", {"%r1": 0xFFFFFFFD, "%r2": 0xFFFFFFFF}),
    ("div.s32-min", "div.s32 %r1, 0x80000000, -1; rem.s32 %r2, 0x80000000, -1;", {"%r1": 0x80000000, "%r2": 0}),
    ("div.u32-by0", "div.u32 %r1, 5, 0; rem.u32 %r2, 5, 0;", {"%r1": 0xFFFFFFFF, "%r2": 0xFFFFFFFF}),
    ("div.s32-by0", "div.s32 %r1, 5, 0; div.s32 %r2, -5, 0; rem.s32 %r3, -5, 0;",
     {"%r1": 0xFFFFFFFF, "%r2": 0xFFFFFFFF, "%r3": 0xFFFFFFFF}),
    ("div.s16", "div.s16 %rs1, -32768, -1; rem.s16 %rs2, 7, -3;", {"%rs1": 0x8000, "%rs2": 1}),
    ("div.u64", "div.u64 %rd1, 0xFFFFFFFFFFFFFFFF, 3; rem.u64 %rd2, 0xFFFFFFFFFFFFFFFF, 10;",
     {"%rd1": 0x5555555555555555, "%rd2": 5}),
    ("div.s64", "div.s64 %rd1, -9, 4; rem.s64 %rd2, -9, 4;", {"%rd1": (1 << 64) - 2, "%rd2": (1 << 64) - 1}),
    # carry chains: CC.CF is the carry of add, the borrow of sub
    ("addc", "add.cc.u32 %r1, 0xFFFFFFFF, 1; addc.u32 %r2, 0, 0;", {"%r1": 0, "%r2": 1}),
    ("add64-from-32", "add.cc.u32 %r1, 0x80000000, 0x80000000; addc.u32 %r2, 1, 2;", {"%r1": 0, "%r2": 4}),
    ("subc-borrow", "sub.cc.u32 %r1, 0, 1; subc.u32 %r2, 5, 2;", {"%r1": 0xFFFFFFFF, "%r2": 2}),
    ("subc-noborrow", "sub.cc.u32 %r1, 5, 3; subc.u32 %r2, 5, 2;", {"%r1": 2, "%r2": 3}),
    ("addc.u64", "add.cc.u64 %rd1, 0xFFFFFFFFFFFFFFFF, 2; addc.u64 %rd2, 0, 0;", {"%rd1": 1, "%rd2": 1}),
    # mixing the two: CF is the adder's carry out, so subc after an add.cc without carry takes 1 more
    # and addc after a sub.cc without borrow adds 1 (H100 capture: carry_addsub_*, carry_subadd_*)
    ("carry.mixed", "add.cc.u32 %r1, 1, 1; subc.u32 %r2, 5, 2; sub.cc.u32 %r3, 5, 3; addc.u32 %r4, 5, 2; "
     "sub.cc.u32 %r5, 0, 1; addc.u32 %r6, 5, 2;", {"%r2": 2, "%r4": 8, "%r6": 7}),
    ("addc.cc-chain", "add.cc.u32 %r1, 0xFFFFFFFF, 1; addc.cc.u32 %r2, 0xFFFFFFFF, 0; addc.u32 %r3, 0, 0;",
     {"%r1": 0, "%r2": 0, "%r3": 1}),
    # (2^32-1)^2 = 2^64 - 2^33 + 1: lo 1, hi 0xfffffffe; 1 + 0xffffffff carries
    ("madc", "mad.lo.cc.u32 %r1, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF; madc.hi.u32 %r2, 0xFFFFFFFF, 0xFFFFFFFF, 0;",
     {"%r1": 0, "%r2": 0xFFFFFFFF}),
    ("min.relu", "min.relu.s32 %r1, -5, 3; max.relu.s32 %r2, -5, -3; max.relu.s32 %r3, 7, 3;",
     {"%r1": 0, "%r2": 0, "%r3": 7}),
    ("minmax.x2", "min.s16x2 %r1, 0x8000FFFF, 0x00010002; max.u16x2 %r2, 0x8000FFFF, 0x00010002; "
     "max.relu.s16x2 %r3, 0x8000FFFF, 0xFFF0FFFE;", {"%r1": 0x8000FFFF, "%r2": 0x8000FFFF, "%r3": 0}),
    ("sad", "sad.u32 %r1, 3, 10, 100; sad.s32 %r2, -3, 4, 1; sad.u16 %rs1, 0xFFFF, 1, 0;",
     {"%r1": 107, "%r2": 8, "%rs1": 0xFFFE}),
    # shf: {b, a} as 64 bits; wrap takes n & 31, clamp min(n, 32)
    ("shf", "shf.l.wrap.b32 %r1, 0x80000001, 1, 33; shf.l.clamp.b32 %r2, 0x80000001, 1, 33; "
     "shf.r.wrap.b32 %r3, 0x80000001, 1, 4; shf.r.clamp.b32 %r4, 0x80000001, 1, 40;",
     {"%r1": 3, "%r2": 0x80000001, "%r3": 0x18000000, "%r4": 1}),
    # prmt on {b, a} = bytes 77 66 55 44 | 33 22 11 00 (ISA's mode tables)
    ("prmt.modes", "mov.b32 %r9, 0x33221100; mov.b32 %r8, 0x77665544; prmt.b32.f4e %r1, %r9, %r8, 1; "
     "prmt.b32.b4e %r2, %r9, %r8, 0; prmt.b32.rc8 %r3, %r9, %r8, 2; prmt.b32.ecl %r4, %r9, %r8, 2; "
     "prmt.b32.ecr %r5, %r9, %r8, 1; prmt.b32.rc16 %r6, %r9, %r8, 1; prmt.b32 %r7, %r9, %r8, 0x7531;",
     {"%r1": 0x44332211, "%r2": 0x55667700, "%r3": 0x22222222, "%r4": 0x33222222, "%r5": 0x11111100,
      "%r6": 0x33223322, "%r7": 0x77553311}),
    # lop3: with a = F0, b = CC, c = AA in every byte the result is the LUT itself
    ("lop3", "mov.b32 %r7, 0xF0F0F0F0; mov.b32 %r8, 0xCCCCCCCC; mov.b32 %r9, 0xAAAAAAAA; "
     "lop3.b32 %r1, %r7, %r8, %r9, 0x80; lop3.b32 %r2, %r7, %r8, %r9, 0xE8; lop3.b32 %r3, %r7, %r8, %r9, 0x96;",
     {"%r1": 0x80808080, "%r2": 0xE8E8E8E8, "%r3": 0x96969696}),
    ("bfind", "bfind.u32 %r1, 0x10000; bfind.u32 %r2, 0; bfind.shiftamt.u32 %r3, 0x10000; bfind.s32 %r4, -1; "
     "bfind.s32 %r5, 0xFFFF0000; bfind.s64 %r6, 1; bfind.shiftamt.u64 %r7, 1;",
     {"%r1": 16, "%r2": 0xFFFFFFFF, "%r3": 15, "%r4": 0xFFFFFFFF, "%r5": 15, "%r6": 0, "%r7": 63}),
    ("dp4a", "dp4a.u32.u32 %r1, 0x01020304, 0x01010101, 10; dp4a.s32.s32 %r2, 0xFF020304, 0x02020202, 0; "
     "dp4a.s32.u32 %r3, 0xFF, 0xFF, 0;", {"%r1": 20, "%r2": 16, "%r3": 0xFFFFFF01}),
    ("dp2a", "dp2a.lo.u32.u32 %r1, 0x00030002, 0x04030201, 1; dp2a.hi.u32.u32 %r2, 0x00030002, 0x04030201, 1; "
     "dp2a.lo.s32.s32 %r3, 0xFFFF0001, 0x0000FF05, 0;", {"%r1": 9, "%r2": 19, "%r3": 6}),
    # testp.normal: the H100 counts +-0 as normal (cap_alu2: testp_normal_f32 / _f64)
    ("testp", "testp.subnormal.f32 %p1, 0f00000001; testp.normal.f32 %p2, 0f00000000; "
     "testp.notanumber.f32 %p3, 0f7FC00000; testp.finite.f32 %p4, 0f7F800000; "
     "testp.infinite.f64 %p5, 0dFFF0000000000000; testp.number.f64 %p6, 0d7FF8000000000000;",
     {"%p1": 1, "%p2": 1, "%p3": 1, "%p4": 0, "%p5": 1, "%p6": 0}),
    ("abs.neg.int", "abs.s16 %rs1, -32768; neg.s64 %rd1, 1;", {"%rs1": 0x8000, "%rd1": (1 << 64) - 1}),
    # f32 rounding modes: 1 + 2^-24 is exactly half an ulp of 1
    ("add.modes", "add.rz.f32 %f1, 0f3F800000, 0f33800000; add.rn.f32 %f2, 0f3F800000, 0f33800000; "
     "add.rp.f32 %f3, 0f3F800000, 0f33800000; add.rm.f32 %f4, 0f3F800000, 0f33800000; "
     "add.rm.f32 %f5, 0fBF800000, 0fB3800000; add.rz.f32 %f6, 0fBF800000, 0fB3800000; "
     "add.rn.f32 %f7, 0f3F800000, 0f33800001;",
     {"%f1": 0x3F800000, "%f2": 0x3F800000, "%f3": 0x3F800001, "%f4": 0x3F800000, "%f5": 0xBF800001,
      "%f6": 0xBF800000, "%f7": 0x3F800001}),
    ("signed-zeros", "add.rm.f32 %f1, 0f3F800000, 0fBF800000; add.rz.f32 %f2, 0f3F800000, 0fBF800000; "
     "add.rm.f32 %f3, 0f00000000, 0f80000000; add.rp.f32 %f4, 0f00000000, 0f80000000; "
     "mul.rm.f32 %f5, 0f00000000, 0f40A00000; mul.rm.f32 %f6, 0f80000000, 0f40A00000; "
     "sub.rm.f32 %f7, 0f00000000, 0f00000000;",
     {"%f1": 0x80000000, "%f2": 0, "%f3": 0x80000000, "%f4": 0, "%f5": 0, "%f6": 0x80000000, "%f7": 0x80000000}),
    ("overflow", "mul.rz.f32 %f1, 0f7F7FFFFF, 0f40000000; mul.rm.f32 %f2, 0f7F7FFFFF, 0f40000000; "
     "mul.rm.f32 %f3, 0fFF7FFFFF, 0f40000000; mul.rp.f32 %f4, 0fFF7FFFFF, 0f40000000; "
     "mul.rp.f32 %f5, 0f7F7FFFFF, 0f40000000;",
     {"%f1": 0x7F7FFFFF, "%f2": 0x7F7FFFFF, "%f3": 0xFF800000, "%f4": 0xFF7FFFFF, "%f5": 0x7F800000}),
    ("ftz", "mul.rz.f32 %f1, 0f00800000, 0f3F000000; mul.rz.ftz.f32 %f2, 0f00800000, 0f3F000000; "
     "mul.rz.ftz.f32 %f3, 0f80800000, 0f3F000000; add.rz.ftz.f32 %f4, 0f00000001, 0f00000000;",
     {"%f1": 0x00400000, "%f2": 0, "%f3": 0x80000000, "%f4": 0}),
    ("sat", "add.rn.sat.f32 %f1, 0f3F400000, 0f3F000000; add.rn.sat.f32 %f2, 0fBF800000, 0f3F000000; "
     "mul.rn.sat.f32 %f3, 0f7FC00000, 0f3F800000; fma.rn.sat.f32 %f4, 0f40000000, 0f40000000, 0fBF800000;",
     {"%f1": 0x3F800000, "%f2": 0, "%f3": 0, "%f4": 0x3F800000}),
    ("nan32", "add.rz.f32 %f1, 0f7FC00001, 0f3F800000; mul.rp.f32 %f2, 0f7F800000, 0f00000000;",
     {"%f1": 0x7FFFFFFF, "%f2": 0x7FFFFFFF}),
    ("fma.modes", "fma.rz.f32 %f1, 0f3F800000, 0f3F800000, 0f33800000; fma.rp.f32 %f2, 0f3F800000, 0f3F800000, 0f33800000; "
     "fma.rm.f32 %f3, 0f3F800000, 0fBF800000, 0f3F800000; mad.rp.f32 %f4, 0f3F800001, 0f3F800001, 0f00000000;",
     {"%f1": 0x3F800000, "%f2": 0x3F800001, "%f3": 0x80000000, "%f4": 0x3F800003}),
    # f64: 1 + 2^-60 (0x3C30...); (1 + u)^2 = 1 + 2u + u^2; fma: 2u + u^2 = 2^-51 + 2^-104, a tie -> 2^-51
    ("f64.modes", "add.rp.f64 %fd1, 0d3FF0000000000000, 0d3C30000000000000; "
     "add.rz.f64 %fd2, 0d3FF0000000000000, 0d3C30000000000000; "
     "mul.rm.f64 %fd3, 0d3FF0000000000001, 0d3FF0000000000001; mul.rp.f64 %fd4, 0d3FF0000000000001, 0d3FF0000000000001; "
     "fma.rn.f64 %fd5, 0d3FF0000000000001, 0d3FF0000000000001, 0dBFF0000000000000;",
     {"%fd1": 0x3FF0000000000001, "%fd2": 0x3FF0000000000000, "%fd3": 0x3FF0000000000002,
      "%fd4": 0x3FF0000000000003, "%fd5": 0x3CC0000000000000}),
    ("div.rcp.sqrt", "div.rn.f32 %f1, 0f3F800000, 0f40400000; div.rn.f32 %f2, 0f3F800000, 0f00000000; "
     "div.rn.f32 %f3, 0f00000000, 0f00000000; div.rn.ftz.f32 %f4, 0f3F800000, 0f00000001; "
     "div.rn.f32 %f5, 0f00800000, 0f40800000; div.rn.ftz.f32 %f6, 0f00800000, 0f40800000; "
     "rcp.rn.f32 %f7, 0f40400000; rcp.rn.f32 %f8, 0f80000000; sqrt.rn.f32 %f9, 0f40000000; "
     "sqrt.rn.f32 %f10, 0fBF800000; sqrt.rn.f32 %f11, 0f80000000;",
     {"%f1": 0x3EAAAAAB, "%f2": 0x7F800000, "%f3": 0x7FFFFFFF, "%f4": 0x7F800000, "%f5": 0x00200000,
      "%f6": 0, "%f7": 0x3EAAAAAB, "%f8": 0xFF800000, "%f9": 0x3FB504F3, "%f10": 0x7FFFFFFF, "%f11": 0x80000000}),
    # 1/3 = 0x3EAAAAAA.AAA..: below 0x3EAAAAAB; sqrt(2) = 1.41421356..: 0x3FB504F3 (1.41421354) below it
    ("directed.div.sqrt", "div.rz.f32 %f1, 0f3F800000, 0f40400000; div.rp.f32 %f2, 0f3F800000, 0f40400000; "
     "div.rm.f32 %f3, 0fBF800000, 0f40400000; div.rz.f32 %f4, 0f3F800000, 0f40800000; "
     "rcp.rz.f32 %f5, 0f40400000; rcp.rp.f32 %f6, 0f40400000; sqrt.rz.f32 %f7, 0f40000000; "
     "sqrt.rp.f32 %f8, 0f40000000; sqrt.rm.f32 %f9, 0f41100000; div.rz.f32 %f10, 0f7F7FFFFF, 0f3F000000;",
     {"%f1": 0x3EAAAAAA, "%f2": 0x3EAAAAAB, "%f3": 0xBEAAAAAB, "%f4": 0x3E800000, "%f5": 0x3EAAAAAA,
      "%f6": 0x3EAAAAAB, "%f7": 0x3FB504F3, "%f8": 0x3FB504F4, "%f9": 0x40400000, "%f10": 0x7F7FFFFF}),
    # f64: 1/3 rounds to 0x3FD5555555555555 (below 1/3); sqrt(2) to 0x3FF6A09E667F3BCD (above sqrt 2)
    ("directed.f64", "div.rz.f64 %fd1, 0d3FF0000000000000, 0d4008000000000000; "
     "div.rp.f64 %fd2, 0d3FF0000000000000, 0d4008000000000000; rcp.rm.f64 %fd3, 0d4008000000000000; "
     "sqrt.rp.f64 %fd4, 0d4000000000000000; sqrt.rz.f64 %fd5, 0d4000000000000000; "
     "div.rz.f64 %fd6, 0d7FEFFFFFFFFFFFFF, 0d3FE0000000000000;",
     {"%fd1": 0x3FD5555555555555, "%fd2": 0x3FD5555555555556, "%fd3": 0x3FD5555555555555,
      "%fd4": 0x3FF6A09E667F3BCD, "%fd5": 0x3FF6A09E667F3BCC, "%fd6": 0x7FEFFFFFFFFFFFFF}),
    ("f64.div.sqrt", "sqrt.rn.f64 %fd1, 0d4000000000000000; rcp.rn.f64 %fd2, 0d4008000000000000; "
     "div.rn.f64 %fd3, 0d3FF0000000000000, 0d4008000000000000;",
     {"%fd1": 0x3FF6A09E667F3BCD, "%fd2": 0x3FD5555555555555, "%fd3": 0x3FD5555555555555}),
    ("minmax", "min.NaN.f32 %f1, 0f7FC00001, 0f3F800000; min.ftz.f32 %f2, 0f00000001, 0f80000001; "
     "max.xorsign.abs.f32 %f3, 0fC0000000, 0f40400000; min.xorsign.abs.f32 %f4, 0fC0000000, 0fC0400000; "
     "max.f64 %fd1, 0d7FF8000000000000, 0d3FF0000000000000; min.f64 %fd2, 0d8000000000000000, 0d0000000000000000; "
     "max.NaN.f32 %f5, 0f3F800000, 0f40000000;",
     {"%f1": 0x7FFFFFFF, "%f2": 0x80000000, "%f3": 0xC0400000, "%f4": 0x40000000, "%fd1": 0x3FF0000000000000,
      "%fd2": 0x8000000000000000, "%f5": 0x40000000}),
    ("copysign", "copysign.f32 %f1, 0fBF800000, 0f40000000; copysign.f64 %fd1, 0d3FF0000000000000, 0dC008000000000000; "
     "abs.ftz.f32 %f2, 0f80000001; neg.f64 %fd2, 0d3FF0000000000000;",
     {"%f1": 0xC0000000, "%fd1": 0x4008000000000000, "%f2": 0, "%fd2": 0xBFF0000000000000}),
    ("setp.ext", "setp.lt.ftz.f32 %p1, 0f80000001, 0f00000001; setp.lt.f32 %p2, 0f80000001, 0f00000001; "
     "mov.b16 %h1, 0x7E00; mov.b16 %h2, 0x3C00; mov.b16 %h3, 0x4000; setp.equ.f16 %p3, %h1, %h2; "
     "setp.lt.f16 %p4, %h2, %h3; mov.b16 %h4, 0xBF80; mov.b16 %h5, 0x3F80; setp.lt.bf16 %p5, %h4, %h5; "
     "mov.b32 %r1, 0x40003C00; mov.b32 %r2, 0x3C004000; setp.lt.f16x2 %p6|%p7, %r1, %r2;",
     {"%p1": 0, "%p2": 1, "%p3": 1, "%p4": 1, "%p5": 1, "%p6": 1, "%p7": 0}),
    # set writes the comparison as a number: 1.0 in the destination's format, all ones for an integer
    # (each half of a packed destination), 0 when false; cuda_fp16.h's hexp multiplies by it
    ("set", "mov.b16 %h1, 0x3C00; mov.b16 %h2, 0x4000; set.eq.f16.f16 %h3, %h1, %h1; set.eq.f16.f16 %h4, %h1, %h2; "
     "set.lt.u32.f16 %r1, %h1, %h2; set.gt.s32.s32 %r2, 1, 2; set.lt.f32.f32 %r3, 0f3F800000, 0f40000000; "
     "mov.b32 %r4, 0x40003C00; mov.b32 %r5, 0x3C003C00; set.eq.f16x2.f16x2 %r6, %r4, %r5; "
     "set.eq.u32.f16x2 %r7, %r4, %r5; set.lt.ftz.u32.f32 %r8, 0f80000001, 0f00000001; "
     "set.lt.u32.f32 %r9, 0f80000001, 0f00000001; set.nan.bf16.bf16 %h5, %h1, %h2;",
     {"%h3": 0x3C00, "%h4": 0, "%r1": 0xFFFFFFFF, "%r2": 0, "%r3": 0x3F800000, "%r6": 0x3C00, "%r7": 0xFFFF,
      "%r8": 0, "%r9": 0xFFFFFFFF, "%h5": 0}),
    ("slct", "slct.s32.s32 %r1, 1, 2, -1; slct.s32.s32 %r2, 1, 2, 0; slct.b32.f32 %r3, 1, 2, 0f7FC00000; "
     "slct.b32.f32 %r4, 1, 2, 0f80000000; slct.ftz.b32.f32 %r5, 1, 2, 0f80000001;",
     {"%r1": 2, "%r2": 1, "%r3": 2, "%r4": 1, "%r5": 1}),
    # f16: 2^-11 (0x1000) is half an ulp of 1; bf16: 2^-8 (0x3B80) is half an ulp of 1
    ("f16", "mov.b16 %h1, 0x3C00; mov.b16 %h2, 0x1000; mov.b16 %h3, 0x1001; mov.b16 %h4, 0x4000; "
     "add.rn.f16 %h5, %h1, %h1; add.rn.f16 %h6, %h1, %h2; add.rn.f16 %h7, %h1, %h3; mul.rn.sat.f16 %h8, %h4, %h4; "
     "neg.f16 %h9, %h1;", {"%h5": 0x4000, "%h6": 0x3C00, "%h7": 0x3C01, "%h8": 0x3C00, "%h9": 0xBC00}),
    ("f16.special", "mov.b16 %h1, 0x3C00; mov.b16 %h2, 0xC000; mov.b16 %h3, 0x7E00; mov.b16 %h4, 0x7BFF; "
     "mov.b16 %h5, 0x0001; fma.rn.relu.f16 %h6, %h1, %h2, %h1; fma.rn.relu.f16 %h7, %h3, %h1, %h1; "
     "add.rn.f16 %h8, %h4, %h4; add.rn.ftz.f16 %h9, %h5, %h5; add.rn.f16 %h10, %h5, %h5; "
     "min.f16 %h11, %h3, %h1; min.NaN.f16 %h12, %h3, %h1;",
     {"%h6": 0, "%h7": 0x7FFF, "%h8": 0x7C00, "%h9": 0, "%h10": 0x0002, "%h11": 0x3C00, "%h12": 0x7FFF}),
    ("bf16", "mov.b16 %h1, 0x3F80; mov.b16 %h2, 0x3B80; mov.b16 %h3, 0x3F81; mov.b16 %h4, 0xBF80; "
     "add.rn.bf16 %h5, %h1, %h1; add.rn.bf16 %h6, %h1, %h2; add.rn.bf16 %h7, %h3, %h2; abs.bf16 %h8, %h4; "
     "fma.rn.bf16 %h9, %h4, %h1, %h1;", {"%h5": 0x4000, "%h6": 0x3F80, "%h7": 0x3F82, "%h8": 0x3F80, "%h9": 0}),
    ("packed", "mov.b32 %r1, 0x40003C00; mov.b32 %r2, 0x3C003C00; add.rn.f16x2 %r3, %r1, %r2; "
     "mov.b32 %r4, 0x3F80BF80; mul.rn.bf16x2 %r5, %r4, %r4; max.bf16x2 %r6, %r4, %r2; neg.f16x2 %r7, %r1;",
     {"%r3": 0x42004000, "%r5": 0x3F803F80, "%r6": 0x3F803C00, "%r7": 0xC000BC00}),
    ("int16", "mul.hi.s16 %rs1, -2, 0x4000; mul.wide.u16 %r1, 0xFFFF, 0xFFFF; mad.lo.s16 %rs2, 300, 300, 1; "
     "min.s16 %rs3, -1, 1; max.u16 %rs4, 0xFFFF, 1; cnot.b16 %rs5, 0; not.b64 %rd1, 0; "
     "setp.lo.u64 %p1, 1, 0xFFFFFFFFFFFFFFFF; setp.lt.s64 %p2, 1, -1;",
     {"%rs1": 0xFFFF, "%r1": 0xFFFE0001, "%rs2": (90001 & 0xFFFF), "%rs3": 0xFFFF, "%rs4": 0xFFFF, "%rs5": 1,
      "%rd1": (1 << 64) - 1, "%p1": 1, "%p2": 0}),
    # approximate units at points where every implementation is exact; div.approx of |b| > 2^126
    # is 0 (the ISA's stated behaviour)
    ("approx-exact-points", "rcp.approx.f32 %f1, 0f40000000; sqrt.approx.f32 %f2, 0f40800000; "
     "rsqrt.approx.f32 %f3, 0f40800000; ex2.approx.f32 %f4, 0f00000000; lg2.approx.f32 %f5, 0f3F800000; "
     "sin.approx.f32 %f6, 0f00000000; cos.approx.f32 %f7, 0f00000000; tanh.approx.f32 %f8, 0f00000000; "
     "div.approx.f32 %f9, 0f3F800000, 0f7F000000; div.full.f32 %f10, 0f3F800000, 0f40800000;",
     {"%f1": 0x3F000000, "%f2": 0x40000000, "%f3": 0x3F000000, "%f4": 0x3F800000, "%f5": 0, "%f6": 0,
      "%f7": 0x3F800000, "%f8": 0, "%f9": 0, "%f10": 0x3E800000}),
    # packed cvt: the first source goes to the upper half (PTX ISA)
    ("cvt.packed", "cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000; cvt.rn.bf16x2.f32 %r2, 0fBF800000, 0f3F808000; "
     "cvt.rn.satfinite.e4m3x2.f32 %rs1, 0f447A0000, 0f3F800000; cvt.rn.satfinite.e5m2x2.f32 %rs2, 0f49742400, 0fBF800000;",
     {"%r1": 0x3C004000, "%r2": 0xBF803F80, "%rs1": 0x7E38, "%rs2": 0x7BBC}),
]



@pytest.mark.parametrize("ptx,expect", [pytest.param(p, e, id=i) for i, p, e in EXAMPLES])
def test_worked_example(ptx, expect):
    w = Warp()
    w.run(ptx)
    for reg, want in expect.items():
        got = w.get(reg)
        assert (got == want).all(), f"{reg}: warpsim {int(got.flat[0]):#x}, rule {want:#x}"


def test_carry_flag_is_per_lane_and_masked():
    w = Warp()
    w.run("mov.u32 %r1, %laneid; setp.lt.u32 %p1, %r1, 16; add.cc.u32 %r2, 0xFFFFFFFF, 1; "
          "@%p1 add.cc.u32 %r3, 0, 0; addc.u32 %r4, 0, 0;")
    assert (w.get("%r4")[0] == (np.arange(32) >= 16)).all()


def test_inputs_unchanged_and_errors():
    w = Warp()
    w.set("%r1", np.arange(32, dtype=np.uint32))
    before = w.get("%r1")
    w.run("div.u32 %r2, %r1, 0;")
    assert (w.get("%r1") == before).all()
    with pytest.raises(PTXError, match="takes 4 operand"):
        Warp().run("dp4a.u32.u32 %r1, 1, 2;")
    with pytest.raises(PTXError, match="p\\|q"):
        Warp().run("mov.b32 %r1, 0; setp.lt.f16x2 %p1, %r1, %r1;")
    with pytest.raises(PTXError, match="unsupported"):
        Warp().run("div.full.f64 %fd1, 0d3FF0000000000000, 0d3FF0000000000000;")


def test_status_registry():
    # every special-function form is verified exhaustively on the GPU (docs/sfu.md, docs/sfu_sweep.json)
    for op in ("ex2.approx.ftz.f32", "div.full.f32", "rcp.approx.ftz.f64", "tanh.approx.bf16x2",
               "lg2.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "tanh.approx.f32"):
        assert instruction_status(op)[0] == "verified" and "exhaustive" in instruction_status(op)[1]
        assert "pending" not in instruction_status(op)[1]
    assert instruction_status("div.rn.f32") == ("verified", "replayed word for word against H100 captures "
                                                "(tests/ptx/data/cap_alu2.npz)")
    assert instruction_status("fma.rn.f32")[0] == "verified"
    # forms outside both captures keep the ISA-rule status
    assert instruction_status("rcp.rz.ftz.f32")[0] == "exact"
    assert instruction_status("setp.gt.f16")[0] == "exact"
    assert instruction_status("div.s32")[0] == "verified"
    assert "division by zero" in instruction_status("div.s32")[1]
    with pytest.raises(ValueError, match="not an ALU opcode"):
        instruction_status("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")


# ----------------------------------------------------------------------------------------------
# H100 captures (tests/ptx/data/cap_alu2.npz, written by device_alu2.py)

def _opcodes(f):
    return [s.strip().split()[0] for s in f.body.replace("{ ", "").split(";") if s.strip() and "selp" not in s]


def _is_approx(f):
    return any(_status(op) == "approximate" for op in _opcodes(f))


def _status(op):
    try:
        return instruction_status(op)[0]
    except ValueError:
        return "exact"


def _capture():
    if not CAPTURE.exists():
        pytest.xfail("captures pending: the lead runs warpsim/hw/device/ptx_alu2.py on an H100")
    cap = open_golden(CAPTURE)
    assert str(cap["meta.generator"]) == G.GENERATOR and int(cap["meta.seed"]) == G.SEED
    assert str(cap["meta.input_hash"]) == G.input_hash(), "gen_alu2's input stream changed since the capture"
    return cap


@pytest.mark.xfail(not CAPTURE.exists(), reason="captures pending", strict=False)
def test_capture_covers_every_form():
    cap = _capture()
    assert sorted(str(x) for x in cap["meta.forms"]) == sorted(f.name for f in G.FORMS)


#: forms whose model the H100 capture refutes: xfail here until their rows are fixed
REFUTED_BY_CAPTURE: set = set()     # the 36 forms of the first replay are fixed (docs/ptx_alu.md)


EXACT_FORMS = [f for f in G.FORMS if not _is_approx(f)]
APPROX_FORMS = [f for f in G.FORMS if _is_approx(f)]


@pytest.mark.xfail(not CAPTURE.exists(), reason="captures pending", strict=False)
def test_status_matches_capture():
    # every opcode in the capture reports "verified" (the special-function forms too, since their
    # MUFU tables: docs/sfu.md); no approximate row is left
    _capture()
    assert APPROX_FORMS == []
    exact = sorted({op for f in EXACT_FORMS for op in _opcodes(f)})
    assert len(exact) > 250
    assert [op for op in exact if _status(op) != "verified"] == []


@pytest.mark.xfail(not CAPTURE.exists(), reason="captures pending", strict=False)
@pytest.mark.parametrize("form", [pytest.param(f, id=f.name[6:]) for f in EXACT_FORMS])
def test_capture_exact(form):
    if form.name[6:] in REFUTED_BY_CAPTURE:
        pytest.xfail("the H100 capture refutes warpsim's model of this form (see REFUTED_BY_CAPTURE)")
    cap = _capture()
    outs = run_form(form)
    for j, got in enumerate(outs):
        want = cap[f"{form.name}.o{j}"]
        bad = np.nonzero(got != want)[0]
        if bad.size:
            IN = G.inputs()
            i = bad[0]
            ins = [hex(int(IN[k][i])) for k in form.ins]
            raise AssertionError(f"{form.body}: output {j}: {bad.size} of {want.size} words differ; first at "
                                 f"{i}: inputs {ins}, H100 {int(want[i]):#x}, warpsim {int(got[i]):#x}")


def test_replay_kernel_builds():
    # the replay kernel of a form is valid PTX for warpsim's loader (every form)
    for f in G.FORMS:
        mod = wp.load(kernel_ptx(f))
        assert mod.entries == ["k"] or "k" in mod.entries


def test_explain_says_how_an_sfu_form_was_verified():
    import warpsim
    assert "exhaustive" in str(warpsim.explain("ex2.approx.f32"))
    assert "exhaustive" in str(warpsim.explain("lg2.approx.f32"))
    assert "pending" not in str(warpsim.explain("sin.approx.ftz.f32"))
    assert warpsim.explain("add.rz.f32").status == "verified"
    assert warpsim.explain("sqrt.rm.ftz.f32").status == "exact"
    with pytest.raises(TypeError, match="needs the register words"):
        warpsim.explain("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")


@pytest.mark.skipif(__import__("shutil").which("nvcc") is None, reason="nvcc (CUDA toolkit) not installed")
def test_capture_plan_compiles_for_sm_90a(tmp_path):
    # ptxas accepts every form as spelled (the capture plan is what the lead runs on the H100)
    G.main(["--out", str(tmp_path), "--cubin"])
    assert (tmp_path / "alu2.cubin").stat().st_size > 100_000
