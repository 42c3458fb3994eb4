package scenario

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"text/template"
)

// The fulfil repository: a Go order-fulfilment service. Hand-written files
// live in the archive; one store file, one handler file, one handler test and
// one migration per entity are generated, plus the OpenAPI document.

//go:embed repos/fix-failing-test.txtar
var fulfilArchive string

//go:embed repos/fix-failing-test-templates.txtar
var fulfilTemplateArchive string

const fulfilModule = "github.com/harborline/fulfil"

// goField is one column of a generated entity.
type goField struct {
	Name      string // Go field name
	JSON      string // JSON name and column name
	Kind      string // string, text, ref, enum, status, int, cents, bool, time
	Required  bool
	Max       int
	Enum      []string
	Filter    bool
	ServerSet bool   // set by the server, not by requests
	Ref       string // referenced table, for Kind ref
	Sample    any    // a valid JSON value
	Other     any    // another valid value
}

func (f goField) Col() string { return f.JSON }

func (f goField) GoType() string {
	switch f.Kind {
	case "int":
		return "int64"
	case "cents":
		return "money.Cents"
	case "bool":
		return "bool"
	case "time":
		return "time.Time"
	}
	return "string"
}

func (f goField) SQLType() string {
	notNull := ""
	if f.Required {
		notNull = " NOT NULL"
	}
	switch f.Kind {
	case "ref":
		return fmt.Sprintf("text%s REFERENCES %s (id)", notNull, f.Ref)
	case "enum", "status":
		vals := make([]string, len(f.Enum))
		for i, v := range f.Enum {
			vals[i] = "'" + v + "'"
		}
		return fmt.Sprintf("text NOT NULL CHECK (%s IN (%s))", f.JSON, strings.Join(vals, ", "))
	case "int":
		return fmt.Sprintf("bigint NOT NULL DEFAULT 0 CHECK (%s BETWEEN 0 AND %d)", f.JSON, f.Max)
	case "cents":
		return fmt.Sprintf("bigint NOT NULL DEFAULT 0 CHECK (%s >= 0)", f.JSON)
	case "bool":
		return "boolean NOT NULL DEFAULT false"
	case "time":
		return "timestamptz" + notNull
	case "text":
		return fmt.Sprintf("text NOT NULL DEFAULT '' CHECK (length(%s) <= %d)", f.JSON, f.Max)
	}
	return fmt.Sprintf("text%s CHECK (length(%s) <= %d)", notNull, f.JSON, f.Max)
}

// Validation is the Go code that checks the field in Validate<Entity>.
func (f goField) Validation() string {
	x := "x." + f.Name
	var b strings.Builder
	add := func(cond, msg string) {
		fmt.Fprintf(&b, "\n\tif %s {\n\t\tproblems = append(problems, %q)\n\t}", cond, msg)
	}
	switch f.Kind {
	case "string", "text", "ref":
		if f.Required {
			add(fmt.Sprintf(`strings.TrimSpace(%s) == ""`, x), f.JSON+" is required")
		}
		if f.Max > 0 {
			add(fmt.Sprintf("len(%s) > %d", x, f.Max), fmt.Sprintf("%s must be at most %d characters", f.JSON, f.Max))
		}
	case "enum", "status":
		quoted := make([]string, len(f.Enum))
		for i, v := range f.Enum {
			quoted[i] = fmt.Sprintf("%q", v)
		}
		cond := fmt.Sprintf("!oneOf(%s, %s)", x, strings.Join(quoted, ", "))
		if !f.Required {
			cond = fmt.Sprintf(`%s != "" && %s`, x, cond)
		}
		add(cond, f.JSON+" must be one of "+strings.Join(f.Enum, ", "))
	case "cents":
		add(x+" < 0", f.JSON+" must not be negative")
	case "int":
		add(fmt.Sprintf("%s < 0 || %s > %d", x, x, f.Max), fmt.Sprintf("%s must be between 0 and %d", f.JSON, f.Max))
	case "time":
		if f.Required {
			add(x+".IsZero()", f.JSON+" is required")
		}
	}
	return b.String()
}

