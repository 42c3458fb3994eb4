package scenario

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// rename-api: rename StockClient.fetch_items to list_items across a Python
// package, keeping a deprecated alias. The tests' fake client only has the
// new name, so every caller left behind fails with AttributeError. Two
// adapters and the reconcile job hold the method as a value rather than
// calling it, which a search for ".fetch_items(" misses.

//go:embed repos/rename-api.txtar
var stockroomArchive string

//go:embed repos/rename-api-templates.txtar
var stockroomTemplateArchive string

type pyFieldMap struct{ Ours, Theirs, Expr string }

type pyConfigField struct {
	Name, Type, Default, Sample string
	Required                    bool
}

// FromSettings is the Python expression reading the field from settings.
func (f pyConfigField) FromSettings() string {
	if f.Default != "" {
		return fmt.Sprintf("settings.get(%q, %s)", f.Name, f.Default)
	}
	return fmt.Sprintf("settings.get(%q, \"\")", f.Name)
}

type pyHint struct {
	Status int
	Hint   string
}

type pyTest struct {
	Name, Args string
	Body       []string
	UsesSync   bool
}

// pyChannel is one generated sales-channel adapter.
type pyChannel struct {
	Module, Class, Display, Summary, Notes, APIBase string
	Callback                                        bool // passes the method to _with_retries instead of calling it
	BatchSize, Burst, WindowHours                   int
	Rate                                            string
	Fields                                          []pyFieldMap
	ConfigFields                                    []pyConfigField
	Retryable                                       string
	Hints                                           []pyHint
	SellableRules                                   []string
	SkuRule, SkuBody, OurSkuBody                    string
	PushMethod, PushPath, PushBody                  string
	LevelsPath, LevelsKey, HealthPath               string
	Webhooks                                        bool
	SignatureHeader, OrderEvent, CancelEvent        string
}

func (c pyChannel) SettingKeys() string {
	keys := []string{`"location"`, `"sync_window_hours"`, `"dry_run"`}
	for _, f := range c.ConfigFields {
		keys = append(keys, fmt.Sprintf("%q", f.Name))
	}
	return strings.Join(keys, ", ")
}

func (c pyChannel) file() string     { return "stockroom/channels/" + c.Module + ".py" }
func (c pyChannel) testFile() string { return "tests/test_channel_" + c.Module + ".py" }

// Tests lists the generated tests; UsesSync marks those that go through sync
// and so through the stock client.
func (c pyChannel) Tests() []pyTest {
	ts := []pyTest{
		{Name: "test_to_payload_maps_fields", Args: "adapter", Body: []string{
			`item = Item(sku="MUG-01", location="PDX-1", on_hand=40, reserved=5)`,
			`payload = adapter.to_payload(item)`,
			`assert set(payload) == set(FIELD_MAP.values())`,
			`assert payload[FIELD_MAP["sku"]] == adapter.channel_sku("MUG-01")`,
		}},
		{Name: "test_channel_sku_round_trips", Args: "adapter", Body: []string{
			`for sku in ("MUG-01", "TEE-M", "BAG-L"):`,
			`    assert adapter._our_sku(adapter.channel_sku(sku)) == sku`,
		}},
		{Name: "test_sync_pushes_every_pdx_item", Args: "adapter, recording_transport", UsesSync: true, Body: []string{
			`result = adapter.sync(now=NOW)`,
			`assert result.ok`,
			`assert result.pushed + result.skipped == 3`,
			`assert len(recording_transport.requests) == 1`,
		}},
		{Name: "test_sync_asks_for_recent_changes_only", Args: "fake_client, adapter", UsesSync: true, Body: []string{
			`adapter.sync(now=NOW)`,
			`name, kwargs = fake_client.calls[-1]`,
			`assert name == "list_items"`,
			`assert kwargs["updated_since"] == NOW - adapter.config.sync_window`,
		}},
		{Name: "test_dry_run_pushes_nothing", Args: "fake_client, recording_transport", UsesSync: true, Body: []string{
			fmt.Sprintf(`adapter = %sAdapter(fake_client, make_config(dry_run=True), transport=recording_transport)`, c.Class),
			`result = adapter.sync(now=NOW)`,
			`assert recording_transport.requests == []`,
			`assert result.pushed == 0`,
		}},
		{Name: "test_sync_batches_large_catalogues", Args: "recording_transport", UsesSync: true, Body: []string{
			`items = [Item(sku=f"SKU-{n:04d}", location="PDX-1", on_hand=5) for n in range(BATCH_SIZE * 2 + 1)]`,
			fmt.Sprintf(`adapter = %sAdapter(FakeStockClient(items), make_config(), transport=recording_transport)`, c.Class),
			`adapter.sync(now=NOW)`,
			`assert len(recording_transport.requests) == 3`,
		}},
		{Name: "test_rejected_batch_is_reported", Args: "fake_client", UsesSync: true, Body: []string{
			fmt.Sprintf(`adapter = %sAdapter(fake_client, make_config(), transport=RecordingTransport(status=422))`, c.Class),
			`result = adapter.sync(now=NOW)`,
			`assert not result.ok`,
			`assert result.pushed == 0`,
		}},
		{Name: "test_build_rejects_unknown_settings", Args: "fake_client", Body: []string{
			`with pytest.raises(ValueError, match="unknown"):`,
			`    build({"location": "PDX-1", "colour": "blue"}, fake_client)`,
		}},
		{Name: "test_sync_window_must_be_positive", Args: "", Body: []string{
			`with pytest.raises(ValueError, match="sync_window"):`,
			`    make_config(sync_window=timedelta(0))`,
		}},
	}
	for _, f := range c.ConfigFields {
		if f.Required {
			ts = append(ts, pyTest{Name: "test_config_requires_" + f.Name, Args: "", Body: []string{
				fmt.Sprintf(`with pytest.raises(ValueError, match=%q):`, f.Name),
				fmt.Sprintf(`    make_config(%s="")`, f.Name),
			}})
		}
	}
	if c.Webhooks {
		ts = append(ts,
			pyTest{Name: "test_verify_webhook_accepts_valid_signature", Args: "adapter", Body: []string{
				`import hashlib, hmac`,
				``,
				`body = b'{"type": "ping"}'`,
				`sig = hmac.new(adapter.config.webhook_secret.encode(), body, hashlib.sha256).hexdigest()`,
				`assert adapter.verify_webhook(body, "sha256=" + sig)`,
			}},
			pyTest{Name: "test_verify_webhook_rejects_tampered_body", Args: "adapter", Body: []string{
				`assert not adapter.verify_webhook(b'{"type": "ping"}', "sha256=" + "0" * 64)`,
			}})
	}
	return ts
}

