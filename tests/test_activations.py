"""The activations in place (bert/activations.py: activate_) against PyTorch's own functions."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from bert.activations import activate_
from bert.config import ACTIVATIONS

REFERENCE = {"gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "relu": F.relu, "silu": F.silu}


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activate_in_place_is_the_activation_and_writes_into_its_input(activation):
    x = torch.linspace(-6, 6, 97)
    expected = REFERENCE[activation](x)
    changed = x.clone()
    assert activate_(changed, activation) is changed
    torch.testing.assert_close(changed, expected, atol=0, rtol=0)
