"""bert.packed_linear: the pass that gives nn.Linear, on the CPU in eval mode without gradients, oneDNN's product,
on a packed copy of the weight (reorder=True) or on the weight as it is (reorder=False, what load_pretrained applies by
default); checked against F.linear on the same tensors, and that every way of changing the weight is seen."""
import copy
import logging
import pickle

import pytest
import torch
import torch.nn.functional as F

from bert import packed_linear
from bert.packed_linear import PackedLinear, forget_packed_weights, pack_for_cpu_inference

CLOSE = dict(atol=1e-5, rtol=1e-5)


def linear(in_features=48, out_features=72, bias=True, seed=0, reorder=True) -> PackedLinear:
    """An nn.Linear in eval mode, through the pass."""
    torch.manual_seed(seed)
    model = pack_for_cpu_inference(torch.nn.Sequential(torch.nn.Linear(in_features, out_features, bias=bias)).eval(), reorder)
    return model[0]


@pytest.fixture
def onednn_calls(monkeypatch) -> list:
    """Each call of oneDNN's product, as (input, the weight it was given)."""
    calls, product = [], packed_linear._packed_product

    def counted(x, weight, bias):
        calls.append((x, weight))
        return product(x, weight, bias)

    monkeypatch.setattr(packed_linear, "_packed_product", counted)
    return calls


def was_packed(module: PackedLinear) -> bool:
    return "_packed" in module.__dict__


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(1, 48), (5, 48), (2, 7, 48)])
def test_packed_product_matches_f_linear(shape, bias):
    module = linear(bias=bias)
    x = torch.randn(shape)
    with torch.inference_mode():
        out = module(x)
    assert was_packed(module)
    torch.testing.assert_close(out, F.linear(x, module.weight, module.bias), **CLOSE)


@pytest.mark.parametrize("reorder", [True, False])
def test_no_grad_non_contiguous_input_and_rows_independent(reorder):
    module = linear(reorder=reorder)
    x = torch.randn(4, 9, 48)[:, ::2]  # every other position: not contiguous
    with torch.no_grad():
        out = module(x)
        alone = module(x[1:2, 3:4])
    torch.testing.assert_close(out, F.linear(x, module.weight, module.bias), **CLOSE)
    if reorder:  # with the packed copy a row's result does not depend on the other rows
        assert torch.equal(alone[0, 0], out[1, 3])
    else:  # on the weight as it is, one row takes another kernel, as nn.Linear's does: float rounding apart
        torch.testing.assert_close(alone[0, 0], out[1, 3], **CLOSE)


def test_bfloat16_packs_where_the_cpu_has_onednns_path_and_falls_back_quietly_elsewhere(caplog):
    """PyTorch's own answer to "does oneDNN do bfloat16 on this CPU" decides which path is expected: packed where it
    does; elsewhere (AMD EPYC Zen 3: no AVX-512) nn.Linear with no warning, and float32 on the same module still packs."""
    supported = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert packed_linear.bfloat16_packs() == supported
    module = linear().to(torch.bfloat16)
    x = torch.randn(6, 48, dtype=torch.bfloat16)
    with torch.inference_mode(), caplog.at_level(logging.INFO, logger="bert.packed_linear"):
        out = module(x)
    assert out.dtype == torch.bfloat16 and was_packed(module) == supported
    torch.testing.assert_close(out, F.linear(x, module.weight, module.bias), atol=2e-2, rtol=1e-2)
    if not supported:
        assert torch.equal(out, F.linear(x, module.weight, module.bias))
        assert caplog.records == [] and module.use_packed
        module.float()
        with torch.inference_mode():
            module(x.float())
        assert was_packed(module)


def test_with_gradients_it_is_nn_linear_and_gradients_flow():
    module = linear()
    x = torch.randn(3, 48, requires_grad=True)
    out = module(x)
    out.sum().backward()
    assert not was_packed(module)
    assert torch.equal(out, F.linear(x, module.weight, module.bias))
    torch.testing.assert_close(x.grad, module.weight.sum(0).expand(3, -1))  # d(sum of outputs)/dx


