"""BEAM (Tavakoli et al., 2025): ten memory abilities over conversations of 128K to 10M tokens."""
