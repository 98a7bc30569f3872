"""Lessons: guided steps through the app for a class, one step per screen, with a link per step for students."""
import plotly.graph_objects as go
import streamlit as st

from viz_app import heavy
from viz_app.server import access
from viz_app.app import uploads
from viz_app.app import show, state, widgets
from viz_app.server.access import Role
from viz_app.lessons import following, session
from viz_app.export import html as export_html
from viz_app.lessons.format import PAGES, LessonError, builtin_lessons, parse_lesson
from viz_app.app.text import joined, markdown, without_images

UPLOAD = session.UPLOAD
STAGE_CSS = """<style>
.st-key-lesson_stage p, .st-key-lesson_stage li { font-size: 1.5rem; line-height: 1.45; }
.st-key-lesson_stage h2 { font-size: 2.6rem; }
.st-key-lesson_stage [data-testid="stCaptionContainer"] p { font-size: 1.15rem; }
</style>"""

context = widgets.require(needs_input=False)
presenter = context.visitor.role is Role.PRESENTER  # in class mode: moves the class
lessons = builtin_lessons()
presenting = st.session_state.get(session.STEP) is not None
if not presenting:  # the presenter view keeps the screen for the step
    widgets.page_header(
        "Lessons",
        "A path through the app for a class: each step opens a page with the right sentence, layer and head already "
        "set, says what to look at and asks a question. Arrow keys or the buttons move between steps; each step has "
        "a link students open on their own laptops to reach the same view.",
    )
state.clamp("lesson_name", [*lessons, UPLOAD])
if presenting:
    name = st.session_state["lesson_name"]
else:
    name = st.selectbox("Lesson", [*lessons, UPLOAD], **state.kept("lesson_name"),
                        format_func=lambda n: "Your own lesson file (.yaml)…" if n == UPLOAD else lessons[n].title)
if name == UPLOAD and not presenting:
    upload = uploads.upload_box("A lesson file (docs/teaching.md shows how to write one)", ["yaml", "yml"],
                                "lesson_file", uploads.LESSON_BYTES)
    text = uploads.read_text(upload, uploads.LESSON_BYTES) if upload is not None else None
    if text is not None:
        try:
            session.keep_uploaded(parse_lesson(text, upload.name.rsplit(".", 1)[0], source=upload.name))
        except LessonError as error:
            session.keep_uploaded(None)
            show.error("This lesson cannot be used: {}", error, icon=":material/error:")
lesson = st.session_state.get(session.UPLOADED) if name == UPLOAD else lessons[name]
index = session.current_step(lesson)
if lesson is None:  # kept while the class visits the steps' pages
    st.stop()
base_url = session.students_base_url()  # the class link's: read in the page's run (the download's thread has no browser)


def lesson_not_made(why: str) -> str:
    return export_html.document(lesson.title, [export_html.Section("This lesson's file was not made", paragraphs=(
        f"The app did not make it: {why}. Go back to the app and press “Download this lesson” again.",))])


every_step, handout = session.download(context, lesson, base_url, lesson_not_made)  # every step's computations
download = dict(data=handout, file_name=f"{lesson.name}.html",
                mime="text/html", on_click="ignore", icon=":material/download:",
                help="One HTML file with every step's figures for the loaded model, the texts, and the questions with "
                "their answers folded away. It opens without the app or a network.")
if not heavy.within_budget(context, every_step):
    download |= dict(disabled=True, help="Every step's figures together cost more than one computation may on this "
                     "server: download this lesson at the server's machine, or ask the teacher to raise the budget.")


def show_step(step, figures: list, trouble: Exception | None) -> None:
    """The step on the stage: its texts, its figures (or why there are none), its question and notice."""
    show.caption("{} · **step {} of {}** · {} page", lesson.title, step.number, step.total, PAGES[step.page][1])
    show.header("{}", step.title, anchor=False)
    show.markdown("{}", without_images(step.text))
    for problem in step.problems:
        show.warning("{}", problem, icon=":material/info:")
    if trouble is not None:
        show.warning("The figures of this step could not be drawn here ({}); open the page instead.",
                     access.failure(trouble, context.visitor.role))
    columns = st.columns(2) if len(figures) > 1 else [st.container()]
    for number, chart in enumerate(figures):
        with columns[number % len(columns)] if number < 2 else st.container():
            figure = go.Figure(chart.figure).update_layout(font_size=16, title_font_size=19)  # for the back row
            st.plotly_chart(figure, key=f"lesson_chart_{number}", width="stretch", config={"displaylogo": False})
    if not figures:
        show.info("This step is on the {} page: press “Open this step in the app” to see it.", PAGES[step.page][1])
    if step.question:
        show.markdown("**Question.** {}", without_images(step.question))
        with st.expander("Answer (click to reveal)", key=f"lesson_answer_{lesson.name}_{index}"):
            show.markdown("{}", without_images(step.answer))
    if step.notice:
        show.info("**Notice:** {}", without_images(step.notice), icon=":material/visibility:")


if index is None:  # the overview: what the lesson covers
    show.subheader("{}", lesson.title, anchor=False)
    show.markdown("{}", lesson.about)
    show.markdown("{}", joined("\n", (markdown("{}. {} ({})", n, s.title, PAGES[s.page][1])
                                       for n, s in enumerate(lesson.steps, 1))))
    left, right = st.columns([1, 3])
    left.button("Start the lesson", type="primary", icon=":material/play_arrow:", on_click=session.start,
                args=(lesson, context.visitor), key="lesson_start")
    with right:
        st.download_button("Download this lesson", key="lesson_download", **download)
    if presenter:
        following.presenter_box(context.visitor)
    st.stop()

st.html(STAGE_CSS)
step, figures, trouble = None, (), None
worked = session.worked_step(context, lesson, index, st.session_state)  # None: over the budget (it said why)
if worked is not None:
    step, figures, trouble = worked.step, worked.figures, worked.trouble
    session.apply(lesson, step, context.key.source)
    session.switch_if_asked(step, context.key.source)
# the buttons above the step, so that Next stays on a 768-pixel screen whatever the step shows
buttons = st.columns([0.9, 0.9, 1.9, 1.5, 1.9])
buttons[0].button("Back", icon=":material/arrow_back:", shortcut="Left", key="lesson_back", disabled=index == 0,
                  on_click=session.go_to, args=(lesson, index - 1, context.visitor), width="stretch")
buttons[1].button("Next", icon=":material/arrow_forward:", shortcut="Right", key="lesson_next", type="primary",
                  disabled=index == len(lesson.steps) - 1, on_click=session.go_to, args=(lesson, index + 1, context.visitor),
                  width="stretch")
buttons[2].button("Open this step in the app", icon=":material/open_in_new:", key="lesson_open", disabled=step is None,
                  on_click=session.open_page, args=(step,), width="stretch",
                  help="Goes to the step's page, set as the step says; it stays so when you leave the lesson.")
buttons[3].button("Leave the lesson", icon=":material/close:", key="lesson_leave", on_click=session.go_to,
                  args=(lesson, None, context.visitor), width="stretch")
with buttons[4]:
    st.download_button("Download this lesson", key="lesson_download", width="stretch", **download)
with st.container(key="lesson_stage"):
    if step is None:
        show.caption("{} · **step {} of {}**", lesson.title, index + 1, len(lesson.steps))
    else:
        show_step(step, figures, trouble)

if presenter:
    following.presenter_box(context.visitor)
if step is not None:
    st.caption("For students: open this link on your own laptop to reach the same view (the button on the right copies it).")
    st.code(step.link(base_url, context.key.source), language=None, wrap_lines=True)
