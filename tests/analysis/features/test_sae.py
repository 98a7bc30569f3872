"""TopK sparse autoencoders: the encoding formula on hand-made weights, a planted dictionary recovered, splicing an
identity SAE changes nothing, switching a feature changes exactly its contribution, files checked on loading,
hidden_states[i] against transformers, training resumed from its checkpoint."""
import dataclasses
import json
import logging

import numpy as np
import pytest
import torch

from bert import BertTokenizer
from bert.analysis.corpus.model_fingerprint import model_fingerprint
from bert.analysis.features.corpora import corpus_from_texts
from bert.analysis.features.residuals import residual_at
from bert.analysis.features.sae import SaeConfig, SaeFileError, TopKSae, encode_tokens, load_sae, splice, steer
from bert.analysis.features.sae_measures import measure_sae
from bert.analysis.features.sae_train import SaeSettings, fit_sae, train_sae
from bert.errors import InvalidInputError
from bert.pretrained import load_folder

TEXTS = ["the dog barked at the mail man", "her cat went to the park", "the cat is at the park and the dog is to",
         "a dog went to her park", "the mail man is at the dog park", "her dog barked and the cat went"]


def config(hidden=3, features=4, k=2, scale=1.0, layer=1, fingerprint="") -> SaeConfig:
    return SaeConfig(model="test", fingerprint=fingerprint, layer=layer, hidden=hidden, features=features, k=k,
                     special_tokens=True, input_scale=scale)


def hand_made() -> TopKSae:
    sae = TopKSae(config(scale=2.0))
    with torch.no_grad():
        sae.W_enc.copy_(torch.tensor([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 1.0, 0.0], [0.5, 0.0, 0.0, -1.0]]))
        sae.b_enc.copy_(torch.tensor([0.1, -0.2, 0.0, 0.3]))
        sae.W_dec.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.0, 1.0, 0.0], [0.8, 0.0, 0.6]]))
        sae.b_dec.copy_(torch.tensor([0.5, -0.5, 1.0]))
    return sae


def test_encoding_is_the_formula_on_hand_made_weights():
    sae = hand_made()
    x = torch.tensor([[1.0, 0.5, 2.0]])
    # by hand: s x - b_dec = [2, 1, 4] - [0.5, -0.5, 1] = [1.5, 1.5, 3]
    # pre = [1.5 + 1.5, 3, -1.5 + 1.5, 0.75 - 3] + b_enc = [3.1, 2.8, 0.0, -1.95]; top 2: features 0 and 1
    assert sae.pre_activations(x)[0].tolist() == pytest.approx([3.1, 2.8, 0.0, -1.95])
    z = sae.encode(x)[0]
    assert z.tolist() == pytest.approx([3.1, 2.8, 0.0, 0.0])
    # x^ = (3.1 [1, 0, 0] + 2.8 [0, .6, .8] + b_dec) / 2 = ([3.1, 1.68, 2.24] + [.5, -.5, 1]) / 2
    assert sae(x)[0].tolist() == pytest.approx([1.8, 0.59, 1.62])
    torch.testing.assert_close(sae.decode(sae.encode(x)), sae(x))


def test_relu_after_top_k_zeroes_negative_kept_entries():
    sae = hand_made()
    x = torch.tensor([[0.25, -0.25, 0.5]])  # s x - b_dec = [0, 0, 0]: pre = b_enc = [0.1, -0.2, 0, 0.3]
    assert sae.encode(x)[0].tolist() == pytest.approx([0.1, 0.0, 0.0, 0.3])
    x = torch.tensor([[0.25, -0.25, 2.5]])  # [0, 0, 4]: pre = [2.1, -0.2, 0, -3.7]: kept 0 and 2, 2 is 0
    values, indices = sae.encode_sparse(x)
    assert sorted(indices[0].tolist()) == [0, 2] and (values >= 0).all()


