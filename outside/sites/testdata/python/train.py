# A small PyTorch training script (issue 44's): a two-layer MLP trained
# with Adam on 50 batches of 256 x 512 held in a list. Measured under
# probe exec --sites in docs/python-sites.md.
import torch


def make_batches(n, rows, cols):
    return [(torch.randn(rows, cols), torch.randint(0, 10, (rows,))) for _ in range(n)]


def step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def main():
    torch.manual_seed(0)
    batches = make_batches(50, 256, 512)
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for x, y in batches:
            step(model, opt, x, y)


main()
