"""The whole-kernel rows' Triton PTX files (see make_kernels.py): signature, constants, geometry."""

KERNELS = {
    "triton_softmax_f32_sm90a": {"fn": "softmax", "arch": 90, "warps": 4, "shared": 16,
                                 "constants": {"BLOCK": 1024},
                                 "signature": {"out_ptr": "*fp32", "in_ptr": "*fp32", "n_cols": "i32",
                                               "BLOCK": "constexpr"}},
    "triton_layernorm_f32_sm90a": {"fn": "layernorm", "arch": 90, "warps": 4, "shared": 16,
                                   "constants": {"BLOCK": 1024},
                                   "signature": {"out_ptr": "*fp32", "in_ptr": "*fp32", "w_ptr": "*fp32",
                                                 "b_ptr": "*fp32", "n_cols": "i32", "eps": "fp32",
                                                 "BLOCK": "constexpr"}},
    "triton_attention_f16_sm90a": {"fn": "attention", "arch": 90, "warps": 4, "shared": 16384,
                                   "constants": {"D": 64, "BM": 64, "BN": 64},
                                   "signature": {"out_ptr": "*fp32", "q_ptr": "*fp16", "k_ptr": "*fp16",
                                                 "v_ptr": "*fp16", "n_ctx": "i32", "scale": "fp32",
                                                 "D": "constexpr", "BM": "constexpr", "BN": "constexpr"}},
}
