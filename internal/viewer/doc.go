// Package viewer is `impactbench view`: a local web viewer over a project's
// benchmarks. It lists benchmarks and their runs, shows a run while it is
// going (progress counted from the files the pipeline writes, including the
// call store's unit files, so nothing in the runner has to report to it),
// shows one scenario across all targets, and lets people review verdicts
// through one queue for the whole study (study.go), their place in it kept
// by the server (place.go): they record their own verdict first and see the
// judges' afterwards. Shared with reviewers, each has a link of their own
// whose token reaches only the queue, items, their labels and the Play
// page, blind (auth.go).
//
// Safety is by construction rather than by care:
//   - model and user text reaches the page only as JSON and is inserted with
//     textContent; a Content-Security-Policy header allows only the viewer's
//     own embedded script and style, and no inline code;
//   - the server answers only requests whose Host is the loopback address it
//     is bound to (DNS rebinding), and accepts writes only from its own
//     origin with the per-session token the page was served with (CSRF);
//   - the static report (which may come from a shared folder) is served
//     sandboxed in an opaque origin, with only the report's own scripts,
//     and only when this build wrote it: it can never act as the viewer;
//   - no request path or parameter reaches the file system: benchmark and
//     target names must equal an entry the server itself listed, and
//     conversations are looked up in the loaded index, never opened by name;
//   - every route declares who may use it in one table (Server.Routes), so
//     a reviewer's token cannot reach a route by being forgotten.
package viewer