var stockroomChannels = []pyChannel{
	{
		Module: "webshop", Class: "Webshop", Display: "Webshop", Summary: "pushes stock levels to the storefront's inventory API.",
		Notes:   "The storefront keeps its own copy of stock per variant. We push absolute levels, not\ndeltas, so that a missed update heals on the next run.",
		APIBase: "https://api.webshop.example/v2", BatchSize: 50, Burst: 5, Rate: "4.0", WindowHours: 6,
		Fields: []pyFieldMap{
			{"sku", "variant_sku", "self.channel_sku(item.sku)"},
			{"available", "inventory_quantity", "item.available"},
			{"location", "location_handle", "self.config.location_handle or item.location.lower()"},
			{"updated_at", "source_updated_at", "item.updated_at.isoformat() if item.updated_at else None"},
		},
		ConfigFields: []pyConfigField{
			{Name: "api_key", Type: "str", Default: `""`, Sample: `"wk_test"`, Required: true},
			{Name: "store_id", Type: "str", Default: `""`, Sample: `"harborline"`, Required: true},
			{Name: "location_handle", Type: "str", Default: `""`},
			{Name: "webhook_secret", Type: "str", Default: `""`, Sample: `"whsec_test"`, Required: true},
		},
		Retryable: "429, 502, 503, 504",
		Hints: []pyHint{{401, "the API key was rejected; rotate webshop.api_key"}, {404, "unknown variant SKU; is the product published?"},
			{409, "another inventory update is in flight for this variant"}, {422, "the storefront rejected the payload"}},
		SellableRules: []string{"if item.location != self.location:", "    return False"},
		SkuRule:       "are ours, upper-cased.", SkuBody: "return sku.upper()", OurSkuBody: "return channel_sku.upper()",
		PushMethod: "POST", PushPath: "/inventory_levels/bulk_set", PushBody: `{"levels": batch}`,
		LevelsPath: "/inventory_levels", LevelsKey: "inventory_levels", HealthPath: "/shop",
		Webhooks: true, SignatureHeader: "X-Webshop-Hmac-Sha256", OrderEvent: "orders/create", CancelEvent: "orders/cancelled",
	},
	{
		Module: "marketplace", Class: "Marketplace", Display: "Marketplace", Summary: "lists stock on the third-party marketplace.",
		Notes:   "The marketplace penalises overselling, so we keep a safety buffer: an item is listed\nwith one unit less than we have, and not at all below two. Its API is slow and\nflaky, so every read and write goes through ChannelAdapter._with_retries.",
		APIBase: "https://sellers.marketplace.example/api", Callback: true, BatchSize: 25, Burst: 2, Rate: "1.0", WindowHours: 12,
		Fields: []pyFieldMap{
			{"sku", "seller_sku", "self.channel_sku(item.sku)"},
			{"available", "quantity", "max(item.available - 1, 0)"},
			{"location", "fulfillment_channel", `"MERCHANT"`},
			{"reserved", "pending_quantity", "item.reserved"},
			{"updated_at", "last_updated", "item.updated_at.isoformat() if item.updated_at else None"},
		},
		ConfigFields: []pyConfigField{
			{Name: "seller_id", Type: "str", Default: `""`, Sample: `"A1HARBOR"`, Required: true},
			{Name: "refresh_token", Type: "str", Default: `""`, Sample: `"rt-test"`, Required: true},
			{Name: "region", Type: "str", Default: `"us-west"`},
		},
		Retryable: "429, 500, 502, 503",
		Hints: []pyHint{{400, "the listing payload is malformed"}, {403, "the seller account is suspended or the token expired"},
			{429, "throttled; the marketplace allows one request per second"}},
		SellableRules: []string{"if item.location != self.location:", "    return False", "if item.available < 2:", "    return False  # below the safety buffer"},
		SkuRule:       "carry our prefix HL- so that listings can be told apart.", SkuBody: `return "HL-" + sku`, OurSkuBody: `return channel_sku.removeprefix("HL-")`,
		PushMethod: "PUT", PushPath: "/listings/inventory", PushBody: `{"sellerId": self.config.seller_id, "items": batch}`,
		LevelsPath: "/listings/inventory", LevelsKey: "items", HealthPath: "/sellers/me",
	},
	{
		Module: "pos", Class: "Pos", Display: "Point of sale", Summary: "sends levels to the in-store point-of-sale terminals.",
		Notes:   "Terminals sync from a central POS server every few minutes; we write to that server.\nStores sell from their own stock only, so each terminal group sees one location.",
		APIBase: "https://pos.internal.example/api/v1", BatchSize: 200, Burst: 10, Rate: "10.0", WindowHours: 1,
		Fields: []pyFieldMap{
			{"sku", "item_code", "self.channel_sku(item.sku)"},
			{"on_hand", "on_hand", "item.on_hand"},
			{"available", "sellable", "item.available"},
			{"location", "store", "self.config.store_number"},
		},
		ConfigFields: []pyConfigField{
			{Name: "store_number", Type: "str", Default: `""`, Sample: `"014"`, Required: true},
			{Name: "terminal_group", Type: "str", Default: `"default"`},
			{Name: "api_token", Type: "str", Default: `""`, Sample: `"pos-token"`, Required: true},
		},
		Retryable:     "502, 503",
		Hints:         []pyHint{{401, "the POS token was rejected"}, {404, "unknown store number"}, {409, "the store is closing its day; retry after close-out"}},
		SellableRules: []string{"if item.location != self.location:", "    return False"},
		SkuRule:       "are our SKUs without dashes.", SkuBody: `return sku.replace("-", "")`, OurSkuBody: `return channel_sku[:-2] + "-" + channel_sku[-2:] if "-" not in channel_sku else channel_sku`,
		PushMethod: "POST", PushPath: "/stock/levels", PushBody: `{"store": self.config.store_number, "levels": batch}`,
		LevelsPath: "/stock/levels", LevelsKey: "levels", HealthPath: "/status",
	},
	{
		Module: "wholesale", Class: "Wholesale", Display: "Wholesale portal", Summary: "publishes case-pack availability to wholesale buyers.",
		Notes:   "Wholesale buyers order whole cases, so we publish how many full cases are available.\nThe portal takes a nightly full export plus incremental updates during the day.",
		APIBase: "https://wholesale.harborline.example/api", BatchSize: 100, Burst: 3, Rate: "2.0", WindowHours: 24,
		Fields: []pyFieldMap{
			{"sku", "product_code", "self.channel_sku(item.sku)"},
			{"available", "cases_available", "item.available // self.config.case_size"},
			{"reorder_point", "restock_expected", "item.needs_reorder"},
		},
		ConfigFields: []pyConfigField{
			{Name: "account", Type: "str", Default: `""`, Sample: `"harborline-wholesale"`, Required: true},
			{Name: "case_size", Type: "int", Default: "6"},
			{Name: "api_key", Type: "str", Default: `""`, Sample: `"wh-key"`, Required: true},
		},
		Retryable:     "429, 503",
		Hints:         []pyHint{{400, "the export is malformed"}, {401, "the wholesale API key was rejected"}, {413, "the batch is too large for the portal"}},
		SellableRules: []string{"if item.location != self.location:", "    return False", "if self.config.case_size <= 0:", "    raise ChannelError(self.name, \"case_size must be positive\")"},
		SkuRule:       "are prefixed with W and the case size.", SkuBody: `return f"W{self.config.case_size}-{sku}"`, OurSkuBody: `return channel_sku.split("-", 1)[1]`,
		PushMethod: "POST", PushPath: "/catalog/availability", PushBody: `{"account": self.config.account, "products": batch}`,
		LevelsPath: "/catalog/availability", LevelsKey: "products", HealthPath: "/ping",
	},
	{
		Module: "b2b_portal", Class: "B2bPortal", Display: "B2B portal", Summary: "updates the procurement catalogue that corporate customers order from.",
		Notes:   "Corporate buyers order through their own procurement systems, which read our\ncatalogue from the B2B portal. Levels are rounded down to tens above 100 units.",
		APIBase: "https://b2b.harborline.example/v3", BatchSize: 80, Burst: 4, Rate: "3.0", WindowHours: 4,
		Fields: []pyFieldMap{
			{"sku", "part_number", "self.channel_sku(item.sku)"},
			{"available", "stock", "item.available if item.available < 100 else item.available // 10 * 10"},
			{"location", "ship_from", "item.location"},
			{"updated_at", "as_of", "(item.updated_at or datetime.now(timezone.utc)).isoformat()"},
		},
		ConfigFields: []pyConfigField{
			{Name: "client_id", Type: "str", Default: `""`, Sample: `"b2b-client"`, Required: true},
			{Name: "client_secret", Type: "str", Default: `""`, Sample: `"b2b-secret"`, Required: true},
			{Name: "catalog", Type: "str", Default: `"main"`},
			{Name: "webhook_secret", Type: "str", Default: `""`, Sample: `"b2b-hook"`, Required: true},
		},
		Retryable:     "429, 500, 503",
		Hints:         []pyHint{{401, "the OAuth client was rejected"}, {404, "unknown part number in this catalogue"}, {422, "the catalogue rejected the stock update"}},
		SellableRules: []string{"if item.location != self.location:", "    return False"},
		SkuRule:       "are ours; the portal is case-sensitive.", SkuBody: "return sku", OurSkuBody: "return channel_sku",
		PushMethod: "PATCH", PushPath: "/catalogs/main/stock", PushBody: `{"updates": batch}`,
		LevelsPath: "/catalogs/main/stock", LevelsKey: "stock", HealthPath: "/oauth/introspect",
		Webhooks: true, SignatureHeader: "X-B2B-Signature", OrderEvent: "purchase_order.accepted", CancelEvent: "purchase_order.cancelled",
	},
	{
		Module: "dropship", Class: "Dropship", Display: "Dropship partner", Summary: "shares our stock with the dropship partner who sells it on.",
		Notes:   "The partner sells our items on its own sites and sends us the orders. It wants\nthe whole catalogue for a location on every sync, and throttles hard, so reads\ngo through _with_retries as well.",
		APIBase: "https://partners.dropship.example/feed", Callback: true, BatchSize: 500, Burst: 1, Rate: "0.5", WindowHours: 48,
		Fields: []pyFieldMap{
			{"sku", "supplier_sku", "self.channel_sku(item.sku)"},
			{"available", "qty", "item.available"},
			{"reorder_point", "low_stock", "item.needs_reorder"},
			{"location", "warehouse", "self.config.warehouse_code"},
		},
		ConfigFields: []pyConfigField{
			{Name: "partner_id", Type: "str", Default: `""`, Sample: `"p-778"`, Required: true},
			{Name: "warehouse_code", Type: "str", Default: `""`, Sample: `"HL-PDX"`, Required: true},
			{Name: "feed_token", Type: "str", Default: `""`, Sample: `"feed-token"`, Required: true},
		},
		Retryable:     "429, 502, 503, 504",
		Hints:         []pyHint{{401, "the feed token expired"}, {409, "a feed upload is already being processed"}, {429, "throttled; the partner allows one upload every two seconds"}},
		SellableRules: []string{"if item.location != self.location:", "    return False"},
		SkuRule:       "are ours with the partner's supplier prefix.", SkuBody: `return f"{self.config.partner_id}:{sku}"`, OurSkuBody: `return channel_sku.split(":", 1)[-1]`,
		PushMethod: "PUT", PushPath: "/inventory", PushBody: `{"partner": self.config.partner_id, "rows": batch}`,
		LevelsPath: "/inventory", LevelsKey: "rows", HealthPath: "/health",
	},
	{
		Module: "popup", Class: "Popup", Display: "Pop-up store", Summary: "feeds the tablets of temporary pop-up stores.",
		Notes:   "Pop-up stores run on tablets with the POS protocol but no store number; they are\nidentified by event code and only carry a curated subset of SKUs.",
		APIBase: "https://pos.internal.example/api/v1/popups", BatchSize: 40, Burst: 2, Rate: "2.0", WindowHours: 2,
		Fields: []pyFieldMap{
			{"sku", "item_code", "self.channel_sku(item.sku)"},
			{"available", "sellable", "item.available"},
			{"location", "event", "self.config.event_code"},
		},
		ConfigFields: []pyConfigField{
			{Name: "event_code", Type: "str", Default: `""`, Sample: `"PDX-MARKET-24"`, Required: true},
			{Name: "api_token", Type: "str", Default: `""`, Sample: `"pos-token"`, Required: true},
			{Name: "curated_prefix", Type: "str", Default: `""`},
		},
		Retryable:     "502, 503",
		Hints:         []pyHint{{401, "the POS token was rejected"}, {404, "unknown event code"}, {410, "the pop-up event has ended"}},
		SellableRules: []string{"if item.location != self.location:", "    return False", "if self.config.curated_prefix and not item.sku.startswith(self.config.curated_prefix):", "    return False"},
		SkuRule:       "follow the POS rule: no dashes.", SkuBody: `return sku.replace("-", "")`, OurSkuBody: `return channel_sku[:-2] + "-" + channel_sku[-2:] if "-" not in channel_sku else channel_sku`,
		PushMethod: "POST", PushPath: "/stock", PushBody: `{"event": self.config.event_code, "levels": batch}`,
		LevelsPath: "/stock", LevelsKey: "levels", HealthPath: "/status",
	},
	{
		Module: "kiosk", Class: "Kiosk", Display: "Self-service kiosk", Summary: "shows in-store availability on the self-service kiosks.",
		Notes:   "Kiosks only display availability (customers order at the counter), so the payload\nis small and levels are capped at 99, which is all the display can show.",
		APIBase: "https://kiosk.internal.example/api", BatchSize: 150, Burst: 5, Rate: "5.0", WindowHours: 1,
		Fields: []pyFieldMap{
			{"sku", "code", "self.channel_sku(item.sku)"},
			{"available", "count", "min(item.available, 99)"},
			{"reorder_point", "low", "item.needs_reorder"},
		},
		ConfigFields: []pyConfigField{
			{Name: "kiosk_group", Type: "str", Default: `""`, Sample: `"pdx-floor-1"`, Required: true},
			{Name: "display_low_stock", Type: "bool", Default: "True"},
		},
		Retryable:     "503",
		Hints:         []pyHint{{404, "unknown kiosk group"}, {422, "the kiosk server rejected the levels"}},
		SellableRules: []string{"if item.location != self.location:", "    return False"},
		SkuRule:       "are ours in lower case.", SkuBody: "return sku.lower()", OurSkuBody: "return channel_sku.upper()",
		PushMethod: "PUT", PushPath: "/groups/levels", PushBody: `{"group": self.config.kiosk_group, "levels": batch}`,
		LevelsPath: "/groups/levels", LevelsKey: "levels", HealthPath: "/ping",
	},
}

