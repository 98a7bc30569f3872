"""Lessons: guided steps through the app for a class.

format.py reads and checks lesson files (YAML); computed.py finds the values a step computes for the loaded model;
resolve.py makes a step concrete (state, texts, link); views.py builds a page's figures without Streamlit;
export.py writes a lesson as one HTML handout (`python -m viz_app.export.lesson` on the command line). Built-in lessons: builtin/.
"""
