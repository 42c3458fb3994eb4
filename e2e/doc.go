// Package e2e holds the browser tests of the playground: a real agentloop
// server started in-process on 127.0.0.1:0 with a temporary database, driven
// by headless Chromium through playwright-go (set up by scripts/e2e-setup.sh).
//
// The tests find elements by the data-testid hooks of issue 5 and fail on
// any console error. With E2E_SCREENSHOTS set (`make e2e` sets it) they save
// screenshots under e2e/screenshots. Without
// PLAYWRIGHT_DRIVER_PATH (set by `make test` and `make e2e`) they skip. The
// accessibility checks inject axe-core, which scripts/e2e-setup.sh installs
// pinned under $PLAYWRIGHT_DRIVER_PATH/axe (AXE_CORE_PATH overrides), into a
// context that bypasses the pages' CSP, and fail on any serious or critical
// violation. The tests run in parallel (startBrowserTest), each with its own app
// and browser contexts on the one shared browser. The package holds tests
// only; it must never be imported.
package e2e