def test_a_trainable_bias_beside_a_frozen_weight_gets_its_gradient():
    """Training only the biases (as BitFit does) must take nn.Linear's path, where autograd reaches the bias."""
    module = linear()
    module.weight.requires_grad_(False)
    x = torch.randn(3, 48)
    module(x).square().sum().backward()
    expected = 2 * F.linear(x, module.weight, module.bias).detach().sum(0)
    assert not was_packed(module)
    torch.testing.assert_close(module.bias.grad, expected)


@pytest.mark.parametrize("reorder", [True, False])
def test_an_in_place_edit_is_seen(reorder):
    module = linear(reorder=reorder)
    x = torch.randn(3, 48)
    with torch.no_grad():
        module(x)
        module.weight.zero_()  # as an ablation would
        out = module(x)
    assert torch.equal(out, module.bias.expand(3, -1))


@pytest.mark.parametrize("reorder", [True, False])
def test_an_optimizer_step_and_load_state_dict_are_seen(reorder):
    module, other = linear(seed=0, reorder=reorder), linear(seed=1, reorder=reorder)
    x = torch.randn(3, 48)
    with torch.no_grad():
        module(x)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
    F.linear(x, module.weight, module.bias).square().sum().backward()
    optimizer.step()
    with torch.no_grad():
        torch.testing.assert_close(module(x), F.linear(x, module.weight, module.bias), **CLOSE)
        module.load_state_dict(other.state_dict())
        torch.testing.assert_close(module(x), F.linear(x, other.weight, other.bias), **CLOSE)


@pytest.mark.parametrize("reorder", [True, False])
def test_a_dtype_round_trip_and_a_new_weight_tensor_are_seen(reorder):
    module = linear(reorder=reorder)
    x = torch.randn(3, 48)
    with torch.no_grad():
        module(x)
        module.to(torch.bfloat16).float()  # the weights now hold bfloat16-rounded values, maybe at the old address
        torch.testing.assert_close(module(x), F.linear(x, module.weight, module.bias), **CLOSE)
        module.weight = torch.nn.Parameter(torch.ones_like(module.weight))
        torch.testing.assert_close(module(x), F.linear(x, module.weight, module.bias), **CLOSE)


@pytest.mark.parametrize("reorder", [True, False])
def test_edits_through_data_are_seen_after_forget_packed_weights(reorder):
    module = linear(reorder=reorder)
    model = torch.nn.Sequential(module)
    x = torch.randn(3, 48)
    with torch.no_grad():
        model(x)
        module.weight.data.zero_()  # bypasses the version counter
        forget_packed_weights(model)
        assert torch.equal(model(x), module.bias.expand(3, -1))


@pytest.mark.parametrize("reorder", [True, False])
def test_copies_and_pickles_leave_the_packed_copy_out(reorder):
    module = linear(reorder=reorder)
    x = torch.randn(3, 48)
    with torch.no_grad():
        expected = module(x)
    for copied in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        assert not was_packed(copied) and set(copied.state_dict()) == {"weight", "bias"}
        with torch.no_grad():
            torch.testing.assert_close(copied(x), expected, **CLOSE)
    assert set(module.state_dict()) == {"weight", "bias"}


def test_float16_and_inference_tensor_weights_take_nn_linear():
    half = linear().half()
    with torch.inference_mode():
        made_in_inference_mode = linear()
    x = torch.randn(3, 48)
    with torch.inference_mode():
        assert torch.equal(half(x.half()), F.linear(x.half(), half.weight, half.bias))
        assert torch.equal(made_in_inference_mode(x), F.linear(x, made_in_inference_mode.weight, made_in_inference_mode.bias))
    assert not was_packed(half) and not was_packed(made_in_inference_mode)


def test_a_build_whose_op_fails_falls_back_to_nn_linear_for_good(monkeypatch):
    """Should PyTorch change its internal oneDNN op, the model keeps working through nn.Linear."""
    calls = []

    def broken(*args):
        calls.append(args)
        raise TypeError("_linear_pointwise() takes 5 arguments")

    module, x = linear(), torch.randn(3, 48)
    monkeypatch.setattr(packed_linear, "_packed_product", broken)  # after packing: its check would refuse
    with torch.no_grad():
        assert torch.equal(module(x), F.linear(x, module.weight, module.bias))
        assert torch.equal(module(x), F.linear(x, module.weight, module.bias))
    assert not module.use_packed and not was_packed(module) and len(calls) == 1