func buildStockroom() map[string]string {
	files := parseArchive(stockroomArchive)
	render := archiveRenderer(stockroomTemplateArchive, nil)
	for _, c := range stockroomChannels {
		files[c.file()] = render("channel.py.tmpl", c)
		files[c.testFile()] = render("channel_test.py.tmpl", c)
		if c.Webhooks || c.Callback {
			files["docs/channels/"+c.Module+".md"] = render("channel.md.tmpl", c)
		}
	}
	return files
}

const stockroomClientFile = "stockroom/client.py"

// What a caller left on the old name fails with, under the fake client.
const stockroomMissingAttr = "'FakeStockClient' object has no attribute 'fetch_items'"

func renameAPI() *Scenario {
	s := &Scenario{
		Name:  "rename-api",
		Title: "stockroom (Python stock-sync package)",
		Description: "Rename StockClient.fetch_items to list_items across a Python package, keeping a deprecated alias. " +
			"Some callers pass the method as a value, so a narrow search misses them and the agent has to iterate.",
		Task: "Please finish the 2.4 API change in `stockroom`: rename `StockClient.fetch_items()` to `list_items()` and update every " +
			"caller in the package. Keep `fetch_items()` working for one more release as a deprecated alias that emits a " +
			"`DeprecationWarning` mentioning `list_items` and delegates to it. The test suite has already been updated for " +
			"the new name (see `tests/conftest.py`), so please don't edit the tests; just make `pytest` pass.",
		Tools:    standardTools(),
		language: "Python",
		build:    buildStockroom,
		suite:    &testSuite{style: stylePytest, checks: stockroomChecks()},
		plan:     planRenameAPI,
	}
	s.check = func(v repoView) error {
		var errs []error
		if !stockroomHasListItems(v) {
			errs = append(errs, errors.New("StockClient has no list_items method"))
		}
		if !stockroomAliasDeprecated(v) {
			errs = append(errs, errors.New("StockClient.fetch_items is not a deprecated alias that warns and delegates to list_items"))
		}
		paths := make([]string, 0, len(v))
		for p := range v {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if strings.HasPrefix(p, "stockroom/") && strings.HasSuffix(p, ".py") && p != stockroomClientFile && strings.Contains(v[p], "fetch_items") {
				errs = append(errs, fmt.Errorf("%s still uses fetch_items", p))
			}
		}
		return errors.Join(errs...)
	}
	return s
}

