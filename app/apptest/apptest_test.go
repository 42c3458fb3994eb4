package apptest_test

import (
	"log/slog"
	"net/http"
	"testing"

	"agentloop/app"
	"agentloop/app/apptest"
)

func TestStartServesUntilTheTestEnds(t *testing.T) {
	var a *app.App
	t.Run("serve", func(t *testing.T) {
		a = apptest.Start(t, func(c *app.Config) { c.APIKey = "sk-test" })
		resp, err := http.Get(a.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the option was not applied: %d", resp.StatusCode)
		}
	})
	if resp, err := http.Get(a.URL() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("still serving after the test ended")
	}
}

func TestLoggerDropsRecordsAfterTheTestEnds(t *testing.T) {
	var log *slog.Logger
	t.Run("log", func(t *testing.T) {
		log = apptest.Logger(t)
		log.Warn("during the test")
	})
	log.Warn("after the test") // t.Log would panic here
}
