"""MemoryAgentBench (HUST-AI-HYZ/MemoryAgentBench): every source of its four competencies."""
