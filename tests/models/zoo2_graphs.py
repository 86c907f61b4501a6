"""Second-zoo models from torch-geometric: two message-passing layers (GCN, GAT, graph
transformer, GraphSAGE or GIN) and a global pooling, over a batch of two small random graphs."""

from __future__ import annotations

import torch
from torch import nn


class GraphClassifier(nn.Module):
    def __init__(self, layer: str, features: int = 8, hidden: int = 16, classes: int = 3) -> None:
        super().__init__()
        import torch_geometric.nn as gnn

        if layer == "gcn":
            self.conv1, self.conv2, self.pool = gnn.GCNConv(features, hidden), gnn.GCNConv(hidden, hidden), gnn.global_mean_pool
        elif layer == "gat":
            self.conv1, self.conv2 = gnn.GATConv(features, hidden // 2, heads=2), gnn.GATConv(hidden, hidden)
            self.pool = gnn.global_mean_pool
        elif layer == "transformer":
            self.conv1, self.conv2 = gnn.TransformerConv(features, hidden // 2, heads=2), gnn.TransformerConv(hidden, hidden)
            self.pool = gnn.global_mean_pool
        elif layer == "sage":
            self.conv1, self.conv2, self.pool = gnn.SAGEConv(features, hidden), gnn.SAGEConv(hidden, hidden), gnn.global_max_pool
        else:  # gin
            def mlp(i: int, o: int) -> nn.Module:
                return nn.Sequential(nn.Linear(i, o), nn.ReLU(), nn.Linear(o, o))

            self.conv1, self.conv2, self.pool = gnn.GINConv(mlp(features, hidden)), gnn.GINConv(mlp(hidden, hidden)), \
                gnn.global_add_pool
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, edge_index, batch):
        x = self.conv1(x, edge_index).relu()
        x = self.conv2(x, edge_index).relu()
        return self.head(self.pool(x, batch))


def two_graphs(nodes: int = 10, edges: int = 30, features: int = 8) -> tuple:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(nodes, features, generator=generator)
    edge_index = torch.stack([torch.randint(0, nodes, (edges,), generator=generator),
                              torch.randint(0, nodes, (edges,), generator=generator)])
    return x, edge_index, torch.tensor([0] * (nodes // 2) + [1] * (nodes - nodes // 2))