var pyDefListItemsRE = regexp.MustCompile(`(?m)^    def list_items\(\s*self`)

func stockroomHasListItems(v repoView) bool { return v.matches(stockroomClientFile, pyDefListItemsRE) }

// pyMethodBody returns the lines of a method of StockClient, from its def to
// the next line indented no deeper than the def.
func pyMethodBody(src, name string) string {
	lines := splitLines(src)
	for i, l := range lines {
		if strings.HasPrefix(l, "    def "+name+"(") {
			var b strings.Builder
			b.WriteString(l + "\n")
			for _, m := range lines[i+1:] {
				if strings.TrimSpace(m) != "" && !strings.HasPrefix(m, "        ") && !strings.HasPrefix(strings.TrimSpace(m), ")") {
					break
				}
				b.WriteString(m + "\n")
			}
			return b.String()
		}
	}
	return ""
}

func stockroomAliasDeprecated(v repoView) bool {
	src := v.file(stockroomClientFile)
	body := pyMethodBody(src, "fetch_items")
	return body != "" && stockroomHasListItems(v) &&
		regexp.MustCompile(`(?m)^import warnings$`).MatchString(src) &&
		strings.Contains(body, "warnings.warn(") && strings.Contains(body, "DeprecationWarning") &&
		strings.Contains(body, "list_items") && strings.Contains(body, "return self.list_items(")
}

