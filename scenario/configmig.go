package scenario

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// config-migration: move relay's http.timeout (seconds) to http.timeoutMs
// (milliseconds) in a TypeScript service: schema, defaults, loader (with a
// legacy conversion), environment variable, config files, the HTTP client and
// every channel that reads the timeout, in three different ways.

//go:embed repos/config-migration.txtar
var relayArchive string

//go:embed repos/config-migration-templates.txtar
var relayTemplateArchive string

type tsField struct {
	Name, Wire, Type, Sample string
	Required                 bool
	Max                      int
	Pattern, PatternHint     string // a JS regex literal and what it means
}

// Validation is the TypeScript that checks the field in validate().
func (f tsField) Validation() string {
	var b strings.Builder
	x := "message." + f.Name
	if f.Required {
		fmt.Fprintf(&b, "\n    if (%s === undefined || %s === '') problems.push('%s is required');", x, x, f.Name)
	}
	switch {
	case f.Type == "number":
		fmt.Fprintf(&b, "\n    if (%s !== undefined && !(%s >= 0)) problems.push('%s must not be negative');", x, x, f.Name)
	case f.Type == "string[]":
		fmt.Fprintf(&b, "\n    if (%s !== undefined && %s.length > %d) problems.push('%s takes at most %d entries');", x, x, f.Max, f.Name, f.Max)
	case f.Max > 0:
		fmt.Fprintf(&b, "\n    if (%s && %s.length > %d) problems.push('%s must be at most %d characters');", x, x, f.Max, f.Name, f.Max)
	}
	if f.Pattern != "" {
		fmt.Fprintf(&b, "\n    if (%s && !%s.test(%s)) problems.push('%s must be %s');", x, f.Pattern, x, f.Name, f.PatternHint)
	}
	return b.String()
}

// Audit is how the field appears in the audit log: long text is reduced to
// its length, addresses are partly masked.
func (f tsField) Audit() string {
	x := "message." + f.Name
	switch {
	case f.Type == "number":
		return x + " ?? null"
	case f.Type == "string[]":
		return x + "?.length ?? 0"
	case f.Pattern == emailRE || f.Pattern == e164RE:
		return x + " ? " + x + ".slice(0, 3) + '***' : null"
	case f.Max > 1000:
		return x + "?.length ?? 0"
	}
	return x + " ?? null"
}

type tsLimit struct{ Name, Value string }
type tsError struct {
	Status int
	Text   string
}

// tsChannel is one generated notification sender.
type tsChannel struct {
	Module, Class, Display, Summary string
	Notes                           []string
	Settings                        []tsField
	Fields                          []tsField
	Endpoint                        string
	MaxBatch                        int
	Limits                          []tsLimit
	Errors                          []tsError
	HeaderLines                     []string
	ProviderIdKey, SigningKey       string
	// How the sender reads the timeout: "ms" multiplies the seconds by 1000,
	// "capped" caps that at 5 s, "seconds" hands seconds to the provider.
	TimeoutStyle string
}

type tsTemplate struct{ Key, Locale, Text string }

var relayNotifications = []struct{ key, en, es, fr string }{
	{"order_confirmed", "Thanks, {{name}}! Order {{order}} is confirmed and will ship within 2 business days.", "¡Gracias, {{name}}! El pedido {{order}} está confirmado y se enviará en 2 días hábiles.", "Merci, {{name}} ! La commande {{order}} est confirmée et partira sous 2 jours ouvrés."},
	{"order_shipped", "Order {{order}} has shipped with {{carrier}}. Track it: {{tracking_url}}", "El pedido {{order}} se envió con {{carrier}}. Síguelo: {{tracking_url}}", "La commande {{order}} a été expédiée avec {{carrier}}. Suivi : {{tracking_url}}"},
	{"out_for_delivery", "Order {{order}} is out for delivery today.", "El pedido {{order}} está en reparto hoy.", "La commande {{order}} est en cours de livraison aujourd'hui."},
	{"delivered", "Order {{order}} was delivered. Enjoy!", "El pedido {{order}} fue entregado. ¡Que lo disfrutes!", "La commande {{order}} a été livrée. Bonne utilisation !"},
	{"delivery_failed", "We could not deliver order {{order}}: {{reason}}. We will try again tomorrow.", "No pudimos entregar el pedido {{order}}: {{reason}}. Lo intentaremos mañana.", "Nous n'avons pas pu livrer la commande {{order}} : {{reason}}. Nouvel essai demain."},
	{"refund_issued", "We refunded {{amount}} for order {{order}}. It can take 5 to 10 days to appear.", "Reembolsamos {{amount}} del pedido {{order}}. Puede tardar de 5 a 10 días.", "Nous avons remboursé {{amount}} pour la commande {{order}}. Comptez 5 à 10 jours."},
	{"password_reset", "Your Harborline reset code is {{code}}. It expires in 10 minutes.", "Tu código de Harborline es {{code}}. Caduca en 10 minutos.", "Votre code Harborline est {{code}}. Il expire dans 10 minutes."},
	{"payment_failed", "The payment for order {{order}} failed. Update your card to keep the order: {{url}}", "El pago del pedido {{order}} falló. Actualiza tu tarjeta: {{url}}", "Le paiement de la commande {{order}} a échoué. Mettez à jour votre carte : {{url}}"},
	{"back_in_stock", "{{product}} is back in stock. Get it before it's gone: {{url}}", "{{product}} vuelve a estar disponible: {{url}}", "{{product}} est de nouveau en stock : {{url}}"},
	{"review_request", "How was {{product}}? Tell us in one minute: {{url}}", "¿Qué tal {{product}}? Cuéntanoslo en un minuto: {{url}}", "Comment trouvez-vous {{product}} ? Dites-le-nous : {{url}}"},
}

