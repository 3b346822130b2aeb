"""Front ends for people: the ``warpsim`` command line (:mod:`.main`), corpus replay (:mod:`.verify`),
benchmarks (:mod:`.bench`), numerics reports (:mod:`.gemm_report`), pictures (:mod:`.svg`) and the
generated tables of the docs (:mod:`.docs`)."""