func stockroomChecks() map[string]testCheck {
	checks := map[string]testCheck{}
	oldName := func(p string) testCheck {
		return func(v repoView) *testFailure {
			if strings.Contains(v.file(p), "fetch_items") {
				return &testFailure{errType: "AttributeError", message: stockroomMissingAttr, frames: []sourceFrame{{path: p, marker: "fetch_items"}}}
			}
			return nil
		}
	}
	for _, c := range stockroomChannels {
		for _, t := range c.Tests() {
			if t.UsesSync {
				check := oldName(c.file())
				checks[c.testFile()+"::"+t.Name] = func(v repoView) *testFailure {
					if f := check(v); f != nil {
						f.marker = "adapter.sync("
						return f
					}
					return nil
				}
			}
		}
	}
	withMarker := func(check testCheck, marker string) testCheck {
		return func(v repoView) *testFailure {
			if f := check(v); f != nil {
				f.marker = marker
				return f
			}
			return nil
		}
	}
	lowStock := oldName("stockroom/reports/low_stock.py")
	for _, name := range []string{"test_lines_lists_items_at_or_below_reorder_point", "test_suggested_quantity_covers_twice_the_reorder_point", "test_by_supplier_groups_lines", "test_csv_has_header_and_rows"} {
		checks["tests/test_low_stock.py::"+name] = withMarker(lowStock, "LowStockReport(fake_client)")
	}
	reconcile := oldName("stockroom/jobs/reconcile.py")
	for _, name := range []string{"test_reports_drift_above_tolerance", "test_counts_checked_items", "test_worst_orders_by_size_of_drift"} {
		checks["tests/test_reconcile.py::"+name] = withMarker(reconcile, ".run([")
	}
	cli := oldName("stockroom/cli.py")
	checks["tests/test_cli.py::test_items_prints_a_table"] = withMarker(cli, "main([")
	checks["tests/test_cli.py::test_items_json"] = withMarker(cli, "main([")
	checks["tests/test_cli.py::test_low_stock_prints_csv"] = withMarker(lowStock, "main([")
	missingListItems := func(v repoView) *testFailure {
		if !stockroomHasListItems(v) {
			return &testFailure{marker: "client.list_items(", errType: "AttributeError", message: "'StockClient' object has no attribute 'list_items'"}
		}
		return nil
	}
	for _, name := range []string{"test_list_items_follows_pagination", "test_list_items_passes_updated_since", "test_list_items_rejects_bad_page_size", "test_list_items_does_not_warn"} {
		checks["tests/test_client.py::"+name] = missingListItems
	}
	checks["tests/test_client.py::test_fetch_items_is_a_deprecated_alias"] = func(v repoView) *testFailure {
		switch {
		case stockroomAliasDeprecated(v):
			return nil
		case pyMethodBody(v.file(stockroomClientFile), "fetch_items") == "":
			return &testFailure{marker: "client.fetch_items(", errType: "AttributeError", message: "'StockClient' object has no attribute 'fetch_items'"}
		case !stockroomHasListItems(v):
			return &testFailure{marker: "client.fetch_items(", errType: "AttributeError", message: "'StockClient' object has no attribute 'list_items'"}
		}
		return &testFailure{marker: "pytest.warns(DeprecationWarning", errType: "Failed",
			message: "DID NOT WARN. No warnings of type (<class 'DeprecationWarning'>,) matching the regex 'list_items' were emitted.\n Emitted warnings: []."}
	}
	return checks
}

