// A following student's page hears the class's moves as they happen (viz_app/server/class_moves.py's stream of
// Server-Sent Events) and, for a version the page has not drawn, reruns the page's listening fragment, which takes
// the step (viz_app/lessons/following.py); while the stream is open, its process tells the class the student is
// there (`heard`, the page's signed name). Streamlit calls this when the component is mounted and again when its
// data (the version drawn, following or not) changes; the stream of the call before is closed then. The browser
// reopens a dropped stream by itself (a process that died: the proxy sends the new stream to another).
const streams = new WeakMap();

export default function ({ parentElement, data, setTriggerValue }) {
    streams.get(parentElement)?.close();
    let seen = data.seen;
    const source = new EventSource(`${data.url}?seen=${encodeURIComponent(seen)}&heard=${encodeURIComponent(data.heard)}`);
    streams.set(parentElement, source);
    source.onmessage = (event) => {
        const version = Number(event.data);
        if (Number.isInteger(version) && version !== seen) {
            seen = version;
            setTriggerValue("moved", version);
        }
    };
    return () => {
        source.close();
        streams.delete(parentElement);
    };
}
