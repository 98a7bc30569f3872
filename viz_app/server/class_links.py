"""Print a class's two links when the server starts: `python -m viz_app.server.class_links [app flags] [--port 8501]`.

scripts/start_app.sh --class runs it before it starts the app: it reads the same settings the app will read
(viz_app/server/settings.py: flags, environment, settings file), takes the teacher's presenter key or makes a
random one, prints the presenter's and the students' links on stderr and the key on stdout, which the script then
hands to the app in the environment (BERT_INSIDE_PRESENTER_KEY, not on a command line `ps` shows), so the printed
link is the one that works. Not in class mode: prints nothing. Bad settings: one line on stderr, exit 2. With
BERT_INSIDE_STORE set (a lecture hall, scripts/lecture.sh), the store must answer: else one line, exit 2.
"""
from __future__ import annotations

import os
import secrets
import sys

from viz_app.server import class_store
from viz_app.server.class_room import KEY_BYTES, class_links, network_host
from viz_app.server.settings import SettingsError, read_settings

DEFAULT_PORT = 8501


def main(argv: list[str]) -> int:
    port, host = DEFAULT_PORT, None
    app_flags = []
    arguments = iter(argv)
    for argument in arguments:
        if argument in ("--port", "--host"):
            value = next(arguments, "")
            port, host = (int(value) if value.isdigit() else port, host) if argument == "--port" else (port, value)
        else:
            app_flags.append(argument)
    try:
        settings = read_settings(app_flags, os.environ)
        if os.environ.get(class_store.STORE_VARIABLE):
            class_store.connect(os.environ[class_store.STORE_VARIABLE]).close()
    except (SettingsError, class_store.StoreUnavailableError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not settings.class_mode:
        return 0
    key = settings.presenter_key or secrets.token_urlsafe(KEY_BYTES)
    links = class_links(f"http://{host or network_host()}:{port}", key)
    print(f"Class mode. Presenter (keep this link to yourself): {links.presenter}", file=sys.stderr)
    print(f"Students: {links.students}", file=sys.stderr)
    print(key)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
