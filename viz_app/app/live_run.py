"""The "watch a tiny BERT learn" section: settings, the shipped log at once, "train it yourself" live (priced before
it starts and checked against the budgets, as every heavy computation: viz_app/heavy.py), stop, the queue
when another session's run holds the server (a student's run stops at its time limit, so the queue moves), and
opening the trained model in the other pages."""
from __future__ import annotations

import numpy as np
import streamlit as st

from bert.costs import megabytes
from bert.pretraining.miniature import WATCH_SENTENCE, RunLog, TinySettings, tokenizer, training_cost
from viz_app import heavy
from viz_app.server import access, sessions
from viz_app.server import singletons
from viz_app.app import models, show, state, widgets
from viz_app.app.navigation import LINK_PARAMS
from viz_app.app.page_context import Context
from viz_app.server.access import Role
from viz_app.charts import training as charts
from viz_app.charts.attention import pattern_heatmap
from viz_app.app.text import joined, markdown
from viz_app.server.training_room import STUDENT_LIMIT_S, Job, TinyTrainingRuns, shipped_log

SIZES = {"1": (1, 64, 1), "2": (2, 128, 2), "4": (4, 256, 4)}  # tiny_size's names -> (layers, hidden, heads)
CAUSAL = {"both": False, "left": True}  # tiny_attention's names -> left side only
ASKED = "_tiny_asked"  # the settings whose "Train it yourself" waits for the budget's answer (the owner's confirmation)


def settings_form() -> TinySettings:
    size, steps, seed, attention = st.columns([2, 1, 1, 2])
    layers, hidden, heads = SIZES[size.selectbox("Size", list(SIZES), format_func=LINK_PARAMS["tiny_size"].choices.get,
                                                 **state.kept("tiny_size", list(SIZES)))]
    steps = steps.number_input("Steps", 10, 3000, step=10, **state.kept("tiny_steps", range(10, 3001)))
    seed = seed.number_input("Seed", 0, 1_000_000, **state.kept("tiny_seed", range(1_000_001)))
    causal = CAUSAL[attention.radio("Each token sees", list(CAUSAL), format_func=LINK_PARAMS["tiny_attention"].choices.get,
                                    **state.kept("tiny_attention", list(CAUSAL)))]
    return TinySettings(layers=layers, hidden=hidden, heads=heads, steps=int(steps), seed=int(seed), causal=causal)


def render(context: Context) -> None:
    """The section for this visitor: the trained model's folder is offered to whoever may open folders, and a
    failed run's error text to whoever may read the server's paths (viz_app/server/access.py). The run trains in one
    of the server's heavy-computation slots (viz_app/server/training_room.py), at its price."""
    role = context.visitor.role
    may_open_folder = role.may_choose_any_model
    settings, runs = settings_form(), singletons.tiny_training_runs(context.visitor.settings.heavy_slots)
    cost = training_cost(settings)
    show.caption("A run with these settings: {}, holding about {} MB while it trains.", cost.describe(),
                 megabytes(cost.peak_bytes))
    runs.sweep()  # the runs of sessions that are gone, stopped or removed with their folders
    owner = sessions.this_session()
    mine: Job | None = st.session_state.get("tiny_job")
    current = runs.current
    if current is not None and current.owner == owner and mine is not current:  # started from the queue
        st.session_state["tiny_job"] = mine = current
    limit_s = None if may_open_folder else STUDENT_LIMIT_S  # the owner's and the presenter's runs take their time
    if st.button("Train it yourself", icon=":material/play_arrow:", type="primary", key="tiny_train",
                 disabled=mine is not None and not mine.finished.is_set()):
        st.session_state[ASKED] = settings
    if st.session_state.get(ASKED) == settings:
        status, job = _start(context, runs, settings, cost, owner, limit_s)
        if status == "full":
            show.warning("Busy: another run ({}, step {} of {}) is training and the queue is full. Press the button "
                         "again later; meanwhile the run shipped with the app is shown.", _describe(job.settings),
                         job.step, job.settings.steps, icon=":material/hourglass_top:")
        elif status in ("started", "finished"):
            st.session_state["tiny_job"] = mine = job
    if runs.place(owner) is not None:
        _queued(runs, owner)
    elif runs.current is not None and runs.current.owner != owner:
        show.info("Another run is training on this server ({}, step {} of {}): yours can start when it ends.",
                  _describe(runs.current.settings), runs.current.step, runs.current.settings.steps,
                  icon=":material/group:")
    if mine is not None and not mine.finished.is_set():
        if mine.settings == settings:
            _live(mine)
            return
        show.info("Your run ({}, {} steps) is still training: choose its settings again to watch it.",
                  _describe(mine.settings), mine.settings.steps, icon=":material/pending:")
    job = mine if mine is not None and mine.settings == settings else runs.finished(settings)
    if job is not None and job.error:
        show.error("The run failed ({}).", access.failure(job.error, role))
    elif job is not None and job.log is not None:
        _draw(job.log, settings, job, may_open_folder=may_open_folder)
    elif (shipped := shipped_log(settings)) is not None:
        show.caption("Shown: the run shipped with the app (recipes/tiny_runs.py, {}); “Train it yourself” runs it "
                     "again here, step by step.", shipped.environment.get('date', ''))
        _draw(shipped, settings)
    else:
        st.info("No run with these settings yet: press “Train it yourself”.")