// QueryParse is the handler code that reads the field's list filter.
func (f goField) QueryParse() string {
	if f.Kind == "bool" {
		return fmt.Sprintf(`
	if v := q.Get(%q); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_query", "%s must be true or false")
			return
		}
		f.%s = &b
	}`, f.JSON, f.JSON, f.Name)
	}
	return fmt.Sprintf(`
	if v := q.Get(%q); v != "" {
		f.%s = &v
	}`, f.JSON, f.Name)
}

// DiffCond is the Go condition under which the field changed.
func (f goField) DiffCond() string {
	if f.Kind == "time" {
		return fmt.Sprintf("!before.%s.Equal(after.%s)", f.Name, f.Name)
	}
	return fmt.Sprintf("before.%s != after.%s", f.Name, f.Name)
}

// Formatted is the Go expression that renders the field of v as a string.
func (f goField) Formatted(v string) string {
	x := v + "." + f.Name
	switch f.Kind {
	case "int":
		return "strconv.FormatInt(" + x + ", 10)"
	case "cents":
		return x + ".String()"
	case "bool":
		return "strconv.FormatBool(" + x + ")"
	case "time":
		return x + ".Format(time.RFC3339)"
	}
	return x
}

// CSV is the Go expression for the field's CSV cell.
func (f goField) CSV() string {
	x := "x." + f.Name
	switch f.Kind {
	case "int":
		return "strconv.FormatInt(" + x + ", 10)"
	case "cents":
		return "strconv.FormatInt(int64(" + x + "), 10)"
	case "bool":
		return "strconv.FormatBool(" + x + ")"
	case "time":
		return x + ".UTC().Format(time.RFC3339)"
	}
	return x
}

type goTransition struct {
	From string
	To   []string
}

// goEntity is one resource of the service.
type goEntity struct {
	Name, Var, Plural, PluralVar, Prefix, Comment string
	Index                                         int
	Fields                                        []goField
	Statuses                                      []string
	Transitions                                   []goTransition
}

func (e goEntity) Table() string { return e.PluralVar }

func (e goEntity) Filters() []goField {
	var out []goField
	for _, f := range e.Fields {
		if f.Filter {
			out = append(out, f)
		}
	}
	return out
}

func (e goEntity) has(kind string) bool {
	for _, f := range e.Fields {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

func (e goEntity) ColumnList() string {
	cols := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		cols[i] = f.JSON
	}
	return strings.Join(cols, ", ")
}

func (e goEntity) InsertPlaceholders() string {
	ph := make([]string, len(e.Fields))
	for i := range e.Fields {
		ph[i] = fmt.Sprintf("$%d", i+2)
	}
	return strings.Join(ph, ", ")
}

func (e goEntity) FieldArgs() string {
	args := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		args[i] = "x." + f.Name
	}
	return strings.Join(args, ", ")
}

func (e goEntity) SetList() string {
	set := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		set[i] = fmt.Sprintf("%s = $%d", f.JSON, i+2)
	}
	return strings.Join(set, ", ")
}

func (e goEntity) VersionArg() int { return len(e.Fields) + 2 }

func (e goEntity) StoreImports() []string {
	imps := []string{"context", "errors"}
	if len(e.Statuses) > 0 {
		imps = append(imps, "fmt")
	}
	imps = append(imps, "strconv", "strings", "time", "", "github.com/jackc/pgx/v5")
	if e.has("cents") {
		imps = append(imps, fulfilModule+"/internal/money")
	}
	return imps
}

func (e goEntity) HandlerImports() []string {
	imps := []string{"context", "encoding/csv", "net/http", "strconv", "time", ""}
	if e.has("cents") {
		imps = append(imps, fulfilModule+"/internal/money")
	}
	return append(imps, fulfilModule+"/internal/store")
}

