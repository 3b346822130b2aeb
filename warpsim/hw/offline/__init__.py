"""Packing, replay and fitting tools run on a workstation after a GPU capture (not imported by the library)."""