// The client change the agent makes: rename, import warnings, add the alias.
var stockroomClientEdits = []edit{
	{path: stockroomClientFile, old: "import logging", new: "import logging\nimport warnings"},
	{path: stockroomClientFile, old: "def fetch_items(", new: "def list_items(", after: "class StockClient",
		wrongHeader: "def fetch_items(self, location=None, updated_since=None, page_size=100):"},
	{path: stockroomClientFile, old: "def _iter_items(self, location: str | None, updated_since: datetime | None, page_size: int) -> Iterator[Item]:",
		new: "def fetch_items(self, *args: Any, **kwargs: Any) -> list[Item]:\n" +
			"    \"\"\"Deprecated alias of :meth:`list_items`; it will be removed in 3.0.\"\"\"\n" +
			"    warnings.warn(\n" +
			"        \"StockClient.fetch_items() is deprecated; use list_items() instead\",\n" +
			"        DeprecationWarning,\n" +
			"        stacklevel=2,\n" +
			"    )\n" +
			"    return self.list_items(*args, **kwargs)\n" +
			"\n" +
			"def _iter_items(self, location: str | None, updated_since: datetime | None, page_size: int) -> Iterator[Item]:"},
}

var stockroomChangelogEdit = edit{path: "CHANGELOG.md", old: "## Unreleased",
	new: "## Unreleased\n\n- `StockClient.fetch_items()` is now `StockClient.list_items()`. The old name still works but emits a\n  `DeprecationWarning`; it will be removed in 3.0."}