// Templates are the channel's default texts, one per notification and
// locale; channels with short messages prefix or trim them differently.
func (c tsChannel) Templates() []tsTemplate {
	var out []tsTemplate
	for _, n := range relayNotifications {
		for _, l := range []struct{ loc, text string }{{"en", n.en}, {"es", n.es}, {"fr", n.fr}} {
			text := l.text
			switch c.Module {
			case "sms", "push", "voice":
				text = "Harborline: " + text
			case "pager", "chat":
				text = "[" + n.key + "] " + text
			}
			out = append(out, tsTemplate{Key: n.key, Locale: l.loc, Text: strings.ReplaceAll(text, "'", "\\'")})
		}
	}
	return out
}

func (c tsChannel) file() string     { return "src/channels/" + c.Module + ".ts" }
func (c tsChannel) testFile() string { return "test/channels/" + c.Module + ".test.ts" }

func (c tsChannel) TimeoutField() string {
	if c.TimeoutStyle == "seconds" {
		return "deadlineSeconds"
	}
	return "timeoutMs"
}

// TimeoutExpr is how the sender reads the timeout before the migration.
func (c tsChannel) TimeoutExpr() string {
	switch c.TimeoutStyle {
	case "seconds":
		return "this.http.timeout"
	case "capped":
		return "Math.min(this.http.timeout * 1000, 5000)"
	}
	return "this.http.timeout * 1000"
}

// TimeoutWant is what the test expects with http.timeoutMs = 5000.
func (c tsChannel) TimeoutWant() string {
	if c.TimeoutStyle == "seconds" {
		return "5"
	}
	return "5000"
}

const (
	emailRE = `/^[^@\s]+@[^@\s]+\.[a-z]{2,}$/i`
	e164RE  = `/^\+[1-9]\d{6,14}$/`
	urlRE   = `/^https:\/\//`
)

