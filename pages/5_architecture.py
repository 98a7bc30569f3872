"""Architecture: the module tree with every tensor shape for this input and every module's parameter count."""
import pandas as pd
import streamlit as st

from bert import BertConfig, count_parameters
from viz_app import widgets
from viz_app.architecture import module_rows, tree_text
from viz_app.charts.architecture import parameter_icicle

widgets.page_header(
    "Architecture",
    "The model as seed 000 outlines it: embedding, a stack of identical layers (attention, then the MLP the seed "
    "calls the residual layer), and the LM head. Lines with → are hook points: the shape of the tensor that "
    "flows there for your input ([batch, seq, hidden], heads split as [batch, head, seq, head_dim]).",
)
context = widgets.require()
result = context.forward()
model = context.loaded.model
config = model.config

rows = module_rows(model, result.hook_shapes)
st.code(tree_text(rows), language=None)
if len(model.transformer) > 1:
    st.caption(f"Layers 1–{len(model.transformer) - 1} repeat layer 0 exactly (same modules, same shapes, own weights).")

widgets.show_chart(parameter_icicle(rows), key="icicle")

st.subheader("Seed 004's parameter arithmetic")
ours = count_parameters(config, mlm_head=model.has_mlm_head, pooler=model.pooler is not None, nsp_head=model.nsp_head is not None)
base_config = BertConfig.base()
base = count_parameters(base_config, mlm_head=True, pooler=True)
h, i, layers = config.hidden_size, config.intermediate_size, config.num_layers
arithmetic = pd.DataFrame(
    [
        ("Q, K, V weights per layer", "3 × H × H", ours["attention_qkv_weights_per_layer"], base["attention_qkv_weights_per_layer"]),
        ("MLP weights per layer", "2 × H × I", ours["mlp_weights_per_layer"], base["mlp_weights_per_layer"]),
        ("both, per layer (seed: ~6.5M)", "3H² + 2HI", ours["attention_qkv_weights_per_layer"] + ours["mlp_weights_per_layer"], base["attention_qkv_weights_per_layer"] + base["mlp_weights_per_layer"]),
        ("both, all layers (seed: ~78M)", "L × (3H² + 2HI)", layers * (ours["attention_qkv_weights_per_layer"] + ours["mlp_weights_per_layer"]), base_config.num_layers * (base["attention_qkv_weights_per_layer"] + base["mlp_weights_per_layer"])),
        ("one whole layer (with biases, output projection, LayerNorms)", "", ours["layer"], base["layer"]),
        ("embedding tables", "(V + P + 2) × H + 2H", ours["embedding"], base["embedding"]),
        ("whole model (seed: 110M for BERT-base)", "", ours["total"], base["total"]),
    ],
    columns=["what", "formula", f"this model (H={h}, I={i}, L={layers})", "BERT-base (H=768, I=3072, L=12)"],
)
st.dataframe(arithmetic, hide_index=True, column_config={c: st.column_config.NumberColumn(format="localized") for c in arithmetic.columns[2:]})
st.caption(
    "Seed 004 counts only the big weight matrices: 3·768·768 = 1,769,472 for Q, K, V and 2·768·3072 = 4,718,592 "
    "for the MLP, about 6.5M per layer. The full layer adds the attention output projection, biases and LayerNorms."
)

table = pd.DataFrame(
    {
        "module": [r.path or "(the model)" for r in rows],
        "type": [r.kind for r in rows],
        "parameters": [r.parameters for r in rows],
        "weights": [r.weights for r in rows],
        "shape for this input": [r.activation for r in rows],
        "note": [r.note for r in rows],
    }
)
with st.expander("Every module as a table (sortable; its toolbar downloads CSV)"):
    st.dataframe(table, hide_index=True, column_config={"parameters": st.column_config.NumberColumn(format="localized")})
