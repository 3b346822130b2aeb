"""The driver Triton makes active under ``WARPSIM_TRITON=<target>`` (e.g. sm_90a): warpsim.triton's."""

import os

from triton.backends.driver import DriverBase


class WarpsimTritonDriver(DriverBase):
    """Active when WARPSIM_TRITON names a target; constructing it returns ``warpsim.triton.WarpsimDriver``
    for that target (warpsim is imported only then)."""

    @classmethod
    def is_active(cls):
        return bool(os.environ.get("WARPSIM_TRITON"))

    def __new__(cls, *args, **kwargs):
        from warpsim.triton.driver import WarpsimDriver
        return WarpsimDriver(os.environ.get("WARPSIM_TRITON"))

    def map_python_to_cpp_type(self, ty):      # never reached: __new__ returns warpsim's driver
        raise NotImplementedError

    def get_current_target(self):
        raise NotImplementedError

    def get_active_torch_device(self):
        raise NotImplementedError

    def get_benchmarker(self):
        raise NotImplementedError