var relayChannels = []tsChannel{
	{Module: "email", Class: "Email", Display: "Email", Summary: "transactional email through the mail gateway.",
		Notes:    []string{"The gateway queues mail and answers quickly; a slow answer means it is", "overloaded, so we keep the full HTTP timeout and let retries back off."},
		Settings: []tsField{{Name: "from", Type: "string", Sample: "'Harborline <no-reply@harborline.example>'", Required: true}, {Name: "replyTo", Type: "string"}, {Name: "apiKey", Type: "string", Sample: "'mg-test'", Required: true}},
		Fields: []tsField{
			{Name: "to", Wire: "to", Type: "string", Sample: "'ada@example.com'", Required: true, Max: 254, Pattern: emailRE, PatternHint: "an email address"},
			{Name: "subject", Wire: "subject", Type: "string", Sample: "'Your order has shipped'", Required: true, Max: 200},
			{Name: "html", Wire: "html", Type: "string", Sample: "'<p>On its way.</p>'", Required: true, Max: 200000},
			{Name: "text", Wire: "text", Type: "string", Max: 100000},
			{Name: "tags", Wire: "o:tag", Type: "string[]", Max: 3},
		},
		Endpoint: "/v3/mail/send", MaxBatch: 500, Limits: []tsLimit{{"MAX_RECIPIENTS", "1"}},
		Errors:        []tsError{{400, "the gateway rejected the message"}, {401, "the mail API key was rejected"}, {413, "the message is too large"}},
		HeaderLines:   []string{"headers.authorization = `Bearer ${this.settings.apiKey}`;", "if (this.settings.replyTo) headers['reply-to'] = this.settings.replyTo;"},
		ProviderIdKey: "message_id", SigningKey: "apiKey", TimeoutStyle: "ms"},
	{Module: "sms", Class: "Sms", Display: "SMS", Summary: "text messages through the SMS aggregator.",
		Notes:    []string{"The aggregator takes a delivery deadline in seconds and gives up on the", "message after it, so we pass our HTTP timeout through as that deadline."},
		Settings: []tsField{{Name: "sender", Type: "string", Sample: "'HARBOR'", Required: true}, {Name: "accountSid", Type: "string", Sample: "'AC-test'", Required: true}, {Name: "authToken", Type: "string", Sample: "'tok'", Required: true}},
		Fields: []tsField{
			{Name: "to", Wire: "To", Type: "string", Sample: "'+15035550100'", Required: true, Pattern: e164RE, PatternHint: "an E.164 number"},
			{Name: "body", Wire: "Body", Type: "string", Sample: "'Your code is 123456'", Required: true, Max: 1600},
			{Name: "statusCallback", Wire: "StatusCallback", Type: "string", Pattern: urlRE, PatternHint: "an https URL"},
		},
		Endpoint: "/2010-04-01/Messages.json", MaxBatch: 100, Limits: []tsLimit{{"SEGMENT_LENGTH", "153"}},
		Errors:        []tsError{{400, "the aggregator rejected the number or body"}, {401, "the SMS credentials were rejected"}, {429, "the SMS account is rate limited"}},
		HeaderLines:   []string{"headers.authorization = 'Basic ' + Buffer.from(`${this.settings.accountSid}:${this.settings.authToken}`).toString('base64');"},
		ProviderIdKey: "sid", SigningKey: "authToken", TimeoutStyle: "seconds"},
	{Module: "chat", Class: "Chat", Display: "Chat", Summary: "posts to team chat channels for operational alerts.",
		Notes:    []string{"Chat posts go to incoming-webhook URLs, one per channel."},
		Settings: []tsField{{Name: "defaultChannel", Type: "string", Sample: "'#ops'", Required: true}, {Name: "username", Type: "string"}},
		Fields: []tsField{
			{Name: "channel", Wire: "channel", Type: "string", Sample: "'#fulfilment'", Required: true, Max: 80},
			{Name: "text", Wire: "text", Type: "string", Sample: "'Order backlog above 500'", Required: true, Max: 4000},
			{Name: "threadTs", Wire: "thread_ts", Type: "string", Max: 32},
			{Name: "iconEmoji", Wire: "icon_emoji", Type: "string", Max: 64},
		},
		Endpoint: "/chat/post", MaxBatch: 50, Limits: []tsLimit{{"MAX_BLOCKS", "50"}},
		Errors:        []tsError{{403, "the chat webhook was revoked"}, {404, "the chat channel does not exist"}},
		HeaderLines:   []string{"if (this.settings.username) headers['x-chat-username'] = this.settings.username;"},
		ProviderIdKey: "ts", SigningKey: "defaultChannel", TimeoutStyle: "ms"},
	{Module: "webhook", Class: "Webhook", Display: "Webhook", Summary: "signed HTTP callbacks to partner systems.",
		Notes:    []string{"Partners' endpoints are often slow; we never wait more than five seconds", "per attempt so that one partner cannot stall the queue."},
		Settings: []tsField{{Name: "secret", Type: "string", Sample: "'whsec'", Required: true}, {Name: "userAgent", Type: "string"}},
		Fields: []tsField{
			{Name: "url", Wire: "url", Type: "string", Sample: "'https://partner.example/hooks/relay'", Required: true, Max: 2048, Pattern: urlRE, PatternHint: "an https URL"},
			{Name: "event", Wire: "event", Type: "string", Sample: "'order.shipped'", Required: true, Max: 64},
			{Name: "data", Wire: "data", Type: "string", Sample: "'{\"order\":\"ord_1\"}'", Required: true, Max: 65536},
			{Name: "attempt", Wire: "attempt", Type: "number"},
		},
		Endpoint: "/webhooks/dispatch", MaxBatch: 20, Limits: []tsLimit{{"MAX_ATTEMPTS", "8"}},
		Errors:        []tsError{{400, "the partner rejected the callback"}, {410, "the partner removed this webhook"}},
		HeaderLines:   []string{"headers['x-relay-signature'] = this.signature(message);", "if (this.settings.userAgent) headers['user-agent'] = this.settings.userAgent;"},
		ProviderIdKey: "delivery_id", SigningKey: "secret", TimeoutStyle: "capped"},
	{Module: "push", Class: "Push", Display: "Push", Summary: "mobile push notifications through the push relay.",
		Notes:    []string{"Push delivery is best effort; like webhooks, attempts are capped at five", "seconds so that the queue keeps moving."},
		Settings: []tsField{{Name: "appId", Type: "string", Sample: "'com.harborline.app'", Required: true}, {Name: "serverKey", Type: "string", Sample: "'pk-test'", Required: true}},
		Fields: []tsField{
			{Name: "deviceToken", Wire: "token", Type: "string", Sample: "'f1e2d3c4b5a6'", Required: true, Max: 4096},
			{Name: "title", Wire: "title", Type: "string", Sample: "'Out for delivery'", Required: true, Max: 120},
			{Name: "body", Wire: "body", Type: "string", Max: 1000},
			{Name: "badge", Wire: "badge", Type: "number"},
			{Name: "collapseKey", Wire: "collapse_key", Type: "string", Max: 64},
		},
		Endpoint: "/v1/messages:send", MaxBatch: 500, Limits: []tsLimit{{"MAX_PAYLOAD_BYTES", "4096"}},
		Errors:        []tsError{{400, "the push relay rejected the payload"}, {404, "the device token is no longer registered"}},
		HeaderLines:   []string{"headers.authorization = `key=${this.settings.serverKey}`;", "headers['x-app-id'] = this.settings.appId;"},
		ProviderIdKey: "name", SigningKey: "serverKey", TimeoutStyle: "capped"},
	{Module: "pager", Class: "Pager", Display: "Pager", Summary: "pages the on-call engineer through the incident service.",
		Notes:    []string{"Pages must get through: we use the full HTTP timeout and the incident", "service deduplicates on dedupKey, so retries are safe."},
		Settings: []tsField{{Name: "routingKey", Type: "string", Sample: "'R0UT1NG'", Required: true}, {Name: "escalationPolicy", Type: "string"}},
		Fields: []tsField{
			{Name: "summary", Wire: "summary", Type: "string", Sample: "'relay: dead-letter queue growing'", Required: true, Max: 1024},
			{Name: "severity", Wire: "severity", Type: "string", Sample: "'critical'", Required: true, Pattern: "/^(critical|error|warning|info)$/", PatternHint: "critical, error, warning or info"},
			{Name: "dedupKey", Wire: "dedup_key", Type: "string", Max: 255},
			{Name: "source", Wire: "source", Type: "string", Max: 255},
		},
		Endpoint: "/v2/enqueue", MaxBatch: 10, Limits: []tsLimit{{"MAX_SUMMARY", "1024"}},
		Errors:        []tsError{{400, "the incident service rejected the event"}, {429, "too many pages; the incident service throttles per routing key"}},
		HeaderLines:   []string{"if (this.settings.escalationPolicy) headers['x-escalation-policy'] = this.settings.escalationPolicy;"},
		ProviderIdKey: "dedup_key", SigningKey: "routingKey", TimeoutStyle: "ms"},
	{Module: "voice", Class: "Voice", Display: "Voice", Summary: "automated phone calls for urgent delivery problems.",
		Notes:    []string{"The voice provider, like the SMS aggregator, takes a deadline in seconds."},
		Settings: []tsField{{Name: "callerId", Type: "string", Sample: "'+15035550199'", Required: true}, {Name: "accountSid", Type: "string", Sample: "'AC-test'", Required: true}},
		Fields: []tsField{
			{Name: "to", Wire: "To", Type: "string", Sample: "'+15035550100'", Required: true, Pattern: e164RE, PatternHint: "an E.164 number"},
			{Name: "script", Wire: "Twiml", Type: "string", Sample: "'<Response><Say>Your delivery needs attention.</Say></Response>'", Required: true, Max: 4000},
			{Name: "machineDetection", Wire: "MachineDetection", Type: "string", Max: 32},
		},
		Endpoint: "/2010-04-01/Calls.json", MaxBatch: 5, Limits: []tsLimit{{"MAX_CALL_SECONDS", "120"}},
		Errors:        []tsError{{400, "the voice provider rejected the call"}, {402, "the voice account is out of credit"}},
		HeaderLines:   []string{"headers['x-caller-id'] = this.settings.callerId;"},
		ProviderIdKey: "sid", SigningKey: "accountSid", TimeoutStyle: "seconds"},
	{Module: "digest", Class: "Digest", Display: "Digest", Summary: "daily summary emails that batch low-priority notifications.",
		Notes:    []string{"Digests are assembled by the digest service; we submit the items and it", "renders one email per recipient per day."},
		Settings: []tsField{{Name: "sendHourUtc", Type: "number", Sample: "7", Required: true}, {Name: "template", Type: "string"}},
		Fields: []tsField{
			{Name: "recipient", Wire: "recipient", Type: "string", Sample: "'ada@example.com'", Required: true, Max: 254, Pattern: emailRE, PatternHint: "an email address"},
			{Name: "items", Wire: "items", Type: "string[]", Sample: "['Order ord_1 shipped']", Required: true, Max: 200},
			{Name: "locale", Wire: "locale", Type: "string", Max: 16},
		},
		Endpoint: "/digests/items", MaxBatch: 1000, Limits: []tsLimit{{"MAX_ITEMS", "200"}},
		Errors:        []tsError{{409, "the digest for today was already sent"}, {422, "the digest service rejected the items"}},
		HeaderLines:   []string{"if (this.settings.template) headers['x-digest-template'] = this.settings.template;"},
		ProviderIdKey: "digest_id", SigningKey: "template", TimeoutStyle: "ms"},
}

