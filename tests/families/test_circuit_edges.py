"""Edge patching against an independent computation with transformers forward hooks on the same weights, for a
post-LN BERT and a pre-norm ModernBERT (tiny random checkpoints built by transformers' own classes), under the
treatment bert/analysis/circuits/graph_run.py states: the receiver reads a residual stream of its own, rebuilt
from the senders' outputs through the model's LayerNorms, recomputed. Patching no edge gives the run's metric,
patching every edge the other run's; EAP is the first-order term of the patched metric."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.causal.patching import prepare_contrast
from bert.analysis.circuits.edge_scores import edge_scores, pair_runs, patched_metrics, read_metric
from bert.analysis.circuits.encoder_parts import EncoderParts
from bert.analysis.circuits.graph import CircuitGraph
from bert.analysis.circuits.graph_run import run_graph
from bert.errors import InvalidInputError
from family_support import build_hf, write_tiny_tokenizer

CLEAN, CORRUPTED, ANSWER, FOIL = "the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail"
TOLERANCE = 1e-4  # a logit difference of order 1 through a few float32 layers


@pytest.fixture(scope="module", params=["bert", "modernbert"])
def family_models(request, tmp_path_factory, tiny_vocab_file, tiny_mlm_folder):
    """(family, ours, transformers' masked LM on the same weights, contrast)."""
    if request.param == "bert":
        from transformers import BertForMaskedLM

        ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
        theirs = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    else:
        theirs = build_hf("modernbert", "ModernBertForMaskedLM").eval()
        folder = tmp_path_factory.mktemp("modernbert_circuits")
        theirs.save_pretrained(folder)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        ours, tokenizer = bert.load_pretrained(str(folder))
    return request.param, ours, theirs, _far_apart(ours, tokenizer)


def _far_apart(ours, tokenizer):
    """The contrast with the answer and foil whose logit difference the two random runs change most (so that a
    wrong patch moves the metric far beyond the tolerance)."""
    contrast = prepare_contrast(tokenizer, CLEAN, CORRUPTED, ANSWER, FOIL)
    with torch.no_grad():
        change = (ours(*contrast.clean.tensors()) - ours(*contrast.corrupted.tensors()))[0, contrast.mask_position]
    answer, foil = int(change.argmax()), int(change.argmin())
    return prepare_contrast(tokenizer, CLEAN, CORRUPTED, answer, foil)


# ---- the reference: transformers' own modules, hooked --------------------------------------------------------


class Reference:
    """One family's transformers model seen as the circuit graph: its senders' outputs, recorded with forward hooks,
    and a pass in which one receiver reads a stream rebuilt from (possibly swapped) sender outputs."""

    def __init__(self, family: str, theirs):
        self.family, self.theirs = family, theirs
        config = theirs.config
        self.layers_count, self.heads = config.num_hidden_layers, config.num_attention_heads
        self.head_dim = config.hidden_size // self.heads
        core = theirs.bert if family == "bert" else theirs.model
        self.embeddings, self.layers = core.embeddings, (core.encoder.layer if family == "bert" else core.layers)
        self.final_norm = None if family == "bert" else core.final_norm

    def _projection(self, layer):  # the attention output projection
        return layer.attention.output.dense if self.family == "bert" else layer.attn.Wo

    def _mlp_out(self, layer):
        return layer.output.dense if self.family == "bert" else layer.mlp

    def run(self, input_ids, contrast, record=False, hooks=()):
        """(metric, {sender name: output [1, seq, hidden]})."""
        outputs, handles = {}, []
        if record:
            handles.append(self.embeddings.register_forward_hook(lambda m, a, out: outputs.__setitem__("embeddings", out)))
            for index, layer in enumerate(self.layers):
                projection = self._projection(layer)

                def heads(module, args, index=index):
                    z = args[0]
                    for head in range(self.heads):
                        part = slice(head * self.head_dim, (head + 1) * self.head_dim)
                        outputs[f"a{index}.h{head}"] = z[..., part] @ module.weight[:, part].T
                handles.append(projection.register_forward_pre_hook(heads))
                handles.append(self._mlp_out(layer).register_forward_hook(
                    lambda m, a, out, index=index: outputs.__setitem__(f"m{index}", out)))
        handles += [module.register_forward_hook(hook) if kind == "post" else module.register_forward_pre_hook(hook)
                    for module, kind, hook in hooks]
        try:
            with torch.no_grad():
                kwargs = {"token_type_ids": torch.zeros_like(input_ids)} if self.family == "bert" else {}
                logits = self.theirs(input_ids=input_ids, **kwargs).logits
        finally:
            for handle in handles:
                handle.remove()
        at_mask = logits[0, contrast.mask_position]
        return float(at_mask[contrast.answer_id] - at_mask[contrast.foil_id]), outputs

    def stream(self, outputs, until_layer: int, through_attention: bool):
        """The residual stream after the sub-layers before a receiver: layers < until_layer, and that layer's
        attention too when through_attention; post-LN: through each LayerNorm; pre-norm: the sum."""
        x = outputs["embeddings"]
        for index in range(until_layer + (1 if through_attention else 0)):
            layer = self.layers[index]
            projection = self._projection(layer)
            attention = sum(outputs[f"a{index}.h{head}"] for head in range(self.heads))
            attention = attention if projection.bias is None else attention + projection.bias
            if self.family == "bert":
                x = layer.attention.output.LayerNorm(x + attention)
            else:
                x = x + attention
            if index == until_layer:
                break
            x = layer.output.LayerNorm(x + outputs[f"m{index}"]) if self.family == "bert" else x + outputs[f"m{index}"]
        return x

    def edge_metric(self, base_ids, contrast, base_outputs, source_outputs, sender: str, receiver: str, input: str | None):
        """The metric of the base run with the one edge sender -> receiver carrying the source's output."""
        seen = dict(base_outputs)
        seen[sender] = source_outputs[sender]
        with torch.no_grad():
            if receiver == "logits":
                x = self.stream(seen, self.layers_count, False)
                module = self.theirs.cls if self.family == "bert" else self.final_norm
                normed = x if self.family == "bert" else module(x)
                hook = (module, "pre", lambda m, a: (x,)) if self.family == "bert" else (module, "post", lambda m, a, out: normed)
            elif receiver.startswith("m"):
                layer_index = int(receiver[1:])
                layer = self.layers[layer_index]
                x = self.stream(seen, layer_index, True)
                if self.family == "bert":
                    hook = (layer.intermediate, "pre", lambda m, a: (x,))
                else:
                    normed = layer.mlp_norm(x)
                    hook = (layer.mlp, "pre", lambda m, a: (normed,))
            else:
                layer_index, head = (int(part[1:]) for part in receiver.split("."))
                layer = self.layers[layer_index]
                x = self.stream(seen, layer_index, False)
                hook = self._input_hook(layer, head, input, x)
        return self.run(base_ids, contrast, hooks=[hook])[0]

    def _input_hook(self, layer, head: int, input: str, x):
        """Replace one head's query, key or value: its slice of the projection's output, computed from x."""
        hidden = self.heads * self.head_dim
        if self.family == "bert":
            module = getattr(layer.attention.self, {"q": "query", "k": "key", "v": "value"}[input])
            part = slice(head * self.head_dim, (head + 1) * self.head_dim)
            x_in = x
        else:  # Wqkv: [q | k | v], heads side by side in each
            module = layer.attn.Wqkv
            offset = {"q": 0, "k": 1, "v": 2}[input] * hidden
            part = slice(offset + head * self.head_dim, offset + (head + 1) * self.head_dim)
            x_in = layer.attn_norm(x)

        replacement = torch.nn.functional.linear(x_in, module.weight, module.bias)[..., part]

        def replace(module, args, output):
            output = output.clone()
            output[..., part] = replacement
            return output

        return module, "post", replace


# ---- the tests ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_a_sample_of_edges_equals_transformers_forward_hooks(family_models, direction):
    family, ours, theirs, contrast = family_models
    reference = Reference(family, theirs)
    ids = {name: torch.tensor([encoding.input_ids]) for name, encoding in (("clean", contrast.clean), ("corrupted", contrast.corrupted))}
    recorded = {name: reference.run(ids[name], contrast, record=True) for name in ids}
    run, source = ("clean", "corrupted") if direction == "noise" else ("corrupted", "clean")
    parts, graph = EncoderParts.of(ours), CircuitGraph.of(ours.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    assert runs.metrics[run] == pytest.approx(recorded[run][0], abs=TOLERANCE)
    sample = list(range(0, len(graph), max(1, len(graph) // 24))) + [len(graph) - 1]
    rows = torch.zeros(len(sample), len(graph), dtype=torch.bool)
    rows[torch.arange(len(sample)), torch.tensor(sample)] = True
    values = patched_metrics(parts, graph, runs, "logit-difference", direction, rows, batch_size=5)
    kinds = set()
    for value, index in zip(values.tolist(), sample):
        edge = graph.edges[index]
        expected = reference.edge_metric(ids[run], contrast, recorded[run][1], recorded[source][1], edge.sender.name,
                                         edge.receiver.node.name, edge.receiver.input)
        assert value == pytest.approx(expected, abs=TOLERANCE), edge.name
        kinds.add((edge.sender.kind, edge.receiver.input or edge.receiver.node.kind))
    assert {kind for _, kind in kinds} >= {"q", "k", "v", "mlp", "logits"} and {kind for kind, _ in kinds} >= {"embeddings", "head", "mlp"}


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_patching_no_edge_gives_the_run_and_every_edge_the_other_run(family_models, direction):
    _, ours, _, contrast = family_models
    parts, graph = EncoderParts.of(ours), CircuitGraph.of(ours.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    run, source = runs.oriented(direction)
    with torch.no_grad():  # the model's own forward pass as the reference for both ends
        expected = {name: float(ours(*encoding.tensors())[0, contrast.mask_position][[contrast.answer_id, contrast.foil_id]]
                                .diff().neg()) for name, encoding in (("clean", contrast.clean), ("corrupted", contrast.corrupted))}
    values = patched_metrics(parts, graph, runs, "logit-difference", direction,
                             torch.stack([torch.zeros(len(graph)), torch.ones(len(graph))]).bool(), batch_size=2)
    assert values.tolist() == pytest.approx([expected[run], expected[source]], abs=TOLERANCE)
    assert abs(expected[run] - expected[source]) > 100 * TOLERANCE  # the two runs differ, so the check can fail


def test_eap_is_the_first_order_change_of_the_patched_metric(family_models):
    """d metric / d mask at 0, against a central difference of the mixed edge (step 0.01: its float32 rounding,
    about 1e-6 / 0.01, and its curvature error stay well inside the tolerance)."""
    _, model, _, contrast = family_models
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    scores = edge_scores(model, [contrast], "eap", direction="noise")
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    step = 1e-2
    for index, _ in [(int(i), None) for i in scores.scores.abs().argsort(descending=True)[:5]]:
        values = []
        for sign in (1, -1):
            mask = torch.zeros(1, len(graph))
            mask[0, index] = sign * step
            with torch.no_grad():
                result = run_graph(parts, graph, runs.embeddings["clean"], None, graph.mask(mask), runs.outputs["corrupted"],
                                   anchor=runs.outputs["clean"])
            values.append(float(read_metric(parts, result.final, contrast, "logit-difference")[0].detach()))
        central = (values[0] - values[1]) / (2 * step)
        assert float(scores.scores[index]) == pytest.approx(central, rel=2e-2, abs=1e-3), graph.edges[index].name


def test_node_rows_patch_every_outgoing_edge(family_models):
    """An exact node score is the node's output swapped everywhere: the same as swapping it in the model itself
    (bert.interventions on the MLP's hook_result)."""
    _, ours, _, contrast = family_models
    scores = edge_scores(ours, [contrast], "exact", direction="noise", batch_size=64)
    graph = scores.graph
    layer = ours.config.num_layers - 1
    with torch.no_grad():
        _, cache = ours.run_with_cache(*contrast.corrupted.tensors(), names=[f"transformer.{layer}.residual.hook_result"])
        source = cache["mlp_result", layer]
        logits, _ = ours.run_with_cache(*contrast.clean.tensors(), names=[], interventions={
            f"transformer.{layer}.residual.hook_result": lambda activation, name: source})
    at_mask = logits[0, contrast.mask_position]
    expected = float(at_mask[contrast.answer_id] - at_mask[contrast.foil_id]) - scores.clean_metric
    assert float(scores.nodes[graph.sender_index(f"m{layer}")]) == pytest.approx(expected, abs=TOLERANCE)


def test_deberta_is_refused_in_words(tmp_path, tiny_vocab_file):
    build_hf("deberta-v2", "DebertaV2ForMaskedLM").save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    ours, _ = bert.load_pretrained(str(tmp_path))
    with pytest.raises(InvalidInputError, match="DeBERTa's disentangled attention"):
        EncoderParts.of(ours)


@pytest.mark.parametrize("family,architecture", [("roberta", "RobertaForMaskedLM"), ("distilbert", "DistilBertForMaskedLM"),
                                                 ("albert", "AlbertForMaskedLM"), ("electra", "ElectraForMaskedLM")])
def test_every_post_ln_family_gives_both_ends_exactly(family, architecture, tmp_path, tiny_vocab_file):
    """RoBERTa, DistilBERT, ALBERT (one layer shared by every depth, E < H) and ELECTRA (E < H): no edge patched is
    the run, every edge the other run, against the model's own forward pass."""
    build_hf(family, architecture).save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(tmp_path))
    contrast = _far_apart(ours, tokenizer)
    parts, graph = EncoderParts.of(ours), CircuitGraph.of(ours.config)
    runs = pair_runs(parts, graph, contrast, "logit-difference")
    with torch.no_grad():
        expected = [float(ours(*encoding.tensors())[0, contrast.mask_position][[contrast.answer_id, contrast.foil_id]].diff().neg())
                    for encoding in (contrast.clean, contrast.corrupted)]
    values = patched_metrics(parts, graph, runs, "logit-difference", "noise",
                             torch.stack([torch.zeros(len(graph)), torch.ones(len(graph))]).bool(), batch_size=2)
    assert values.tolist() == pytest.approx(expected, abs=TOLERANCE)
    assert abs(expected[0] - expected[1]) > 100 * TOLERANCE


# ---- EAP-IG against Captum and transformers' own modules on the same weights ----------------------------------

IG_STEPS = 4


def _ids(contrast, direction):
    """(the run's input ids, the source's) as [1, seq] tensors."""
    run, source = (contrast.clean, contrast.corrupted) if direction == "noise" else (contrast.corrupted, contrast.clean)
    return torch.tensor([run.input_ids]), torch.tensor([source.input_ids])


def _metric_of(family, theirs, contrast):
    """transformers' forward pass from input ids [row, seq] to the logit difference at the [MASK], [row]."""

    def metric(input_ids):
        kwargs = {"token_type_ids": torch.zeros_like(input_ids)} if family == "bert" else {}
        at_mask = theirs(input_ids=input_ids, **kwargs).logits[:, contrast.mask_position]
        return at_mask[:, contrast.answer_id] - at_mask[:, contrast.foil_id]

    return metric


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_eap_ig_of_the_embeddings_equals_captums_layer_integrated_gradients(family_models, direction):
    """A node's EAP-IG score (the sum of its outgoing edges') is, for the embeddings, integrated gradients on the
    embeddings' output (Sundararajan et al. 2017) with the source as the input and the run as the baseline: Captum's
    LayerIntegratedGradients on transformers' embeddings module, a right Riemann sum (points k / steps of the way
    from the run, k = 1 .. steps: the source's end in, the run's out, as Hanna et al. 2024's path from the
    counterfactual). A left sum (the other end) differs far beyond the tolerance, so the points are checked."""
    from captum.attr import LayerIntegratedGradients

    family, ours, theirs, contrast = family_models
    scores = edge_scores(ours, [contrast], "eap-ig", direction=direction, steps=IG_STEPS)
    ours_value = float(scores.nodes[scores.graph.sender_index("embeddings")])
    run_ids, source_ids = _ids(contrast, direction)
    captum = LayerIntegratedGradients(_metric_of(family, theirs, contrast), Reference(family, theirs).embeddings)
    right, left = (float(captum.attribute(source_ids, baselines=run_ids, n_steps=IG_STEPS, method=method).sum())
                   for method in ("riemann_right", "riemann_left"))
    assert ours_value == pytest.approx(right, rel=TOLERANCE, abs=TOLERANCE)
    assert abs(left - right) > 100 * TOLERANCE


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_eap_ig_of_the_edges_into_layer_0_equals_transformers_gradients(family_models, direction):
    """The edges from the embeddings to layer 0's query, key and value inputs: (source - run) embeddings times the
    gradient at transformers' own projection input, averaged over the runs whose embeddings lie k / steps of the way
    from the run's to the source's (k = 1 .. steps), the embeddings replaced by a forward hook. BERT: each of
    query, key and value apart; ModernBERT: their sum (one Wqkv reads them all)."""
    family, ours, theirs, contrast = family_models
    scores = edge_scores(ours, [contrast], "eap-ig", direction=direction, steps=IG_STEPS)
    reference = Reference(family, theirs)
    run_ids, source_ids = _ids(contrast, direction)
    with torch.no_grad():
        run_embeddings, source_embeddings = (reference.embeddings(input_ids=ids) if family == "modernbert" else
                                             reference.embeddings(input_ids=ids, token_type_ids=torch.zeros_like(ids))
                                             for ids in (run_ids, source_ids))
    layer = reference.layers[0]
    inputs = ({"q": layer.attention.self.query, "k": layer.attention.self.key, "v": layer.attention.self.value}
              if family == "bert" else {"qkv": layer.attn.Wqkv})
    totals = dict.fromkeys(inputs, 0.0)
    for k in range(1, IG_STEPS + 1):
        point = run_embeddings + k / IG_STEPS * (source_embeddings - run_embeddings)
        leaves = {}

        def read_own_leaf(module, args, name):
            leaves[name] = args[0].detach().clone().requires_grad_()
            return (leaves[name],)

        handles = [reference.embeddings.register_forward_hook(lambda module, args, output: point)]
        handles += [module.register_forward_pre_hook(lambda module, args, name=name: read_own_leaf(module, args, name))
                    for name, module in inputs.items()]
        try:
            value = _metric_of(family, theirs, contrast)(run_ids).sum()
            gradients = torch.autograd.grad(value, [leaves[name] for name in inputs])
        finally:
            for handle in handles:
                handle.remove()
        for name, gradient in zip(inputs, gradients):
            totals[name] += float(((source_embeddings - run_embeddings) * gradient).sum()) / IG_STEPS
    graph = scores.graph
    for name, expected in totals.items():
        edges = [edge.index for edge in graph.edges if edge.sender.kind == "embeddings" and edge.receiver.node.layer == 0
                 and edge.receiver.input is not None and edge.receiver.input in name]
        assert float(scores.scores[edges].sum()) == pytest.approx(expected, rel=TOLERANCE, abs=TOLERANCE), name
    assert sum(abs(value) for value in totals.values()) > 100 * TOLERANCE  # the edges carry something, so the check can fail


@pytest.mark.parametrize("direction", ["noise", "denoise"])
def test_eap_ig_activations_of_each_group_equals_captums_layer_integrated_gradients(family_models, direction):
    """EAP-IG-activations moves one group's outputs (the embeddings, a layer's heads, an MLP) from the run's towards
    the source's with the rest of the model running on the run's input: the group's node scores add up to Captum's
    LayerIntegratedGradients on transformers' module that writes that output (the embeddings, the attention output
    projection, the MLP's output layer), the run as the input and the source as the baseline, a right Riemann sum
    (points k / steps of the way from the source, k = 1 .. steps), with the opposite sign (Captum multiplies by
    run - source)."""
    from captum.attr import LayerIntegratedGradients

    family, ours, theirs, contrast = family_models
    scores = edge_scores(ours, [contrast], "eap-ig-activations", direction=direction, steps=IG_STEPS)
    graph, reference = scores.graph, Reference(family, theirs)
    run_ids, source_ids = _ids(contrast, direction)
    modules = [("embeddings", None, reference.embeddings)]
    for index, layer in enumerate(reference.layers):
        modules += [("head", index, reference._projection(layer)), ("mlp", index, reference._mlp_out(layer))]
    magnitude = 0.0
    for kind, layer_index, module in modules:
        senders = [index for index, node in enumerate(graph.senders) if (node.kind, node.layer) == (kind, layer_index)]
        captum = LayerIntegratedGradients(_metric_of(family, theirs, contrast), module)
        expected = -float(captum.attribute(run_ids, baselines=source_ids, n_steps=IG_STEPS, method="riemann_right").sum())
        assert float(scores.nodes[senders].sum()) == pytest.approx(expected, rel=TOLERANCE, abs=TOLERANCE), (kind, layer_index)
        magnitude += abs(expected)
    assert magnitude > 100 * TOLERANCE