// ValidBody is a request body that passes validation, as one JSON line.
func (e goEntity) ValidBody() string {
	var parts []string
	for _, f := range e.Fields {
		if f.ServerSet {
			continue
		}
		v, _ := json.Marshal(f.Sample)
		parts = append(parts, fmt.Sprintf("%q: %s", f.JSON, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// UpdateBody is a Go expression for a valid body that differs from ValidBody.
func (e goEntity) UpdateBody() string {
	for _, f := range e.Fields {
		if !f.ServerSet && f.Other != nil {
			return fmt.Sprintf("withField(valid%sBody(), %q, %s)", e.Name, f.JSON, goLiteral(f.Other))
		}
	}
	return fmt.Sprintf("valid%sBody()", e.Name)
}

func goLiteral(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case bool:
		return fmt.Sprintf("%t", x)
	case int:
		return fmt.Sprintf("%d", x)
	}
	return fmt.Sprintf("%v", v)
}

type goCase struct{ Name, Body, Detail, Query, Steps, Want string }

func (e goEntity) ValidationCases() []goCase {
	valid := fmt.Sprintf("valid%sBody()", e.Name)
	var out []goCase
	for _, f := range e.Fields {
		if f.ServerSet {
			continue
		}
		switch f.Kind {
		case "string", "text", "ref":
			if f.Required {
				out = append(out, goCase{Name: "missing " + f.JSON, Body: fmt.Sprintf("withoutField(%s, %q)", valid, f.JSON), Detail: f.JSON + " is required"})
			}
			if f.Max > 0 && f.Kind != "ref" {
				out = append(out, goCase{Name: f.JSON + " too long", Body: fmt.Sprintf("withField(%s, %q, strings.Repeat(\"x\", %d))", valid, f.JSON, f.Max+1),
					Detail: fmt.Sprintf("%s must be at most %d characters", f.JSON, f.Max)})
			}
		case "enum":
			out = append(out, goCase{Name: "unknown " + f.JSON, Body: fmt.Sprintf("withField(%s, %q, \"bogus\")", valid, f.JSON), Detail: f.JSON + " must be one of"})
		case "cents":
			out = append(out, goCase{Name: "negative " + f.JSON, Body: fmt.Sprintf("withField(%s, %q, -1)", valid, f.JSON), Detail: f.JSON + " must not be negative"})
		case "int":
			out = append(out, goCase{Name: f.JSON + " out of range", Body: fmt.Sprintf("withField(%s, %q, %d)", valid, f.JSON, f.Max+1), Detail: fmt.Sprintf("%s must be between 0 and %d", f.JSON, f.Max)})
		case "time":
			if f.Required {
				out = append(out, goCase{Name: "missing " + f.JSON, Body: fmt.Sprintf("withoutField(%s, %q)", valid, f.JSON), Detail: f.JSON + " is required"})
			}
		}
	}
	return out
}

func (e goEntity) PatchCases() []goCase {
	var out []goCase
	for _, f := range e.Fields {
		if f.ServerSet {
			continue
		}
		v := f.Other
		if v == nil {
			v = f.Sample
		}
		out = append(out, goCase{Name: "patch " + f.JSON, Query: f.JSON, Body: goLiteral(v), Want: "http.StatusOK"})
		switch f.Kind {
		case "enum":
			out = append(out, goCase{Name: "patch " + f.JSON + " with unknown value", Query: f.JSON, Body: `"bogus"`, Want: "http.StatusUnprocessableEntity"})
		case "cents":
			out = append(out, goCase{Name: "patch negative " + f.JSON, Query: f.JSON, Body: "-1", Want: "http.StatusUnprocessableEntity"})
		case "string", "ref":
			if f.Required {
				out = append(out, goCase{Name: "blank " + f.JSON, Query: f.JSON, Body: `" "`, Want: "http.StatusUnprocessableEntity"})
			}
		}
	}
	return out
}

func (e goEntity) FilterCases() []goCase {
	var out []goCase
	for _, f := range e.Filters() {
		q := func(v any) string { return "?" + f.JSON + "=" + url.QueryEscape(fmt.Sprint(v)) }
		out = append(out,
			goCase{Name: "by " + f.JSON + " matching", Query: q(f.Sample), Want: "1"},
			goCase{Name: "by " + f.JSON + " not matching", Query: q(f.Other), Want: "0"})
	}
	return out
}

func (e goEntity) TransitionCases() []goCase {
	if len(e.Statuses) == 0 {
		return nil
	}
	next := map[string][]string{}
	for _, t := range e.Transitions {
		next[t.From] = t.To
	}
	initial := e.Statuses[0]
	var out []goCase
	quote := func(steps ...string) string {
		q := make([]string, len(steps))
		for i, s := range steps {
			q[i] = fmt.Sprintf("%q", s)
		}
		return strings.Join(q, ", ")
	}
	for _, to := range next[initial] {
		out = append(out, goCase{Name: initial + " to " + to, Steps: quote(to), Want: "http.StatusOK"})
	}
	if first := next[initial]; len(first) > 0 {
		if second := next[first[0]]; len(second) > 0 {
			out = append(out, goCase{Name: initial + " to " + first[0] + " to " + second[0], Steps: quote(first[0], second[0]), Want: "http.StatusOK"})
		}
	}
	last := e.Statuses[len(e.Statuses)-1]
	allowed := false
	for _, s := range next[initial] {
		allowed = allowed || s == last
	}
	if !allowed {
		out = append(out, goCase{Name: initial + " to " + last + " is refused", Steps: quote(last), Want: "http.StatusConflict"})
	}
	out = append(out, goCase{Name: "unknown status is refused", Steps: quote("teleported"), Want: "http.StatusConflict"})
	return out
}

const sampleTime = "2024-05-01T12:00:00Z"

var fulfilEntities = []goEntity{
	{
		Name: "Customer", Var: "customer", Plural: "Customers", PluralVar: "customers", Prefix: "cus", Index: 1,
		Comment: "Customers place orders; region picks the sales-tax rate.",
		Fields: []goField{
			{Name: "Email", JSON: "email", Kind: "string", Required: true, Max: 254, Filter: true, Sample: "ada@example.com", Other: "grace@example.com"},
			{Name: "Name", JSON: "name", Kind: "string", Required: true, Max: 120, Sample: "Ada Lovelace", Other: "Ada King"},
			{Name: "Phone", JSON: "phone", Kind: "string", Max: 32, Sample: "+1 503 555 0100"},
			{Name: "Segment", JSON: "segment", Kind: "enum", Required: true, Enum: []string{"standard", "business", "wholesale"}, Filter: true, Sample: "business", Other: "wholesale"},
			{Name: "Region", JSON: "region", Kind: "string", Required: true, Max: 2, Filter: true, Sample: "OR", Other: "WA"},
			{Name: "MarketingOptIn", JSON: "marketing_opt_in", Kind: "bool", Sample: false},
			{Name: "Notes", JSON: "notes", Kind: "text", Max: 2000, Sample: "Prefers morning deliveries."},
		},
	},
	{
		Name: "Product", Var: "product", Plural: "Products", PluralVar: "products", Prefix: "prd", Index: 2,
		Comment: "The catalogue. Prices are integer cents; see internal/money.",
		Fields: []goField{
			{Name: "SKU", JSON: "sku", Kind: "string", Required: true, Max: 32, Filter: true, Sample: "MUG-01", Other: "TEE-M"},
			{Name: "Title", JSON: "title", Kind: "string", Required: true, Max: 200, Sample: "Enamel camp mug", Other: "Enamel camp mug, 12 oz"},
			{Name: "Description", JSON: "description", Kind: "text", Max: 5000, Sample: "Powder-coated steel, dishwasher safe."},
			{Name: "Category", JSON: "category", Kind: "enum", Required: true, Enum: []string{"apparel", "home", "office", "outdoor"}, Filter: true, Sample: "home", Other: "outdoor"},
			{Name: "UnitPrice", JSON: "unit_price", Kind: "cents", Sample: 1250},
			{Name: "WeightGrams", JSON: "weight_grams", Kind: "int", Max: 100000, Sample: 340},
			{Name: "Active", JSON: "active", Kind: "bool", Filter: true, Sample: true, Other: false},
		},
	},
	{
		Name: "Order", Var: "order", Plural: "Orders", PluralVar: "orders", Prefix: "ord", Index: 3,
		Comment: "Orders keep the last priced breakdown (see internal/pricing) for invoices.",
		Fields: []goField{
			{Name: "CustomerID", JSON: "customer_id", Kind: "ref", Ref: "customers", Required: true, Filter: true, Sample: "cus_0001", Other: "cus_0002"},
			{Name: "Region", JSON: "region", Kind: "string", Required: true, Max: 2, Sample: "WA", Other: "OR"},
			{Name: "CouponCode", JSON: "coupon_code", Kind: "string", Max: 32, Sample: "SPRING15"},
			{Name: "Subtotal", JSON: "subtotal", Kind: "cents", Sample: 2899},
			{Name: "Discount", JSON: "discount", Kind: "cents", Sample: 435},
			{Name: "Tax", JSON: "tax", Kind: "cents", Sample: 160},
			{Name: "Shipping", JSON: "shipping", Kind: "cents", Sample: 795},
			{Name: "Total", JSON: "total", Kind: "cents", Sample: 3419},
			{Name: "Status", JSON: "status", Kind: "status", Required: true, Filter: true, ServerSet: true,
				Enum: []string{"pending", "paid", "packed", "shipped", "delivered", "cancelled", "refunded"}, Sample: "pending", Other: "paid"},
			{Name: "PlacedAt", JSON: "placed_at", Kind: "time", Required: true, Sample: sampleTime},
			{Name: "Notes", JSON: "notes", Kind: "text", Max: 1000, Sample: "Gift wrap, no invoice in the box."},
		},
		Statuses: []string{"pending", "paid", "packed", "shipped", "delivered", "cancelled", "refunded"},
		Transitions: []goTransition{
			{From: "pending", To: []string{"paid", "cancelled"}},
			{From: "paid", To: []string{"packed", "refunded", "cancelled"}},
			{From: "packed", To: []string{"shipped"}},
			{From: "shipped", To: []string{"delivered"}},
			{From: "delivered", To: []string{"refunded"}},
		},
	},
	{
		Name: "Shipment", Var: "shipment", Plural: "Shipments", PluralVar: "shipments", Prefix: "shp", Index: 4,
		Comment: "One order may ship in several parcels.",
		Fields: []goField{
			{Name: "OrderID", JSON: "order_id", Kind: "ref", Ref: "orders", Required: true, Filter: true, Sample: "ord_0001", Other: "ord_0002"},
			{Name: "Carrier", JSON: "carrier", Kind: "enum", Required: true, Enum: []string{"ups", "fedex", "usps", "dhl"}, Filter: true, Sample: "ups", Other: "dhl"},
			{Name: "ServiceLevel", JSON: "service_level", Kind: "enum", Required: true, Enum: []string{"ground", "two_day", "overnight"}, Sample: "ground", Other: "overnight"},
			{Name: "TrackingNumber", JSON: "tracking_number", Kind: "string", Max: 64, Sample: "1Z999AA10123456784"},
			{Name: "WeightGrams", JSON: "weight_grams", Kind: "int", Max: 70000, Sample: 1200},
			{Name: "Status", JSON: "status", Kind: "status", Required: true, Filter: true, ServerSet: true,
				Enum: []string{"label_created", "in_transit", "out_for_delivery", "delivered", "exception", "returned"}, Sample: "label_created", Other: "in_transit"},
			{Name: "ShippedAt", JSON: "shipped_at", Kind: "time", Sample: sampleTime},
			{Name: "DeliveredAt", JSON: "delivered_at", Kind: "time", Sample: "2024-05-03T16:30:00Z"},
		},
		Statuses: []string{"label_created", "in_transit", "out_for_delivery", "delivered", "exception", "returned"},
		Transitions: []goTransition{
			{From: "label_created", To: []string{"in_transit", "exception"}},
			{From: "in_transit", To: []string{"out_for_delivery", "exception"}},
			{From: "out_for_delivery", To: []string{"delivered", "exception"}},
			{From: "exception", To: []string{"in_transit", "returned"}},
		},
	},
	{
		Name: "Invoice", Var: "invoice", Plural: "Invoices", PluralVar: "invoices", Prefix: "inv", Index: 5,
		Comment: "Invoices are created from paid orders and numbered per year.",
		Fields: []goField{
			{Name: "OrderID", JSON: "order_id", Kind: "ref", Ref: "orders", Required: true, Filter: true, Sample: "ord_0001", Other: "ord_0002"},
			{Name: "Number", JSON: "number", Kind: "string", Required: true, Max: 20, Filter: true, Sample: "INV-2024-0001", Other: "INV-2024-0002"},
			{Name: "Amount", JSON: "amount", Kind: "cents", Sample: 3419},
			{Name: "Tax", JSON: "tax", Kind: "cents", Sample: 160},
			{Name: "Currency", JSON: "currency", Kind: "enum", Required: true, Enum: []string{"USD", "CAD"}, Sample: "USD", Other: "CAD"},
			{Name: "DueAt", JSON: "due_at", Kind: "time", Required: true, Sample: "2024-05-31T00:00:00Z"},
			{Name: "PaidAt", JSON: "paid_at", Kind: "time", Sample: sampleTime},
			{Name: "Memo", JSON: "memo", Kind: "text", Max: 500, Sample: "Net 30. Thank you for your business."},
			{Name: "Status", JSON: "status", Kind: "status", Required: true, Filter: true, ServerSet: true,
				Enum: []string{"draft", "open", "paid", "void", "uncollectible"}, Sample: "draft", Other: "open"},
		},
		Statuses: []string{"draft", "open", "paid", "void", "uncollectible"},
		Transitions: []goTransition{
			{From: "draft", To: []string{"open", "void"}},
			{From: "open", To: []string{"paid", "void", "uncollectible"}},
			{From: "uncollectible", To: []string{"paid"}},
		},
	},
}

// titleWord turns "out_for_delivery" into "OutForDelivery".
func titleWord(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func buildFulfil() map[string]string {
	files := parseArchive(fulfilArchive)
	render := archiveRenderer(fulfilTemplateArchive, template.FuncMap{"title": titleWord})
	for _, e := range fulfilEntities {
		files["internal/store/"+e.PluralVar+".go"] = render("store.go.tmpl", e)
		files["internal/httpapi/"+e.PluralVar+".go"] = render("handlers.go.tmpl", e)
		files["internal/httpapi/"+e.PluralVar+"_test.go"] = render("handlers_test.go.tmpl", e)
		files[fmt.Sprintf("internal/store/migrations/%04d_create_%s.sql", e.Index, e.Table())] = render("migration.sql.tmpl", e)
	}
	files["api/openapi.yaml"] = fulfilOpenAPI()
	return files
}

// fulfilOpenAPI writes the API contract from the entities.
func fulfilOpenAPI() string {
	var b strings.Builder
	b.WriteString(`openapi: 3.1.0
info:
  title: fulfil API
  version: 1.9.0
  description: |
    Harborline's order fulfilment API. Amounts are integer cents; rates are
    basis points. Every resource supports optimistic locking: read its
    "version" and send it back in If-Match when you update it.
servers:
  - url: https://fulfil.internal.harborline.example
security:
  - bearerAuth: []
paths:
`)
	for _, e := range fulfilEntities {
		fmt.Fprintf(&b, "  /v1/%s:\n", e.PluralVar)
		fmt.Fprintf(&b, "    get:\n      summary: List %s\n      operationId: list%s\n      tags: [%s]\n", e.PluralVar, e.Plural, e.PluralVar)
		b.WriteString("      parameters:\n        - $ref: '#/components/parameters/Limit'\n        - $ref: '#/components/parameters/Cursor'\n        - $ref: '#/components/parameters/CreatedAfter'\n")
		for _, f := range e.Filters() {
			fmt.Fprintf(&b, "        - name: %s\n          in: query\n          description: Only %s whose %s equals this value.\n          schema:\n", f.JSON, e.PluralVar, f.JSON)
			b.WriteString(openAPISchema(f, "            "))
		}
		fmt.Fprintf(&b, `      responses:
        '200':
          description: A page of %[1]s, ordered by id.
          content:
            application/json:
              schema:
                type: object
                required: [data]
                properties:
                  data:
                    type: array
                    items:
                      $ref: '#/components/schemas/%[2]s'
                  next_cursor:
                    type: string
                    description: Pass as cursor to get the next page; absent on the last page.
        '400':
          $ref: '#/components/responses/BadRequest'
    post:
      summary: Create a %[3]s
      operationId: create%[2]s
      tags: [%[1]s]
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/%[2]sInput'
      responses:
        '201':
          description: The created %[3]s.
          headers:
            Location:
              schema:
                type: string
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/%[2]s'
        '400':
          $ref: '#/components/responses/BadRequest'
        '422':
          $ref: '#/components/responses/Invalid'
  /v1/%[1]s/{id}:
    parameters:
      - $ref: '#/components/parameters/ID'
    get:
      summary: Get a %[3]s
      operationId: get%[2]s
      tags: [%[1]s]
      responses:
        '200':
          description: The %[3]s.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/%[2]s'
        '404':
          $ref: '#/components/responses/NotFound'
    put:
      summary: Replace a %[3]s
      operationId: update%[2]s
      tags: [%[1]s]
      parameters:
        - $ref: '#/components/parameters/IfMatch'
      requestBody:
        required: true
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/%[2]sInput'
      responses:
        '200':
          description: The updated %[3]s, with its version bumped.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/%[2]s'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/Conflict'
        '422':
          $ref: '#/components/responses/Invalid'
        '428':
          $ref: '#/components/responses/PreconditionRequired'
    delete:
      summary: Delete a %[3]s
      operationId: delete%[2]s
      tags: [%[1]s]
      responses:
        '204':
          description: Deleted.
        '404':
          $ref: '#/components/responses/NotFound'
`, e.PluralVar, e.Name, e.Var)
		if len(e.Statuses) > 0 {
			fmt.Fprintf(&b, `  /v1/%[1]s/{id}/transition:
    parameters:
      - $ref: '#/components/parameters/ID'
    post:
      summary: Move a %[3]s to another status
      operationId: transition%[2]s
      tags: [%[1]s]
      description: |
        Allowed transitions:
`, e.PluralVar, e.Name, e.Var)
			for _, t := range e.Transitions {
				fmt.Fprintf(&b, "          - %s -> %s\n", t.From, strings.Join(t.To, ", "))
			}
			fmt.Fprintf(&b, `      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [to]
              additionalProperties: false
              properties:
                to:
                  type: string
                  enum: [%[3]s]
      responses:
        '200':
          description: The %[1]s in its new status.
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/%[2]s'
        '404':
          $ref: '#/components/responses/NotFound'
        '409':
          $ref: '#/components/responses/Conflict'
`, e.Var, e.Name, strings.Join(e.Statuses, ", "))
		}
	}
	b.WriteString(`components:
  securitySchemes:
    bearerAuth:
      type: http
      scheme: bearer
  parameters:
    ID:
      name: id
      in: path
      required: true
      schema:
        type: string
    Limit:
      name: limit
      in: query
      schema:
        type: integer
        minimum: 1
        maximum: 200
        default: 50
    Cursor:
      name: cursor
      in: query
      description: The next_cursor of the previous page.
      schema:
        type: string
    CreatedAfter:
      name: created_after
      in: query
      schema:
        type: string
        format: date-time
    IfMatch:
      name: If-Match
      in: header
      required: true
      description: The version you read, in quotes, e.g. "3".
      schema:
        type: string
  responses:
    BadRequest:
      description: The request could not be read.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
    Invalid:
      description: The resource is invalid; details lists every problem.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
    NotFound:
      description: No such resource.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
    Conflict:
      description: Stale version or a status transition that is not allowed.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
    PreconditionRequired:
      description: If-Match is missing.
      content:
        application/json:
          schema:
            $ref: '#/components/schemas/Error'
  schemas:
    Error:
      type: object
      required: [error]
      properties:
        error:
          type: object
          required: [code, message]
          properties:
            code:
              type: string
            message:
              type: string
            details:
              type: array
              items:
                type: string
`)
	for _, e := range fulfilEntities {
		fmt.Fprintf(&b, "    %s:\n      type: object\n      description: %s\n      required: [id, version, created_at, updated_at", e.Name, e.Comment)
		for _, f := range e.Fields {
			if f.Required {
				b.WriteString(", " + f.JSON)
			}
		}
		b.WriteString("]\n      properties:\n        id:\n          type: string\n          readOnly: true\n")
		fmt.Fprintf(&b, "          example: %s_3K7QH2M4ZC6AE\n", e.Prefix)
		for _, f := range e.Fields {
			fmt.Fprintf(&b, "        %s:\n", f.JSON)
			b.WriteString(openAPISchema(f, "          "))
		}
		b.WriteString("        version:\n          type: integer\n          readOnly: true\n        created_at:\n          type: string\n          format: date-time\n          readOnly: true\n        updated_at:\n          type: string\n          format: date-time\n          readOnly: true\n")
		fmt.Fprintf(&b, "    %sInput:\n      type: object\n      additionalProperties: false\n      required: [", e.Name)
		var req []string
		for _, f := range e.Fields {
			if f.Required && !f.ServerSet {
				req = append(req, f.JSON)
			}
		}
		b.WriteString(strings.Join(req, ", ") + "]\n      properties:\n")
		for _, f := range e.Fields {
			if f.ServerSet {
				continue
			}
			fmt.Fprintf(&b, "        %s:\n          $ref: '#/components/schemas/%s/properties/%s'\n", f.JSON, e.Name, f.JSON)
		}
	}
	return b.String()
}

func openAPISchema(f goField, indent string) string {
	var b strings.Builder
	line := func(format string, args ...any) { b.WriteString(indent + fmt.Sprintf(format, args...) + "\n") }
	switch f.Kind {
	case "int":
		line("type: integer")
		line("minimum: 0")
		line("maximum: %d", f.Max)
	case "cents":
		line("type: integer")
		line("minimum: 0")
		line("description: Amount in cents.")
	case "bool":
		line("type: boolean")
	case "time":
		line("type: string")
		line("format: date-time")
	case "enum", "status":
		line("type: string")
		line("enum: [%s]", strings.Join(f.Enum, ", "))
		if f.ServerSet {
			line("readOnly: true")
		}
	case "ref":
		line("type: string")
		line("description: Id of the referenced %s row.", strings.TrimSuffix(f.Ref, "s"))
	default:
		line("type: string")
		if f.Max > 0 {
			line("maxLength: %d", f.Max)
		}
	}
	if f.Sample != nil && f.Kind != "bool" {
		v, _ := json.Marshal(f.Sample)
		line("example: %s", v)
	}
	return b.String()
}