// callerEdits turns search hits into renames, skipping the client, the
// tests and the changelog (history keeps the old name).
func callerEdits(hits []searchHit) []edit {
	var out []edit
	seen := map[string]bool{}
	for _, h := range hits {
		if h.path == stockroomClientFile || strings.HasPrefix(h.path, "tests/") || h.path == "CHANGELOG.md" || h.path == "README.md" {
			continue
		}
		if !strings.Contains(h.text, "fetch_items") {
			continue
		}
		key := h.path + "\x00" + strings.TrimSpace(h.text)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, edit{path: h.path, old: strings.TrimSpace(h.text), new: strings.ReplaceAll(strings.TrimSpace(h.text), "fetch_items", "list_items")})
	}
	return out
}

var stockroomExplorePool = []explorePath{
	{"stockroom/channels/base.py", "Reading the adapter base class: _with_retries takes the function to call."},
	{"tests/test_client.py", "Reading the client tests to see exactly what the alias must do."},
	{"docs/api.md", "Reading the API docs, which describe fetch_items."},
	{"stockroom/channels/kiosk.py", "Reading the kiosk adapter."},
	{"stockroom/channels/wholesale.py", "Reading the wholesale adapter."},
	{"stockroom/channels/pos.py", "Reading the point-of-sale adapter."},
	{"stockroom/channels/popup.py", "Reading the pop-up store adapter."},
	{"stockroom/channels/webshop.py", "Reading the webshop adapter."},
	{"stockroom/channels/b2b_portal.py", "Reading the B2B portal adapter."},
	{"stockroom/channels/marketplace.py", "Reading the marketplace adapter."},
	{"stockroom/channels/dropship.py", "Reading the dropship adapter."},
	{"docs/channels/marketplace.md", "Reading the marketplace channel docs for how its sync works."},
	{"docs/channels/webshop.md", "Reading the webshop channel docs."},
	{"docs/channels/dropship.md", "Reading the dropship channel docs."},
	{"docs/channels/b2b_portal.md", "Reading the B2B portal docs."},
	{"tests/test_channel_webshop.py", "Looking at how the channel tests drive the adapters."},
	{"tests/test_channel_marketplace.py", "Looking at the marketplace tests."},
	{"stockroom/jobs/reconcile.py", "Reading the reconcile job, which reads stock for every location."},
	{"stockroom/models.py", "Checking the Item model the client returns."},
	{"tests/test_channel_dropship.py", "Looking at the dropship tests, which use a catalogue larger than one batch."},
}

