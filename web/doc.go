// Package web is the playground: the pages (home, race, explorer, runs,
// docs, login, the inspector's /inspect, a report card's /check/{id}),
// the report cards of agentloop check (/api/checks), the run JSON API (/api/runs), the
// inspector's session API (/api/sessions), the live feeds of running races
// (/ui/runs/{id}/live) and of the inspector (/ui/inspect/…), fanned out to
// every page by one hub, which runs overlapped a run
// (/ui/runs/{id}/overlaps), the recorded race the home page and
// presenter mode open on (RaceRecording, docs/race-reference.json), the
// embedded static assets, and the same-origin guard for state-changing routes
// (SameOrigin, and SameOriginJSON with IsJSON, the one media-type check),
// which app applies to every route of the process. Its handlers return *api.Error;
// app's error handler writes it.
//
// It reaches races through the narrow Races and Runs interfaces (a
// rollout.Runner and the store), client sessions through Inspector (an
// inspect.Inspector), who sent a request through Identify and the
// process's in-flight budget of request bodies through Budget (both
// app's), and the engine only the way a client does:
// the pages' scripts call /v1 and /api/traces from the browser. web must
// never import server or app, never run inference itself, and never write
// user content into a page except through templ's escaping (or textContent
// in the scripts).
package web
