"""How a page gets its context: Home.py serves it for the page's run (viz_app/app/page_context.py)."""
from __future__ import annotations

import pytest

from app_helpers import ROOT, TIMEOUT, figures, no_exception
from viz_app.app import page_context

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


def test_a_page_run_without_home_asks_for_the_app_and_draws_nothing():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "attention.py"), default_timeout=TIMEOUT).run()
    no_exception(at)
    assert "streamlit run viz_app/Home.py" in at.info[0].value and not figures(at)


def test_home_serves_the_context_to_the_page(open_app):
    at = open_app("attention", text="The cat sat on the mat.")
    no_exception(at)
    assert figures(at)  # the page got its context ...
    assert "_context" not in at.session_state  # ... not through session state


def test_serve_sets_the_context_for_its_block_and_restores_the_previous_one():
    outer, inner = object(), object()
    assert page_context.current() is None
    with page_context.serve(outer):
        with page_context.serve(inner):
            assert page_context.current() is inner
        assert page_context.current() is outer
    assert page_context.current() is None


def test_a_page_s_context_describes_the_model_and_cannot_run_it(tiny_mlm_folder):
    """The model reaches a computation's `compute` through `Inputs`, never a page: its context's model gives the
    names, sizes and config a page shows, and a forward pass from it, direct or through the library, is refused."""
    from bert.analysis.representations.logit_lens import logit_lens
    from viz_app.app import models
    from viz_app.app.forward import prepare_input, record
    from viz_app.server.access import Role, Visitor
    from viz_app.server.settings import ServerSettings

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    picked = models.PickedModel(loaded.key, loaded, None)
    context = page_context.Context(picked, None, Visitor(Role.STUDENT, ServerSettings(), (), None))
    handle = context.loaded
    assert handle.model.config == loaded.model.config and handle.summary == loaded.summary
    assert handle.tokenizer is loaded.tokenizer and handle.model.output_heads == loaded.model.output_heads
    assert dict(handle.model.named_parameters()).keys() == dict(loaded.model.named_parameters()).keys()
    prepared = prepare_input(handle.tokenizer, "The dog [MASK] at the mailman.", "", (), False,
                             handle.summary.max_positions)
    ids, types = prepared.masked.tensors("cpu")
    for attempt in (lambda: handle.model(ids, types), lambda: handle.model.forward(ids, types),
                    lambda: record(handle.model, handle.tokenizer, prepared),
                    lambda: logit_lens(handle.model, handle.tokenizer, prepared.masked, top_k=3)):
        with pytest.raises(models.ModelCallError, match="heavy.run"):
            attempt()
    with pytest.raises(AttributeError):
        handle.model.config = None


def test_every_route_from_the_handle_to_a_module_describes_it_and_cannot_run_it(tiny_mlm_folder):
    """A submodule reached from the page's handle (an attribute, an index, the module-tree walks, the module's own
    dicts) reads as the module does (its name, class, repr, parameters' shapes, sizes) and refuses a call, like the
    model: a page cannot run a layer, an embedding or a head either."""
    import copy
    import pickle

    import torch

    from viz_app.app import models
    from viz_app.specs import architecture

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    real, handle = loaded.model, models.ModelHandle.of(loaded).model
    routes = {
        "an attribute": (handle.transformer, real.transformer),
        "an index": (handle.transformer[0], real.transformer[0]),
        "an attribute of an attribute": (handle.transformer[0].attention, real.transformer[0].attention),
        "iteration": (list(handle.transformer)[-1], list(real.transformer)[-1]),
        "get_submodule": (handle.get_submodule("transformer.0.residual"), real.get_submodule("transformer.0.residual")),
        "the module's own dict of modules": (handle._modules["transformer"], real._modules["transformer"]),
        "its __dict__": (handle.__dict__["_modules"]["transformer"], real.__dict__["_modules"]["transformer"]),
        **{f"{walk}()": (list(getattr(handle, walk)())[1], list(getattr(real, walk)())[1])
           for walk in ("named_modules", "modules", "named_children", "children")},
    }
    ids = torch.zeros(1, 4, dtype=torch.long)
    for route, (described, module) in routes.items():
        name, described = described if isinstance(described, tuple) else ("", described)
        name_of_real, module = module if isinstance(module, tuple) else ("", module)
        assert name == name_of_real, route
        assert repr(described) == repr(module) and isinstance(described, type(module)), route
        assert [(n, p.shape) for n, p in described.named_parameters()] == \
               [(n, p.shape) for n, p in module.named_parameters()], route
        assert sum(p.numel() for p in described.parameters()) == sum(p.numel() for p in module.parameters()), route
        for attempt in (lambda: described(ids), lambda: described.forward(ids), lambda: described.__call__(ids),
                        lambda: [m(ids) for m in described.modules()]):
            with pytest.raises(models.ModelCallError, match="heavy.run"):
                attempt()
        with pytest.raises(AttributeError):
            described.training = True
    with pytest.raises(models.ModelCallError):  # a hook would run code inside every session's passes
        handle.transformer[0].register_forward_hook(lambda *args: None)
    for copied in (copy.copy, copy.deepcopy, pickle.dumps):  # a copy would be the module itself, free to run
        with pytest.raises(TypeError):
            copied(handle.transformer[0])
    assert len(handle.transformer) == len(real.transformer) and bool(handle.transformer)
    assert [name for name, _ in handle.named_modules()] == [name for name, _ in real.named_modules()]
    assert architecture.module_rows(handle, {}) == architecture.module_rows(real, {})  # the Architecture page's tree
    assert architecture.parameter_arithmetic(handle).equals(architecture.parameter_arithmetic(real))


