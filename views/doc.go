// Package views renders the playground's pages with templ. Every component
// takes a view model that holds only what it shows, already formatted;
// views never read the store, the runner or the request.
//
// templ escapes every value, so model text and tool outputs are safe to
// pass as they are. Views must never emit inline scripts, inline event
// handlers or style attributes (the CSP forbids them), and they keep the
// data-testid hooks that the browser tests and other tools rely on.
package views
