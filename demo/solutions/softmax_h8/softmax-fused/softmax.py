import torch


def softmax(scores, probs):
    """exp(x - max) written straight into the output, then normalised in place."""
    torch.sub(scores, scores.amax(dim=-1, keepdim=True), out=probs)
    probs.exp_()
    probs.div_(probs.sum(dim=-1, keepdim=True))
