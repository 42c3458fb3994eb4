// Package static holds the playground's stylesheets, scripts and images,
// embedded in the binary so the pages never reach a CDN.
//
// The scripts are plain ES2020 without a framework; they build the DOM with
// createElement and textContent and draw every chart as SVG. They must never
// use innerHTML with data, inline event handlers or inline styles: the pages'
// CSP is script-src 'self' and style-src 'self'.
package static
