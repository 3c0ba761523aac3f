import torch


def softmax(scores, probs):
    """Uses exp2, as a fast-math kernel does, but forgets to scale the scores by log2(e) first."""
    torch.sub(scores, scores.amax(dim=-1, keepdim=True), out=probs)
    probs.exp2_()
    probs.div_(probs.sum(dim=-1, keepdim=True))
