"""MemBench (Tan et al., ACL Findings 2025): multiple choice over message trajectories."""