def test_a_wrong_input_gets_nn_linears_error_and_packing_stays_on():
    module = linear()
    with torch.no_grad(), pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        module(torch.randn(3, 47))
    assert module.use_packed


def test_train_mode_is_nn_linear_and_drops_the_packed_copy():
    module, x = linear(), torch.randn(3, 48)
    with torch.no_grad():
        module(x)
        assert was_packed(module)
        module.train()
        assert not was_packed(module)
        assert torch.equal(module(x), F.linear(x, module.weight, module.bias))  # dropout-free, gradient-free, yet nn.Linear
    assert not was_packed(module)


def test_the_pass_shares_parameters_keeps_ties_and_leaves_subclasses():
    class Head(torch.nn.Linear):
        pass

    embedding = torch.nn.Embedding(10, 6)
    tied = torch.nn.Linear(6, 10)
    tied.weight = embedding.weight
    model = torch.nn.ModuleDict({"embedding": embedding, "tied": tied, "inner": torch.nn.Sequential(torch.nn.Linear(6, 6)), "head": Head(6, 2)})
    before = {name: p for name, p in model.named_parameters()}
    state = torch.random.get_rng_state()
    pack_for_cpu_inference(model)
    assert torch.equal(torch.random.get_rng_state(), state)  # nothing drawn
    assert type(model["tied"]) is PackedLinear and type(model["inner"][0]) is PackedLinear and type(model["head"]) is Head
    assert model["tied"].weight is embedding.weight
    assert {name: p for name, p in model.named_parameters()} == before


