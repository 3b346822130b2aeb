"""A compiler backend that claims no target: under WARPSIM_TRITON Triton's NVIDIA backend compiles."""

from triton.backends.compiler import BaseBackend


class WarpsimNoCompiler(BaseBackend):
    """Never selected (``supports_target`` is False): Triton requires one compiler class per backend."""

    @staticmethod
    def supports_target(target):
        return False

    def hash(self):
        return "warpsim"

    def parse_options(self, options):
        raise NotImplementedError("warpsim compiles through Triton's NVIDIA backend")

    def add_stages(self, stages, options, language=None):
        raise NotImplementedError("warpsim compiles through Triton's NVIDIA backend")

    def load_dialects(self, context):
        pass

    def get_module_map(self):
        return {}
