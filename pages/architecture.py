"""Architecture: the module tree with every tensor shape for this input and every module's parameter count. The
page lays out the widgets; what it computes and draws is its spec, viz_app/specs/architecture.py."""
import pandas as pd
import streamlit as st

from viz_app.app import show, widgets
from viz_app import heavy
from viz_app.specs import architecture as spec

widgets.page_header(
    "Architecture",
    "The model module by module: embedding, a stack of identical layers (attention, then the MLP), and the LM head that turns vectors back into word guesses. Lines with → are hook "
    "points (places where the app can read or change what flows through the model): the shape of the tensor "
    "that flows there for your input ([batch, seq, hidden], heads split as [batch, head, seq, head_dim]). The "
    "names follow the outline of the notes this model was written from: in each layer, attention.mlp is the "
    "heads' output projection (not an MLP) and residual is the MLP block with its add & norm; the table below "
    "gives each module's name in the Hugging Face checkpoint.",
)
context = widgets.require()
model = context.loaded.model

settings = spec.Settings()
results = {name: heavy.run(context, computation, work) for name, (computation, work) in spec.computations(settings).items()}
if any(result is None for result in results.values()):
    st.stop()  # over the budget: the page has said why
rows = spec.module_rows(model, results["shapes"])
st.code(spec.tree_text(rows), language=None)
show.caption("{}", spec.architecture_note(model.config))

for name, chart in spec.view(settings, context, results).items():
    widgets.show_chart(chart, key=name)

st.subheader("Where the parameters are: the arithmetic by hand")
arithmetic = spec.parameter_arithmetic(model)
numbers = {column: st.column_config.NumberColumn(format="localized") for column in arithmetic.columns[2:]}
st.dataframe(arithmetic, hide_index=True, column_config=numbers)
st.caption(
    "Counting only the big weight matrices, as explanations of BERT usually do: 3·768·768 = 1,769,472 for Q, K, V and 2·768·3072 = 4,718,592 "
    "for the MLP, about 6.5M per layer. The full layer adds the attention output projection, biases and LayerNorms."
)

table = pd.DataFrame(
    {
        "module": [r.path or "(the model)" for r in rows],
        "type": [r.kind for r in rows],
        "parameters": [r.parameters for r in rows],
        "weights": [r.weights for r in rows],
        "shape for this input": [r.activation for r in rows],
        "in the Hugging Face checkpoint": [r.checkpoint for r in rows],
        "note": [r.note for r in rows],
    }
)
with st.expander("Every module as a table (sortable; its toolbar downloads CSV)"):
    st.dataframe(table, hide_index=True, column_config={"parameters": numbers[arithmetic.columns[2]]})
