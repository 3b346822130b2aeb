"""Hardware truth: input generators (:mod:`.inputs`) and the GPU capture tool (:mod:`.capture`,
``python -m warpsim.hw``) that produces and reads golden corpora.  Imports without a GPU."""

from .capture import (Corpus, capture, compile_cubin, gpu_info, kernel_name, kernel_source, main, save_corpus,
                      select_entries)

__all__ = ["Corpus", "capture", "compile_cubin", "gpu_info", "kernel_name", "kernel_source", "main", "save_corpus",
           "select_entries"]