func buildRelay() map[string]string {
	files := parseArchive(relayArchive)
	render := archiveRenderer(relayTemplateArchive, nil)
	var index strings.Builder
	index.WriteString("import type { Config } from '../config/schema.js';\nimport type { HttpClient } from '../http/client.js';\n")
	for _, c := range relayChannels {
		// The channel's reference documentation opens its source file.
		var doc strings.Builder
		doc.WriteString("/**\n")
		for _, l := range splitLines(render("channel.md.tmpl", c)) {
			doc.WriteString(strings.TrimRight(" * "+strings.ReplaceAll(l, "*/", "* /"), " ") + "\n")
		}
		doc.WriteString(" */\n\n")
		files[c.file()] = doc.String() + render("sender.ts.tmpl", c)
		files[c.testFile()] = render("sender.test.ts.tmpl", c)
		fmt.Fprintf(&index, "import { create%sSender } from './%s.js';\n", c.Class, c.Module)
	}
	index.WriteString("\n/** Every enabled sender, by channel name. */\nexport function buildSenders(config: Config, client: HttpClient): Record<string, unknown> {\n  const senders: Record<string, unknown> = {};\n")
	for _, c := range relayChannels {
		fmt.Fprintf(&index, "  const %s = create%sSender(config, client);\n  if (%s) senders.%s = %s;\n", c.Module, c.Class, c.Module, c.Module, c.Module)
	}
	index.WriteString("  return senders;\n}\n")
	files["src/channels/index.ts"] = index.String()
	return files
}

