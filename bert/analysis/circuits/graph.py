"""An encoder's computation graph for circuits: which node's output reaches which node's input.

Nodes (senders, in the order the model computes them): `embeddings` (what enters layer 0), every attention head
`a{layer}.h{head}` (its output z times its slice of the output projection), every MLP `m{layer}`; and `logits`,
the output, which only receives. Inputs (receivers): each head's query, key and value separately (Hanna et al. 2024
score EAP-IG edges to q, k and v apart), each MLP's input, the output's. An edge goes from a sender to every
receiver after it: to a head's inputs from the embeddings and the heads and MLPs of earlier layers, to an MLP also
from its own layer's heads, to the output from every sender. Layers and heads count from 0 (bert/layers.py).

Arrays over edges follow `CircuitGraph.edges`' order: receivers in computing order (per layer: every head's query,
then every key, every value, then the MLP; the output last), and for each receiver its senders in order.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import torch

from ...config import BertConfig

INPUTS = ("q", "k", "v")  # a head's three inputs


@dataclass(frozen=True)
class Node:
    name: str  # "embeddings", "a3.h7", "m3", "logits"
    kind: str  # "embeddings", "head", "mlp" or "logits"
    layer: int | None  # None for the embeddings and the logits
    head: int | None = None


@dataclass(frozen=True)
class Receiver:
    node: Node
    input: str | None  # "q", "k", "v" for a head; None for an MLP and the logits
    senders: int  # the first `senders` senders reach it

    @property
    def name(self) -> str:
        return self.node.name if self.input is None else f"{self.node.name}<{self.input}>"


@dataclass(frozen=True)
class Edge:
    sender: Node
    receiver: Receiver
    index: int  # position in CircuitGraph.edges

    @property
    def name(self) -> str:
        return f"{self.sender.name}->{self.receiver.name}"


class CircuitGraph:
    """The nodes, receivers and edges of a model with `num_layers` layers of `num_heads` heads."""

    def __init__(self, num_layers: int, num_heads: int):
        self.num_layers, self.num_heads = num_layers, num_heads
        self.senders: list[Node] = [Node("embeddings", "embeddings", None)]
        self.receivers: list[Receiver] = []
        for layer in range(num_layers):
            heads = [Node(f"a{layer}.h{head}", "head", layer, head) for head in range(num_heads)]
            before_layer = len(self.senders)
            self.receivers += [Receiver(node, input, before_layer) for input in INPUTS for node in heads]
            self.senders += heads
            mlp = Node(f"m{layer}", "mlp", layer)
            self.receivers.append(Receiver(mlp, None, len(self.senders)))
            self.senders.append(mlp)
        self.output = Node("logits", "logits", None)
        self.receivers.append(Receiver(self.output, None, len(self.senders)))
        pairs = [(self.senders[sender], receiver) for receiver in self.receivers for sender in range(receiver.senders)]
        self.edges = [Edge(sender, receiver, index) for index, (sender, receiver) in enumerate(pairs)]

    @classmethod
    def of(cls, config: BertConfig) -> "CircuitGraph":
        """The graph of `config`'s shape, built once per shape and shared (building BERT-base's 32,491 edges takes
        about 0.1 s, and pricing a circuits computation asks for it several times a page's run): read it, never
        change it."""
        return _graph_of_shape(cls, config.num_layers, config.num_heads)

    @property
    def nodes(self) -> list[Node]:
        """Every node, the output last."""
        return self.senders + [self.output]

    def __len__(self) -> int:
        return len(self.edges)

    @cached_property
    def edge_cells(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(receiver index, sender index) of each edge: where it sits in a [receiver, sender] mask."""
        receiver_of = {receiver.name: index for index, receiver in enumerate(self.receivers)}
        sender_of = {node.name: index for index, node in enumerate(self.senders)}
        return (torch.tensor([receiver_of[edge.receiver.name] for edge in self.edges]),
                torch.tensor([sender_of[edge.sender.name] for edge in self.edges]))

    def mask(self, edge_values: torch.Tensor) -> torch.Tensor:
        """[rows, edge(, seq)] values -> [rows, receiver, sender(, seq)] (0 where no edge is)."""
        rows = edge_values.shape[0]
        receivers, senders = self.edge_cells
        dense = edge_values.new_zeros(rows, len(self.receivers), len(self.senders), *edge_values.shape[2:])
        dense[:, receivers.to(edge_values.device), senders.to(edge_values.device)] = edge_values
        return dense

    def edge_values(self, dense: torch.Tensor) -> torch.Tensor:
        """[rows, receiver, sender(, seq)] -> [rows, edge(, seq)]."""
        receivers, senders = self.edge_cells
        return dense[:, receivers.to(dense.device), senders.to(dense.device)]

    def sender_index(self, name: str) -> int:
        return next(index for index, node in enumerate(self.senders) if node.name == name)

    def layer_senders(self, layer: int) -> tuple[range, int]:
        """(the senders of layer `layer`'s heads, its MLP's sender index)."""
        first = 1 + layer * (self.num_heads + 1)
        return range(first, first + self.num_heads), first + self.num_heads

    def layer_receivers(self, layer: int) -> tuple[range, int]:
        """(the receivers of layer `layer`'s heads: every query, key, value; its MLP's receiver index)."""
        first = layer * (3 * self.num_heads + 1)
        return range(first, first + 3 * self.num_heads), first + 3 * self.num_heads

    def outgoing(self) -> torch.Tensor:
        """bool [sender, edge]: the edges each sender sends (a node-level circuit keeps or patches them together)."""
        _, senders = self.edge_cells
        return senders[None, :] == torch.arange(len(self.senders))[:, None]


@lru_cache(maxsize=8)
def _graph_of_shape(kind: type, num_layers: int, num_heads: int) -> CircuitGraph:
    return kind(num_layers, num_heads)
