"""MemSim (seed 000): the `memsim` generator and the `memdaily` loader of its release.

Public entry points: :class:`generator.MemSimBuilder` and :class:`memdaily.MemDailyLoader`;
the rest are small modules named for what they hold (the BRNet, the value spaces,
templates per language, question builders, answer functions, noise, the validator).
"""
