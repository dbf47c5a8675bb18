"""Teachers: pretrained pose models rebuilt in PyTorch to make training labels (never used at run time)."""