func planRenameAPI(a *agent) {
	narrow := a.trait(2) == 1 // search for calls only, missing methods passed as values
	sloppy := a.trait(3) == 2 // misremember the client's signature in the first patch
	x := a.explore(stockroomExplorePool, 215_000)

	x.list("Let me see how the package is laid out.")
	x.readOnce("README.md", "Reading the README, which describes the 2.4 API change.")
	x.readOnce(stockroomClientFile, "Reading the client to see fetch_items and its neighbours.")
	x.readOnce("tests/conftest.py", "Checking the fake client the tests use.")
	report := a.runTests("Running the test suite to see what the rename breaks today.", "", true)

	var hits []searchHit
	if narrow {
		hits = a.search("Searching for every call of fetch_items.", searchCall{Pattern: `\.fetch_items\(`, Regex: true})
	} else {
		hits = a.search("Searching for every mention of fetch_items in the repository.", searchCall{Pattern: "fetch_items"})
	}
	callers := callerEdits(hits)
	for _, p := range pathsOf(callers) {
		x.readOnce(p, "Opening "+p+", which uses fetch_items.")
	}
	x.readMore(x.pool, 14)

	edits := append(append([]edit{}, stockroomClientEdits...), callers...)
	edits = append(edits, stockroomChangelogEdit)
	a.ensureRead([]string{"CHANGELOG.md"}, func(p string) string { return "Reading the changelog before adding an entry." })
	a.applyEdits(edits, sloppy, fmt.Sprintf("Renaming fetch_items to list_items in the client, adding a deprecated fetch_items alias, "+
		"and updating the %d call sites the search found.", len(callers)))

	a.read("Double-checking the new list_items and the deprecated alias in the client.", stockroomClientFile)
	for round := 0; round < 3; round++ {
		report = a.runTests("Re-running the tests verbosely after the rename.", "", true)
		if report.passed {
			break
		}
		// Callers the search missed still fail with AttributeError: find them all.
		var paths []string
		for _, loc := range report.locations {
			if p, _, ok := strings.Cut(loc, ":"); ok && strings.HasPrefix(p, "stockroom/") {
				paths = append(paths, p)
			}
		}
		hits = a.search("Some callers still use the old name (they pass the method as a value, so my first search missed them). "+
			"Searching the package for every mention.", searchCall{Pattern: "fetch_items", Path: "stockroom"})
		more := callerEdits(hits)
		for _, p := range uniqueStrings(append(paths, pathsOf(more)...)) {
			if !a.view(p).complete() {
				a.read("Reading "+p+" where the traceback points.", p)
			}
		}
		pending, _ := a.pending(more)
		if len(pending) == 0 {
			break
		}
		a.applyEdits(pending, false, fmt.Sprintf("Renaming the %d remaining references, including the ones that pass fetch_items as a callable.", len(pending)))
	}
	if !report.passed {
		a.finish("The rename is in place, but these tests still fail and I could not fix them:\n\n" + strings.Join(report.failures, "\n"))
	}
	var changed []string
	for _, p := range uniqueStrings(a.patched) {
		changed = append(changed, "- `"+p+"`")
	}
	sort.Strings(changed)
	a.finish("Done: `pytest` passes.\n\n" +
		"- `StockClient.fetch_items()` is now `list_items()` (same signature and behaviour).\n" +
		"- `fetch_items()` remains as a deprecated alias: it emits a `DeprecationWarning` that points to `list_items()` " +
		"and delegates to it, so external callers keep working until 3.0.\n" +
		"- Every caller in the package uses the new name, including the marketplace and dropship adapters and the reconcile job, " +
		"which pass the bound method to `_with_retries` / a thread pool instead of calling it directly.\n" +
		"- Added a changelog entry. No tests were changed.\n\n" +
		"Files changed:\n" + strings.Join(changed, "\n"))
}