def identity_sae(hidden: int, layer: int, fingerprint: str = "") -> TopKSae:
    """W_enc = [I, -I], W_dec = [I; -I], k = hidden: for each dimension exactly one of x, -x is kept, so x^ = x."""
    sae = TopKSae(config(hidden=hidden, features=2 * hidden, k=hidden, layer=layer, fingerprint=fingerprint))
    eye = torch.eye(hidden)
    with torch.no_grad():
        sae.W_enc.copy_(torch.cat([eye, -eye], 1))
        sae.W_dec.copy_(torch.cat([eye, -eye], 0))
    return sae


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    model, tokenizer = load_folder(tiny_mlm_folder)
    return model.eval(), tokenizer


def test_hidden_states_equal_transformers(tiny, tiny_mlm_folder):
    from transformers import BertModel

    model, tokenizer = tiny
    reference = BertModel.from_pretrained(tiny_mlm_folder, add_pooling_layer=False).eval()
    input_ids, token_type_ids = tokenizer.encode(TEXTS[0]).tensors()
    with torch.no_grad():
        hidden = reference(input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states
    for layer in range(model.config.num_layers + 1):
        torch.testing.assert_close(residual_at(model, layer, input_ids, token_type_ids), hidden[layer], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_identity_sae_spliced_leaves_the_logits_unchanged(tiny, layer):
    model, tokenizer = tiny
    sae = identity_sae(model.config.hidden_size, layer)
    input_ids, token_type_ids = tokenizer.encode(TEXTS[1]).tensors()
    with torch.no_grad():
        intact, _ = model.run_with_cache(input_ids, token_type_ids, names=[])
        spliced, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions={sae.hook: splice(sae)})
    torch.testing.assert_close(spliced, intact, atol=1e-5, rtol=1e-5)


def test_switching_a_feature_changes_exactly_its_contribution(tiny):
    model, tokenizer = tiny
    torch.manual_seed(0)
    sae = TopKSae(config(hidden=model.config.hidden_size, features=24, k=4, scale=1.7, layer=2))
    with torch.no_grad():
        for parameter in sae.parameters():
            parameter.normal_()
        sae.normalize_decoder()
    input_ids, token_type_ids = tokenizer.encode(TEXTS[2]).tensors()
    with torch.no_grad():
        _, cache = model.run_with_cache(input_ids, token_type_ids, names=[sae.hook])
        x = cache[sae.hook]
        z = sae.encode(x)
        feature = int(z[0].sum(0).argmax())  # one that fires on this sentence
        assert (z[0, :, feature] > 0).any()
        for factor in (0.0, 3.0):
            _, changed = model.run_with_cache(input_ids, token_type_ids, names=[sae.hook],
                                              interventions={sae.hook: steer(sae, feature, factor)})
            expected = (factor - 1) * z[..., feature, None] * sae.W_dec[feature] / 1.7
            torch.testing.assert_close(changed[sae.hook] - x, expected, atol=1e-5, rtol=1e-4)
            # the positions where it does not fire are untouched
            silent = z[0, :, feature] == 0
            assert torch.equal(changed[sae.hook][0, silent], x[0, silent])
        _, same = model.run_with_cache(input_ids, token_type_ids, names=[sae.hook], interventions={sae.hook: steer(sae, feature, 1.0)})
        torch.testing.assert_close(same[sae.hook], x)
    with pytest.raises(InvalidInputError, match="feature"):
        steer(sae, 24, 0.0)


@pytest.mark.slow
def test_planted_sparse_dictionary_is_recovered():
    """x = sum of 3 of 48 unit directions in 24 dimensions with positive weights: the SAE's decoder rows find them."""
    generator = torch.Generator().manual_seed(0)
    hidden, planted, active = 24, 48, 3
    truth = torch.randn(planted, hidden, generator=generator)
    truth /= truth.norm(dim=1, keepdim=True)

    def batches():
        while True:
            chosen = torch.rand(1024, planted, generator=generator).argsort(1)[:, :active]
            weights = torch.zeros(1024, planted).scatter(1, chosen, 0.5 + torch.rand(1024, active, generator=generator))
            yield weights @ truth

    settings = SaeSettings(features=64, k=active, steps=1500, batch_tokens=1024, learning_rate=3e-3, aux_k=16,
                           dead_after_tokens=20_000, checkpoint_every=10_000)
    sae = TopKSae(config(hidden=hidden, features=64, k=active))
    with torch.no_grad():
        directions = torch.randn(64, hidden, generator=torch.Generator().manual_seed(1))
        sae.W_dec.copy_(directions / directions.norm(dim=1, keepdim=True))
        sae.W_enc.copy_(sae.W_dec.T)
    fit_sae(sae, batches(), settings)
    cosines = truth @ sae.W_dec.detach().T  # [planted, feature]
    best = cosines.max(1).values
    assert (best >= 0.9).all(), f"{int((best < 0.9).sum())} planted features without a match, worst {best.min():.3f}"


def test_measures_of_an_identity_sae(tiny):
    model, tokenizer = tiny
    sae = identity_sae(model.config.hidden_size, 2)
    corpus = corpus_from_texts("test", TEXTS, tokenizer)
    figures = measure_sae(model, tokenizer, sae, corpus)
    assert figures["variance_explained"] == pytest.approx(1.0, abs=1e-6)
    assert figures["tokens"] == corpus.num_tokens
    assert figures["mlm_loss"]["spliced"] == pytest.approx(figures["mlm_loss"]["intact"], abs=1e-5)
    assert figures["loss_recovered"] == pytest.approx(1.0, abs=1e-4)
    assert figures["top1_agreement"]["spliced"] == 1.0
    # every token has `hidden` nonzero entries among 2 x hidden (one of x_i, -x_i), so none is dead unless x_i is 0
    assert figures["l0"] == pytest.approx(model.config.hidden_size, abs=0.01)


@pytest.fixture()
def saved(tmp_path, tiny):
    model, _ = tiny
    sae = identity_sae(model.config.hidden_size, 2, model_fingerprint(model))
    return sae.save(tmp_path / "sae")


def test_save_and_load_round_trip(saved, tiny):
    model, tokenizer = tiny
    loaded = load_sae(saved, model, layer=2)
    z = encode_tokens(loaded, model, tokenizer.encode(TEXTS[0]))
    assert z.shape == (len(tokenizer.encode(TEXTS[0])), 2 * model.config.hidden_size)
    assert json.loads((saved / "config.json").read_text())["k"] == model.config.hidden_size


def test_truncated_weights_are_refused(saved, tiny):
    data = (saved / "sae.safetensors").read_bytes()
    (saved / "sae.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(SaeFileError, match="truncated"):
        load_sae(saved, tiny[0])


def test_mis_shaped_weights_are_refused(saved, tiny):
    meta = json.loads((saved / "config.json").read_text())
    (saved / "config.json").write_text(json.dumps(meta | {"features": meta["features"] + 1}))
    with pytest.raises(SaeFileError, match="W_enc is"):
        load_sae(saved)


def test_another_model_or_layer_is_refused(saved, tiny, tiny_model):
    with pytest.raises(SaeFileError, match=r"hidden_states\[1\]"):
        load_sae(saved, tiny[0], layer=1)
    model = tiny[0]
    changed = dataclasses.replace(load_sae(saved).config, fingerprint="0" * 32)
    (saved / "config.json").write_text(changed.to_json())
    with pytest.raises(SaeFileError, match="other weights"):
        load_sae(saved, model)
    with pytest.raises(SaeFileError, match="hidden size"):
        load_sae(saved, tiny_model)


def test_config_that_is_not_an_sae_is_refused(saved):
    (saved / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"], "hidden_size": 64}))
    with pytest.raises(SaeFileError, match="not a sparse-autoencoder config"):
        load_sae(saved)


def test_training_writes_checkpoints_and_resumes(tmp_path, tiny, caplog):
    model, tokenizer = tiny
    lines = [TEXTS[i % len(TEXTS)] for i in range(600)]
    settings = SaeSettings(features=32, k=4, steps=4, batch_tokens=64, buffer_tokens=256, checkpoint_every=2,
                           sentences_per_batch=8)
    sae, first = train_sae(model, tokenizer, lines, 2, settings, tmp_path, "tiny", "test lines")
    assert (tmp_path / "checkpoint.pt").is_file() and first.steps == 4 and first.tokens == 4 * 64
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(32), atol=1e-5)
    with caplog.at_level(logging.INFO):
        _, resumed = train_sae(model, tokenizer, lines, 2, dataclasses.replace(settings, steps=6), tmp_path, "tiny", "test lines")
    assert "resuming" in caplog.text and "at step 4" in caplog.text
    assert resumed.steps == 6 and resumed.tokens == 6 * 64 and resumed.input_scale == first.input_scale
    with pytest.raises(SaeFileError, match="--features 32 there, 16 here"):
        train_sae(model, tokenizer, lines, 2, dataclasses.replace(settings, features=16), tmp_path, "tiny", "x")


def test_resuming_refuses_a_checkpoint_of_another_model_layer_or_k(tmp_path, tiny, tiny_mlm_folder):
    model, tokenizer = tiny
    lines = [TEXTS[i % len(TEXTS)] for i in range(600)]
    settings = SaeSettings(features=32, k=4, steps=2, batch_tokens=64, buffer_tokens=256, checkpoint_every=2,
                           sentences_per_batch=8)
    train_sae(model, tokenizer, lines, 2, settings, tmp_path, "tiny", "test lines")
    more = dataclasses.replace(settings, steps=4)
    with pytest.raises(SaeFileError, match="--hidden-states-index 2 there, 1 here"):
        train_sae(model, tokenizer, lines, 1, more, tmp_path, "tiny", "test lines")
    with pytest.raises(SaeFileError, match="--k 4 there, 8 here"):
        train_sae(model, tokenizer, lines, 2, dataclasses.replace(more, k=8), tmp_path, "tiny", "test lines")
    other, _ = load_folder(tiny_mlm_folder)  # the same sizes, one weight changed
    with torch.no_grad():
        other.embedding.token_embedding.weight[5, 0] += 1.0
    with pytest.raises(SaeFileError, match=r"model weights \(fingerprint\)"):
        train_sae(other.eval(), tokenizer, lines, 2, more, tmp_path, "tiny", "test lines")
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    del state["trained_for"]
    torch.save(state, tmp_path / "checkpoint.pt")
    with pytest.raises(SaeFileError, match="does not say which model"):
        train_sae(model, tokenizer, lines, 2, more, tmp_path, "tiny", "test lines")


def test_too_little_text_is_an_error(tmp_path, tiny):
    model, tokenizer = tiny
    with pytest.raises(InvalidInputError, match="fewer than"):
        train_sae(model, tokenizer, TEXTS, 1, SaeSettings(features=8, k=2, batch_tokens=64, buffer_tokens=4096), tmp_path,
                  "tiny", "six lines")


def random_sae(hidden: int, layer: int, features: int = 24, k: int = 4, special_tokens: bool = True) -> TopKSae:
    torch.manual_seed(3)
    sae = TopKSae(dataclasses.replace(config(hidden=hidden, features=features, k=k, scale=1.3, layer=layer),
                                      special_tokens=special_tokens))
    with torch.no_grad():
        for parameter in sae.parameters():
            parameter.normal_()
        sae.normalize_decoder()
    return sae


@pytest.mark.parametrize("special_tokens", [True, False])
def test_feature_scan_equals_a_brute_force_pass_with_transformers(tiny, tiny_mlm_folder, special_tokens):
    from transformers import BertModel

    from bert.analysis.features.feature_pages import scan_features

    model, tokenizer = tiny
    sae = random_sae(model.config.hidden_size, 2, special_tokens=special_tokens)
    corpus = corpus_from_texts("test", TEXTS, tokenizer)
    scan = scan_features(model, sae, corpus, tokenizer.pad_id, k=5, batch_size=4)
    reference = BertModel.from_pretrained(tiny_mlm_folder, add_pooling_layer=False).eval()
    rows = []
    with torch.no_grad():
        for encoding in corpus.encodings:
            input_ids, token_type_ids = encoding.tensors()
            hidden = reference(input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states[2][0]
            z = sae.encode(hidden)
            if not special_tokens:
                z[torch.tensor(encoding.special)] = -1.0  # never among the top: left out of the scan
            rows.append(z)
    z = torch.cat(rows).numpy()
    expected = -np.sort(-z, axis=0)[:5].T
    found = np.where(np.isinf(scan.top_values), -1.0, scan.top_values)
    np.testing.assert_allclose(np.maximum(found, 0), np.maximum(expected, 0), atol=1e-4)
    np.testing.assert_array_equal(scan.active, (z > 0).sum(0))
    assert scan.counts.sum() == (z > 0).sum()  # only the tokens where a feature fires are counted


def test_promoted_tokens_are_the_mlm_heads_logit_rise(tiny, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    from bert.analysis.features.feature_pages import promoted

    model, tokenizer = tiny
    sae = random_sae(model.config.hidden_size, 2)
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder).eval()
    base = sae.b_dec.detach() / 1.3
    with torch.no_grad():
        rise = reference.cls(torch.stack([base, base + sae.W_dec[5].detach() / 1.3]))
    rise = (rise[1] - rise[0]).numpy()
    listed = promoted(sae, model, tokenizer, 5, count=4)
    special = {tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.pad_id, tokenizer.unk_id}
    ordinary = [i for i in np.argsort(-rise) if i not in special][:4]
    assert [token for token, _ in listed] == [tokenizer.id_to_token(int(i)) for i in ordinary]
    assert [value for _, value in listed] == pytest.approx([float(rise[i]) for i in ordinary], abs=1e-4)


def test_mask_guess_change_matches_a_transformers_hook(tiny, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    from bert.analysis.features.feature_pages import mask_guess_change

    model, tokenizer = tiny
    sae = random_sae(model.config.hidden_size, 2)
    encoding = tokenizer.encode("the dog [MASK] at the mail man")
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder).eval()
    input_ids, token_type_ids = encoding.tensors()
    mask = tokenizer.mask_positions(encoding)[0]
    with torch.no_grad():
        hidden = reference(input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states[2]
        feature = int(sae.encode(hidden)[0, mask].argmax())  # one that fires at the [MASK]
        change = mask_guess_change(model, tokenizer, encoding, sae, feature, 0.0)
        delta = -sae.encode(hidden)[..., feature, None] * sae.W_dec[feature] / 1.3
        def shifted(module, inputs, out):  # a layer returns a tensor or a tuple, by transformers version
            return out + delta if isinstance(out, torch.Tensor) else (out[0] + delta, *out[1:])

        handle = reference.bert.encoder.layer[1].register_forward_hook(shifted)
        logits = reference(input_ids, token_type_ids=token_type_ids).logits[0, mask].softmax(-1)
        handle.remove()
    assert change.position == mask
    ids = [tokenizer.token_to_id(t) for t in change.tokens]
    assert change.after == pytest.approx([float(logits[i]) for i in ids], abs=1e-5)
    assert change.before != pytest.approx(change.after, abs=1e-4)
    same = mask_guess_change(model, tokenizer, encoding, sae, feature, 1.0)
    assert same.before == pytest.approx(same.after, abs=1e-6)
    with pytest.raises(InvalidInputError, match="no \\[MASK\\]"):
        mask_guess_change(model, tokenizer, tokenizer.encode("the dog"), sae, feature, 0.0)


def test_a_pass_split_at_a_layer_gives_the_logits_of_transformers(tiny, tiny_mlm_folder):
    from transformers import BertForMaskedLM

    from bert.analysis.features.residuals import logits_above

    model, tokenizer = tiny
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder).eval()
    input_ids, token_type_ids = tokenizer.encode(TEXTS[3]).tensors()
    with torch.no_grad():
        expected = reference(input_ids, token_type_ids=token_type_ids).logits
    for layer in (0, 1, 2):
        split = logits_above(model, layer, residual_at(model, layer, input_ids, token_type_ids))
        torch.testing.assert_close(split, expected, atol=1e-4, rtol=1e-4)


def test_the_shipped_sae_belongs_to_the_built_in_model(minilm_path):
    """The fingerprint covers the config and the weights: a config field added later (at its default) must not
    orphan the SAE shipped with the built-in model."""
    import bert
    from bert.analysis.features.shipped import SHIPPED_SAE

    model, _ = bert.load_pretrained("minilm")
    assert json.loads((SHIPPED_SAE / "config.json").read_text())["fingerprint"] == model_fingerprint(model)