const (
	relaySchema     = "src/config/schema.ts"
	relayLoader     = "src/config/load.ts"
	relayEnv        = "src/config/env.ts"
	relayDefaults   = "config/default.json"
	relayProduction = "config/production.json"
	relayClient     = "src/http/client.ts"
)

// legacyTimeoutRE finds reads of the old setting: .timeout not followed by
// more of an identifier (so .timeoutMs does not match).
var legacyTimeoutRE = regexp.MustCompile(`\.timeout\b`)

type relayState struct {
	loader, legacy, env, validate, defaults, production, client bool
}

func relayStateOf(v repoView) relayState {
	load := v.file(relayLoader)
	return relayState{
		loader:     strings.Contains(load, "timeoutMs") && !strings.Contains(load, "timeout: raw.timeout ??"),
		legacy:     strings.Contains(load, "raw.timeout * 1000") && strings.Contains(load, "deprecated"),
		env:        strings.Contains(v.file(relayEnv), "http.timeoutMs = Number(env.RELAY_HTTP_TIMEOUT_MS)") && strings.Contains(v.file(relayEnv), "'RELAY_HTTP_TIMEOUT_MS'"),
		validate:   strings.Contains(v.file(relaySchema), "'http.timeoutMs must be positive'") && strings.Contains(v.file(relaySchema), "cfg.http.timeoutMs > 0"),
		defaults:   strings.Contains(v.file(relayDefaults), `"timeoutMs": 10000`) && !strings.Contains(v.file(relayDefaults), `"timeout":`),
		production: strings.Contains(v.file(relayProduction), `"timeoutMs": 30000`) && !strings.Contains(v.file(relayProduction), `"timeout":`),
		client:     strings.Contains(v.file(relayClient), "this.config.timeoutMs") && !legacyTimeoutRE.MatchString(v.file(relayClient)),
	}
}

// loadedTimeoutMs is what loadConfig yields for http.timeoutMs from the config
// files, or "undefined".
func (s relayState) loadedTimeoutMs(production bool) string {
	if !s.loader {
		return "undefined"
	}
	if production {
		switch {
		case s.production:
			return "30000"
		case s.legacy && s.defaults:
			return "10000" // timeoutMs from default.json wins over the legacy override
		case s.legacy:
			return "30000"
		}
		return "undefined"
	}
	if s.defaults || s.legacy {
		return "10000"
	}
	return "undefined"
}

func isObjectIs(got, want string) string {
	return fmt.Sprintf("expected %s to be %s // Object.is equality", got, want)
}

