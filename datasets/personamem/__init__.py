"""PersonaMem (Jiang et al., COLM 2025): four-option questions at points of a shared persona context."""
