import torch


def run(scores):
    return torch.softmax(scores, dim=-1)
