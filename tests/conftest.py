"""pytest options of the warpsim suite."""

import os


def pytest_addoption(parser):
    parser.addoption("--fuzz", type=int, default=None, metavar="N",
                     help="multiply the fuzz budgets of tests/test_fuzz.py by N (same as WARPSIM_FUZZ=N)")


def pytest_configure(config):
    n = config.getoption("--fuzz")
    if n:
        os.environ["WARPSIM_FUZZ"] = str(n)
