"""Training-time tools: teachers that make labels, never used at run time."""
