import torch


def softmax(scores):
    """One row at a time, each a separate small computation."""
    out = torch.empty_like(scores)
    for index in range(scores.shape[0]):
        row = scores[index]
        shifted = torch.exp(row - row.max())
        out[index] = shifted / shifted.sum()
    return out