def _start(context: Context, runs: TinyTrainingRuns, settings: TinySettings, cost, owner: str,
           limit_s: float | None) -> tuple[str | None, Job | None]:
    """The run asked for, once the budgets allow it (a student over them reads the numbers; the owner and the
    presenter confirm): its work counts in the visitor's hour, as a page's computation does."""
    allowed = heavy.allowed(context, cost, "tiny_train", settings.bert_config(tokenizer().vocab_size))
    if allowed or context.visitor.role is Role.STUDENT:  # started, or refused for good: nothing waits
        st.session_state.pop(ASKED, None)
    if not allowed:
        return None, None
    return runs.start(settings, owner, limit_s=limit_s, queue=True, payer=heavy.payer(context))


def _queued(runs: TinyTrainingRuns, owner: str) -> None:
    """Where this browser session stands in the queue, redrawn every second; the page reruns once its run starts."""
    @st.fragment(run_every=1.0)
    def panel():
        place, current = runs.place(owner), runs.current
        if place is None:
            st.rerun(scope="app")
        ahead = (f"the run training now ({_describe(current.settings)}, step {current.step} of {current.settings.steps})"
                 if current is not None else "the run that has just ended")
        show.info("Only one run trains at a time on this server: yours is number {} in the queue, after {}. A "
                  "student's run stops after {:g} minutes, so the queue moves; yours starts here by itself.", place,
                  ahead, STUDENT_LIMIT_S / 60, icon=":material/hourglass_top:")
        st.button("Leave the queue", key="tiny_leave_queue", on_click=runs.leave_queue, args=(owner,))

    panel()


def _live(job: Job) -> None:
    @st.fragment(run_every=1.0)
    def panel():
        if job.finished.is_set():
            st.rerun(scope="app")
        if st.button("Stop", icon=":material/stop:", key="tiny_stop"):
            job.stop.set()
        if job.log is None:
            st.progress(0.0, text="Preparing the text and the model…")
        else:
            _draw(job.log, job.settings, live=True)

    panel()


def _draw(log: RunLog, settings: TinySettings, job: Job | None = None, live: bool = False,
          may_open_folder: bool = False) -> None:
    steps_done = len(log.train_loss)
    if live:
        st.progress(min(steps_done / settings.steps, 1.0), text=f"Training: step {steps_done} of {settings.steps}")
    elif log.stopped_at is not None:
        limit = (f" when its time ran out ({job.limit_s / 60:g} minutes per student's run, so that every student gets "
                 "a turn)") if job is not None and job.timed_out else ""
        show.caption("Stopped at step {} of {}{}.", log.stopped_at, settings.steps, limit)
    widgets.show_chart(charts.loss_curves({_describe(settings): log}, "Loss while it learns"), key="tiny_loss")
    latest = log.evals[-1]
    guesses = joined(", ", (markdown("**{}** {:.1%}", token, p) for token, p in latest["guesses"]))
    show.markdown("“{}” at step {}: {}", WATCH_SENTENCE, latest['step'], guesses)
    with st.expander("Its guesses at every evaluation"):
        st.dataframe(charts.guesses_table(log), hide_index=True)
    steps = [e["step"] for e in log.evals]
    if live:  # each new evaluation is shown as it comes
        chosen = steps[-1]
        show.caption("Attention at step {}, the latest: pick another step when the run ends.", chosen)
    else:
        chosen = st.select_slider("Attention at step", steps, **state.kept("tiny_attention_step", steps, steps[-1]))
    layer, head = log.attention_at
    pattern = np.asarray(next(e for e in log.evals if e["step"] == chosen)["attention"])
    widgets.show_chart(pattern_heatmap(pattern, log.watch_tokens, list(range(len(log.watch_tokens))), layer, head), key="tiny_attention")
    if log.right_context is not None:
        cloze = log.right_context
        show.markdown("Right-context cloze set at the end: **{:.0%}** top-1, **{:.0%}** top-5 of {} sentences; {:.0f} "
                      "s on this run's machine.", cloze['top1'], cloze['top5'], cloze['sentences'], log.seconds)
    if job is not None and job.model_folder and may_open_folder:  # a server path: not for students
        st.button("Open this tiny model in the other pages", icon=":material/open_in_new:", key="tiny_open",
                  on_click=_choose_model, args=(job.model_folder,))
        show.caption("Saved for this server's session as a Hugging Face folder: {}", job.model_folder)


def _choose_model(folder: str) -> None:
    st.session_state["model_choice"] = models.FOLDER
    st.session_state["model_folder"] = folder


def _describe(settings: TinySettings) -> str:
    direction = "left-to-right" if settings.causal else "masked LM"
    return f"{settings.layers} layer{'s' * (settings.layers > 1)}, hidden {settings.hidden}, {direction}, seed {settings.seed}"