func relayChecks() map[string]testCheck {
	checks := map[string]testCheck{}
	id := func(file, name string) string { return file + "::" + name }
	cfgFile := "test/config.test.ts"
	loaderFrame := []sourceFrame{{path: relayLoader, marker: "http: normalizeHttp("}}
	expectMs := func(marker, want string, got func(relayState) string) testCheck {
		return func(v repoView) *testFailure {
			if g := got(relayStateOf(v)); g != want {
				return &testFailure{marker: marker, errType: "AssertionError", message: isObjectIs(g, want), frames: loaderFrame}
			}
			return nil
		}
	}
	checks[id(cfgFile, "loadConfig > reads timeoutMs from config/default.json")] = expectMs("expect(cfg.http.timeoutMs).toBe(10000)", "10000",
		func(s relayState) string { return s.loadedTimeoutMs(false) })
	checks[id(cfgFile, "loadConfig > applies production overrides")] = expectMs("expect(cfg.http.timeoutMs).toBe(30000)", "30000",
		func(s relayState) string { return s.loadedTimeoutMs(true) })
	checks[id(cfgFile, "loadConfig > converts a legacy timeout in seconds and warns")] = expectMs("expect(cfg.http.timeoutMs).toBe(5000)", "5000",
		func(s relayState) string {
			if s.loader && s.legacy {
				return "5000"
			}
			return "undefined"
		})
	checks[id(cfgFile, "loadConfig > prefers timeoutMs when both are set")] = expectMs("expect(cfg.http.timeoutMs).toBe(1500)", "1500",
		func(s relayState) string {
			if s.loader {
				return "1500"
			}
			return "undefined"
		})
	checks[id(cfgFile, "loadConfig > reads RELAY_HTTP_TIMEOUT_MS from the environment")] = expectMs("expect(cfg.http.timeoutMs).toBe(2500)", "2500",
		func(s relayState) string {
			if s.loader && s.env {
				return "2500"
			}
			return s.loadedTimeoutMs(false)
		})
	checks[id(cfgFile, "loadConfig > rejects a non-positive timeout")] = func(v repoView) *testFailure {
		if s := relayStateOf(v); !s.validate || !s.loader {
			return &testFailure{marker: "expect((err as ConfigError).problems)", errType: "AssertionError",
				message: "expected [ 'http.timeout must be positive' ] to include 'http.timeoutMs must be positive'"}
		}
		return nil
	}
	checks[id("test/http/client.test.ts", "HttpClient > arms the abort timer with timeoutMs")] = func(v repoView) *testFailure {
		if !relayStateOf(v).client {
			return &testFailure{marker: "expect(delays[0]).toBe(250)", errType: "AssertionError", message: isObjectIs("NaN", "250"),
				frames: []sourceFrame{{path: relayClient, marker: "this.config.timeout"}}}
		}
		return nil
	}
	for _, c := range relayChannels {
		checks[id(c.testFile(), c.Class+"Sender > uses the configured HTTP timeout")] = func(v repoView) *testFailure {
			src := v.file(c.file())
			if !legacyTimeoutRE.MatchString(src) {
				return nil
			}
			got := "NaN"
			if c.TimeoutStyle == "seconds" {
				got = "undefined"
			}
			return &testFailure{marker: "expect(req." + c.TimeoutField() + ")", errType: "AssertionError", message: isObjectIs(got, c.TimeoutWant()),
				frames: []sourceFrame{{path: c.file(), marker: "this.http.timeout"}}}
		}
	}
	return checks
}

func configMigration() *Scenario {
	s := &Scenario{
		Name:  "config-migration",
		Title: "relay (TypeScript notification service)",
		Description: "Migrate a TypeScript service's http.timeout (seconds) to http.timeoutMs (milliseconds): schema, loader with a " +
			"legacy conversion, environment variable, config files, HTTP client and every channel that reads the timeout.",
		Task: "Please do the `http.timeout` → `http.timeoutMs` migration described in the README for relay 2.0: the setting becomes " +
			"milliseconds everywhere (schema, defaults, `config/*.json`, the `RELAY_HTTP_TIMEOUT_MS` environment variable, the HTTP " +
			"client and the channels). A legacy `http.timeout` in seconds must still load, converted to milliseconds with a " +
			"deprecation warning; `timeoutMs` wins when both are set. The tests under `test/` already expect the new behaviour — " +
			"don't change them. Make `npm test` pass.",
		Tools:    standardTools(),
		language: "TypeScript",
		build:    buildRelay,
		suite:    &testSuite{style: styleVitest, checks: relayChecks()},
		plan:     planConfigMigration,
	}
	s.check = func(v repoView) error {
		st := relayStateOf(v)
		var errs []error
		for _, c := range []struct {
			ok   bool
			what string
		}{
			{st.loader, "the loader does not produce http.timeoutMs"},
			{st.legacy, "the loader does not convert a legacy http.timeout with a deprecation warning"},
			{st.env, "RELAY_HTTP_TIMEOUT_MS is not read"},
			{st.validate, "validation does not check http.timeoutMs"},
			{st.defaults, "config/default.json still uses http.timeout"},
			{st.production, "config/production.json still uses http.timeout"},
			{st.client, "the HTTP client does not use timeoutMs"},
		} {
			if !c.ok {
				errs = append(errs, errors.New(c.what))
			}
		}
		paths := make([]string, 0, len(v))
		for p := range v {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if strings.HasPrefix(p, "src/") && p != relayLoader && p != relaySchema && legacyTimeoutRE.MatchString(v[p]) {
				errs = append(errs, fmt.Errorf("%s still reads http.timeout", p))
			}
		}
		return errors.Join(errs...)
	}
	return s
}