def test_the_default_model_multiplies_through_onednn_and_prints_saves_and_names_as_nn_linear(tiny_mlm_folder, tiny_batch, onednn_calls):
    """load_pretrained's default: every Linear through oneDNN on its own weight (no copy); print(model), the
    state_dict and the hook names are those of the model with PyTorch's nn.Linear (cpu_kernels=False); the app's
    pack_for_cpu=True keeps its packed copies. All three give the same logits."""
    import bert

    default, _ = bert.load_pretrained(str(tiny_mlm_folder))
    plain, _ = bert.load_pretrained(str(tiny_mlm_folder), cpu_kernels=False)
    packed, _ = bert.load_pretrained(str(tiny_mlm_folder), pack_for_cpu=True)
    linears = [m for m in default.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(type(m) is PackedLinear and not m.reorder for m in linears)
    assert not any(isinstance(m, PackedLinear) for m in plain.modules())
    assert all(type(m) is PackedLinear and m.reorder for m in packed.modules() if isinstance(m, torch.nn.Linear))
    assert repr(default) == repr(plain) == repr(packed) and "Linear(in_features=" in repr(default)
    assert list(default.state_dict()) == list(plain.state_dict()) and default.hook_names() == plain.hook_names()
    with torch.inference_mode():
        logits = [model(*tiny_batch) for model in (default, plain, packed)]
    assert {id(weight) for _, weight in onednn_calls} >= {id(m.weight) for m in linears}  # the weights themselves
    assert not any(was_packed(m) for m in linears) and all(was_packed(m) for m in packed.modules() if isinstance(m, PackedLinear))
    torch.testing.assert_close(logits[0], logits[1], **CLOSE)
    torch.testing.assert_close(logits[2], logits[1], **CLOSE)


def test_without_reorder_onednn_multiplies_the_weight_itself_and_sees_every_edit(onednn_calls):
    module = linear(reorder=False)
    x = torch.randn(3, 48)
    with torch.inference_mode():
        torch.testing.assert_close(module(x), F.linear(x, module.weight, module.bias), **CLOSE)
    with torch.no_grad():
        module.weight.data.zero_()  # even through .data: there is no copy to forget
        assert torch.equal(module(x), module.bias.expand(3, -1))
    assert [weight is module.weight for _, weight in onednn_calls][-2:] == [True, True] and not was_packed(module)


def test_the_pass_again_takes_the_way_asked_for():
    module = linear(reorder=False)
    with torch.no_grad():
        module(torch.randn(3, 48))
        pack_for_cpu_inference(torch.nn.Sequential(module), reorder=True)
        module(torch.randn(3, 48))
        assert module.reorder and was_packed(module)
        pack_for_cpu_inference(torch.nn.Sequential(module), reorder=False)
        assert not module.reorder and not was_packed(module)


@pytest.mark.slow
def test_packing_on_and_off_give_the_same_logits(minilm_path, minilm_batch):
    """The built-in model, loaded with and without the pass: the same hidden states and probabilities (1e-5), and
    logits within 1e-5 of their range (up to 19 here: float rounding in another order, through six layers)."""
    import bert

    packed, _ = bert.load_pretrained("minilm", pack_for_cpu=True)
    plain, _ = bert.load_pretrained("minilm", cpu_kernels=False)
    input_ids, token_type_ids, attention_mask = minilm_batch
    with torch.inference_mode():
        logits = [model(input_ids, token_type_ids, attention_mask) for model in (packed, plain)]
        hidden = [model.encode(input_ids, token_type_ids, attention_mask) for model in (packed, plain)]
    assert was_packed(packed.lm_head.unembedding) and was_packed(packed.transformer[0].residual.mlp1)
    keep = attention_mask.bool()
    torch.testing.assert_close(hidden[0][keep], hidden[1][keep], **CLOSE)
    torch.testing.assert_close(logits[0][keep].softmax(-1), logits[1][keep].softmax(-1), **CLOSE)
    scale = logits[1][keep].abs().max().item()
    torch.testing.assert_close(logits[0][keep], logits[1][keep], atol=1e-5 * scale, rtol=0)


@pytest.mark.slow
def test_a_pytorch_without_the_op_keeps_nn_linear_with_one_log_line(minilm_path, minilm_batch, monkeypatch, caplog):
    """The private op taken away (as in a PyTorch build without oneDNN): asking for packing leaves nn.Linear,
    says so once in the log, and the model computes what the plain one does."""
    import types

    import bert

    monkeypatch.setattr(torch.ops, "mkldnn", types.SimpleNamespace())
    assert "has no usable oneDNN linear op (AttributeError" in packed_linear.packing_problem()
    with caplog.at_level(logging.INFO, logger="bert.packed_linear"):
        plain, _ = bert.load_pretrained("minilm")  # the default: nn.Linear, without a word
        asked, _ = bert.load_pretrained("minilm", pack_for_cpu=True)
    assert not any(isinstance(m, PackedLinear) for model in (plain, asked) for m in model.modules())
    records = [r for r in caplog.records if r.name == "bert.packed_linear"]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "weight packing is off, the model keeps nn.Linear" in records[0].getMessage()
    input_ids, token_type_ids, attention_mask = minilm_batch
    with torch.inference_mode():
        assert torch.equal(asked(input_ids, token_type_ids, attention_mask), plain(input_ids, token_type_ids, attention_mask))


def test_an_op_that_fails_later_says_so_once(monkeypatch, caplog):
    """The op passes the check at packing time, then fails on use: every module falls back, one log line in all."""
    monkeypatch.setattr(packed_linear, "_failure_logged", False)
    model = pack_for_cpu_inference(torch.nn.Sequential(torch.nn.Linear(48, 72), torch.nn.Linear(72, 8)).eval())

    def broken(*args):
        raise RuntimeError("could not create a primitive")

    monkeypatch.setattr(packed_linear, "_packed_product", broken)
    x = torch.randn(3, 48)
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="bert.packed_linear"):
        out = model(x)
    torch.testing.assert_close(out, F.linear(F.linear(x, model[0].weight, model[0].bias), model[1].weight, model[1].bias), rtol=0, atol=0)
    assert not model[0].use_packed and not model[1].use_packed
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["weight packing failed, nn.Linear takes over"]