def test_a_weight_reached_from_the_handle_gives_its_shape_and_size_never_its_numbers(tiny_mlm_folder):
    """A parameter or buffer reached from the page's handle (an attribute, the walks over parameters and buffers,
    the module's own dicts) reads as the tensor's shape, size and dtype; its numbers, arithmetic, indexing and an
    in-place change are refused, so a page can neither compute with the shared model's weights nor change them."""
    import torch

    from viz_app.app import models

    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    real, handle = loaded.model, models.ModelHandle.of(loaded).model
    layer, real_layer = handle.transformer[0], real.transformer[0]
    first_name, first = next(iter(layer.named_parameters()))
    routes = {
        "named_parameters()": (first, dict(real_layer.named_parameters())[first_name]),
        "parameters()": (next(iter(layer.parameters())), next(iter(real_layer.parameters()))),
        "an attribute": (handle.embedding.token_embedding.weight, real.embedding.token_embedding.weight),
        "the module's own dict": (handle.embedding.token_embedding._parameters["weight"], real.embedding.token_embedding.weight),
        "its __dict__": (handle.embedding.token_embedding.__dict__["_parameters"]["weight"], real.embedding.token_embedding.weight),
    }
    if list(real.buffers()):
        routes["buffers()"] = (next(iter(handle.buffers())), next(iter(real.buffers())))
    before = {name: tensor.clone() for name, tensor in real.state_dict().items()}
    for route, (described, tensor) in routes.items():
        assert not isinstance(described, torch.Tensor), route
        assert described.shape == tensor.shape and described.numel() == tensor.numel(), route
        assert described.dtype == tensor.dtype and described.size() == tensor.size() and described.dim() == tensor.dim()
        assert str(list(tensor.shape)) in repr(described) and "tensor(" not in repr(described), route
        for attempt in (lambda: described.data, lambda: described.detach(), lambda: described.numpy(),
                        lambda: described.tolist(), lambda: described.mul_(0), lambda: described.zero_(),
                        lambda: described.clone(), lambda: described.T):
            with pytest.raises(models.ModelCallError, match="heavy.run"):
                attempt()
        for attempt in (lambda: described * 2, lambda: described[0], lambda: torch.matmul(described, described),
                        lambda: torch.as_tensor(described)):
            with pytest.raises((TypeError, RuntimeError, models.ModelCallError)):
                attempt()
        with pytest.raises(AttributeError):
            described.requires_grad = False
    assert routes["an attribute"][0] == routes["its __dict__"][0]  # one tensor, two descriptions: equal
    assert hash(routes["an attribute"][0]) == hash(routes["the module's own dict"][0])
    assert all(torch.equal(before[name], tensor) for name, tensor in real.state_dict().items())