// relayConfigEdits are the schema, loader, environment and config-file
// changes.
var relayConfigEdits = []edit{
	{path: relaySchema, old: "/** Request timeout, in seconds. */\ntimeout: number;", new: "/** Request timeout, in milliseconds. */\ntimeoutMs: number;",
		wrongHeader: "export interface HttpConfig extends RawHttpConfig {"},
	{path: relaySchema, old: "timeout?: number;", new: "timeoutMs?: number;\n/** @deprecated Seconds; use timeoutMs. The loader converts it until 3.0. */\ntimeout?: number;", after: "export interface RawHttpConfig"},
	{path: relaySchema, old: "timeout: 10,", new: "timeoutMs: 10_000,", after: "export const DEFAULTS"},
	{path: relaySchema, old: "if (!(cfg.http.timeout > 0)) problems.push('http.timeout must be positive');",
		new: "if (!(cfg.http.timeoutMs > 0)) problems.push('http.timeoutMs must be positive');"},
	{path: relayLoader, old: "function normalizeHttp(raw: RawHttpConfig, warn: (message: string) => void): HttpConfig {",
		new: "/** http.timeoutMs, or the deprecated http.timeout (seconds) converted to milliseconds. */\n" +
			"function timeoutMsFrom(raw: RawHttpConfig, warn: (message: string) => void): number {\n" +
			"  if (raw.timeoutMs !== undefined) return raw.timeoutMs;\n" +
			"  if (raw.timeout !== undefined) {\n" +
			"    warn('http.timeout is deprecated and will be removed in 3.0; set http.timeoutMs (milliseconds) instead');\n" +
			"    return raw.timeout * 1000;\n" +
			"  }\n" +
			"  return DEFAULTS.http.timeoutMs;\n" +
			"}\n" +
			"\n" +
			"function normalizeHttp(raw: RawHttpConfig, warn: (message: string) => void): HttpConfig {"},
	{path: relayLoader, old: "timeout: raw.timeout ?? DEFAULTS.http.timeout,", new: "timeoutMs: timeoutMsFrom(raw, warn),"},
	{path: relayEnv, old: "'RELAY_HTTP_TIMEOUT',", new: "'RELAY_HTTP_TIMEOUT_MS',"},
	{path: relayEnv, old: "if (env.RELAY_HTTP_TIMEOUT) http.timeout = Number(env.RELAY_HTTP_TIMEOUT);",
		new: "if (env.RELAY_HTTP_TIMEOUT_MS) http.timeoutMs = Number(env.RELAY_HTTP_TIMEOUT_MS);"},
	{path: relayDefaults, old: `"timeout": 10,`, new: `"timeoutMs": 10000,`},
	{path: relayProduction, old: `"timeout": 30,`, new: `"timeoutMs": 30000,`},
	{path: "docs/configuration.md", old: "| `http.timeout` | `RELAY_HTTP_TIMEOUT` | `10` | per-request timeout, **in seconds** |",
		new: "| `http.timeoutMs` | `RELAY_HTTP_TIMEOUT_MS` | `10000` | per-request timeout in milliseconds (a legacy `http.timeout` in seconds is converted, with a warning) |"},
}

var (
	timeoutTimes1000RE = regexp.MustCompile(`(\w+(?:\.\w+)*)\.timeout \* 1000`)
	timeoutSecondsRE   = regexp.MustCompile(`(\w+(?:\.\w+)*)\.timeout\b`)
)

// timeoutCallerEdits rewrites the reads of the old setting that a search
// found outside src/config: "x.timeout * 1000" becomes "x.timeoutMs", and a
// bare "x.timeout" (seconds) becomes "x.timeoutMs / 1000".
func timeoutCallerEdits(hits []searchHit) []edit {
	var out []edit
	seen := map[string]bool{}
	for _, h := range hits {
		if !strings.HasPrefix(h.path, "src/") || strings.HasPrefix(h.path, "src/config/") {
			continue
		}
		line := strings.TrimSpace(h.text)
		fixed := timeoutTimes1000RE.ReplaceAllString(line, "$1.timeoutMs")
		fixed = timeoutSecondsRE.ReplaceAllString(fixed, "$1.timeoutMs / 1000")
		if fixed == line || seen[h.path+"\x00"+line] {
			continue
		}
		seen[h.path+"\x00"+line] = true
		out = append(out, edit{path: h.path, old: line, new: fixed})
	}
	return out
}

var relayExplorePool = []explorePath{
	{"src/channels/email.ts", "Reading the email sender."},
	{"src/channels/sms.ts", "Reading the SMS sender, which passes a deadline to its provider."},
	{"src/channels/webhook.ts", "Reading the webhook sender."},
	{"src/channels/pager.ts", "Reading the pager sender."},
	{"src/channels/push.ts", "Reading the push sender."},
	{"src/channels/chat.ts", "Reading the chat sender."},
	{"src/channels/voice.ts", "Reading the voice sender."},
	{"src/channels/digest.ts", "Reading the digest sender."},
	{"test/http/client.test.ts", "Reading the HTTP client tests."},
	{"test/channels/sms.test.ts", "Looking at what the SMS test expects for the deadline."},
	{"test/channels/webhook.test.ts", "Looking at the webhook sender's tests."},
	{"test/channels/email.test.ts", "Looking at the email sender's tests."},
	{"src/channels/index.ts", "Checking how the senders are built from the config."},
	{"CHANGELOG.md", "Checking the changelog entry for 2.0."},
	{"package.json", "Checking the test script."},
	{"src/index.ts", "Reading the entry point to see how the config reaches the channels."},
	{"test/channels/voice.test.ts", "Looking at the voice sender's tests."},
	{"test/channels/pager.test.ts", "Looking at the pager sender's tests."},
}

func planConfigMigration(a *agent) {
	configFirst := a.trait(2) == 0 // migrate the config layer, run the tests, then the callers
	sloppy := a.trait(3) == 0      // misremember the schema's interface in the first patch
	x := a.explore(relayExplorePool, 215_000)

	x.list("Let me look at the repository layout.")
	x.readOnce("README.md", "Reading the README's description of the timeout migration.")
	x.readOnce("docs/configuration.md", "Reading the configuration docs.")
	report := a.runTests("Running the test suite to see which expectations fail today.", "", true)
	x.readOnce("test/config.test.ts", "Reading the config tests to see the expected loader behaviour.")
	x.readOnce(relaySchema, "Reading the config schema and defaults.")
	x.readOnce(relayLoader, "Reading the loader.")
	x.readOnce(relayEnv, "Reading the environment overrides.")
	x.readOnce(relayDefaults, "Reading the default config file.")
	x.readOnce(relayProduction, "Reading the production overrides.")

	var callers []edit
	if !configFirst {
		hits := a.search("Finding every read of the old setting (`.timeout` but not `.timeoutMs`).", searchCall{Pattern: `\.timeout\b`, Path: "src", Regex: true})
		callers = timeoutCallerEdits(hits)
		for _, p := range pathsOf(callers) {
			x.readOnce(p, "Opening "+p+", which reads the timeout.")
		}
	}
	x.readMore(x.pool, 4)

	edits := append(append([]edit{}, relayConfigEdits...), callers...)
	intro := "Migrating the config layer: schema and defaults in milliseconds, a loader that converts a legacy `timeout` with a " +
		"deprecation warning, `RELAY_HTTP_TIMEOUT_MS`, and the config files."
	if len(callers) > 0 {
		intro = fmt.Sprintf("Migrating the config layer (schema, loader with legacy conversion, env var, config files) and the %d places "+
			"that read the timeout: `x.timeout * 1000` becomes `x.timeoutMs`, and seconds handed to providers become `x.timeoutMs / 1000`.", len(callers))
	}
	applied := a.applyEdits(edits, sloppy, intro)
	// Review the senders where the change was more than a rename.
	for _, e := range applied {
		if strings.HasPrefix(e.path, "src/channels/") && (strings.Contains(e.new, "/ 1000") || strings.Contains(e.new, "Math.min")) {
			a.read("Reviewing "+e.path+", where the conversion was more than a rename.", e.path)
		}
	}

	for round := 0; round < 3; round++ {
		report = a.runTests("Re-running the tests.", "", true)
		if report.passed {
			break
		}
		hits := a.search("The remaining failures are callers still reading `http.timeout`; finding them all.", searchCall{Pattern: `\.timeout\b`, Path: "src", Regex: true})
		more := timeoutCallerEdits(hits)
		for _, p := range pathsOf(more) {
			if !a.view(p).complete() {
				a.read("Reading "+p+" before changing it.", p)
			}
		}
		pending, _ := a.pending(more)
		if len(pending) == 0 {
			break
		}
		applied = a.applyEdits(pending, false, fmt.Sprintf("Updating the %d remaining reads of the timeout: milliseconds for the HTTP client and "+
			"most channels, seconds (timeoutMs / 1000) for the SMS and voice providers' deadlines.", len(pending)))
		for _, e := range applied {
			if strings.HasPrefix(e.path, "src/channels/") && (strings.Contains(e.new, "/ 1000") || strings.Contains(e.new, "Math.min")) {
				a.read("Reviewing "+e.path+", where the conversion was more than a rename.", e.path)
			}
		}
	}
	if !report.passed {
		a.finish("The config layer is migrated, but these tests still fail:\n\n" + strings.Join(report.failures, "\n"))
	}
	changed := uniqueStrings(a.patched)
	sort.Strings(changed)
	a.finish("The migration is done and `npm test` passes.\n\n" +
		"- `HttpConfig.timeout` (seconds) is now `timeoutMs` (milliseconds); the default is 10 000 ms and validation checks `http.timeoutMs`.\n" +
		"- The loader reads `http.timeoutMs`; a legacy `http.timeout` is converted to milliseconds with a deprecation warning, and " +
		"`timeoutMs` wins when both are present.\n" +
		"- `RELAY_HTTP_TIMEOUT_MS` replaces `RELAY_HTTP_TIMEOUT`; `config/default.json` and `config/production.json` use `timeoutMs`.\n" +
		"- The HTTP client and the channels use `timeoutMs` directly; the SMS and voice senders still hand their providers a deadline " +
		"in seconds, now computed as `timeoutMs / 1000`.\n\n" +
		"Files changed: " + strings.Join(changed, ", ") + ". No tests were changed.")
}
